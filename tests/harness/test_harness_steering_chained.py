"""A steering schedule chained to another source asks the loop's own rule (``polls_steering``)
with everything the round has taken, the chained source's messages included.

A chained source that steers mid-batch in ``skip`` mode ends the round's polls; the schedule
must then hand over its ``before_round`` entries for the next round at that poll.  It used to
decide before polling the chained source, so the entry was never handed over and the test failed
with ``SteeringNotFired``: a false alarm."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, PollPoint, UserMessage, agent_loop
from openprogram_testing import ScriptedProvider, SteeringSchedule, call, turn
from tests.runtime._loop import add_tool


def _run(mode: str) -> tuple[SteeringSchedule, list[Any]]:
    steered: list[int] = []

    def app_source(point: PollPoint) -> list[str]:
        if point.round == 0 and point.call_index == 0 and not steered:
            steered.append(1)
            return ["from the app"]
        return []

    batch = [call("add", {"a": i, "b": 1}) for i in range(2)]
    provider = ScriptedProvider([turn(*batch), turn(*batch), "done"])
    schedule = SteeringSchedule().before_round(1, "remember")
    config = LoopConfig(
        provider=provider,
        get_steering_messages=app_source,
        steering_mode=mode,  # type: ignore[arg-type]
    )
    schedule.configure(config)
    context = AgentContext(messages=[], tools=[add_tool()])

    async def drain() -> None:
        async for event in agent_loop("go", context, config):
            schedule.observe(None, event)

    asyncio.run(drain())
    return schedule, context.messages


@pytest.mark.parametrize("mode", ["skip", "after_batch"])
def test_a_chained_source_steering_mid_batch_still_lets_before_round_entries_travel(
    mode: str,
) -> None:
    schedule, messages = _run(mode)
    schedule.assert_complete()  # raised SteeringNotFired in skip mode before the fix
    assert sorted(d.message.text for d in schedule.delivered) == ["from the app", "remember"]
    assert all(d.round == 1 for d in schedule.delivered)
    users = [m.text for m in messages if isinstance(m, UserMessage)]
    assert users[0] == "go" and sorted(users[1:]) == ["from the app", "remember"]
