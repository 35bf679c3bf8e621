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
from dataclasses import dataclass
from typing import Any, Literal

from openprogram.texts import rejoined, whole_text

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
    data: Any  # the dict or list being built beside the node (see ``_compose``)
    size: int = 1
    key: Any = None
    key_data: Any = None


LoneSurrogates = Literal["error", "replace"]
"""What a lone surrogate in a scalar becomes: an error at its position, or U+FFFD."""


def read(
    text: str,
    *,
    loaders: tuple[Any, Any] | None = None,
    adjust: Callable[[Any], bool] | None = None,
    lone_surrogates: LoneSurrogates = "error",
) -> tuple[Any, Any]:
    """The node tree (for positions) and the data of the single document in ``text``
    (``(None, None)`` for an empty file).

    ``loaders`` is ``(fast, pure)``: libyaml's and the pure-Python loader class to construct
    with (default: PyYAML's safe loaders); ``adjust`` may edit the node tree before it is
    constructed, and says whether it did."""
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
    adjust: Callable[[Any], bool] | None,
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
        node, data = _compose(loader, lone_surrogates)
        loader.get_event()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            mark = loader.peek_event().start_mark
            raise YamlProblem(
                mark.line + 1, mark.column + 1, "expected one YAML document, found another"
            )
        if adjust is not None and adjust(node):
            data = _UNBUILT
        if data is _UNBUILT:
            data = loader.construct_document(node)
        return node, data
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


_UNBUILT: Any = object()
"""The data ``_compose`` left to the loader's constructor (see there)."""

_PLAIN_SCALAR_TAGS = frozenset(
    f"tag:yaml.org,2002:{name}"
    for name in ("null", "bool", "int", "float", "str", "timestamp", "binary")
)
_MAP_TAG = "tag:yaml.org,2002:map"
_SEQ_TAG = "tag:yaml.org,2002:seq"
_STR_TAG = "tag:yaml.org,2002:str"


def _safe_constructors(loader_class: Any) -> dict[str, Any]:
    """The tags whose constructor in ``loader_class`` is PyYAML's safe one: the tags
    ``_compose`` may build itself (anything else goes to the loader's constructor)."""
    import yaml

    safe = yaml.SafeLoader.yaml_constructors
    own = loader_class.yaml_constructors
    tags = _PLAIN_SCALAR_TAGS | {_MAP_TAG, _SEQ_TAG}
    return {tag: own[tag] for tag in tags if tag in own and own[tag] is safe.get(tag)}


def _compose(loader: Any, lone_surrogates: LoneSurrogates) -> tuple[Any, Any]:
    """One node tree from the loader's events, by a loop (see the module docstring), and its
    data built in the same pass.

    The data is built here for the documents every file holds (mappings, lists and the plain
    scalar types, with the loader's own constructor for each scalar, so values are exactly
    what it would build); a merge key (``<<``), any other tag or a collection used as a key
    leaves the data ``_UNBUILT`` for the loader to construct from the tree, as before.  Building
    it here saves a second walk of the tree, which was most of the time a small file took."""
    import yaml

    constructors = _safe_constructors(type(loader))
    str_plain = constructors.get(_STR_TAG) is not None
    build = _MAP_TAG in constructors and _SEQ_TAG in constructors
    resolve = loader.resolve
    Scalar, Sequence, Mapping = yaml.ScalarNode, yaml.SequenceNode, yaml.MappingNode
    ScalarEvent, AliasEvent = yaml.ScalarEvent, yaml.AliasEvent
    SequenceStart, MappingStart = yaml.SequenceStartEvent, yaml.MappingStartEvent
    anchors: dict[str, tuple[Any, int, Any]] = {}
    open_anchors: set[str] = set()
    stack: list[_Open] = []
    added_by_aliases = 0
    while True:
        event = loader.get_event()
        kind = type(event)
        if kind is ScalarEvent:
            mark: Any = event.start_mark  # libyaml's marks and PyYAML's have the same fields
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(Scalar, event.value, event.implicit)
            text = (
                event.value if event.value.isascii() else _whole(event.value, mark, lone_surrogates)
            )
            value = Scalar(tag, text, mark, event.end_mark, style=event.style)
            size = 1
            if not build:
                data = _UNBUILT
            elif tag == _STR_TAG and str_plain:
                data = text
            else:
                construct = constructors.get(tag)
                data = _UNBUILT if construct is None else construct(loader, value)
            if event.anchor is not None:
                anchors[event.anchor] = (value, 1, data)
        elif kind is SequenceStart or kind is MappingStart:
            mark = event.start_mark
            if len(stack) >= MAX_DEPTH:
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"nesting deeper than {MAX_DEPTH} levels: a scenario does not need this; "
                    "flatten the value",
                )
            node_kind = Sequence if kind is SequenceStart else Mapping
            tag = event.tag
            if tag is None or tag == "!":
                tag = resolve(node_kind, None, event.implicit)
            node = node_kind(tag, [], mark, None, flow_style=event.flow_style)
            opened: Any = _UNBUILT
            if build and tag == (_SEQ_TAG if kind is SequenceStart else _MAP_TAG):
                opened = [] if kind is SequenceStart else {}
            stack.append(_Open(node, event.anchor, opened))
            if event.anchor is not None:
                open_anchors.add(event.anchor)
            continue
        elif kind is AliasEvent:
            mark = event.start_mark
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
            value, size, data = anchors[event.anchor]
            added_by_aliases += size
            if added_by_aliases > MAX_ALIAS_NODES:
                raise YamlProblem(
                    mark.line + 1,
                    mark.column + 1,
                    f"aliases expand this document by more than {MAX_ALIAS_NODES:,} nodes "
                    "(a YAML alias bomb?); write the values out or share less",
                )
        elif kind is yaml.SequenceEndEvent or kind is yaml.MappingEndEvent:
            done = stack.pop()
            done.node.end_mark = event.end_mark
            value, size, data = done.node, done.size, done.data
            if done.anchor is not None:
                open_anchors.discard(done.anchor)
                anchors[done.anchor] = (value, size, data)
        else:  # pragma: no cover - the parser guarantees the event order
            mark = event.start_mark
            raise YamlProblem(mark.line + 1, mark.column + 1, f"unexpected YAML event {event}")
        if not stack:
            return value, data
        parent = stack[-1]
        parent.size += size
        built = parent.data
        if type(parent.node) is Mapping:
            if parent.key is None:
                parent.key, parent.key_data = value, data
                continue
            key, key_data = parent.key, parent.key_data
            parent.node.value.append((key, value))
            parent.key = None
            if built is _UNBUILT:
                continue
            if data is _UNBUILT or key_data is _UNBUILT or type(key) is not Scalar:
                parent.data = _UNBUILT  # a collection as a key, a tag left to the loader
            else:
                built[key_data] = data
        else:
            parent.node.value.append(value)
            if built is _UNBUILT:
                continue
            if data is _UNBUILT:
                parent.data = _UNBUILT
            else:
                built.append(data)


def _whole(value: str, mark: Any, lone_surrogates: LoneSurrogates) -> str:
    """``value`` with escaped surrogate pairs joined (``json.dumps`` writes an emoji as
    ``"\\ud83d\\ude00"``, which YAML reads as two halves); a lone ``"\\ud800"`` makes a string
    no file or terminal can hold: refuse it here (or replace it, see ``LoneSurrogates``)."""

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
