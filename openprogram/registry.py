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
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypedDict, Unpack, overload

from .functions import Function, gating_epoch
from .gating import trim_tools, unsafe_sources
from .tools import AgentTool, as_agent_tool, normalize_tools

BUILTIN_TOOLSETS = ("full", "none")


class Registry:
    """Registered functions by name, plus named toolsets.  Thread-safe for registration."""

    def __init__(self) -> None:
        self._functions: dict[str, Function] = {}
        self._toolsets: dict[str, list[str]] = {}
        self._includes: dict[str, list[str]] = {}
        self._lock = threading.Lock()
        self._generation = 0
        self._menus: dict[str, tuple[int, int, tuple[AgentTool, ...]]] = {}
        self.unavailable: set[str] = set()
        """Names whose ``available_if`` was false (or raised) at decoration: never registered
        (layer 1).  A toolset that lists one simply goes without it, as upstream's does."""

    # -- functions ----------------------------------------------------------------------------
    def register(self, fn: Function) -> Function:
        if not isinstance(fn, Function):
            raise TypeError(
                f"only @function/@agentic_function objects can be registered, got {fn!r}"
            )
        with self._lock:
            self._functions.pop(fn.name, None)  # re-registration moves it to the end
            self._functions[fn.name] = fn
            self.unavailable.discard(fn.name)
            self._generation += 1
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
            self._generation += 1

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

    def apply_default_deferral(self, resident: Iterable[str]) -> list[str]:
        """Defer every exposed registered tool but the ``resident`` ones, and un-defer those
        (upstream's ``apply_default_deferral`` over its ``RESIDENT_TOOLS``): a large registry
        sends only the resident schemas, the rest loaded on demand by ``tool_search``.
        Idempotent; returns the names now deferred."""
        if isinstance(resident, str):
            raise TypeError("resident= takes a list of tool names, not a single string")
        keep = frozenset(resident)
        deferred: list[str] = []
        for fn in self:
            if not fn.exposed:
                continue
            fn.set_defer(fn.name not in keep)
            if fn.defer:
                deferred.append(fn.name)
        return deferred

    # -- toolsets -----------------------------------------------------------------------------
    def define_toolset(
        self, name: str, tools: Iterable[str | Function] = (), *, includes: Iterable[str] = ()
    ) -> None:
        """Define (or redefine) toolset ``name`` from tool names or ``Function`` objects, plus
        the toolsets it ``includes`` (expanded first, recursively, each tool once: upstream's
        presets).  Included names are checked when the toolset is resolved, so a toolset may
        include one defined later."""
        _check_toolset_name(name)
        if isinstance(tools, str):
            raise TypeError("define_toolset takes a list of tool names, not a single string")
        if isinstance(includes, str):
            raise TypeError("includes= takes a list of toolset names, not a single string")
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
        included: list[str] = []
        for entry in includes:
            if not isinstance(entry, str) or not entry:
                raise TypeError(f"toolset {name!r}: included toolset {entry!r} is not a name")
            if entry not in included:
                included.append(entry)
        with self._lock:
            self._toolsets[name] = members
            if included:
                self._includes[name] = included
            else:
                self._includes.pop(name, None)
            self._generation += 1

    def toolset_names(self) -> list[str]:
        """Every toolset name that ``toolset(...)`` accepts."""
        with self._lock:
            return [*BUILTIN_TOOLSETS, *sorted(self._toolsets)]

    def mark_unavailable(self, name: str) -> None:
        """Record that ``name``'s ``available_if`` was false (layer 1)."""
        with self._lock:
            self.unavailable.add(name)
            self._generation += 1

    def toolset_tools(self, name: str) -> tuple[AgentTool, ...]:
        """``toolset(name)`` as the loop's tools, cached until the registry or a function's
        ``exposed``/``defer`` changes: a run resolves its menu in the time of a dict lookup
        however many tools are registered (the same tuple each time, which
        ``openprogram.tool_search.offer`` caches its split by)."""
        epoch = gating_epoch[0]
        cached = self._menus.get(name)
        if cached is not None and cached[0] == self._generation and cached[1] == epoch:
            return cached[2]
        generation = self._generation
        tools = tuple(f.to_agent_tool() for f in self.toolset(name))
        if len(self._menus) > 256:
            self._menus.clear()
        self._menus[name] = (generation, epoch, tools)
        return tools

    def toolset(self, name: str) -> list[Function]:
        """The exposed functions of toolset ``name`` (its ``includes`` first); an unknown name
        is a ``ValueError`` listing the known ones, and so is a member that was never
        registered (one whose ``available_if`` was false is left out silently).

        Exposure (layer 2) applies to every toolset: a function registered ``exposed=False`` is
        in none of them, whatever lists it (pass it in ``exec(tools=[...])`` to offer it)."""
        if name == "none":
            return []
        with self._lock:  # a snapshot: other threads may be registering
            functions = dict(self._functions)
            if name == "full":
                return [f for f in functions.values() if f.exposed]
            if name not in self._toolsets:
                unknown = True
            else:
                unknown = False
                toolsets = {k: list(v) for k, v in self._toolsets.items()}
                includes = {k: list(v) for k, v in self._includes.items()}
                skipped = set(self.unavailable)
        if unknown:
            raise ValueError(
                f"unknown toolset {name!r}; known toolsets: {', '.join(self.toolset_names())}"
            )
        order = _expand(name, toolsets, includes, functions, self.toolset_names)
        missing = [m for m in order if m not in functions and m not in skipped]
        if missing:
            raise ValueError(
                f"toolset {name!r} names tool(s) that are not registered: {', '.join(missing)}"
            )
        out: list[Function] = []
        for member in order:
            fn = functions.get(member)
            if fn is not None and fn.exposed:
                out.append(fn)
        return out


def _expand(
    name: str,
    toolsets: dict[str, list[str]],
    includes: dict[str, list[str]],
    functions: dict[str, Function],
    known: Callable[[], list[str]],
) -> list[str]:
    """Toolset ``name`` as a flat name list: included toolsets first (depth first, in the order
    listed), then its own members, each name once.  A cycle stops at the toolset already being
    expanded (upstream's visited set), so it cannot recurse without end; an unknown included
    toolset is a ``ValueError``.  Iterative, so a long ``includes`` chain cannot exhaust the
    stack."""
    order: list[str] = []
    seen_names: set[str] = set()
    visited: set[str] = set()
    # (toolset, index of the next include to expand)
    stack: list[tuple[str, int]] = [(name, 0)]
    visited.add(name)
    while stack:
        current, index = stack.pop()
        children = includes.get(current, [])
        if index < len(children):
            stack.append((current, index + 1))
            child = children[index]
            if child in visited:
                continue
            visited.add(child)
            if child == "full":
                for fn_name, fn in functions.items():
                    if fn.exposed and fn_name not in seen_names:
                        seen_names.add(fn_name)
                        order.append(fn_name)
                continue
            if child == "none":
                continue
            if child not in toolsets:
                raise ValueError(
                    f"toolset {current!r} includes unknown toolset {child!r}; known toolsets: "
                    f"{', '.join(known())}"
                )
            stack.append((child, 0))
            continue
        for member in toolsets.get(current, []):
            if member not in seen_names:
                seen_names.add(member)
                order.append(member)
    return order


def _check_toolset_name(name: Any) -> None:
    if not isinstance(name, str) or not name:
        raise TypeError(f"a toolset name must be a non-empty string, got {name!r}")
    if name in BUILTIN_TOOLSETS:
        raise ValueError(f"toolset {name!r} is built in and cannot be (re)defined")


def agent_tools(entries: Sequence[Any]) -> list[AgentTool]:
    """Normalise tool entries (raising ``TypeError`` naming a bad entry)."""
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence | set | frozenset):
        raise TypeError(f"tools= must be a list of tools, got {type(entries).__name__}")
    return [as_agent_tool(t) for t in entries]


def resolve_menu(
    registry: Registry,
    tools: Sequence[Any] | None,
    toolset: str | None,
    inherited: Sequence[AgentTool] | None,
    *,
    source: str | Sequence[str] | None = None,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
    disabled: Iterable[str] = (),
    only_available: bool = False,
) -> Sequence[AgentTool]:
    """A run's menu through gating layers 2 to 5 (``openprogram.gating``).

    ``tools=`` (caller-supplied: it bypasses exposure and the ``disabled`` list, upstream's
    rule, since the caller chose them), else ``toolset=``, else the ``inherited`` menu of an
    enclosing run (gated already), else the registry's ``"full"``.  Then source, deny, allow,
    the disabled list (registry menus only) and, with ``only_available``, availability.  Names
    are checked unique whatever the menu came from."""
    if tools is not None and toolset is not None:
        raise ValueError("pass tools= or toolset=, not both")
    off: Iterable[str] = ()
    menu: Sequence[AgentTool]
    if tools is not None:
        menu = normalize_tools(agent_tools(tools))  # names checked unique
    elif toolset is not None:
        if not isinstance(toolset, str):
            raise TypeError(f"toolset= takes a toolset name, got {toolset!r}")
        menu = registry.toolset_tools(toolset)  # unique names: the registry is keyed by them
        off = disabled
    elif inherited is not None:
        menu = inherited  # gated and checked by the run that made it
    else:
        menu = registry.toolset_tools("full")
        off = disabled
    if source is not None or allow is not None or deny is not None or off or only_available:
        return trim_tools(
            menu,
            source=source,
            allow=allow,
            deny=deny,
            disabled=off,
            only_available=only_available,
        )
    return menu


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
    check_fn: Callable[[], Any] | None
    requires_env: Iterable[str]
    can_use: Callable[[], Any] | None
    defer: bool
    search_hint: str | None
    available_if: Callable[[], Any] | None
    registry: Any


@overload
def function(fn: Callable[..., Any], /) -> Function: ...
@overload
def function(**options: Unpack[ToolOptions]) -> Callable[[Callable[..., Any]], Function]: ...
def function(fn: Callable[..., Any] | None = None, /, **options: Any) -> Any:
    """Make ``fn`` a tool and register it (bare ``@function`` or ``@function(name=..., ...)``).

    Options: ``name``, ``description``, ``parameters`` (explicit JSON Schema), ``exposed``
    (default ``True``; ``False`` keeps it out of every registry menu), ``unsafe_for`` (sources,
    e.g. ``("sms",)`` or ``("plan",)``, that must not be offered this tool), ``toolsets``
    (named toolsets to join), ``requires_approval`` (``True``, or a check called with the
    call's arguments: a string or truthy verdict, or a raise, means the run's approval gate
    must approve each call first), ``registry`` (default: the shared
    ``openprogram.registry.default_registry``), and the gating options (``openprogram.gating``):
    ``available_if`` (called once, now: false or raising, the function is not registered and
    is returned undecorated), ``check_fn`` / ``requires_env`` / ``can_use`` (runnable here?
    checked by runs that ask for ``only_available``), ``defer`` (schema loaded on demand by
    ``tool_search``) and ``search_hint``.
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

UPSTREAM_SPELLINGS = {
    "expose": "exposed",
    "tool_visible": "exposed",
    "unsafe_in": "unsafe_for",
    "toolset": "toolsets",
}
"""Upstream's names for options this project spells otherwise (one name per concept here):
an unknown-option error names the one to use."""


def _decorate(fn: Callable[..., Any] | None, options: dict[str, Any], *, agentic: bool) -> Any:
    unknown = set(options) - _OPTIONS
    if unknown:
        hints = [
            f"{o}= is spelled {UPSTREAM_SPELLINGS[o]}= here"
            for o in sorted(unknown)
            if o in UPSTREAM_SPELLINGS
        ]
        hint = f" ({'; '.join(hints)})" if hints else ""
        raise TypeError(
            f"unknown decorator option(s) {sorted(unknown)}{hint}; known: {sorted(_OPTIONS)}"
        )
    available_if = options.get("available_if")
    if available_if is not None and not callable(available_if):
        raise TypeError(
            f"available_if= must be a callable taking no arguments, got {available_if!r}"
        )

    def wrap(target: Callable[..., Any]) -> Any:
        registry = options.get("registry")
        if registry is None:
            registry = default_registry
        if available_if is not None and not _available(available_if, target):
            # Layer 1: absent from this process, not merely hidden.  The plain function comes
            # back so ``x = function(...)(impl)`` callers still hold a callable.
            name = options.get("name") or getattr(target, "__name__", None)
            if isinstance(name, str):
                registry.mark_unavailable(name)
            return target
        kwargs = {k: v for k, v in options.items() if k not in ("registry", "available_if")}
        wrapped = Function(target, agentic=agentic, **kwargs)
        registry.register(wrapped)
        return wrapped

    if fn is None:
        return wrap
    if options:
        raise TypeError("pass options as @function(name=...), not together with the function")
    return wrap(fn)


def _available(check: Callable[[], Any], target: Any) -> bool:
    """``available_if()``; raising counts as false (upstream's rule), with a ``RuntimeWarning``
    naming the function and the error, since a tool silently missing is hard to trace."""
    try:
        return bool(check())
    except Exception as exc:
        warnings.warn(
            f"available_if of {getattr(target, '__qualname__', target)!r} raised "
            f"{type(exc).__name__}: {exc}; the function is not registered",
            RuntimeWarning,
            stacklevel=4,
        )
        return False


__all__ = [
    "BUILTIN_TOOLSETS",
    "UPSTREAM_SPELLINGS",
    "Registry",
    "ToolOptions",
    "agent_tools",
    "agentic_function",
    "default_registry",
    "function",
    "resolve_menu",
    "trim_tools",
    "unsafe_sources",
]
