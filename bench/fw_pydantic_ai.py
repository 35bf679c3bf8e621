"""pydantic-ai: an ``Agent`` with a plain ``Tool`` run on its ``FunctionModel`` fake model.

The agent is built once (as an application would); each run installs its script and calls
``agent.run``.  pydantic-ai validates tool arguments with pydantic and runs a sync tool in a
worker thread (its documented behaviour), so that cost is part of its numbers.
"""

from __future__ import annotations

from importlib.metadata import version as _dist_version
from typing import Any

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.usage import UsageLimits

from .common import FINAL_TEXT, Script

name = "pydantic-ai"
label = "pydantic-ai"

_current: list[Script] = []
_LIMITS = UsageLimits(request_limit=None)


def version() -> str:
    return _dist_version("pydantic-ai-slim")


def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    calls = _current[0].next_turn()
    if calls is None:
        return ModelResponse(parts=[TextPart(content=FINAL_TEXT)])
    return ModelResponse(
        parts=[
            ToolCallPart(tool_name="add", args={"a": c.a, "b": c.b}, tool_call_id=c.id)
            for c in calls
        ]
    )


def add(a: int, b: int) -> int:
    """Add two integers."""
    return _current[0].add(a, b)


async def aadd(a: int, b: int) -> int:
    """Add two integers."""
    return await _current[0].aadd(a, b)


_agent = Agent(FunctionModel(_respond), tools=[Tool(add, takes_ctx=False)])
_async_agent = Agent(FunctionModel(_respond), tools=[Tool(aadd, name="add", takes_ctx=False)])


async def run(script: Script) -> Any:
    _current[:] = [script]
    agent = _agent if script.tool == "sync" else _async_agent
    result = await agent.run("go", usage_limits=_LIMITS)
    return result.output
