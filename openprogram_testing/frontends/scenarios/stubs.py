"""The scenario's tools as the loop sees them: stubs playing their declared behaviour, and the
imported real tools as they are (a scenario that imports tools runs through ``Runtime.exec``,
which hands agentic functions the running ``Runtime`` for their nested runs)."""

from __future__ import annotations

import asyncio
from typing import Any

from openprogram.runtime import Runtime
from openprogram.tools import ToolResult, to_json_text
from openprogram_testing.core.tree import run_exec

from .model import AgenticDef, Outcome, Scenario, ToolDef, exception_type


def build_tools(
    scenario: Scenario, provider: Any = None, model: str = "test-model", runtime: Any = None
) -> list[Any]:
    """The scenario's tools in declaration order.  ``agentic`` stubs run their nested runs on
    ``runtime`` (part of its trace tree), or without one on a ``Runtime`` of their own over
    ``provider``/``model``."""
    built: dict[str, dict[str, Any]] = {}
    out: list[Any] = []
    for i, defn in enumerate(scenario.tools):
        if defn.import_ is not None:
            out.extend(scenario.imported_tools.get(i, []))
            continue
        tool = build_stub(defn, provider, model, built, runtime)
        assert defn.name is not None
        built[defn.name] = tool
        out.append(tool)
    return out


def build_stub(
    defn: ToolDef,
    provider: Any = None,
    model: str = "test-model",
    others: dict[str, dict[str, Any]] | None = None,
    runtime: Any = None,
) -> dict[str, Any]:
    """A dict-form tool whose ``execute`` plays the declared behaviour."""

    outcomes: list[Outcome] = list(defn.sequence) if defn.sequence else [defn]
    count = 0

    async def execute(arguments: dict[str, Any], on_update: Any = None) -> Any:
        nonlocal count
        outcome = outcomes[min(count, len(outcomes) - 1)]
        count += 1
        for update in outcome.updates:
            on_update(update)
        if outcome.sleep:
            await asyncio.sleep(outcome.sleep)
        if outcome.raises is not None:
            spec = outcome.raises
            if isinstance(spec, str):
                raise RuntimeError(spec)
            kind = exception_type(spec.type)
            raise kind(spec.message) if spec.message else kind()
        if outcome.agentic is not None:
            value = await _run_nested(
                outcome.agentic, arguments, provider, model, others or {}, runtime
            )
        else:
            value = arguments if outcome.echo else outcome.returns
        if outcome.is_error:
            text = value if isinstance(value, str) else "" if value is None else to_json_text(value)
            return ToolResult(content=text, is_error=True)
        return value

    execute.__name__ = f"scenario_tool_{defn.name}"
    tool: dict[str, Any] = {
        "spec": {"name": defn.name, "description": defn.description, "parameters": defn.parameters},
        "execute": execute,
    }
    if defn.defer:
        tool["defer"] = True
        if defn.search_hint is not None:
            tool["search_hint"] = defn.search_hint
    if defn.requires_approval:
        reason = defn.requires_approval
        tool["requires_approval"] = (
            True if reason is True else (lambda **_arguments: reason)  # a string: the reason
        )
    return tool


async def _run_nested(
    agentic: AgenticDef,
    arguments: dict[str, Any],
    provider: Any,
    model: str,
    tools: dict[str, dict[str, Any]],
    runtime: Any = None,
) -> Any:
    """The body of an ``agentic`` stub: a nested ``Runtime.aexec`` on the same provider."""
    try:
        content = agentic.prompt.format(**arguments)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"the agentic prompt needs the argument {exc}") from None
    menu = [tools[name] for name in agentic.tools]
    if runtime is not None:  # the scenario's runtime: the nested run joins its trace tree
        return await runtime.aexec(
            content, tools=menu, max_iterations=agentic.max_iterations, choices=agentic.choices
        )
    if provider is None:
        raise RuntimeError("an agentic tool needs the scenario's provider")

    runtime = Runtime(provider, model=model)
    tree = await run_exec(  # traced, so the report shows the nested run under its tool call
        runtime,
        content,
        tools=menu,
        max_iterations=agentic.max_iterations,
        choices=agentic.choices,
    )
    return tree.result


__all__ = ["build_stub", "build_tools"]
