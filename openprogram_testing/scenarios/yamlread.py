"""Reading a scenario file's YAML safely: bytes to text, text to a node tree with positions.

A scenario file is hostile input.  Everything here is bounded and iterative, so no file can hang
``validate``/``run``/collection or end in a ``RecursionError``:

- **Encodings**: UTF-8 (a byte-order mark is skipped); UTF-16/32 with a byte-order mark are
  decoded; invalid UTF-8 and NUL characters are errors at their line and column.
- **Depth**: collections nest at most ``MAX_DEPTH`` levels.
- **Aliases**: what aliases stand for may add at most ``MAX_ALIAS_NODES`` nodes to the document
  (a "billion laughs" file is refused at the alias that crosses the limit), and an alias to a
  node that is still open (a recursive structure) is refused.
- The tree is composed from the parser's events by a loop (libyaml's parser when available),
  and the duplicate-key walk visits each node once.

Errors are ``YamlProblem`` (line, column, message) for the loader to place in its report.
"""

from __future__ import annotations

import codecs
from dataclasses import dataclass, field
from typing import Any

MAX_DEPTH = 100
"""Deepest nesting of mappings and lists a scenario file may use."""

MAX_ALIAS_NODES = 100_000
"""How many nodes aliases may add to a document, counting what each alias stands for."""


class YamlProblem(Exception):
    """The file is not usable YAML; ``line``/``column`` are 1-based."""

    def __init__(self, line: int, column: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.column = column
        self.message = message


def decode(data: bytes) -> str:
    """The text of a scenario file (see the module docstring for the encodings accepted)."""
    boms = (
        (codecs.BOM_UTF32_LE, "utf-32-le"),
        (codecs.BOM_UTF32_BE, "utf-32-be"),
        (codecs.BOM_UTF8, "utf-8"),
        (codecs.BOM_UTF16_LE, "utf-16-le"),
        (codecs.BOM_UTF16_BE, "utf-16-be"),
    )
    encoding, body = "utf-8", data
    for bom, name in boms:
        if data.startswith(bom):
            encoding, body = name, data[len(bom) :]
            break
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError as exc:
        line, column = _byte_position(body, exc.start)
        bad = body[exc.start : exc.start + 1].hex()
        raise YamlProblem(
            line,
            column,
            f"the file is not valid {encoding.upper()} (byte 0x{bad}): save it as UTF-8",
        ) from None
    nul = text.find("\x00")
    if nul >= 0:
        line, column = text_position(text, nul)
        hint = " (a UTF-16 file without a byte-order mark?)" if encoding == "utf-8" else ""
        raise YamlProblem(line, column, f"NUL character in the file{hint}: save it as UTF-8")
    return text


def _byte_position(data: bytes, offset: int) -> tuple[int, int]:
    line_start = data.rfind(b"\n", 0, offset) + 1
    return data.count(b"\n", 0, offset) + 1, offset - line_start + 1


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


def read(text: str) -> tuple[Any, Any]:
    """The node tree (for positions) and the data of the single document in ``text``
    (``(None, None)`` for an empty file)."""
    import yaml

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return _read_with(fast, text)
        except YamlProblem:
            pass  # read again with the pure-Python parser, so messages read the same everywhere
    return _read_with(yaml.SafeLoader, text)


def _read_with(loader_class: Any, text: str) -> tuple[Any, Any]:
    import yaml

    loader: Any = None
    try:
        loader = loader_class(text)  # the reader checks every character here
        loader.get_event()  # stream start
        if loader.check_event(yaml.StreamEndEvent):
            return None, None
        loader.get_event()  # document start
        node = _compose(loader)
        loader.get_event()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            mark = loader.peek_event().start_mark
            raise YamlProblem(
                mark.line + 1, mark.column + 1, "expected one YAML document, found another"
            )
        merge_flow_tokens(node)
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


def _compose(loader: Any) -> Any:
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
            text = event.value if event.value.isascii() else _whole(event.value, mark)
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


def _whole(value: str, mark: Any) -> str:
    """``value`` with escaped surrogate pairs joined (``json.dumps`` writes an emoji as
    ``"\\ud83d\\ude00"``, which YAML reads as two halves); a lone ``"\\ud800"`` makes a string
    no file or terminal can hold: refuse it here."""
    from openprogram.texts import rejoined

    value = rejoined(value)
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


def merge_flow_tokens(root: Any) -> None:
    """``expect.events: [..., tool_end(refund, skipped), ...]``: a flow list splits that token
    at its comma.  Join the plain pieces back (``tool_end(refund`` + ``skipped)``), so the list
    means what it reads as; a piece that stays unbalanced is reported by the token check."""
    import yaml

    events, resolved = node_at(root, ("expect", "events"))
    if len(resolved) != 2:
        return
    if not isinstance(events, yaml.SequenceNode) or not events.flow_style:
        return
    merged: list[Any] = []
    pending: Any = None
    for item in events.value:
        plain = isinstance(item, yaml.ScalarNode) and not item.style  # libyaml says
        if pending is not None and plain:
            value = f"{pending.value}, {item.value}"
            pending = yaml.ScalarNode(
                pending.tag, value, pending.start_mark, item.end_mark, style=None
            )
            if value.count("(") <= value.count(")"):
                merged.append(pending)
                pending = None
            continue
        if pending is not None:
            merged.append(pending)
            pending = None
        if plain and item.value.count("(") > item.value.count(")"):
            pending = item
        else:
            merged.append(item)
    if pending is not None:
        merged.append(pending)
    events.value[:] = merged


def node_at(root: Any, loc: tuple[Any, ...]) -> tuple[Any, list[Any]]:
    """The deepest node ``loc`` reaches, and the part of ``loc`` that named real nodes (union
    tags such as ``'TurnDef'`` and keys of missing fields are skipped)."""
    import yaml

    node = root
    resolved: list[Any] = []
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    node = value
                    resolved.append(part)
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                node = node.value[part]
                resolved.append(part)
    return node, resolved


def duplicate_keys(root: Any) -> list[tuple[tuple[Any, ...], Any]]:
    """``(field path, key node)`` of every repeated mapping key; each node is visited once,
    however many aliases point at it."""
    import yaml

    found: list[tuple[tuple[Any, ...], Any]] = []
    seen_nodes: set[int] = set()
    todo: list[tuple[Any, tuple[Any, ...]]] = [(root, ())]
    while todo:
        node, loc = todo.pop()
        if id(node) in seen_nodes:
            continue
        seen_nodes.add(id(node))
        if isinstance(node, yaml.MappingNode):
            keys: set[str] = set()
            for key, value in node.value:
                k = key.value if isinstance(key, yaml.ScalarNode) else None
                if k is not None and k in keys:
                    found.append(((*loc, k), key))
                if k is not None:
                    keys.add(k)
                todo.append((value, (*loc, k)))
        elif isinstance(node, yaml.SequenceNode):
            todo.extend((item, (*loc, i)) for i, item in enumerate(node.value))
    found.sort(key=lambda entry: (entry[1].start_mark.line, entry[1].start_mark.column))
    return found


__all__ = [
    "MAX_ALIAS_NODES",
    "MAX_DEPTH",
    "YamlProblem",
    "decode",
    "duplicate_keys",
    "merge_flow_tokens",
    "node_at",
    "read",
    "text_position",
]
