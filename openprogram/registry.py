"""The tool registry, the decorators that register into it, named toolsets and the trimming
policy.

One shared ``default_registry`` receives every ``@function``/``@agentic_function`` unless a
decorator passes ``registry=`` (the decorators live here, beside the registry they fill, so that
``functions`` — the ``Function`` type — never needs the registry: no import cycle).  Toolsets:

- ``"full"``: every registered tool with ``exposed=True`` (registration order);
- ``"none"``: no tools;
- user-defined: ``registry.define_toolset(name, [names or functions])`` or the decorators'
  ``toolsets=("name", ...)``.  Members are looked up by name when the toolset is resolved, so a
  toolset may be defined before its tools are registered.

Trimming (``trim_tools``) applies to whatever menu was resolved: ``source`` drops tools marked
``unsafe_for`` that source, ``deny`` drops names, ``allow`` keeps only the names it lists.
Re-registering a name replaces the earlier function (redefining a function in a session or a
test must not fail).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict, Unpack, overload

from .functions import Function
from .tools import AgentTool, as_agent_tool

BUILTIN_TOOLSETS = ("full", "none")


class Registry:
    """Registered functions by name, plus named toolsets.  Thread-safe for registration."""

    def __init__(self) -> None:
        self._functions: dict[str, Function] = {}
        self._toolsets: dict[str, list[str]] = {}
        self._lock = threading.Lock()

    # -- functions ----------------------------------------------------------------------------
    def register(self, fn: Function) -> Function:
        if not isinstance(fn, Function):
            raise TypeError(
                f"only @function/@agentic_function objects can be registered, got {fn!r}"
            )
        with self._lock:
            self._functions.pop(fn.name, None)  # re-registration moves it to the end
            self._functions[fn.name] = fn
            for toolset in fn.toolsets:
                _check_toolset_name(toolset)
                members = self._toolsets.setdefault(toolset, [])
                if fn.name not in members:
                    members.append(fn.name)
        return fn

    def unregister(self, name: str) -> None:
        with self._lock:
            if self._functions.pop(name, None) is None:
                raise KeyError(f"no registered tool named {name!r}")

    def get(self, name: str) -> Function:
        try:
            return self._functions[name]
        except KeyError:
            raise KeyError(
                f"no registered tool named {name!r}; registered: {sorted(self._functions)}"
            ) from None

    def names(self) -> list[str]:
        with self._lock:
            return list(self._functions)

    def __contains__(self, name: object) -> bool:
        return name in self._functions

    def __len__(self) -> int:
        return len(self._functions)

    def __iter__(self) -> Any:
        with self._lock:
            return iter(list(self._functions.values()))

    # -- toolsets -----------------------------------------------------------------------------
    def define_toolset(self, name: str, tools: Iterable[str | Function]) -> None:
        """Define (or redefine) toolset ``name`` from tool names or ``Function`` objects."""
        _check_toolset_name(name)
        if isinstance(tools, str):
            raise TypeError("define_toolset takes a list of tool names, not a single string")
        members: list[str] = []
        for entry in tools:
            if isinstance(entry, Function):
                member = entry.name
            elif isinstance(entry, str):
                member = entry
            else:
                raise TypeError(
                    f"toolset {name!r}: entry {entry!r} is neither a tool name nor an @function"
                )
            if member not in members:
                members.append(member)
        with self._lock:
            self._toolsets[name] = members

    def toolset_names(self) -> list[str]:
        """Every toolset name that ``toolset(...)`` accepts."""
        with self._lock:
            return [*BUILTIN_TOOLSETS, *sorted(self._toolsets)]

    def toolset(self, name: str) -> list[Function]:
        """The functions of toolset ``name``; an unknown name is a ``ValueError`` listing the
        known ones."""
        if name == "none":
            return []
        with self._lock:  # a snapshot: other threads may be registering
            functions = dict(self._functions)
            stored = self._toolsets.get(name)
            members = list(stored) if stored is not None else None
        if name == "full":
            return [f for f in functions.values() if f.exposed]
        if members is None:
            raise ValueError(
                f"unknown toolset {name!r}; known toolsets: {', '.join(self.toolset_names())}"
            )
        missing = [m for m in members if m not in functions]
        if missing:
            raise ValueError(
                f"toolset {name!r} names tool(s) that are not registered: {', '.join(missing)}"
            )
        return [functions[m] for m in members]


def _check_toolset_name(name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a toolset name must be a non-empty string, got {name!r}")
    if name in BUILTIN_TOOLSETS:
        raise ValueError(f"toolset {name!r} is built in and cannot be (re)defined")


def unsafe_sources(tool: AgentTool) -> frozenset[str]:
    """The sources a tool is marked unsafe for (``unsafe_for`` on a ``Function``, in an
    ``AgentTool``'s ``meta``, a tool dict's ``"unsafe_for"`` key or a tool object's attribute)."""
    marked = tool.meta.get("unsafe_for")
    if marked is None:
        source = tool.source
        marked = (
            source.get("unsafe_for")
            if isinstance(source, dict)
            else getattr(source, "unsafe_for", None)
        )
    if not marked:
        return frozenset()
    return frozenset([marked] if isinstance(marked, str) else marked)


def trim_tools(
    tools: Sequence[AgentTool],
    *,
    source: str | None = None,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
) -> list[AgentTool]:
    """Apply the trimming policy: ``source`` filter, then ``deny``, then ``allow`` (an
    intersection: names it lists that are not on the menu are simply absent)."""
    out = list(tools)
    if source is not None:
        out = [t for t in out if source not in unsafe_sources(t)]
    if deny is not None:
        denied = _names(deny, "tools_deny")
        out = [t for t in out if t.name not in denied]
    if allow is not None:
        allowed = _names(allow, "tools_allow")
        out = [t for t in out if t.name in allowed]
    return out


def _names(value: Iterable[str], what: str) -> frozenset[str]:
    if isinstance(value, str):
        raise TypeError(f"{what} takes a list of tool names, not a single string")
    names = frozenset(value)
    bad = [n for n in names if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{what} must list tool names (strings), got {bad[0]!r}")
    return names


def agent_tools(entries: Sequence[Any]) -> list[AgentTool]:
    """Normalise tool entries (raising ``TypeError`` naming a bad entry)."""
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence | set | frozenset):
        raise TypeError(f"tools= must be a list of tools, got {type(entries).__name__}")
    return [as_agent_tool(t) for t in entries]


default_registry = Registry()
"""The shared registry every decorator uses unless given ``registry=``."""


# -- decorators ----------------------------------------------------------------------------------


class ToolOptions(TypedDict, total=False):
    """The options of ``@function(...)`` and ``@agentic_function(...)``, typed once for both:
    ``Function``'s keyword arguments (their defaults are there) plus ``registry``."""

    name: str | None
    description: str | None
    parameters: Mapping[str, Any] | None
    exposed: bool
    unsafe_for: Iterable[str]
    toolsets: Iterable[str]
    requires_approval: bool | Callable[..., Any]
    registry: Any


@overload
def function(fn: Callable[..., Any], /) -> Function: ...
@overload
def function(**options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], Function]: ...
def function(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Make ``fn`` a tool and register it (bare ``@function`` or ``@function(name=..., ...)``).

    Options: ``name``, ``description``, ``parameters`` (explicit JSON Schema), ``exposed``
    (default ``True``: part of the ``"full"`` toolset), ``unsafe_for`` (sources, e.g.
    ``("sms",)``, that must not be offered this tool), ``toolsets`` (named toolsets to join),
    ``requires_approval`` (``True``, or a check called with the call's arguments: a string or
    truthy verdict, or a raise, means the run's approval gate must approve each call first),
    ``registry`` (default: the shared ``openprogram.registry.default_registry``).
    """
    return _decorate(fn, options, agentic=False)


@overload
def agentic_function(fn: Callable[..., Any], /) -> Function: ...
@overload
def agentic_function(
    **options: Unpack[ToolOptions],
) -> Callable[[Callable[..., Any]], Function]: ...
def agentic_function(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Like ``@function``, for a function that thinks with the model: if it declares a
    ``runtime`` parameter, the running ``Runtime`` is injected when the model calls it, and a
    ``runtime.exec(...)`` inside opens a nested layer of the loop."""
    return _decorate(fn, options, agentic=True)


_OPTIONS = ToolOptions.__optional_keys__


def _decorate(fn: Callable[..., Any] | None, options: dict[str, Any], *, agentic: bool) -> Any:
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unknown decorator option(s) {sorted(unknown)}; known: {sorted(_OPTIONS)}")

    def wrap(target: Callable[..., Any]) -> Function:
        registry = options.get("registry")
        if registry is None:
            registry = default_registry
        kwargs = {k: v for k, v in options.items() if k != "registry"}
        wrapped = Function(target, agentic=agentic, **kwargs)
        registry.register(wrapped)
        return wrapped

    if fn is None:
        return wrap
    if options:
        raise TypeError("pass options as @function(name=...), not together with the function")
    return wrap(fn)


__all__ = [
    "BUILTIN_TOOLSETS",
    "Registry",
    "ToolOptions",
    "agent_tools",
    "agentic_function",
    "default_registry",
    "function",
    "trim_tools",
    "unsafe_sources",
]
