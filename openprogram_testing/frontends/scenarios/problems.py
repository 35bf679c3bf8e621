"""Problems of a scenario file, placed at ``file:line:column``.

pydantic reports an error at a field path (``("tools", 3, "parameters")``); the loader keeps the
YAML node tree, so every path is mapped back to the mark of the node it names.  Union branches
(``str | TurnDef``) make pydantic report one error per branch: the noise is folded into the one
message a person needs ("expected a string or a turn mapping").
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from .model import MODEL_NAMES, Scenario
from .yamlread import node_at


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem of a scenario file, with its 1-based position."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}:{self.column}: {where}{self.message}"


class ScenarioError(Exception):
    """A scenario file is unusable.  ``str()`` lists every problem as
    ``file:line:column: field.path: message``."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def pos(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


def _node_kind(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the scalar {node.value!r}"


def _key_node(root: Any, loc: tuple[Any, ...]) -> Any:
    """The key node of the last element of ``loc`` (for unknown keys: point at the key)."""
    import yaml

    parent, _ = node_at(root, loc[:-1])
    if isinstance(parent, yaml.MappingNode):
        for key, _value in parent.value:
            if isinstance(key, yaml.ScalarNode) and key.value == loc[-1]:
                return key
    return parent


def dotted(loc: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_FRIENDLY = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer, got a number with a fraction",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
}


def validation_problems(file: str, root: Any, exc: ValidationError) -> list[Problem]:
    import yaml

    entries: list[tuple[tuple[Any, ...], list[Any], Any, Any, str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        node, resolved = node_at(root, loc)
        # Did the error come from a union branch?  Then the first unresolved string is its tag.
        tag_index = _union_tag_index(root, loc)
        branch = loc[tag_index] if tag_index is not None else None
        message = _message(dict(err), loc, node)
        if err["type"] == "extra_forbidden":
            node = _key_node(root, loc)
            resolved = list(loc)
        entries.append((loc, resolved, branch, node, message))

    # Union noise: for a mapping, keep the errors of the model branch; for a scalar, merge the
    # branches' complaints into one "expected one of" line.
    by_point: dict[tuple[Any, ...], list[int]] = {}
    for i, (loc, _resolved, branch, _node, _msg) in enumerate(entries):
        if branch is not None:
            point = loc[: loc.index(branch)]
            by_point.setdefault(point, []).append(i)
    drop: set[int] = set()
    merged: dict[int, str] = {}
    for point, indices in by_point.items():
        node, _ = node_at(root, point)
        is_mapping = isinstance(node, yaml.MappingNode)
        model_like = [i for i in indices if _is_model_tag(entries[i][2])]
        scalar_like = [i for i in indices if not _is_model_tag(entries[i][2])]
        if is_mapping and model_like:
            drop.update(scalar_like)
            # Several model branches: keep the one whose errors go deepest (the intended one).
            branches = {entries[i][2] for i in model_like}
            if len(branches) > 1:
                best = max(
                    branches,
                    key=lambda b: max(len(entries[i][0]) for i in model_like if entries[i][2] == b),
                )
                drop.update(i for i in model_like if entries[i][2] != best)
        elif not is_mapping and scalar_like:
            at_point = [i for i in indices if len(entries[i][0]) == len(point) + 1]
            if len(at_point) > 1:
                names = [_expected_name(entries[i][2]) for i in at_point]
                merged[at_point[0]] = "expected " + " or ".join(dict.fromkeys(names))
                drop.update(at_point[1:])
    problems: list[Problem] = []
    seen: set[tuple[int, int, str, str]] = set()
    for i, (loc, _resolved, branch, node, message) in enumerate(entries):
        if i in drop:
            continue
        message = merged.get(i, message)
        clean = tuple(p for p in loc if p != branch)
        line, col = pos(node)
        key = (line, col, dotted(clean), message)
        if key in seen:
            continue
        seen.add(key)
        problems.append(Problem(file, line, col, dotted(clean), message))
    problems.sort(key=lambda p: (p.line, p.column))
    return problems


def _union_tag_index(root: Any, loc: tuple[Any, ...]) -> int | None:
    """Index in ``loc`` of a pydantic union-branch tag (a string that names no field)."""
    current: Any = Scenario
    for i, part in enumerate(loc):
        current = _unwrap_optional(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else Any
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = model_field(current, part)
            if field is None:
                return None  # an unknown key: extra_forbidden, not a tag
            current = field.annotation
            continue
        members = _union_members(current)
        if members:
            for m in members:
                if _tag_names(m, part):
                    current = m
                    break
            return i
        return None
    return None


def _unwrap_optional(tp: Any) -> Any:
    members = _union_members(tp)
    if members:
        rest = [m for m in members if m is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


def _union_members(tp: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return ()


def _tag_names(member: Any, tag: str) -> bool:
    name = getattr(member, "__name__", str(member))
    return name in tag


def _is_model_tag(tag: Any) -> bool:
    if not isinstance(tag, str):
        return False
    return any(n in tag for n in MODEL_NAMES)


def _expected_name(tag: Any) -> str:
    if not isinstance(tag, str):
        return "a value"
    if tag == "str":
        return "a string"
    if tag.startswith("literal["):
        return "one of " + tag[len("literal[") : -1].replace("'", "").replace(",", ", ")
    for name, what in MODEL_NAMES.items():
        if name in tag:
            return what
    return tag


def _message(err: dict[str, Any], loc: tuple[Any, ...], node: Any) -> str:
    import yaml

    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        key = loc[-1]
        hint = ""
        if allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            hint += f"; allowed keys: {', '.join(allowed)}"
        return f"unknown key {key!r}{hint}"
    if kind == "string_pattern_mismatch":  # the only patterned strings are import paths
        return (
            f"expected an import path like 'package.module:attribute', got {_describe_node(node)}"
        )
    if kind == "missing":
        return f"missing required field {loc[-1]!r}"
    if kind == "value_error":
        msg = str(err.get("msg", ""))
        return msg.removeprefix("Value error, ")
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        got = node.value if isinstance(node, yaml.ScalarNode) else _node_kind(node)
        return f"expected {expected}, got {got!r}"
    base = _FRIENDLY.get(kind)
    if base is not None:
        return f"{base}, got {_describe_node(node)}"
    return str(err.get("msg", kind))


def _describe_node(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return _node_kind(node)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model that sits at ``loc`` (union tags pick the branch)."""
    current: Any = Scenario
    for part in loc:
        current = _unwrap_optional(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else Any
            continue
        members = _union_members(current)
        if members:
            picked = [m for m in members if _tag_names(m, part)]
            if picked:
                current = picked[0]
                continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = model_field(current, part)
            if field is None:
                return []
            current = field.annotation
            continue
        return []
    current = _unwrap_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return field_names(current)
    models = [
        m for m in _union_members(current) if isinstance(m, type) and issubclass(m, BaseModel)
    ]
    return field_names(models[0]) if len(models) == 1 else []


def model_field(model: type[BaseModel], key: str) -> Any:
    """The field a YAML key names (by alias first: ``import`` is ``import_``)."""
    for name, info in model.model_fields.items():
        if info.alias == key or (info.alias is None and name == key):
            return info
    return None


def field_names(model: type[BaseModel]) -> list[str]:
    """The YAML keys of ``model``."""
    return [info.alias or name for name, info in model.model_fields.items()]


def positioned(file: str, root: Any, problems: list[tuple[tuple[Any, ...], str]]) -> list[Problem]:
    """``(field path, message)`` pairs placed at the nodes they name."""
    out = []
    for loc, message in problems:
        node, _ = node_at(root, loc)
        out.append(Problem(file, *pos(node), dotted(loc), message))
    return out


__all__ = [
    "Problem",
    "ScenarioError",
    "dotted",
    "field_names",
    "model_field",
    "node_at",
    "pos",
    "positioned",
    "validation_problems",
]
