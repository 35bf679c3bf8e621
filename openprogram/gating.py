"""The gating layers a run's tool menu passes through, read off each tool.

Six layers decide what the model is offered (docs/tools-and-approvals.md has the table):

1. ``available_if`` (at decoration, ``openprogram.registry``): false or raising, the function is
   never registered;
2. exposure: ``exposed=False`` keeps a tool out of every menu the registry resolves (a caller
   may still pass it in ``exec(tools=[...])``: caller-supplied tools bypass exposure);
   2b. toolsets (presets, with ``includes``) narrow the registry's menu by name;
3. ``unsafe_for`` by source: a run started with ``tools_source="sms"`` (or several sources, e.g.
   a channel and ``"plan"`` for plan mode) drops the tools marked unsafe for any of them;
4. ``check_fn`` / ``requires_env`` / ``can_use``: is the tool runnable here; applied only when
   the run asks for ``only_available=True``;
5. ``tools_deny``, then ``tools_allow`` as a ceiling, then the runtime's ``disabled_tools``;
6. ``defer=True``: on the menu and callable, but its schema stays out of the provider's tool
   array until ``tool_search`` loads it (``openprogram.tool_search``).

Every layer's default restricts nothing.  All of them only subtract, so their order changes
the order of nothing and the membership of nothing; it is upstream's order (deny, allow,
disabled, availability last so that check functions only run for tools still on the menu).

A tool's options are read from an ``AgentTool``'s ``meta`` (what ``@function`` and MCP tools
set), else from a tool dict's key or a tool object's attribute of the same name.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from .tools import AgentTool


def tool_option(tool: AgentTool, key: str, default: Any = None) -> Any:
    """Option ``key`` of ``tool``: its ``meta`` entry, else its source's dict key or attribute
    (``"unsafe_for"``, ``"defer"``, ``"check_fn"``, ...)."""
    meta = tool.meta
    if key in meta:
        return meta[key]
    source = tool.source
    if source is None:
        return default
    if isinstance(source, dict):
        return source.get(key, default)
    return getattr(source, key, default)


def unsafe_sources(tool: AgentTool) -> frozenset[str]:
    """The sources a tool is marked unsafe for (``unsafe_for`` on a ``Function``, in an
    ``AgentTool``'s ``meta``, a tool dict's ``"unsafe_for"`` key or a tool object's attribute)."""
    marked = tool.meta.get("unsafe_for")
    if type(marked) is frozenset:  # a ``Function``'s, already a set
        return marked
    if marked is None:
        marked = tool_option(tool, "unsafe_for")
    if not marked:
        return frozenset()
    return frozenset([marked] if isinstance(marked, str) else marked)


def is_deferred(tool: AgentTool) -> bool:
    """Layer 6: is the tool's schema held back from the provider until ``tool_search`` loads
    it.  ``tool_search`` itself never is (it is the only way to load the others)."""
    return tool.meta.get("defer") is True or (
        "defer" not in tool.meta and tool_option(tool, "defer") is True
    )


def is_available(tool: AgentTool) -> bool:
    """Layer 4: ``check_fn()`` true, every ``requires_env`` variable set (non-empty), then
    ``can_use()`` true.  A check that raises makes the tool unavailable (upstream's rule: a
    tool that cannot say it is runnable is not offered); one without any check is available."""
    meta = tool.meta
    if "available" in meta:  # a ``Function``'s: ``(check_fn, requires_env, can_use)``
        check, required, can_use = meta["available"]
    else:
        check = tool_option(tool, "check_fn")
        required = tool_option(tool, "requires_env")
        can_use = tool_option(tool, "can_use")
    if check is not None and not _passes(check):
        return False
    if required:
        if isinstance(required, str):
            required = (required,)
        environ = os.environ
        for name in required:
            if not environ.get(name):
                return False
    return can_use is None or _passes(can_use)


def _passes(check: Any) -> bool:
    try:
        return bool(check())
    except Exception:
        return False


def check_sources(source: str | Sequence[str] | None) -> frozenset[str]:
    """``tools_source`` as a set: one source, or several (a channel and plan mode compose)."""
    if source is None:
        return frozenset()
    if isinstance(source, str):
        return frozenset((source,))
    if not isinstance(source, Sequence | set | frozenset):
        raise TypeError(f"tools_source must be a source name or a list of them, got {source!r}")
    sources = frozenset(source)
    bad = [s for s in sources if not isinstance(s, str)]
    if bad:
        raise TypeError(f"tools_source must list source names (strings), got {bad[0]!r}")
    return sources


def check_flag(value: Any, what: str, default: bool | None = None) -> bool:
    """A ``True``/``False`` option (``None`` takes ``default`` when one is given); anything
    else is a ``TypeError`` naming it."""
    if value is None and default is not None:
        return default
    if not isinstance(value, bool):
        allowed = "True, False or None" if default is not None else "True or False"
        raise TypeError(f"{what} must be {allowed}, got {value!r}")
    return value


def names(value: Iterable[str], what: str) -> frozenset[str]:
    """A list of tool names as a set; a single string or a non-string entry is a ``TypeError``
    naming the option (``what``)."""
    if isinstance(value, str):
        raise TypeError(f"{what} takes a list of tool names, not a single string")
    try:
        out = frozenset(value)
    except TypeError:
        raise TypeError(f"{what} must be a list of tool names, got {value!r}") from None
    bad = [n for n in out if not isinstance(n, str)]
    if bad:
        raise TypeError(f"{what} must list tool names (strings), got {bad[0]!r}")
    return out


def trim_tools(
    tools: Sequence[AgentTool],
    *,
    source: str | Sequence[str] | None = None,
    allow: Iterable[str] | None = None,
    deny: Iterable[str] | None = None,
    disabled: Iterable[str] | None = None,
    only_available: bool = False,
) -> Sequence[AgentTool]:
    """Layers 3 to 5 on a resolved menu: ``source`` (one or several), then ``deny``, then
    ``allow`` (an intersection: names it lists that are not on the menu are simply absent),
    then ``disabled``, then, with ``only_available``, the availability checks.

    The name layers of a menu offered again (the same tuple: a registry's cached menu) with the
    same settings are computed once; the availability checks run every time (a check may answer
    differently from one run to the next), and when every tool passes, the cached tuple comes
    back as it is."""
    sources = check_sources(source)
    denied = names(deny, "tools_deny") if deny is not None else None
    allowed = names(allow, "tools_allow") if allow is not None else None
    off = names(disabled, "disabled_tools") if disabled else None
    key = (id(tools), sources, denied, allowed, off)
    hit = _TRIMMED.get(key) if type(tools) is tuple else None
    if hit is not None and hit[0] is tools:
        kept = hit[1]
    else:
        out = list(tools)
        if sources:
            out = [t for t in out if not (sources & unsafe_sources(t))]
        if denied is not None:
            out = [t for t in out if t.spec.name not in denied]
        if allowed is not None:
            out = [t for t in out if t.spec.name in allowed]
        if off is not None:
            out = [t for t in out if t.spec.name not in off]
        kept = tuple(out)
        if type(tools) is tuple:
            if len(_TRIMMED) > 256:
                _TRIMMED.clear()
            _TRIMMED[key] = (tools, kept)
    if not only_available:
        return kept
    available = [t for t in kept if is_available(t)]
    return kept if len(available) == len(kept) else available


_TRIMMED: dict[tuple[Any, ...], tuple[tuple[AgentTool, ...], tuple[AgentTool, ...]]] = {}
"""``(id(menu), settings) → (menu, trimmed)``; the entry holds the menu, so its id is not
reused while cached."""


__all__ = [
    "check_flag",
    "check_sources",
    "is_available",
    "is_deferred",
    "names",
    "tool_option",
    "trim_tools",
    "unsafe_sources",
]
