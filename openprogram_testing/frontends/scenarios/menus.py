"""The menus of the runs a scenario can start, read from the agent's code without running it.

An imported ``@agentic_function`` opens a nested run with ``runtime.exec(..., tools=[...])``
(or ``aexec``); which tools that run offers is written in its body.  ``run_menus`` reads the
body's ``exec``/``aexec`` calls (``ast``) and resolves the ``tools=`` expression against the
function's globals and closure: a list or tuple of names or attributes, or a name bound to such
a list.  A call without ``tools=`` (and without ``toolset=``) inherits the caller's menu, as
``Runtime.exec`` does.  Whatever cannot be read so (a menu computed at run time, a toolset, a
function whose source is not available) makes that run's menu *unknown* (``None``): the
validator then accepts any call there, and the runner's check, which sees the menu each model
request really carried, judges it.  An ``agentic:`` stub's nested menu is its ``tools`` list.
"""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Mapping
from typing import Any

from openprogram.functions import Function
from openprogram.tools import as_agent_tool

RunPath = tuple[str, ...]
Menus = dict[RunPath, "set[str] | None"]
"""The menu of every run the scenario can start, by tool path (``()``: the outermost run);
``None``: not readable from the code."""

MAX_DEPTH = 8
"""How deep the reading follows agentic functions offered to nested runs."""


def run_menus(outer: Mapping[str, Any], stubs: Mapping[str, set[str]] | None = None) -> Menus:
    """The menus of the outermost run (``outer``: tool name -> tool object) and of every run
    nested beneath it.  ``stubs`` gives the nested menu of ``agentic:`` stubs by tool name."""
    menus: Menus = {(): set(outer)}
    _walk((), dict(outer), dict(stubs or {}), menus)
    return menus


def _walk(path: RunPath, menu: dict[str, Any], stubs: dict[str, set[str]], menus: Menus) -> None:
    if len(path) >= MAX_DEPTH:
        return
    for name, tool in menu.items():
        child = (*path, name)
        if child in menus:
            continue
        if name in stubs and tool is None:
            inner: dict[str, Any] | None = {n: None for n in stubs[name]}
        elif _is_agentic(tool):
            inner = nested_menu(tool, menu)
        else:
            continue
        if inner is None:
            menus[child] = None
            continue
        menus[child] = set(inner)
        _walk(child, inner, stubs, menus)


def _is_agentic(tool: Any) -> bool:

    return isinstance(tool, Function) and tool.agentic and tool.wants_runtime


def nested_menu(tool: Any, caller: Mapping[str, Any]) -> dict[str, Any] | None:
    """The tools (name -> object) the nested runs of the agentic function ``tool`` offer, or
    ``None`` when its code does not say."""
    fn = getattr(tool, "fn", None)
    try:
        source = textwrap.dedent(inspect.getsource(fn))  # type: ignore[arg-type]
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError, ValueError):
        return None
    scope = _scope(fn)
    found: dict[str, Any] = {}
    calls = 0
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("exec", "aexec")
        ):
            continue
        calls += 1
        keywords = {k.arg: k.value for k in node.keywords if k.arg is not None}
        if any(k.arg is None for k in node.keywords) or "toolset" in keywords:
            return None
        expr = keywords.get("tools", node.args[1] if len(node.args) > 1 else None)
        if expr is None:
            found.update(caller)  # no tools=: the caller's menu is inherited
            continue
        tools = _resolve(expr, scope)
        if tools is None:
            return None
        found.update(tools)
    return found if calls else None


def _scope(fn: Any) -> dict[str, Any]:
    scope = dict(getattr(fn, "__globals__", {}) or {})
    try:
        scope.update(inspect.getclosurevars(fn).nonlocals)
    except (TypeError, ValueError):
        pass
    return scope


def _resolve(expr: ast.expr, scope: Mapping[str, Any]) -> dict[str, Any] | None:

    items: list[Any]
    if isinstance(expr, (ast.List, ast.Tuple)):
        items = []
        for element in expr.elts:
            value = _value(element, scope)
            if value is _MISSING:
                return None
            items.append(value)
    else:
        value = _value(expr, scope)
        if not isinstance(value, (list, tuple)):
            return None
        items = list(value)
    out: dict[str, Any] = {}
    for item in items:
        try:
            out[as_agent_tool(item).name] = item
        except (TypeError, ValueError):
            return None
    return out


_MISSING = object()


def _value(expr: ast.expr, scope: Mapping[str, Any]) -> Any:
    """The object a name or a dotted attribute refers to in ``scope`` (``_MISSING``: not one)."""
    if isinstance(expr, ast.Name):
        return scope.get(expr.id, _MISSING)
    if isinstance(expr, ast.Attribute):
        base = _value(expr.value, scope)
        if base is _MISSING:
            return _MISSING
        try:
            return inspect.getattr_static(base, expr.attr)
        except AttributeError:
            return _MISSING
    return _MISSING


def describe(menus: Menus) -> str:
    """``outermost run: a, b; run plan: c`` for messages."""
    parts = []
    for path, menu in menus.items():
        where = "outermost run" if not path else f"run {'/'.join(path)}"
        listed = "unknown" if menu is None else (", ".join(sorted(menu)) or "none")
        parts.append(f"{where}: {listed}")
    return "; ".join(parts)


__all__ = ["MAX_DEPTH", "Menus", "RunPath", "describe", "nested_menu", "run_menus"]
