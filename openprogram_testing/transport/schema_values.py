"""Values from a tool's JSON Schema (the spec the model sees), drawn from a pluggable source.

One walker over the schema serves two users: the hypothesis strategies of
``frontends.strategies.schema`` (draws from hypothesis, so examples shrink) and the
schema-driven provider (draws from a seeded ``random.Random``, so a plain test is deterministic
and needs no hypothesis).  Why not ``hypothesis-jsonschema``: see ``docs/decisions.md``
("schema-derived tool calls").

The walker covers what tool schemas use: ``type`` (one or a list), ``properties``/``required``/
``additionalProperties``, ``enum``/``const``, numeric bounds and ``multipleOf``, string lengths,
``pattern`` and common ``format``s, ``items``/``prefixItems``/``minItems``/``maxItems``/
``uniqueItems``, ``anyOf``/``oneOf``/``allOf`` and local ``$ref``.  Anything else is a
``SchemaGap`` naming the tool, the keyword and where it is; every generated value is checked
against the whole schema (jsonschema, compiled once), so a gap never yields invalid arguments: it
yields fewer of them, or none (``Infeasible``), never a crash.
"""

from __future__ import annotations

import math
import random
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from openprogram.tools import SCHEMA_ANNOTATIONS

ANNOTATIONS = SCHEMA_ANNOTATIONS | {"$schema", "$id", "$defs", "definitions", "discriminator"}
"""Keywords that do not constrain generated values: the runtime's annotations, plus the
identifiers and definition containers (``$ref`` targets are resolved before generation)."""
SUPPORTED = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "items",
        "prefixItems",
        "minItems",
        "maxItems",
        "uniqueItems",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
    }
)
FORMATS = frozenset(
    {"date-time", "date", "time", "email", "uri", "uuid", "hostname", "ipv4", "ipv6"}
)
INT_RANGE = 10**6
"""Integers without bounds are drawn from ±10**6: large enough to find size bugs, small enough
that a failing example reads at a glance (and shrinks towards 0 anyway)."""
MAX_EXTRA_ITEMS = 3
MAX_EXTRA_CHARS = 12
ALPHABET = string.ascii_letters + string.digits + " _-.,:/äé✓日"


@dataclass(frozen=True)
class SchemaGap:
    """A part of a tool's schema the generator cannot honour: ``keyword`` at ``path``."""

    tool: str
    keyword: str
    path: str
    reason: str

    @property
    def message(self) -> str:
        where = self.path or "the root"
        return (
            f"tool {self.tool!r}: cannot generate arguments for keyword {self.keyword!r} at "
            f"{where} ({self.reason}); generating without it and keeping only values the "
            "schema accepts"
        )


class Infeasible(Exception):
    """No value could be generated (a required part of the schema is beyond the generator)."""


class Source(Protocol):
    """Where the walker's choices come from (hypothesis draws or a seeded ``random.Random``)."""

    def integer(self, lo: int, hi: int) -> int: ...
    def number(self, lo: float, hi: float) -> float: ...
    def boolean(self) -> bool: ...
    def text(self, min_size: int, max_size: int) -> str: ...
    def regex(self, pattern: str) -> str: ...


class RandomSource:
    """Choices from a ``random.Random``: deterministic for a given seed, no hypothesis needed."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def integer(self, lo: int, hi: int) -> int:
        return self.rng.randint(lo, hi)

    def number(self, lo: float, hi: float) -> float:
        return round(self.rng.uniform(lo, hi), 3) if hi - lo > 0.01 else lo

    def boolean(self) -> bool:
        return self.rng.random() < 0.5

    def text(self, min_size: int, max_size: int) -> str:
        size = self.rng.randint(min_size, max_size)
        return "".join(self.rng.choice(ALPHABET) for _ in range(size))

    def regex(self, pattern: str) -> str:
        return simplest_match(pattern)


def simplest_match(pattern: str) -> str:
    """The simplest string matching ``pattern`` (hypothesis's own minimal example, computed once
    per pattern): a seeded source cannot invert a regular expression by itself."""
    cached = _SIMPLEST.get(pattern)
    if cached is None:
        from hypothesis import HealthCheck, find, settings
        from hypothesis import strategies as st

        quiet = settings(database=None, suppress_health_check=list(HealthCheck))
        cached = _SIMPLEST[pattern] = find(
            st.from_regex(pattern, fullmatch=True), lambda _: True, settings=quiet
        )
    return cached


_SIMPLEST: dict[str, str] = {}


class ArgumentGenerator:
    """Compiled once per tool schema: its gaps, and ``generate(source)`` for schema-valid
    arguments (``Infeasible`` when none can be made)."""

    def __init__(self, schema: Mapping[str, Any], tool: str = "tool") -> None:
        self.schema = schema
        self.tool = tool
        self.gaps: tuple[SchemaGap, ...] = tuple(_scan(schema, schema, tool))
        self._is_valid: Callable[[Any], bool] | None = None

    def is_valid(self, value: Any) -> bool:
        """Whether ``value`` satisfies the whole schema (jsonschema, compiled once)."""
        if self._is_valid is None:
            self._is_valid = compiled_validator(self.schema).is_valid
        return self._is_valid(value)

    def generate(self, source: Source) -> Any:
        """One value built from ``source`` (not yet checked against the whole schema)."""
        return _value(self.schema, self.schema, source, ())


def compiled_validator(schema: Mapping[str, Any]) -> Any:
    """A jsonschema Draft 2020-12 validator with format checking, like the loop's own."""
    from jsonschema import Draft202012Validator

    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


# -- scanning for gaps ------------------------------------------------------------------------


def _scan(
    node: Any, root: Mapping[str, Any], tool: str, path: str = "", refs: tuple[str, ...] = ()
) -> list[SchemaGap]:
    if not isinstance(node, Mapping):
        return []
    gaps = [
        SchemaGap(tool, key, path, "not supported by the generator")
        for key in node
        if key not in SUPPORTED and key not in ANNOTATIONS
    ]
    ref = node.get("$ref")
    if isinstance(ref, str):
        if ref in refs:
            return [*gaps, SchemaGap(tool, "$ref", path, f"recursive reference {ref}")]
        target = _resolve(root, ref)
        if target is None:
            return [*gaps, SchemaGap(tool, "$ref", path, f"unresolvable reference {ref}")]
        gaps += _scan(target, root, tool, path, (*refs, ref))
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in FORMATS:
        gaps.append(SchemaGap(tool, "format", path, f"unknown format {fmt!r}"))
    for key in ("properties",):
        for name, sub in (node.get(key) or {}).items():
            gaps += _scan(sub, root, tool, _join(path, name), refs)
    for key in ("items", "additionalProperties"):
        gaps += _scan(node.get(key), root, tool, _join(path, key), refs)
    for key in ("anyOf", "oneOf", "allOf", "prefixItems"):
        for i, sub in enumerate(node.get(key) or ()):
            gaps += _scan(sub, root, tool, _join(path, f"{key}.{i}"), refs)
    return gaps


def _join(path: str, part: str) -> str:
    return f"{path}.{part}" if path else part


def _resolve(root: Mapping[str, Any], ref: str) -> Any:
    if not ref.startswith("#"):
        return None
    node: Any = root
    for part in ref.lstrip("#").strip("/").split("/"):
        if not part:
            continue
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(node, Mapping) or part not in node:
            return None
        node = node[part]
    return node


# -- the walker -------------------------------------------------------------------------------

_ANY_KINDS = ("null", "boolean", "integer", "string")


def _value(node: Any, root: Mapping[str, Any], src: Source, refs: tuple[str, ...]) -> Any:
    if node is True or node == {}:
        return _of_type(_ANY_KINDS[src.integer(0, 3)], {}, root, src, refs)
    if not isinstance(node, Mapping):
        raise Infeasible("a schema that accepts nothing")
    ref = node.get("$ref")
    if isinstance(ref, str):
        target = _resolve(root, ref)
        if target is None or ref in refs:
            raise Infeasible(f"reference {ref}")
        rest = {k: v for k, v in node.items() if k != "$ref"}
        merged = _merge([target, rest]) if rest.keys() - ANNOTATIONS else target
        return _value(merged, root, src, (*refs, ref))
    if "const" in node:
        return node["const"]
    enum = node.get("enum")
    if isinstance(enum, list) and enum:
        return enum[src.integer(0, len(enum) - 1)]
    if node.get("allOf"):
        rest = {k: v for k, v in node.items() if k != "allOf"}
        return _value(_merge([*node["allOf"], rest]), root, src, refs)
    branches = node.get("anyOf") or node.get("oneOf")
    if branches:
        first = src.integer(0, len(branches) - 1)
        rest = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        for i in range(len(branches)):
            branch = branches[(first + i) % len(branches)]
            try:
                chosen = _merge([rest, branch]) if isinstance(branch, Mapping) else branch
                return _value(chosen, root, src, refs)
            except Infeasible:
                continue
        raise Infeasible("no branch of anyOf/oneOf")
    kind = node.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if isinstance(k, str)] or list(_ANY_KINDS)
        kind = kinds[src.integer(0, len(kinds) - 1)]
    if kind is None:
        kind = _implied_type(node)
    return _of_type(kind, node, root, src, refs)


def _implied_type(node: Mapping[str, Any]) -> str:
    if "properties" in node or "required" in node or "additionalProperties" in node:
        return "object"
    if "items" in node or "prefixItems" in node or "minItems" in node:
        return "array"
    if {"minLength", "maxLength", "pattern", "format"} & node.keys():
        return "string"
    if {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"} & node.keys():
        return "number"
    return "string"


def _merge(parts: Sequence[Any]) -> dict[str, Any]:
    """``allOf`` (and a ``$ref`` with siblings) as one schema: properties and required lists
    united, other keywords from the last part that has them."""
    merged: dict[str, Any] = {}
    for part in parts:
        if not isinstance(part, Mapping):
            continue
        for key, value in part.items():
            if key == "properties" and isinstance(value, Mapping):
                merged["properties"] = {**merged.get("properties", {}), **value}
            elif key == "required" and isinstance(value, list):
                merged["required"] = [*merged.get("required", []), *value]
            else:
                merged[key] = value
    return merged


def _of_type(
    kind: Any, node: Mapping[str, Any], root: Mapping[str, Any], src: Source, refs: tuple[str, ...]
) -> Any:
    if kind == "object":
        return _object(node, root, src, refs)
    if kind == "array":
        return _array(node, root, src, refs)
    if kind == "string":
        return _string(node, src)
    if kind == "integer":
        return _integer(node, src)
    if kind == "number":
        return _number(node, src)
    if kind == "boolean":
        return src.boolean()
    if kind == "null":
        return None
    raise Infeasible(f"type {kind!r}")


def _object(
    node: Mapping[str, Any], root: Mapping[str, Any], src: Source, refs: tuple[str, ...]
) -> dict[str, Any]:
    properties = node.get("properties") or {}
    required = [r for r in node.get("required") or () if isinstance(r, str)]
    out: dict[str, Any] = {}
    for name, sub in properties.items():
        if name in required:
            out[name] = _value(sub, root, src, refs)
        elif src.boolean():
            try:
                out[name] = _value(sub, root, src, refs)
            except Infeasible:
                pass  # an optional property the generator cannot make is left out
    for name in required:
        if name not in out:
            extra = node.get("additionalProperties", True)
            out[name] = _value(extra if isinstance(extra, Mapping) else True, root, src, refs)
    return out


def _array(
    node: Mapping[str, Any], root: Mapping[str, Any], src: Source, refs: tuple[str, ...]
) -> list[Any]:
    prefix = list(node.get("prefixItems") or ())
    items = node.get("items", True)
    lo = int(node.get("minItems", 0))
    hi = int(node.get("maxItems", max(lo, len(prefix)) + MAX_EXTRA_ITEMS))
    size = src.integer(lo, max(lo, hi))
    out = [_value(prefix[i], root, src, refs) for i in range(min(size, len(prefix)))]
    unique = bool(node.get("uniqueItems"))
    attempts = 0
    while len(out) < size and items is not False and attempts < size + MAX_EXTRA_ITEMS:
        attempts += 1
        value = _value(items, root, src, refs)
        if not (unique and value in out):  # a repeat is dropped; the whole-schema check decides
            out.append(value)
    return out


def _string(node: Mapping[str, Any], src: Source) -> str:
    fmt = node.get("format")
    if fmt in FORMATS:
        return _formatted(fmt, src)
    pattern = node.get("pattern")
    if isinstance(pattern, str):
        return src.regex(pattern)
    lo = int(node.get("minLength", 0))
    hi = int(node.get("maxLength", lo + MAX_EXTRA_CHARS))
    return src.text(lo, max(lo, hi))


def _integer(node: Mapping[str, Any], src: Source) -> int:
    lo, hi = _bounds(node, integer=True)
    step = node.get("multipleOf")
    if isinstance(step, int) and step > 0:
        first, last = math.ceil(lo / step), math.floor(hi / step)
        if first > last:
            raise Infeasible("no multiple of multipleOf in range")
        return src.integer(first, last) * step
    if lo > hi:
        raise Infeasible("an empty integer range")
    return src.integer(int(lo), int(hi))


def _number(node: Mapping[str, Any], src: Source) -> float | int:
    step = node.get("multipleOf")
    if isinstance(step, (int, float)) and step > 0:
        lo, hi = _bounds(node, integer=False)
        first, last = math.ceil(lo / step), math.floor(hi / step)
        if first > last:
            raise Infeasible("no multiple of multipleOf in range")
        return src.integer(int(first), int(last)) * step
    lo, hi = _bounds(node, integer=False)
    if lo > hi:
        raise Infeasible("an empty number range")
    return src.number(lo, hi)


def _bounds(node: Mapping[str, Any], *, integer: bool) -> tuple[float, float]:
    """The closed range a number must fall in (exclusive bounds nudged inwards)."""
    lo: float = -INT_RANGE
    hi: float = INT_RANGE
    if isinstance(node.get("minimum"), (int, float)):
        lo = node["minimum"]
    if isinstance(node.get("maximum"), (int, float)):
        hi = node["maximum"]
    low, high = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    if isinstance(low, (int, float)):
        lo = max(lo, low + (1 if integer else 1e-6 * max(1.0, abs(low))))
    if isinstance(high, (int, float)):
        hi = min(hi, high - (1 if integer else 1e-6 * max(1.0, abs(high))))
    if integer:
        return math.ceil(lo), math.floor(hi)
    return lo, hi


def _formatted(fmt: str, src: Source) -> str:
    if fmt == "date":
        return f"{src.integer(1970, 2099):04d}-{src.integer(1, 12):02d}-{src.integer(1, 28):02d}"
    if fmt == "time":
        return f"{src.integer(0, 23):02d}:{src.integer(0, 59):02d}:{src.integer(0, 59):02d}Z"
    if fmt == "date-time":
        return f"{_formatted('date', src)}T{_formatted('time', src)}"
    if fmt == "email":
        return f"{_word(src)}@{_word(src)}.com"
    if fmt == "hostname":
        return f"{_word(src)}.example.com"
    if fmt == "uri":
        return f"https://{_word(src)}.example.com/{_word(src)}"
    if fmt == "uuid":
        digits = "".join(f"{src.integer(0, 15):x}" for _ in range(32))
        return f"{digits[:8]}-{digits[8:12]}-4{digits[13:16]}-a{digits[17:20]}-{digits[20:]}"
    if fmt == "ipv4":
        return ".".join(str(src.integer(0, 255)) for _ in range(4))
    return ":".join(f"{src.integer(0, 65535):x}" for _ in range(8))  # ipv6


def _word(src: Source) -> str:
    return "".join(string.ascii_lowercase[src.integer(0, 25)] for _ in range(src.integer(1, 8)))


__all__ = [
    "ArgumentGenerator",
    "Infeasible",
    "RandomSource",
    "SchemaGap",
    "Source",
    "compiled_validator",
    "simplest_match",
]
