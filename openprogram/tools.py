"""Tool adapters: the three tool forms, argument validation, and result shaping.

Every tool handed to the loop is normalised into an ``AgentTool``: its spec, a validator compiled
once (JSON Schema validators are cached by schema), and a flag set saying which optional keywords
its ``execute`` accepts.  Nothing here is redone per call, and a tool object offered again in a
later run (unchanged) gets the ``AgentTool`` it got before.

Tool forms accepted by ``as_agent_tool``:

1. an object with ``to_agent_tool()`` (what ``@function``/``@agentic_function`` produce);
2. a dict ``{"spec": {"name", "description", "parameters"}, "execute": callable}``;
3. any object with ``.spec`` and ``.execute``.

``execute(arguments, **extras)`` receives the validated arguments as a dict and, only if its
signature names them (or takes ``**kwargs``), ``tool_call_id``, ``cancel`` and ``on_update``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import reprlib
import types
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .texts import (
    CANCELLED_TEXT,
    NOT_JSON_TEXT,
    SKIPPED_TEXT,
    TOO_DEEP_TEXT,
    clipped_repr,
    not_object_text,
    validation_header,
)
from .types import ImageContent, TextContent, ToolResultMessage, ToolSpec, UserContent

ValidationProblem = tuple[str, str]
"""``(path, message)``; ``path`` is dotted (``items.0.name``) or ``"root"``."""

Validator = Callable[[dict[str, Any]], tuple[dict[str, Any], list[ValidationProblem]]]
"""Returns the arguments to pass to ``execute`` (possibly coerced) and the problems found."""


@dataclass(slots=True)
class ToolResult:
    """An explicit tool result: several content blocks, structured ``details``, ``is_error``."""

    content: str | Sequence[UserContent] = ""
    details: Any = None
    is_error: bool = False


class ToolError(Exception):
    """Raise from a tool to report a failure to the model (same as any ``Exception``)."""


@dataclass(slots=True)
class AgentTool:
    """A tool ready for the loop.  Build with ``as_agent_tool``."""

    spec: ToolSpec
    execute: Callable[..., Any]
    validate: Validator
    is_async: bool = False
    accepts: frozenset[str] = frozenset()
    source: Any = None
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.spec.name


_EXTRAS = ("tool_call_id", "cancel", "on_update")


def accepted_extras(fn: Callable[..., Any]) -> frozenset[str]:
    """Which of ``tool_call_id``/``cancel``/``on_update`` ``fn`` wants passed."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return frozenset()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return frozenset(_EXTRAS)
    return frozenset(n for n in _EXTRAS if n in params)


def is_async_callable(fn: Any) -> bool:
    """Whether calling ``fn`` returns a coroutine (partials and async ``__call__`` included)."""
    while isinstance(fn, functools.partial):
        fn = fn.func
    if inspect.iscoroutinefunction(fn):
        return True
    call = getattr(type(fn), "__call__", None)  # noqa: B004 - an async __call__ on the class
    return call is not None and inspect.iscoroutinefunction(call)


_CALLABLE_INFO: weakref.WeakKeyDictionary[types.CodeType, tuple[bool, frozenset[str]]] = (
    weakref.WeakKeyDictionary()
)


def _callable_info(fn: Any) -> tuple[bool, frozenset[str]]:
    """``(is_async_callable(fn), accepted_extras(fn))``, remembered per code object.

    Tools are normalised on every run and ``inspect.signature`` was the largest part of that
    (~40 us of a ~1 ms three-round run).  For a plain function with no extra attributes (no
    ``__wrapped__``/``__signature__``/coroutine marker) both answers follow from its code
    object alone (parameter names and kinds, the coroutine flag), so they are computed once per
    code object: every closure made by the same ``def`` hits.  Other callables (bound methods,
    partials, decorated functions, objects) are inspected every time, as before.
    """
    if type(fn) is types.FunctionType and not fn.__dict__:
        code = fn.__code__
        info = _CALLABLE_INFO.get(code)
        if info is None:
            info = _CALLABLE_INFO[code] = (is_async_callable(fn), accepted_extras(fn))
        return info
    return is_async_callable(fn), accepted_extras(fn)


# -- JSON Schema validation -------------------------------------------------------------------

_SCHEMA_CACHE: dict[str, Validator] = {}


def json_schema_validator(schema: Mapping[str, Any]) -> Validator:
    """A validator for ``schema`` (Draft 2020-12, format checking on), compiled once per schema."""
    # repr, not a sorted json.dumps: equal reprs mean equal schemas (it tells 1 from "1", which
    # json.dumps does not) and it is several times cheaper on this per-run path.
    key = repr(schema)
    cached = _SCHEMA_CACHE.get(key)
    if cached is not None:
        return cached
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"invalid JSON Schema for tool parameters: {exc.message}") from None
    compiled = Draft202012Validator(schema, format_checker=format_checker())
    accepts = _fast_acceptor(schema)

    def validate(args: dict[str, Any]) -> tuple[dict[str, Any], list[ValidationProblem]]:
        if accepts is not None and accepts(args):
            return args, []
        errors = sorted(
            compiled.iter_errors(args), key=lambda e: (list(map(str, e.absolute_path)), e.message)
        )
        if not errors:
            return args, []
        return args, [(format_path(e.absolute_path), e.message) for e in errors]

    _SCHEMA_CACHE[key] = validate
    return validate


_FORMAT_CHECKER: Any = None


def format_checker() -> Any:
    """jsonschema's Draft 2020-12 format checker, plus ``iri``/``iri-reference`` when jsonschema
    has no checker for them (they need ``rfc3987``, GPL, or ``rfc3987-syntax``, seconds to
    import): an IRI is checked as the URI it maps to (non-ASCII characters percent-encoded as
    UTF-8, the RFC 3987 mapping) by ``rfc3986-validator``."""
    global _FORMAT_CHECKER
    if _FORMAT_CHECKER is not None:
        return _FORMAT_CHECKER
    from jsonschema import Draft202012Validator, FormatChecker

    checker = FormatChecker(())
    checker.checkers = dict(Draft202012Validator.FORMAT_CHECKER.checkers)
    try:
        from rfc3986_validator import validate_rfc3986
    except ImportError:  # pragma: no cover - a declared dependency
        validate_rfc3986 = None
    if validate_rfc3986 is not None:
        for name, rule in (("iri", "URI"), ("iri-reference", "URI_reference")):
            if name not in checker.checkers:

                def check(instance: object, rule: str = rule) -> bool:
                    if not isinstance(instance, str):
                        return True
                    return validate_rfc3986(_iri_to_uri(instance), rule=rule) is not None

                checker.checks(name)(check)
    _FORMAT_CHECKER = checker
    return checker


def _iri_to_uri(text: str) -> str:
    from urllib.parse import quote

    return "".join(c if c.isascii() else quote(c, safe="") for c in text)


SCHEMA_ANNOTATIONS = frozenset(
    {
        "title",
        "description",
        "default",
        "examples",
        "deprecated",
        "readOnly",
        "writeOnly",
        "$comment",
    }
)
"""JSON Schema keywords that describe a value without constraining it (Draft 2020-12's
meta-data vocabulary and ``$comment``): a validator, or a value generator, may skip them."""
_OBJECT_KEYWORDS = SCHEMA_ANNOTATIONS | {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "$schema",
}
_TYPE_CHECKS: dict[str, frozenset[type]] = {
    "string": frozenset({str}),
    "integer": frozenset({int}),
    "number": frozenset({int, float}),
    "boolean": frozenset({bool}),
    "null": frozenset({type(None)}),
}
"""The exact Python types a JSON value of each scalar type parses to: ``type(v) in types`` is
a set lookup in C (a function per type cost a Python call per argument per tool call)."""


def _fast_acceptor(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """A quick check for the common flat schema (an object of scalar-typed properties).

    Profiling showed jsonschema's ``iter_errors`` costing ~35 µs per call, more than the rest of
    a loop round.  This check is conservative: it only ever *accepts* arguments that jsonschema
    accepts too (it is stricter, e.g. ``1.0`` is not an ``integer`` here), and anything it does
    not accept goes through jsonschema, so problems and their messages are unchanged.  ``None``
    when the schema uses anything beyond ``type``/``properties``/``required``/
    ``additionalProperties`` and annotations (then jsonschema always runs).
    """
    if not schema.keys() <= _OBJECT_KEYWORDS or schema.get("type") != "object":
        return None
    properties = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return None
    if type(extra) is not bool:
        return None
    checks: dict[str, frozenset[type] | None] = {}
    for name, sub in properties.items():
        if not isinstance(sub, Mapping) or not sub.keys() <= SCHEMA_ANNOTATIONS | {"type"}:
            return None
        kind = sub.get("type")
        if kind is None:
            checks[name] = None
        elif isinstance(kind, str) and kind in _TYPE_CHECKS:
            checks[name] = _TYPE_CHECKS[kind]
        else:
            return None
    required_names = tuple(required)

    def accepts(args: Any) -> bool:
        if type(args) is not dict:
            return False
        for name in required_names:
            if name not in args:
                return False
        for name, value in args.items():
            if name in checks:
                types_ = checks[name]
                if types_ is not None and type(value) not in types_:
                    return False
            elif not extra:
                return False
        return True

    return accepts


def format_path(path: Sequence[Any]) -> str:
    return ".".join(str(p) for p in path) if path else "root"


def validation_failed_text(name: str, problems: Sequence[ValidationProblem], raw: Any) -> str:
    """The invalid-arguments result: a header, one line per problem, the raw arguments.

    Arguments too deep (or too odd) for ``json.dumps`` are shown abbreviated by ``reprlib``
    rather than failing the call."""
    lines = [validation_header(name)]
    lines.extend(f"  - {path}: {message}" for path, message in problems)
    lines.append("")
    lines.append("Received arguments:")
    if isinstance(raw, str):
        lines.append(raw)
    else:
        try:
            lines.append(json.dumps(raw, indent=2, default=str))
        except (TypeError, ValueError, RecursionError):
            lines.append(reprlib.repr(raw))
    return "\n".join(lines)


_JSON_KINDS: dict[type, str] = {
    list: "an array",
    str: "a string",
    int: "a number",
    float: "a number",
    bool: "a boolean",
    type(None): "null",
}


def arguments_problem(raw: str) -> str:
    """Why argument text the provider could not turn into an object was refused: not JSON,
    JSON nested too deeply to parse, or JSON of another kind than an object."""
    try:
        value = json.loads(raw)
    except RecursionError:
        return TOO_DEEP_TEXT
    except ValueError:
        return NOT_JSON_TEXT
    kind = _JSON_KINDS.get(type(value))
    return not_object_text(kind) if kind is not None else NOT_JSON_TEXT


# -- normalisation ----------------------------------------------------------------------------


def _spec_from(obj: Any, where: Callable[[], str]) -> ToolSpec:
    """``where()`` names the tool entry in error messages; it is a callable because the repr of
    an entry (its whole schema) is costly and only needed when something is wrong."""
    if isinstance(obj, ToolSpec):
        return obj
    if isinstance(obj, Mapping):
        if "name" not in obj:
            raise TypeError(f"tool spec of {where()} has no 'name'")
        return ToolSpec(
            name=obj["name"],
            description=obj.get("description") or "",
            parameters=dict(obj.get("parameters") or {"type": "object", "properties": {}}),
        )
    raise TypeError(
        f"tool spec of {where()} must be a mapping or ToolSpec, got {type(obj).__name__}"
    )


_OFFERED: dict[int, tuple[Any, Any, Any, AgentTool]] = {}
"""``id(tool) → (tool, a deep copy of its spec, its execute, the AgentTool)`` for dict and
``.spec``/``.execute`` tools: programs offer the same tool objects run after run, and rebuilding
the spec and keying the schema cache cost 12-15 µs per tool per run.  The entry holds the tool
itself, so its id cannot be reused while cached; a hit needs the same ``execute`` and a spec
equal to the copy taken when it was built, so a spec changed in place is normalised again.

The copy is taken the second time a tool is offered (the first time the entry holds
``_ONCE``, which equals no spec): copying a spec costs about twice building the tool, and a
program that builds fresh tools for every run would pay it for nothing."""

_ONCE = object()

_OFFERED_MAX = 4096
"""A program that builds fresh tool objects every run would otherwise grow the cache without
bound: past this many entries it starts over."""


def as_agent_tool(tool: Any) -> AgentTool:
    """Normalise one tool entry; anything unusable is a ``TypeError`` naming the entry."""
    if isinstance(tool, AgentTool):
        return tool
    hit = _OFFERED.get(id(tool))
    if hit is not None and hit[0] is tool:
        try:
            spec, execute = _spec_and_execute(tool)
            same_execute = execute is hit[2] or (
                type(execute) is types.MethodType and execute == hit[2]  # a fresh bound method
            )
            if same_execute and spec == hit[1]:
                return hit[3]
        except Exception:  # a spec whose comparison raises: build it again (and report there)
            pass
    agent_tool = _build_agent_tool(tool)
    if not hasattr(tool, "to_agent_tool"):  # decorated functions keep their own AgentTool
        try:
            spec, execute = _spec_and_execute(tool)
            snapshot = copy.deepcopy(spec) if hit is not None and hit[0] is tool else _ONCE
        except Exception:  # a spec that cannot be copied is simply not cached
            return agent_tool
        if len(_OFFERED) >= _OFFERED_MAX:
            _OFFERED.clear()
        _OFFERED[id(tool)] = (tool, snapshot, execute, agent_tool)
    return agent_tool


def _offered_dict_tool(tool: Any) -> AgentTool | None:
    """The cached AgentTool of a plain dict tool offered again unchanged, else ``None``.

    The common case of ``as_agent_tool`` without its general checks (a Mapping ABC check alone
    costs more than a dict lookup): same dict, same ``execute``, a spec equal to the copy taken
    when it was built.  Anything else goes the general way."""
    hit = _OFFERED.get(id(tool))
    if (
        hit is None
        or hit[0] is not tool
        or type(tool) is not dict
        or tool.get("execute") is not hit[2]
    ):
        return None
    try:
        return hit[3] if tool.get("spec") == hit[1] else None
    except Exception:  # a spec whose comparison raises: the general way reports it
        return None


def _spec_and_execute(tool: Any) -> tuple[Any, Any]:
    if isinstance(tool, Mapping):
        return tool.get("spec"), tool.get("execute")
    return getattr(tool, "spec", None), getattr(tool, "execute", None)


def _build_agent_tool(tool: Any) -> AgentTool:
    convert = getattr(tool, "to_agent_tool", None)
    if callable(convert):
        result = convert()
        if not isinstance(result, AgentTool):
            raise TypeError(f"{tool!r}.to_agent_tool() did not return an AgentTool")
        return result
    if isinstance(tool, Mapping):
        if "spec" not in tool or "execute" not in tool:
            raise TypeError(f"tool dict {_short(tool)} needs both 'spec' and 'execute' keys")
        spec, execute = tool["spec"], tool["execute"]

        def where() -> str:
            return f"tool dict {_short(tool)}"

    elif hasattr(tool, "spec") and hasattr(tool, "execute"):
        spec, execute = tool.spec, tool.execute

        def where() -> str:
            return f"tool object {tool!r}"

    else:
        raise TypeError(
            f"invalid tool entry {_short(tool)}: expected an @function/@agentic_function, "
            "a dict with 'spec' and 'execute', or an object with .spec and .execute"
        )
    if not callable(execute):
        raise TypeError(f"'execute' of {where()} is not callable")
    tool_spec = _spec_from(spec, where)
    is_async, accepts = _callable_info(execute)
    return AgentTool(
        spec=tool_spec,
        execute=execute,
        validate=json_schema_validator(tool_spec.parameters),
        is_async=is_async,
        accepts=accepts,
        source=tool,
    )


def normalize_tools(tools: Sequence[Any] | None) -> list[AgentTool]:
    """Normalise a tool list; duplicate names are a ``ValueError`` (the model could not tell
    them apart)."""
    if not tools:
        return []
    out = [
        t if type(t) is AgentTool else (_offered_dict_tool(t) or as_agent_tool(t)) for t in tools
    ]
    names = {t.spec.name for t in out}
    if len(names) < len(out):
        seen: dict[str, AgentTool] = {}
        for t in out:
            first = seen.get(t.spec.name)
            if first is not None:
                raise ValueError(
                    f"two tools are named {t.name!r} ({tool_origin(first)} and "
                    f"{tool_origin(t)}); tool names must be unique"
                )
            seen[t.spec.name] = t
    return out


def tool_origin(tool: AgentTool) -> str:
    """Where a tool on a menu came from, for messages: ``tool 'x' of MCP server 'a'`` for an MCP
    tool (its ``meta`` says), else the object it was built from."""
    server = tool.meta.get("mcp_server")
    if server is not None:
        return f"tool {tool.meta.get('mcp_tool')!r} of MCP server {server!r}"
    return _short(tool.source) if tool.source is not None else f"tool {tool.name!r}"


def _short(obj: Any) -> str:
    return clipped_repr(obj, 80)


# -- results ----------------------------------------------------------------------------------


def make_result(call_id: str, name: str, value: Any) -> ToolResultMessage:
    """Shape a tool's return value: ``str`` → one text block; ``None`` → empty text; a
    ``ToolResult`` → its blocks/details/is_error; content blocks as they are; anything else →
    JSON text."""
    # (positional construction on this per-call path: keyword calls cost twice as much)
    if isinstance(value, str):
        return ToolResultMessage(call_id, name, [TextContent(value)])
    if value is None:
        return ToolResultMessage(call_id, name, [TextContent("")])
    if type(value) is int:  # what json.dumps gives, without its encoder set-up (seen in profiles)
        return ToolResultMessage(call_id, name, [TextContent(str(value))])
    if isinstance(value, ToolResult):
        blocks: list[UserContent] = (
            [TextContent(text=value.content)]
            if isinstance(value.content, str)
            else list(value.content)
        )
        return ToolResultMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=blocks,
            details=value.details,
            is_error=value.is_error,
        )
    if isinstance(value, TextContent | ImageContent):
        return ToolResultMessage(tool_call_id=call_id, tool_name=name, content=[value])
    return ToolResultMessage(
        tool_call_id=call_id, tool_name=name, content=[TextContent(text=to_json_text(value))]
    )


def to_json_text(value: Any) -> str:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        value = dump(mode="json")
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def error_result(call_id: str, name: str, text: str, *, skipped: bool = False) -> ToolResultMessage:
    return ToolResultMessage(call_id, name, [TextContent(text)], is_error=True, skipped=skipped)


__all__ = [
    "CANCELLED_TEXT",
    "SCHEMA_ANNOTATIONS",
    "SKIPPED_TEXT",
    "AgentTool",
    "ToolError",
    "ToolResult",
    "Validator",
    "accepted_extras",
    "arguments_problem",
    "as_agent_tool",
    "error_result",
    "json_schema_validator",
    "make_result",
    "normalize_tools",
    "tool_origin",
    "validation_failed_text",
]
