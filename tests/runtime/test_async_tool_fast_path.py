"""An ``async def`` tool with nothing to watch is awaited inline, in the run's own task; with a
timeout, a cancel token or a progress callback it takes the general path (its own task)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram import AgentContext, CancelToken, LoopConfig, agent_loop
from openprogram_testing import ScriptedProvider, call, turn


async def _tasks_seen(**config: Any) -> tuple[bool, str, str]:
    seen: list[asyncio.Task[Any] | None] = []

    async def where(arguments: dict[str, Any], **extras: Any) -> str:
        seen.append(asyncio.current_task())
        await asyncio.sleep(0)
        return "ok"

    execute: Any = where
    if not config.pop("extras", False):

        async def where_plain(arguments: dict[str, Any]) -> str:
            return await where(arguments)

        execute = where_plain
    tool = {"spec": {"name": "where", "parameters": {}}, "execute": execute}
    provider = ScriptedProvider([turn(call("where", {})), "done"])
    stream = agent_loop("go", AgentContext(tools=[tool]), LoopConfig(provider=provider, **config))
    run_task = asyncio.current_task()
    messages = await stream
    return seen[0] is run_task, messages[2].text, stream.termination


@pytest.mark.parametrize(
    ("config", "inline"),
    [
        ({}, True),
        ({"tool_timeout_s": 5.0}, False),
        ({"cancel": CancelToken()}, False),
        ({"extras": True}, False),  # declares **kwargs: may take on_update, tool_call_id, cancel
    ],
    ids=["plain", "timeout", "cancel-token", "extras"],
)
def test_which_path_an_async_tool_takes(config: dict[str, Any], inline: bool) -> None:
    assert asyncio.run(_tasks_seen(**config)) == (inline, "ok", "completed")


def test_an_inline_async_tool_that_raises_or_interrupts_ends_as_on_the_general_path() -> None:
    async def boom(arguments: dict[str, Any]) -> str:
        await asyncio.sleep(0)
        raise ValueError("bad input")

    async def interrupt(arguments: dict[str, Any]) -> str:
        raise KeyboardInterrupt

    events: list[Any] = []

    async def run(execute: Any) -> Any:
        tool = {"spec": {"name": "t", "parameters": {}}, "execute": execute}
        provider = ScriptedProvider([turn(call("t", {})), "done"])
        stream = agent_loop("go", AgentContext(tools=[tool]), LoopConfig(provider=provider))
        events.clear()
        async for event in stream:
            events.append(event)
        return stream

    stream = asyncio.run(run(boom))
    assert stream.termination == "completed"
    results = [e for e in events if e.type == "tool_execution_end"]
    assert results[0].is_error and results[0].result.content[0].text == "bad input"
    with pytest.raises(KeyboardInterrupt):
        asyncio.run(run(interrupt))
    assert events[-1].type == "agent_end" and events[-1].termination == "aborted"
