"""SteeringSchedule: every delivery point, both steering modes, follow-ups, the cap, bad input."""

from __future__ import annotations

import pytest

from openprogram import AgentContext, LoopConfig, UserMessage, agent_loop
from openprogram.tools import SKIPPED_TEXT
from openprogram_testing import (
    ScriptedProvider,
    SteeringSchedule,
    assert_skipped,
    assert_terminated,
    call,
    check_invariants,
    run_loop_sync,
    turn,
)
from tests.harness._harness import add_tool

MODES = ("skip", "after_batch")


def four_call_provider(*more: object) -> ScriptedProvider:
    return ScriptedProvider(
        [
            turn(*(call("add", {"a": i, "b": 1}, id=f"c{i}") for i in range(4))),
            turn("done"),
            *more,  # type: ignore[list-item]
        ]
    )


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("k", range(4))
def test_after_tool_at_every_index_of_a_four_call_batch(k: int, mode: str) -> None:
    provider = four_call_provider()
    schedule = SteeringSchedule().after_tool(k, "change of plan")
    ran: list[dict[str, int]] = []
    trace = run_loop_sync(
        provider, "go", tools=[add_tool(ran)], schedule=schedule, steering_mode=mode
    )

    check_invariants(trace)
    assert_terminated(trace, "completed")
    assert [d.message.text for d in schedule.delivered] == ["change of plan"]
    d = schedule.delivered[0]
    assert (d.kind, d.after_tool, d.call_index, d.round) == ("steering", k, k, 1)
    assert schedule.pending == []
    if mode == "skip":
        assert_skipped(trace, [f"c{i}" for i in range(k + 1, 4)])
        assert len(ran) == k + 1
        assert all(r.text == SKIPPED_TEXT and r.is_error for r in trace.skipped)
    else:
        assert_skipped(trace, [])
        assert len(ran) == 4
    # The second model call sees the four results, then the steering message.
    second = provider.requests[1].messages
    assert [m.role for m in second[-5:]] == ["toolResult"] * 4 + ["user"]
    assert second[-1].text == "change of plan"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("index", range(4))
def test_after_call_of_a_later_round(index: int, mode: str) -> None:
    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 0, "b": 0}, id="r0")),
            turn(*(call("add", {"a": i, "b": 1}, id=f"c{i}") for i in range(4))),
            turn("done"),
        ]
    )
    schedule = SteeringSchedule().after_call(1, index, "now")
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule, steering_mode=mode)
    check_invariants(trace)
    d = schedule.delivered[0]
    assert (d.after_tool, d.call_index, d.round) == (index + 1, index, 2)
    expected = [f"c{i}" for i in range(index + 1, 4)] if mode == "skip" else []
    assert_skipped(trace, expected)
    assert provider.requests[2].messages[-1].text == "now"


def test_after_tool_counts_executed_calls_only() -> None:
    provider = ScriptedProvider(
        [
            turn(*(call("add", {"a": i, "b": 0}, id=f"a{i}") for i in range(3))),
            turn(call("add", {"a": 1, "b": 1}, id="b0"), call("add", {"a": 2, "b": 2}, id="b1")),
            turn("done"),
        ]
    )
    # Round 0: a0 runs, steering skips a1 and a2.  Executed call #1 is then b0 (round 1).
    schedule = SteeringSchedule().after_tool(0, "first").after_tool(1, "second")
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule)
    check_invariants(trace)
    assert_skipped(trace, ["a1", "a2", "b1"])
    assert [(d.message.text, d.after_tool, d.round) for d in schedule.delivered] == [
        ("first", 0, 1),
        ("second", 1, 2),
    ]


def test_before_round_zero_is_delivered_with_the_prompt() -> None:
    provider = ScriptedProvider(["hi"])
    schedule = SteeringSchedule().before_round(0, "also: be brief")
    trace = run_loop_sync(provider, "hello", schedule=schedule)
    check_invariants(trace)
    assert [m.text for m in provider.requests[0].messages] == ["hello", "also: be brief"]
    assert sum(1 for e in trace.events if e.type == "turn_start") == 1
    assert schedule.delivered[0].round == 0


@pytest.mark.parametrize("mode", MODES)
def test_before_round_after_a_text_only_reply_keeps_the_loop_alive(mode: str) -> None:
    provider = ScriptedProvider(["first answer", "second answer"])
    schedule = SteeringSchedule().before_round(1, "one more thing")
    trace = run_loop_sync(provider, "hello", schedule=schedule, steering_mode=mode)
    check_invariants(trace)
    assert trace.model_calls == 2
    assert provider.requests[1].messages[-1].text == "one more thing"
    assert trace.final_text == "second answer"


@pytest.mark.parametrize("mode", MODES)
def test_before_round_travels_with_mid_batch_steering(mode: str) -> None:
    provider = four_call_provider()
    schedule = SteeringSchedule().after_tool(1, "steer").before_round(1, "queued")
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule, steering_mode=mode)
    check_invariants(trace)
    assert [m.text for m in provider.requests[1].messages[-2:]] == ["steer", "queued"]
    assert schedule.pending == []


def test_several_entries_at_one_point_arrive_together_in_order() -> None:
    provider = four_call_provider()
    schedule = (
        SteeringSchedule().after_tool(2, "a").after_call(0, 2, ["b", UserMessage(content="c")])
    )
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule)
    check_invariants(trace)
    assert [m.text for m in provider.requests[1].messages[-3:]] == ["a", "b", "c"]
    assert_skipped(trace, ["c3"])


def test_follow_ups_continue_the_run_one_batch_per_stop() -> None:
    provider = ScriptedProvider(["one", "two", "three"])
    schedule = SteeringSchedule().follow_up("next").follow_up(["and", "finally"])
    trace = run_loop_sync(provider, "start", schedule=schedule)
    check_invariants(trace)
    assert_terminated(trace, "completed")
    assert [m.text for m in trace.user_messages] == ["start", "next", "and", "finally"]
    assert [(d.kind, d.round) for d in schedule.delivered] == [
        ("follow_up", 1),
        ("follow_up", 2),
        ("follow_up", 2),
    ]


def test_entries_the_run_never_reached_stay_pending() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1}, id="x")), "done"])
    schedule = (
        SteeringSchedule()
        .after_tool(5, "never: only one call runs")
        .after_call(0, 1, "never: round 0 has one call")
        .before_round(7, "never: two rounds only")
    )
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule)
    check_invariants(trace)
    assert schedule.delivered == []
    assert [e.describe() for e in schedule.pending] == [
        "after_tool(5): 'never: only one call runs'",
        "after_call(round=0, index=1): 'never: round 0 has one call'",
        "before_round(7): 'never: two rounds only'",
    ]
    assert "pending" in schedule.describe()


def test_at_the_cap_steering_handed_over_is_reported_undelivered() -> None:
    provider = ScriptedProvider(
        [turn(call("add", {"a": 1, "b": 1}, id="x"), call("add", {"a": 2, "b": 2}, id="y"))]
    )
    schedule = SteeringSchedule().after_tool(0, "too late").before_round(1, "never polled")
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule, max_iterations=1)
    check_invariants(trace)
    assert_terminated(trace, "max_iterations")
    assert [m.text for m in trace.undelivered] == ["too late"]
    # The next round is beyond the cap: the schedule does not hand over what cannot be delivered.
    assert [e.describe() for e in schedule.pending] == ["before_round(1): 'never polled'"]


def test_follow_up_not_polled_when_the_cap_is_reached() -> None:
    provider = ScriptedProvider(["only"])
    schedule = SteeringSchedule().follow_up("later")
    trace = run_loop_sync(provider, "go", schedule=schedule, max_iterations=1)
    check_invariants(trace)
    assert_terminated(trace, "completed")
    assert len(schedule.pending) == 1 and trace.undelivered == []


def test_configure_chains_an_existing_hook_and_records_its_messages() -> None:
    provider = ScriptedProvider(["a", "b"])
    calls = {"n": 0}

    def existing() -> list[str]:
        calls["n"] += 1
        return ["from the app"] if calls["n"] == 2 else []

    schedule = SteeringSchedule()
    config = LoopConfig(provider=provider, get_steering_messages=existing)
    assert schedule.configure(config) is config
    stream = agent_loop("hi", AgentContext(), config)

    async def drive() -> None:
        async for _ in stream:
            pass  # the schedule needs no events: the loop's poll point says where it polls

    import asyncio

    asyncio.run(drive())
    assert [(d.message.text, d.kind, d.entry) for d in schedule.delivered] == [
        ("from the app", "steering", None)
    ]
    assert provider.requests[1].messages[-1].text == "from the app"


def test_a_schedule_on_a_bare_agent_loop_needs_no_event_feed() -> None:
    provider = ScriptedProvider(
        [turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})), "ok"]
    )
    schedule = SteeringSchedule().before_round(0, "first").after_tool(0, "stop")
    config = schedule.configure(LoopConfig(provider=provider))
    import asyncio

    async def drive() -> list[object]:
        return [e async for e in agent_loop("hi", AgentContext(tools=[add_tool()]), config)]

    asyncio.run(drive())
    assert [(d.message.text, d.round, d.call_index) for d in schedule.delivered] == [
        ("first", 0, None),
        ("stop", 1, 0),
    ]
    assert [m.text for m in provider.requests[0].messages] == ["hi", "first"]
    assert provider.requests[1].messages[-1].text == "stop"
    assert provider.requests[1].messages[-2].skipped


def test_a_poll_point_source_of_the_app_is_chained_with_its_point() -> None:
    from openprogram import PollPoint

    seen: list[PollPoint] = []

    def app_source(point: PollPoint) -> list[str]:
        seen.append(point)
        return []

    provider = ScriptedProvider(["a"])
    schedule = SteeringSchedule()
    config = schedule.configure(LoopConfig(provider=provider, get_steering_messages=app_source))
    import asyncio

    async def drive() -> None:
        async for _ in agent_loop("hi", AgentContext(), config):
            pass

    asyncio.run(drive())
    # right after the prompt, then at the end of round 0 (another round is allowed)
    assert [(p.hook, p.round, p.call_index, p.batch_done) for p in seen] == [
        ("steering", 0, None, False),
        ("steering", 0, None, True),
    ]


@pytest.mark.parametrize(
    ("build", "error", "match"),
    [
        (lambda s: s.after_tool(-1, "x"), ValueError, "k must be a non-negative int"),
        (lambda s: s.after_call(0, True, "x"), ValueError, "index must be a non-negative int"),
        (lambda s: s.before_round("1", "x"), ValueError, "round must be"),
        (lambda s: s.follow_up(42), TypeError, "str or UserMessage, got int"),
        (lambda s: s.follow_up([]), ValueError, "at least one message"),
    ],
)
def test_bad_schedule_input_is_a_clear_error(build, error, match) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(error, match=match):
        build(SteeringSchedule())


def test_a_schedule_reused_across_runs_reports_each_runs_deliveries() -> None:
    schedule = SteeringSchedule().follow_up("first")
    one = run_loop_sync(ScriptedProvider(["a", "b"]), "go", schedule=schedule)
    schedule.follow_up("second")
    two = run_loop_sync(ScriptedProvider(["c", "d"]), "again", schedule=schedule)
    check_invariants(one)
    check_invariants(two)  # "first" belongs to run one: not lost in run two
    assert [d.message.text for d in one.deliveries] == ["first"]
    assert [d.message.text for d in two.deliveries] == ["second"]
    assert len(schedule.delivered) == 2 and schedule.pending == []
