"""Reading a scenario file's YAML safely: bytes to text, text to a node tree with positions.

A scenario file is hostile input.  The bounded, iterative reader is ``openprogram_testing.
safeyaml`` (depth, alias and surrogate rules, shared with the cassette loader); this module adds
what is particular to scenario files:

- **Encodings**: UTF-8 (a byte-order mark is skipped); UTF-16/32 with a byte-order mark are
  decoded; invalid UTF-8 and NUL characters are errors at their line and column.
- Flow lists of ``expect.events`` keep a token with a comma whole (``merge_flow_tokens``).
- Node lookups for positions and the duplicate-key walk (each node visited once).

Errors are ``YamlProblem`` (line, column, message) for the loader to place in its report.
"""

from __future__ import annotations

import codecs
from typing import Any

from openprogram_testing.base.safeyaml import MAX_ALIAS_NODES, MAX_DEPTH, YamlProblem, text_position
from openprogram_testing.base.safeyaml import read as read_yaml


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


def read(text: str) -> tuple[Any, Any]:
    """The node tree (for positions) and the data of the single document in ``text``
    (``(None, None)`` for an empty file)."""
    return read_yaml(text, adjust=merge_flow_tokens)


def merge_flow_tokens(root: Any) -> bool:
    """``expect.events: [..., tool_end(refund, skipped), ...]``: a flow list splits that token
    at its comma.  Join the plain pieces back (``tool_end(refund`` + ``skipped)``), so the list
    means what it reads as; a piece that stays unbalanced is reported by the token check.
    Says whether it joined any (the data is then built again from the nodes)."""
    import yaml

    events, resolved = node_at(root, ("expect", "events"))
    if len(resolved) != 2:
        return False
    if not isinstance(events, yaml.SequenceNode) or not events.flow_style:
        return False
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
    if len(merged) == len(events.value):
        return False
    events.value[:] = merged
    return True


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
    "header",
    "merge_flow_tokens",
    "node_at",
    "read",
    "text_position",
]


def header(text: str) -> tuple[str | None, tuple[str, ...]] | None:
    """The top-level ``name`` and ``usefixtures`` of a scenario's YAML ``text`` read from the
    parser's events alone (nothing built, no value checked), or ``None`` where that reading
    could differ from the whole load's: anything but a mapping at the top, a YAML error, an
    alias or a merge key at the top level, a tag or text beyond ASCII in those two fields, or
    ``usefixtures`` not a list of strings.  The last ``name`` wins (a repeated key makes the
    file invalid, and its item is named so wherever it is collected).

    What a collector needs to name an item and set its fixtures before the file is loaded."""
    import yaml

    loader: Any = None
    try:
        loader = yaml.CSafeLoader(text) if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader(text)
        get = loader.get_event
        get()  # stream start
        if not loader.check_event(yaml.DocumentStartEvent):
            return None
        get()
        if not isinstance(get(), yaml.MappingStartEvent):
            return None
        name: str | None = None
        fixtures: tuple[str, ...] = ()
        depth = 0  # below the top-level mapping
        key: str | None = None  # the top-level key whose value comes next
        items: list[str] | None = None
        Scalar, Alias = yaml.ScalarEvent, yaml.AliasEvent
        Opens = (yaml.SequenceStartEvent, yaml.MappingStartEvent)
        Closes = (yaml.SequenceEndEvent, yaml.MappingEndEvent)
        while True:
            event = get()
            kind = type(event)
            if depth == 0:
                if kind is yaml.MappingEndEvent:
                    break
                if key is None:  # a top-level key
                    if kind is not Scalar:
                        if kind is Alias:
                            return None
                        depth = 1  # a collection as a key: skipped with its value
                        key = ""
                        continue
                    if event.value == "<<":  # a merge key could bring a name in
                        return None
                    key = event.value
                    continue
                value_key, key = key, None
                if value_key in ("name", "usefixtures") and (
                    kind is Alias or event.tag not in (None, "!")
                ):
                    return None
                if kind in Opens:
                    depth = 1
                    if value_key == "usefixtures" and kind is yaml.SequenceStartEvent:
                        items = []
                    elif value_key == "usefixtures":
                        return None
                    elif value_key == "name":
                        return None
                    key = None
                    continue
                if value_key == "name" and kind is Scalar:
                    value = event.value
                    if not value.isascii():
                        return None
                    plain = not event.style
                    resolved = loader.resolve(yaml.ScalarNode, value, event.implicit)
                    if plain and resolved == "tag:yaml.org,2002:null":
                        name = None
                    elif resolved != "tag:yaml.org,2002:str":
                        return None
                    else:
                        name = value or None
                elif value_key == "usefixtures":
                    if (
                        kind is Scalar
                        and not event.style
                        and loader.resolve(yaml.ScalarNode, event.value, event.implicit)
                        == "tag:yaml.org,2002:null"
                    ):
                        fixtures = ()
                    else:
                        return None
                continue
            if kind in Opens:
                depth += 1
                if items is not None:
                    return None  # a collection inside usefixtures
            elif kind in Closes:
                depth -= 1
                if depth == 0 and items is not None:
                    fixtures, items = tuple(items), None
            elif items is not None:
                if kind is not Scalar or event.tag not in (None, "!") or not event.value.isascii():
                    return None
                if loader.resolve(yaml.ScalarNode, event.value, event.implicit) != (
                    "tag:yaml.org,2002:str"
                ):
                    return None
                items.append(event.value)
        get()  # document end
        if not loader.check_event(yaml.StreamEndEvent):
            return None
        return name, fixtures
    except yaml.YAMLError:
        return None
    finally:
        if loader is not None:
            loader.dispose()
