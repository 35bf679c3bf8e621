"""``openprogram.loop.agent_loop`` driven by ``openprogram_testing.ScriptedProvider``.

As a user would run it: every event is streamed and consumed, the tool is a plain sync function
given as a dict tool whose JSON Schema is validated on every call, and the scripted provider
records every request (a snapshot of the history) as it does in tests.
"""

from __future__ import annotations

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
    return _dist_version("openprogram")


_current: list[Script] = []


def add(arguments: dict[str, Any]) -> int:
    return _current[0].add(arguments["a"], arguments["b"])


TOOL = {"spec": {"name": "add", "description": "Add two integers.", "parameters": ADD_SCHEMA},
        "execute": add}
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


async def run(script: Script) -> Any:
    _current[:] = [script]
    respond = _responder(script)
    provider = ScriptedProvider([respond] * (script.tool_rounds + 1))
    context = AgentContext(messages=[], tools=[TOOL])
    stream = agent_loop("go", context, LoopConfig(provider=provider, model="bench"))
    events = 0
    async for _ in stream:
        events += 1
    messages = await stream
    provider.assert_complete()
    if stream.termination != "completed" or events == 0:
        raise BenchError(f"openprogram: run ended {stream.termination!r} after {events} events")
    return messages[-1].text
