"""Reading untrusted YAML safely: text to a node tree with positions, bounded and iterative.

Scenario files and cassette files are hostile input, and both are read here, so no file can hang
a reader, end in a ``RecursionError`` or take memory out of proportion to its size:

- **Depth**: collections nest at most ``MAX_DEPTH`` levels.
- **Aliases**: what aliases stand for may add at most ``MAX_ALIAS_NODES`` nodes to the document
  (a "billion laughs" file is refused at the alias that crosses the limit), and an alias to a
  node that is still open (a recursive structure) is refused.
- **Text**: an escaped surrogate pair (``"\\ud83d\\ude00"``, as ``json.dumps`` writes an emoji)
  is joined into its character; a lone surrogate is an error (``lone_surrogates="error"``) or
  U+FFFD (``"replace"``, for recorded data).
- The tree is composed from the parser's events by a loop (libyaml's parser when available),
  and constructed by a safe loader.

Errors are ``YamlProblem`` (line, column, message) for the caller to place in its report.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

MAX_FILE_BYTES = 64 * 1024 * 1024
"""A file larger than this is refused before it is read."""

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists a document may use."""

MAX_ALIAS_NODES = 100_000
"""How many nodes aliases may add to a document, counting what each alias stands for."""


class YamlProblem(Exception):
    """The file is not usable YAML; ``line``/``column`` are 1-based."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


def text_position(text: str, offset: int) -> tuple[int, int]:
    """1-based line and column of character ``offset``."""
    line_start = text.rfind("\n", 0, offset) + 1
    return text.count("\n", 0, offset) + 1, offset - line_start + 1


@dataclass(slots=True)
class _Open:
    node: Any
    anchor: str | None
    size: int = 1
    key: Any = None
    items: list[Any] = field(default_factory=list)


LoneSurrogates = Literal["error", "replace"]
"""What a lone surrogate in a scalar becomes: an error at its position, or U+FFFD."""


def read(
    text: str,
    *,
    loaders: tuple[Any, Any] | None = None,
    adjust: Callable[[Any], None] | None = None,
    lone_surrogates: LoneSurrogates = "error",
) -> tuple[Any, Any]:
    """The node tree (for positions) and the data of the single document in ``text``
    (``(None, None)`` for an empty file).

    ``loaders`` is ``(fast, pure)``: libyaml's and the pure-Python loader class to construct
    with (default: PyYAML's safe loaders); ``adjust`` may edit the node tree before it is
    constructed."""
    import yaml

    fast, pure = loaders or (getattr(yaml, "CSafeLoader", None), yaml.SafeLoader)
    if fast is not None:
        try:
            return _read_with(fast, text, adjust, lone_surrogates)
        except YamlProblem:
            pass  # read again with the pure-Python parser, so messages read the same everywhere
    return _read_with(pure, text, adjust, lone_surrogates)


def _read_with(
    loader_class: Any,
    text: str,
    adjust: Callable[[Any], None] | None,
    lone_surrogates: LoneSurrogates,
) -> tuple[Any, Any]:
    import yaml

    loader: Any = None
    try:
        loader = loader_class(text)  # the reader checks every character here
        loader.get_event()  # stream start
        if loader.check_event(yaml.StreamEndEvent):
            return None, None
        loader.get_event()  # document start
        node = _compose(loader, lone_surrogates)
        loader.get_event()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            mark = loader.peek_event().start_mark
            raise YamlProblem(
                mark.line + 1, mark.column + 1, "expected one YAML document, found another"
            )
        if adjust is not None:
            adjust(node)
        return node, loader.construct_document(node)
    except yaml.MarkedYAMLError as exc:
        raise _marked(exc) from None
    except yaml.reader.ReaderError as exc:
        line, column = text_position(text, exc.position)
        raise YamlProblem(line, column, f"YAML error: {exc.reason}") from None
    except yaml.YAMLError as exc:
        raise YamlProblem(1, 1, f"YAML error: {exc}") from None
    finally:
        if loader is not None:
            loader.dispose()


def _compose(loader: Any, lone_surrogates: LoneSurrogates) -> Any:
    """One node tree from the loader's events, by a loop (see the module docstring)."""
    import yaml

    anchors: dict[str, tuple[Any, int]] = {}
    open_anchors: set[str] = set()
    stack: list[_Open] = []
    added_by_aliases = 0
    while True:
        event = loader.get_event()
        mark: Any = event.start_mark  # libyaml's marks and PyYAML's have the same fields
        end: Any = event.end_mark
        if isinstance(event, yaml.AliasEvent):
            if event.anchor in open_anchors:
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"alias *{event.anchor} refers to a node that contains it (a recursive "
                    "structure)",
                )
            if event.anchor not in anchors:
                raise YamlProblem(
                    mark.line + 1, mark.column + 1, f"found undefined alias *{event.anchor}"
                )
            value, size = anchors[event.anchor]
            added_by_aliases += size
            if added_by_aliases > MAX_ALIAS_NODES:
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"aliases expand this document by more than {MAX_ALIAS_NODES:,} nodes "
                    "(a YAML alias bomb?); write the values out or share less",
                )
        elif isinstance(event, yaml.ScalarEvent):
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(yaml.ScalarNode, event.value, event.implicit)
            text = (
                event.value if event.value.isascii() else _whole(event.value, mark, lone_surrogates)
            )
            value = yaml.ScalarNode(tag, text, mark, end, style=event.style)
            size = 1
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1)
        elif isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent)):
            if len(stack) >= MAX_DEPTH:
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"nesting deeper than {MAX_DEPTH} levels: a scenario does not need this; "
                    "flatten the value",
                )
            kind = (
                yaml.SequenceNode
                if isinstance(event, yaml.SequenceStartEvent)
                else yaml.MappingNode
            )
            tag = event.tag
            if tag is None or tag == "!":
                tag = loader.resolve(kind, None, event.implicit)
            node = kind(tag, [], mark, None, flow_style=event.flow_style)
            stack.append(_Open(node, event.anchor))
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            continue
        elif isinstance(event, (yaml.SequenceEndEvent, yaml.MappingEndEvent)):
            done = stack.pop()
            done.node.end_mark = event.end_mark
            value, size = done.node, done.size
            if done.anchor is not None:
                open_anchors.discard(done.anchor)
                anchors[done.anchor] = (value, size)
        else:  # pragma: no cover - the parser guarantees the event order
            raise YamlProblem(mark.line + 1, mark.column + 1, f"unexpected YAML event {event}")
        if not stack:
            return value
        parent = stack[-1]
        parent.size += size
        if isinstance(parent.node, yaml.MappingNode):
            if parent.key is None:
                parent.key = value
            else:
                parent.node.value.append((parent.key, value))
                parent.key = None
        else:
            parent.node.value.append(value)


def _whole(value: str, mark: Any, lone_surrogates: LoneSurrogates) -> str:
    """``value`` with escaped surrogate pairs joined (``json.dumps`` writes an emoji as
    ``"\\ud83d\\ude00"``, which YAML reads as two halves); a lone ``"\\ud800"`` makes a string
    no file or terminal can hold: refuse it here (or replace it, see ``LoneSurrogates``)."""
    from openprogram.texts import rejoined, whole_text

    value = rejoined(value)
    if lone_surrogates == "replace":
        return whole_text(value)
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        bad = f"\\u{ord(value[exc.start]):04x}"
        raise YamlProblem(
            mark.line + 1, mark.column + 1, f"a lone surrogate ({bad}) is not text"
        ) from None
    return value


def _marked(exc: Any) -> YamlProblem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = ""
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        hint = " — check the indentation of this line and the one before"
    elif "'\\t'" in problem:
        hint = " — indent YAML with spaces, not tabs"
    return YamlProblem(line, col, f"YAML syntax error: {problem}{context}{hint}")


__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "LoneSurrogates",
    "YamlProblem",
    "read",
    "text_position",
]
