"""check_invariants: real runs pass; hand-built broken traces fail each invariant, clearly."""

from __future__ import annotations

import re

import pytest

from openprogram.cancel import CancelToken
from openprogram.tools import SKIPPED_TEXT
from openprogram.types import UserMessage
from openprogram_testing import (
    InvariantViolation,
    LoopTrace,
    ScriptedProvider,
    SteeringSchedule,
    call,
    check_invariants,
    check_rechunk_invariance,
    cut_turn,
    error_turn,
    find_violations,
    raising_turn,
    run_loop_sync,
    think,
    turn,
)
from openprogram_testing.core.steering import Delivery
from tests.harness._harness import Events, add_calls, add_tool, failing_tool, simple_run

# -- real runs satisfy every invariant --------------------------------------------------------


def _runs() -> dict[str, LoopTrace]:
    add = add_tool()
    out: dict[str, LoopTrace] = {}
    out["text"] = run_loop_sync(ScriptedProvider(["hello"]), "hi")
    out["tools"] = run_loop_sync(
        ScriptedProvider([turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})), "7"]),
        "go",
        tools=[add],
    )
    out["errors"] = run_loop_sync(
        ScriptedProvider(
            [
                turn(
                    call("nope", unknown=True),
                    call("add", {"a": "x"}),
                    call("add", raw="{bad"),
                    call("boom"),
                ),
                "recovered",
            ]
        ),
        "go",
        tools=[add, failing_tool()],
    )
    out["provider_error"] = run_loop_sync(
        ScriptedProvider([error_turn("overloaded", call("add", {"a": 1, "b": 1}), status=529)]),
        "go",
        tools=[add],
    )
    out["cut"] = run_loop_sync(
        ScriptedProvider([cut_turn(call("add", {"a": 1, "b": 1}))]), "go", tools=[add]
    )
    out["raises"] = run_loop_sync(ScriptedProvider([raising_turn(ValueError("bad"))]), "go")
    out["cap"] = run_loop_sync(
        ScriptedProvider([turn(call("add", {"a": 1, "b": 1}))] * 2),
        "go",
        tools=[add],
        max_iterations=2,
    )
    cancel = CancelToken()
    cancel.cancel()
    out["cancelled"] = run_loop_sync(ScriptedProvider([]), "go", cancel=cancel)
    out["steer_skip"] = run_loop_sync(
        ScriptedProvider(
            [turn(call("add", {"a": 1, "b": 1}), call("add", {"a": 2, "b": 2})), "ok"]
        ),
        "go",
        tools=[add],
        schedule=SteeringSchedule().after_tool(0, "stop").follow_up("more"),
    )
    out["thinking"] = run_loop_sync(
        ScriptedProvider([turn(think("hmm", signature="sig"), "x")]), "go"
    )
    return out


RUNS = _runs()


@pytest.mark.parametrize("name", sorted(RUNS))
def test_real_runs_satisfy_all_invariants(name: str) -> None:
    check_invariants(RUNS[name])
    assert find_violations(RUNS[name]) == []


# -- each invariant fails on a broken trace ---------------------------------------------------


def _violated(trace: LoopTrace) -> set[int]:
    return {v.invariant for v in find_violations(trace)}


def _expect(trace: LoopTrace, n: int, pattern: str) -> InvariantViolation:
    with pytest.raises(InvariantViolation) as info:
        check_invariants(trace)
    err = info.value
    assert n in {v.invariant for v in err.violations}, str(err)
    text = str(err)
    assert f"invariant {n} (" in text
    assert re.search(pattern, text), text
    assert "run timeline:" in text and "agent_start" in text  # a readable timeline, not reprs
    assert "AgentStart(" not in text
    return err


def _expect_only(trace: LoopTrace, n: int, pattern: str) -> InvariantViolation:
    """Like :func:`_expect`, and invariant ``n`` is the only one the trace breaks: the broken
    trace tests that rule alone."""
    assert _violated(trace) == {n}
    return _expect(trace, n, pattern)


def _handed_over(*deliveries: Delivery) -> SteeringSchedule:
    """A schedule whose record says it handed these messages to the loop."""
    schedule = SteeringSchedule()
    schedule.delivered.extend(deliveries)
    return schedule


def test_simple_run_is_valid() -> None:
    _, events = simple_run()
    assert find_violations(LoopTrace.from_events(events, tool_names=["add"])) == []


def test_invariant_1_missing_agent_start_and_events_after_agent_end() -> None:
    _, events = simple_run()
    _expect(LoopTrace.from_events(events[1:]), 1, r"0 agent_start events")
    _, events = simple_run()
    trace = LoopTrace.from_events([*events, events[1]])
    err = _expect(trace, 1, r"events after agent_end \[events #20\]")
    assert err.invariant == 1


def test_invariant_1_agent_end_must_carry_the_runs_messages() -> None:
    b, _ = simple_run()
    b.events.pop()  # drop agent_end; rebuild it with a message missing
    emitted = [e.message for e in b.events if e.type == "message_end"]
    events = b.end(messages=emitted[:-1])
    assert _violated(LoopTrace.from_events(events)) == {1}


def test_invariant_2_unbalanced_turns_messages_and_executions() -> None:
    b, events = simple_run()
    no_turn_end = [e for i, e in enumerate(events) if i != 12]  # the first turn_end
    _expect(
        LoopTrace.from_events(no_turn_end), 2, r"turn_start while the turn started at #1 is open"
    )

    _, events = simple_run()
    no_message_end = [e for i, e in enumerate(events) if i != 3]  # the prompt's message_end
    err = _expect(
        LoopTrace.from_events(no_message_end), 2, r"message_start while the message started at #2"
    )
    assert 2 in {v.invariant for v in err.violations}

    _, events = simple_run()
    no_tool_end = [e for i, e in enumerate(events) if i != 9]
    assert 2 in _violated(LoopTrace.from_events(no_tool_end))


def test_invariant_2_tool_execution_ids_must_match() -> None:
    b = Events.prompted()
    a = b.assistant("", add_calls(2))
    from openprogram.events import ToolExecutionEnd, ToolExecutionStart
    from openprogram.types import TextContent, ToolResultMessage

    r1 = ToolResultMessage(tool_call_id="c1", tool_name="add", content=[TextContent(text="1")])
    b.add(ToolExecutionStart(tool_call_id="c1", tool_name="add", args={}))
    b.add(ToolExecutionEnd(tool_call_id="c2", tool_name="add", result=r1, is_error=False))
    b.user(UserMessage(content="x"))  # keeps the message pairing itself well-formed
    b.turn_end(a, [])
    _expect(
        LoopTrace.from_events(b.end()),
        2,
        r"tool_execution_end c2 does not match tool_execution_start c1",
    )


def test_invariant_3_more_model_calls_than_the_cap() -> None:
    _, events = simple_run()
    err = _expect(
        LoopTrace.from_events(events, cap=1), 3, r"2 model calls with cap 1 \[events #17\]"
    )
    assert err.invariant == 3
    _, events = simple_run()
    events[-1] = events[-1].model_copy(update={"model_calls": 1})
    assert _violated(LoopTrace.from_events(events)) == {3}


def test_invariant_4_tool_call_without_result() -> None:
    b = Events.prompted()
    a1 = b.assistant("", add_calls(2))
    b.result("c1", "add", "1")
    b.turn_end(a1)
    b.reply_turn("done")
    trace = LoopTrace.from_events(b.end(), tool_names=["add"])
    _expect_only(
        trace,
        4,
        r"call\(s\) c2 \(add\) of the assistant message at #\d+ got no result before the next",
    )


def test_invariant_4_results_out_of_order() -> None:
    b = Events.prompted()
    a1 = b.assistant("", add_calls(2))
    b.result("c2", "add", "2")
    b.result("c1", "add", "1")
    b.turn_end(a1)
    b.reply_turn("done")
    _expect(LoopTrace.from_events(b.end()), 4, r"result for c2 \(add\) arrives out of call order")


def _skip_round(
    *, texts: tuple[str, str] = (SKIPPED_TEXT, SKIPPED_TEXT), ran_after: bool = False
) -> Events:
    b = Events.prompted()
    a1 = b.assistant("", add_calls(3))
    b.result("c1", "add", "1")
    b.result("c2", "add", texts[0], is_error=True, skipped=True)
    if ran_after:
        b.result("c3", "add", "3")
    else:
        b.result("c3", "add", texts[1], is_error=True, skipped=True)
    b.turn_end(a1)
    return b


def test_invariant_5_skipped_result_with_the_wrong_text() -> None:
    b = _skip_round(texts=(SKIPPED_TEXT, "skipped"))
    b.reply_turn("ok", steering="steer")
    trace = LoopTrace.from_events(b.end())
    _expect_only(trace, 5, r"skipped result c3 has text 'skipped'")


def test_invariant_5_a_call_after_a_skipped_one_ran() -> None:
    b = _skip_round(ran_after=True)
    b.reply_turn("ok", steering="steer")
    _expect(LoopTrace.from_events(b.end()), 5, r"a call after the first skipped one ran")


def test_invariant_5_not_exactly_the_remaining_calls_are_skipped() -> None:
    # The schedule says steering arrived after call 0, but call 1 (c2) ran.
    b = Events.prompted()
    a1 = b.assistant("", add_calls(3))
    b.result("c1", "add", "1")
    b.result("c2", "add", "2")
    b.result("c3", "add", SKIPPED_TEXT, is_error=True, skipped=True)
    b.turn_end(a1)
    steer = UserMessage(content="steer")
    b.reply_turn("ok", steering=steer)
    schedule = _handed_over(Delivery(steer, "steering", after_tool=0, round=1, call_index=0))
    trace = LoopTrace.from_events(b.end(), schedule=schedule)
    _expect_only(
        trace,
        5,
        r"steering arrived after call 0, so call\(s\) \[1, 2\] should be skipped; skipped: \[2\]",
    )


def test_invariant_5_steering_not_right_before_the_next_assistant_message() -> None:
    b = _skip_round()
    b.reply_turn("ok")  # the steering never arrives
    _expect(
        LoopTrace.from_events(b.end()),
        5,
        r"round 1 does not deliver the steering right before its assistant",
    )


def test_invariant_5_skipping_in_after_batch_mode() -> None:
    b = _skip_round()
    b.reply_turn("ok", steering="steer")
    _expect(
        LoopTrace.from_events(b.end(), steering_mode="after_batch"),
        5,
        r"skipped calls in steering_mode 'after_batch'",
    )


def test_invariant_6_unknown_tool_with_a_success_result() -> None:
    b = Events.prompted()
    a1 = b.assistant("", [("c1", "nope", {})])
    b.result("c1", "nope", "fine")
    b.turn_end(a1)
    b.reply_turn("ok")
    trace = LoopTrace.from_events(b.end(), tool_names=["add"])
    _expect_only(
        trace, 6, r"unknown tool 'nope'; its result should be is_error with 'Tool nope not found'"
    )


def test_invariant_6_no_model_call_after_an_error_result() -> None:
    b = Events.prompted()
    a1 = b.assistant("", add_calls(1))
    b.result("c1", "add", "kaboom", is_error=True)
    b.turn_end(a1)
    trace = LoopTrace.from_events(b.end(), tool_names=["add"])
    _expect_only(
        trace, 6, r"round 0 ended with error result\(s\) but the model was not called again"
    )
    # At the cap it is fine.
    assert _violated(LoopTrace.from_events(trace.events, cap=1, tool_names=["add"])) == set()


def test_invariant_7_tool_call_of_an_error_message_runs() -> None:
    b = Events.prompted()
    a1 = b.assistant("", add_calls(1), stop="error", error="boom")
    b.result("c1", "add", "1")
    b.turn_end(a1, [])
    trace = LoopTrace.from_events(b.end("error"))
    assert 7 in _violated(trace)
    _expect(trace, 7, r"tool calls of the error message at #\d+ were run or answered")


def test_invariant_7_model_called_after_an_error_message() -> None:
    b = Events.prompted()
    b.turn_end(b.assistant("", stop="error", error="boom"))
    b.reply_turn("retry worked")
    trace = LoopTrace.from_events(b.end("completed"))
    err = _expect(trace, 7, r"a model call follows the error message at #\d+")
    assert "termination is 'completed'" in str(err)


def test_invariant_8_a_handed_over_message_is_lost() -> None:
    _, events = simple_run()
    schedule = _handed_over(
        Delivery(UserMessage(content="lost"), "steering", after_tool=None, round=1)
    )
    trace = LoopTrace.from_events(events, schedule=schedule)
    _expect_only(
        trace,
        8,
        r"steering message 'lost' was handed to the loop \(for round 1\) but neither delivered",
    )


def test_invariant_8_undelivered_in_a_completed_run_and_phantom_messages() -> None:
    b, _ = simple_run()
    b.events.pop()
    events = b.end("completed", undelivered=[UserMessage(content="x")])
    _expect(
        LoopTrace.from_events(events), 8, r"1 message\(s\) undelivered although the run completed"
    )

    _, events = simple_run()
    trace = LoopTrace.from_events(events, prompts=[UserMessage(content="someone else")])
    _expect(
        trace, 8, r"user message 'add 1 and 2' is neither a prompt nor a message handed to the loop"
    )


def test_invariant_9_steering_after_a_text_reply_without_a_model_call() -> None:
    b = Events.prompted("hi")
    reply = b.assistant("hello")
    b.turn_end(reply)
    b.turn()
    steer = b.user("one more thing")
    b.turn_end(reply, [])  # the round ends without asking the model
    schedule = _handed_over(Delivery(steer, "steering", after_tool=None, round=1))
    trace = LoopTrace.from_events(b.end(), schedule=schedule)
    _expect_only(
        trace,
        9,
        r"steering 'one more thing' queued after the text-only reply at #\d+ did not cause",
    )


def test_violation_lists_every_broken_invariant_and_the_first_number() -> None:
    _, events = simple_run()
    trace = LoopTrace.from_events(events[1:], cap=1)
    with pytest.raises(InvariantViolation) as info:
        check_invariants(trace)
    err = info.value
    assert err.invariant == 1
    assert {v.invariant for v in err.violations} >= {1, 3}
    assert str(err).startswith("loop invariants 1, 3 violated:")


def test_only_selects_invariants_and_rejects_unknown_numbers() -> None:
    _, events = simple_run()
    trace = LoopTrace.from_events(events, cap=1)
    check_invariants(trace, only=[1, 2])
    check_invariants(trace, only=["run_starts_and_ends_once", "events_pair_up"])
    with pytest.raises(ValueError, match="10 is check_rechunk_invariance"):
        check_invariants(trace, only=[10])
    with pytest.raises(ValueError, match="no single-trace invariant 'no_such_rule'"):
        check_invariants(trace, only=["no_such_rule"])
    with pytest.raises(InvariantViolation, match="model_calls_within_cap"):
        check_invariants(trace, only=["model_calls_within_cap"])


def test_each_rule_is_a_public_check_named_for_what_it_checks() -> None:
    import openprogram_testing.judges.invariants as invariants

    single = [rule for rule in invariants.INVARIANTS if rule.check is not None]
    assert [rule.number for rule in invariants.INVARIANTS] == list(range(1, 15))
    for rule in single:
        assert getattr(invariants, rule.name) is rule.check  # a public function, not _invN
        assert not rule.name.startswith("_") and rule.name in invariants.__all__
    _, events = simple_run()
    broken = LoopTrace.from_events(events[1:])
    (violation, *_) = invariants.run_starts_and_ends_once(broken)
    assert violation.rule == "run_starts_and_ends_once" and violation.invariant == 1
    assert str(violation).startswith("invariant 1 (run_starts_and_ends_once: exactly one")
    assert invariants.skipped_calls_follow_steering(RUNS["steer_skip"]) == []


# -- invariant 10 ------------------------------------------------------------------------------


def test_rechunking_does_not_change_the_final_messages() -> None:
    script = [
        turn(think("plan", signature="s"), "Let me add.", call("add", {"a": 12, "b": 30})),
        "42",
    ]
    traces = check_rechunk_invariance(
        lambda n: ScriptedProvider(script, chunk_size=n),
        "add",
        tools=[add_tool()],
        chunk_sizes=(None, 1, 2, 5),
        make_schedule=lambda: SteeringSchedule().follow_up("thanks"),
    )
    assert len(traces) == 4
    deltas = [sum(1 for e in t.events if e.type == "message_update") for t in traces]
    assert deltas[1] > deltas[2] > deltas[0]  # the chunkings really differ


def test_rechunk_invariance_failure_names_invariant_10_and_shows_a_diff() -> None:
    def make(n: int | None) -> ScriptedProvider:
        return ScriptedProvider(
            [f"chunked by {n}"], chunk_size=n
        )  # a chunk-dependent "provider bug"

    with pytest.raises(InvariantViolation) as info:
        check_rechunk_invariance(make, "hi", chunk_sizes=(None, 3))
    text = str(info.value)
    assert info.value.invariant == 10
    assert "invariant 10 (rechunking_keeps_final_messages: re-chunking" in text
    assert "chunk_size=3 differ from chunk_size=None" in text
    assert '-   "text": "chunked by None",' in text and '+   "text": "chunked by 3",' in text
    with pytest.raises(ValueError, match="at least one chunk size"):
        check_rechunk_invariance(make, "hi", chunk_sizes=())


def test_a_failing_hook_after_an_error_result_is_not_a_violation() -> None:
    # The steering hook raises after a failing tool: the loop ends "error" and re-raises; the
    # missing retry is not invariant 6's business.
    from openprogram import AgentContext, LoopConfig, agent_loop

    polls: list[int] = []

    def hook() -> list[str]:
        polls.append(1)
        if len(polls) == 2:  # the poll after the failing tool call
            raise RuntimeError("hook broke")
        return []

    provider = ScriptedProvider([turn(call("boom"))])
    config = LoopConfig(provider=provider, get_steering_messages=hook)
    events = []

    async def drive() -> None:
        async for e in agent_loop("go", AgentContext(tools=[failing_tool()]), config):
            events.append(e)

    import asyncio

    with pytest.raises(RuntimeError, match="hook broke"):
        asyncio.run(drive())
    trace = LoopTrace.from_events(events, tool_names=["boom"])
    assert trace.termination == "error" and trace.tool_results[0].is_error
    check_invariants(trace)


def test_invariant_6_an_unknown_tool_with_bad_json_is_not_a_validation_failure() -> None:
    """The loop looks a tool up before it reads the arguments: ``Tool nope not found`` is the
    right answer to an unknown tool with arguments that are not JSON, with or without the menu
    (a trace without one cannot tell the tools apart); a known tool with bad JSON still needs
    a validation failure."""
    trace = run_loop_sync(
        ScriptedProvider([turn(call("nope", raw='{"x": 1', unknown=True)), "done"]),
        "go",
        tools=[add_tool()],
    )
    assert find_violations(trace) == []
    assert find_violations(LoopTrace.from_events(trace.events)) == []
    known = LoopTrace.from_events(trace.events, tool_names=["add", "nope"])
    assert _violated(known) == {6}
