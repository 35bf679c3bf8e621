"""openai-agents: an ``Agent`` with a ``@function_tool`` run on ``agents.testing.ScriptedModel``.

The SDK's own scripted test model answers through ``ModelStep.respond`` responders that follow
the run's script.  Tracing is disabled (it would export to the network).  The agent is built once;
each run passes a fresh ``ScriptedModel`` through ``RunConfig``.
"""

from __future__ import annotations

from importlib.metadata import version as _dist_version
from typing import Any

from agents import Agent, RunConfig, Runner, function_tool, set_tracing_disabled
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call

from .common import FINAL_TEXT, Script

name = "openai-agents"
label = "openai-agents"

set_tracing_disabled(True)
_current: list[Script] = []


def version() -> str:
    return _dist_version("openai-agents")


@function_tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return _current[0].add(a, b)


def _respond(_call: Any) -> list[Any]:
    calls = _current[0].next_turn()
    if calls is None:
        return [assistant_message(FINAL_TEXT)]
    return [function_call("add", {"a": c.a, "b": c.b}, call_id=c.id) for c in calls]


@function_tool(name_override="add")
async def aadd(a: int, b: int) -> int:
    """Add two integers."""
    return await _current[0].aadd(a, b)


_agent = Agent(name="bench", instructions=None, tools=[add])
_async_agent = Agent(name="bench", instructions=None, tools=[aadd])
_STEP = ModelStep.respond(_respond)


async def run(script: Script) -> Any:
    _current[:] = [script]
    model = ScriptedModel([_STEP] * (script.tool_rounds + 1))
    result = await Runner.run(
        _agent if script.tool == "sync" else _async_agent,
        "go",
        max_turns=script.tool_rounds + 2,
        run_config=RunConfig(model=model, tracing_disabled=True),
    )
    model.assert_complete()
    return result.final_output
