"""The loop's rules, each written once: ``LoopConfig`` checks itself, ``prepare`` answers a tagged
result, every ``PollPoint`` comes from ``poll_point``, and the termination mapping, the
steering-poll rule and the outermost-run rule are functions the loop (and the harness) ask.

The steering-poll rule is checked against what the loop *does*: a recording source sees exactly
the polls ``polls_steering`` predicts, in both steering modes, so the function and the loop
cannot drift apart unseen."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, PollPoint, RunInfo, agent_loop
from openprogram.calls import Awaiting, Invoke, RunState, prepare
from openprogram.runs import (
    STEERING_MODES,
    check_steering_mode,
    poll_point,
    polls_source,
    polls_steering,
)
from openprogram.tools import normalize_tools
from openprogram.types import ToolCall, ToolResultMessage, UserMessage, failure_termination
from openprogram_testing import ScriptedProvider, call, turn

from ._loop import add_tool

# -- LoopConfig checks itself -------------------------------------------------------------------


def _provider() -> ScriptedProvider:
    return ScriptedProvider(["done"])


@pytest.mark.parametrize(
    ("fields", "error", "says"),
    [
        ({"steering_mode": "sometimes"}, ValueError, "steering_mode must be 'skip' or"),
        ({"max_iterations": "3"}, TypeError, "max_iterations must be an int or None"),
        ({"max_iterations": True}, TypeError, "max_iterations must be an int or None"),
        ({"parallel_tool_calls": "yes"}, TypeError, "parallel_tool_calls must be True"),
        ({"tool_choice": "sometimes"}, ValueError, "unknown tool_choice"),
        ({"get_steering_messages": ["not callable"]}, TypeError, "expected a callable"),
        ({"get_follow_up_messages": 3}, TypeError, "expected a callable"),
        ({"tool_timeout_s": 0}, ValueError, "tool_timeout_s must be a number of seconds > 0"),
        ({"tool_timeout_s": -1.5}, ValueError, "tool_timeout_s must be a number"),
        ({"tool_timeout_s": "1"}, ValueError, "tool_timeout_s must be a number"),
        ({"approval_timeout_s": 0}, ValueError, "approval_timeout_s must be a number"),
    ],
)
def test_a_bad_loop_config_raises_where_it_is_written(
    fields: dict[str, Any], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        LoopConfig(provider=_provider(), **fields)


def test_a_loop_config_without_a_provider_stream_raises() -> None:
    with pytest.raises(TypeError, match="has no stream"):
        LoopConfig(provider=object())  # type: ignore[arg-type]


def test_a_good_loop_config_keeps_its_values_as_given() -> None:
    choice = {"type": "function", "function": {"name": "add"}}  # (the Chat shape: not rewritten)
    config = LoopConfig(
        provider=_provider(),
        max_iterations=0,  # clamped by effective_cap, not refused
        tool_choice=choice,  # type: ignore[arg-type]
        steering_mode="after_batch",
        tool_timeout_s=0.5,
        get_steering_messages=lambda: [],
    )
    assert config.tool_choice is choice and config.max_iterations == 0
    assert STEERING_MODES == ("skip", "after_batch")
    assert check_steering_mode("skip") == "skip"


# -- the termination mapping and the outermost-run rule -----------------------------------------


def test_failure_termination_is_error_for_an_exception_and_aborted_for_the_rest() -> None:
    assert failure_termination(RuntimeError("x")) == "error"
    assert failure_termination(asyncio.CancelledError()) == "aborted"
    assert failure_termination(KeyboardInterrupt()) == "aborted"
    assert failure_termination(SystemExit(1)) == "aborted"


def test_polls_source_is_the_outermost_run_rule() -> None:
    def bare() -> list[str]:
        return []

    def with_point(point: PollPoint) -> list[str]:
        return []

    outermost = RunInfo("run-1")
    nested = RunInfo("run-2", parent_id="run-1", depth=1)
    choices = RunInfo("run-3", parent_id="run-1", kind="choices")
    assert polls_source(bare, None) and polls_source(bare, outermost)
    assert not polls_source(bare, nested) and not polls_source(bare, choices)
    assert polls_source(with_point, nested) and polls_source(with_point, choices)
    assert not polls_source(None, outermost)


# -- PollPoint and prepare --------------------------------------------------------------------------


def test_poll_point_builds_by_keyword_with_the_depth_of_its_run() -> None:
    run = RunInfo("run-7", parent_id="run-1", depth=2)
    point = poll_point("steering", round=3, calls_in_run=5, run=run, call_index=1, calls_in_round=2)
    assert point == PollPoint("steering", 3, 1, 2, 5, True, 2, run)
    assert poll_point("follow_up", round=0, calls_in_run=0, run=None).depth == 0


def _state(*tools: Any, **config: Any) -> RunState:
    agent_tools = normalize_tools(list(tools))
    context = AgentContext(messages=[], tools=agent_tools)
    return RunState(context, agent_tools, LoopConfig(provider=_provider(), **config))


def test_prepare_answers_a_result_an_awaiting_or_an_invoke() -> None:
    async def slow_add(args: dict[str, Any]) -> int:
        return args["a"] + args["b"]

    sync_add = add_tool()
    async_add = {"spec": {**sync_add["spec"], "name": "slow_add"}, "execute": slow_add}
    run = _state(sync_add, async_add)
    answered = prepare(run, ToolCall("c1", "add", {"a": 1, "b": 2}))
    assert type(answered) is ToolResultMessage and answered.text == "3"
    unknown = prepare(run, ToolCall("c2", "nope", {}))
    assert type(unknown) is ToolResultMessage and unknown.is_error
    invalid = prepare(run, ToolCall("c3", "add", {"a": "x", "b": 2}))
    assert type(invalid) is ToolResultMessage and invalid.is_error
    awaiting = prepare(run, ToolCall("c4", "slow_add", {"a": 1, "b": 2}))
    assert type(awaiting) is Awaiting
    assert asyncio.run(awaiting.awaitable) == 3  # type: ignore[arg-type]
    timed = prepare(_state(sync_add, tool_timeout_s=1.0), ToolCall("c5", "add", {"a": 1, "b": 2}))
    assert (
        type(timed) is Invoke and timed.tool.name == "add" and timed.arguments == {"a": 1, "b": 2}
    )


# -- the steering-poll rule is what the loop does -------------------------------------------------


def _steered_run(mode: str, steer_after: int | None, max_iterations: int | None) -> list[Any]:
    """Run 3 rounds of 3 calls each, steering once (after executed call ``steer_after``);
    return every steering poll the loop made as ``(round, call_index, batch_done)``."""
    polls: list[Any] = []
    executed = [0]

    def source(point: PollPoint) -> list[UserMessage]:
        polls.append((point.round, point.call_index, point.batch_done))
        if point.call_index is not None:
            executed[0] += 1
            if executed[0] - 1 == steer_after:
                return [UserMessage(content="steer")]
        return []

    batch = [call("add", {"a": i, "b": 1}) for i in range(3)]
    provider = ScriptedProvider([turn(*batch), turn(*batch), turn(*batch), "done"])
    context = AgentContext(messages=[], tools=[add_tool()])
    config = LoopConfig(
        provider=provider,
        get_steering_messages=source,
        steering_mode=mode,  # type: ignore[arg-type]
        max_iterations=max_iterations,
    )

    async def drain() -> None:
        await agent_loop("go", context, config)

    asyncio.run(drain())
    return polls


def _predicted(mode: str, steer_after: int | None, cap: int) -> list[Any]:
    """The polls ``polls_steering`` says the same run makes (the script: 3 rounds of 3 calls,
    then text)."""
    polls: list[Any] = [(0, None, False)]
    executed = 0
    for round in range(min(cap, 4)):
        calls = 3 if round < 3 else 0
        queued = False
        for index in range(calls):
            if queued and mode == "skip":
                break  # skipped: no poll after it
            polls.append((round, index, index == calls - 1))
            if executed == steer_after:
                queued = True
            executed += 1
            if not polls_steering(mode, True, queued, round + 1, cap):  # type: ignore[arg-type]
                break
        if polls_steering(mode, False, queued, round + 1, cap):  # type: ignore[arg-type]
            polls.append((round, None, True))
    return polls


@pytest.mark.parametrize("mode", ["skip", "after_batch"])
@pytest.mark.parametrize("steer_after", [None, 0, 1, 2, 4])
@pytest.mark.parametrize("max_iterations", [None, 2])
def test_the_loop_polls_steering_exactly_where_polls_steering_says(
    mode: str, steer_after: int | None, max_iterations: int | None
) -> None:
    cap = 50 if max_iterations is None else max_iterations
    assert _steered_run(mode, steer_after, max_iterations) == _predicted(mode, steer_after, cap)


def test_polls_steering_reads_as_documented() -> None:
    # After a call: always, unless steering is queued in skip mode.
    assert polls_steering("skip", True, False, 1, 50)
    assert not polls_steering("skip", True, True, 1, 50)
    assert polls_steering("after_batch", True, True, 1, 50)
    # At a round's end: only with nothing queued and another round allowed.
    assert polls_steering("skip", False, False, 1, 50)
    assert not polls_steering("after_batch", False, True, 1, 50)
    assert not polls_steering("skip", False, False, 2, 2)
    assert polls_steering("skip", False, False, 99, None)
