"""``openprogram.loop.agent_loop`` driven by ``openprogram_testing.ScriptedProvider``.

As a user would run it: every event is streamed and consumed, the tool is a plain sync function
given as a dict tool whose JSON Schema is validated on every call, and the scripted provider
records every request (a snapshot of the history) as it does in tests.
"""

from __future__ import annotations

from contextvars import ContextVar
from importlib.metadata import version as _dist_version
from typing import Any

from openprogram.loop import AgentContext, LoopConfig, agent_loop
from openprogram_testing import ModelRequest, ScriptedCall, ScriptedProvider, ScriptedTurn

from .common import FINAL_TEXT, BenchError, Script

name = "openprogram"
label = "openprogram (ours)"

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def version() -> str:
    return _dist_version("openprogram-loop")


_current: list[Script] = []


def add(arguments: dict[str, Any]) -> int:
    return _current[0].add(arguments["a"], arguments["b"])


_script: ContextVar[Script] = ContextVar("bench_script")
"""The async tool finds its run's script here: concurrent runs (W7) each run in a task with its
own copy of the context, so they never share one."""


async def aadd(arguments: dict[str, Any]) -> int:
    return await _script.get().aadd(arguments["a"], arguments["b"])


TOOL = {
    "spec": {"name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA},
    "execute": add,
}
ASYNC_TOOL = {"spec": TOOL["spec"], "execute": aadd}
"""Defined once, as a program defines its tools (the peers' tools are module-level too)."""


_FINAL = ScriptedTurn([FINAL_TEXT])
"""Turns are read, never changed, by the provider: the final one can be shared."""


def _responder(script: Script) -> Any:
    def respond(request: ModelRequest) -> ScriptedTurn:
        calls = script.next_turn()
        if calls is None:
            return _FINAL
        return ScriptedTurn([ScriptedCall("add", {"a": c.a, "b": c.b}, c.id) for c in calls])

    return respond


def menu(n: int) -> list[Any]:
    """``add`` and ``n - 1`` other dict tools, built once (W8 offers the same objects each run)."""
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    others = [
        {
            "spec": {"name": f"tool_{i}", "description": f"Tool number {i}.", "parameters": schema},
            "execute": str,
        }
        for i in range(1, n)
    ]
    return [TOOL, *others]


async def run(script: Script, tools: list[Any] | None = None) -> Any:
    _current[:] = [script]
    _script.set(script)
    respond = _responder(script)
    provider = ScriptedProvider([respond] * (script.tool_rounds + 1))
    if tools is None:
        tools = [TOOL if script.tool == "sync" else ASYNC_TOOL]
    context = AgentContext(messages=[], tools=tools)
    stream = agent_loop("go", context, LoopConfig(provider=provider, model="bench"))
    events = 0
    async for _ in stream:
        events += 1
    messages = await stream
    provider.assert_complete()
    if stream.termination != "completed" or events == 0:
        raise BenchError(f"openprogram: run ended {stream.termination!r} after {events} events")
    return messages[-1].text
