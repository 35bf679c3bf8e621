"""Steering by what the agent does (``when``), entries never reached as failures, and the
simulated user: each shown passing and failing, with hostile input."""

from __future__ import annotations

import re
from typing import Any

import pytest

from openprogram import Registry, Runtime
from openprogram_testing import (
    DialogueMismatch,
    ScriptedProvider,
    SteeringNotFired,
    SteeringSchedule,
    UserLine,
    call,
    check_invariants,
    run_exec_sync,
    run_loop_sync,
    turn,
)
from openprogram_testing.core.conditions import SteeringConditionError
from tests.harness._harness import add_tool
from tests.runtime._agents import register_add, register_research


def _adds(*pairs: tuple[int, int], then: str = "done") -> ScriptedProvider:
    return ScriptedProvider(
        [turn(*(call("add", {"a": a, "b": b}, id=f"c{k}") for k, (a, b) in enumerate(pairs))), then]
    )


def _run(provider: ScriptedProvider, schedule: SteeringSchedule, **options: Any) -> Any:
    trace = run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule, **options)
    check_invariants(trace)
    return trace


# -- when: a tool, its arguments, the n-th call, a predicate -------------------------------------


@pytest.mark.parametrize("mode", ["skip", "after_batch"])
def test_when_fires_after_the_nth_call_whose_arguments_fit(mode: str) -> None:
    schedule = SteeringSchedule().when("add", "wait", args={"a": {"$regex": "^x"}}, nth=9)
    schedule.when("add", "second b=1", args={"b": 1}, nth=2)
    trace = _run(_adds((1, 1), (2, 2), (3, 1), (4, 1)), schedule, steering_mode=mode)
    (d,) = trace.deliveries
    assert (d.message.text, d.kind, d.after_tool, d.call_index, d.round) == (
        "second b=1",
        "steering",
        2,
        2,
        1,
    )
    assert d.entry is schedule.entries[1]
    skipped = [r.tool_call_id for r in trace.skipped]
    assert skipped == (["c3"] if mode == "skip" else [])
    # the first entry (a regex on an int never fits) is the failure, naming the calls made
    with pytest.raises(SteeringNotFired) as caught:
        schedule.assert_complete()
    assert caught.value.entries == [schedule.entries[0]]
    text = str(caught.value)
    assert 'when(add {"a": {"$regex": "^x"}}, nth=9)' in text
    assert "call 0 add" in text and "call 2 add" in text


def test_when_matches_names_and_regex_values_and_a_predicate() -> None:
    schedule = SteeringSchedule()
    schedule.when("add", "by name")  # the first add
    schedule.when(lambda calls: sum(c.arguments.get("a", 0) for c in calls) >= 5, "by sum")
    trace = _run(_adds((1, 0), (4, 0), (9, 0)), schedule, steering_mode="after_batch")
    assert [(d.message.text, d.after_tool) for d in trace.deliveries] == [
        ("by name", 0),
        ("by sum", 1),
    ]
    schedule.assert_complete()


def test_a_condition_never_met_fails_and_optional_does_not() -> None:
    strict = SteeringSchedule().when("add", "never", nth=3)
    _run(_adds((1, 1), (2, 2)), strict)
    with pytest.raises(SteeringNotFired, match=r"when\(add, nth=3\): 'never'"):
        strict.assert_complete()
    relaxed = SteeringSchedule().when("add", "never", nth=3, required=False)
    _run(_adds((1, 1), (2, 2)), relaxed)
    relaxed.assert_complete()
    assert relaxed.pending == relaxed.entries and "(optional)" in relaxed.describe()


def test_an_index_entry_never_reached_fails_naming_it_and_the_calls() -> None:
    schedule = SteeringSchedule().after_tool(5, "too late").before_round(1, "fine")
    schedule.follow_up("never asked", required=False)
    provider = _adds((1, 1), then="done")
    _run(provider, schedule, max_iterations=2)
    with pytest.raises(SteeringNotFired) as caught:
        schedule.assert_complete()
    assert [e.describe() for e in caught.value.entries] == ["after_tool(5): 'too late'"]
    assert [m.name for m in caught.value.calls[""]] == ["add"]
    assert "the run executed 1 call(s)" in str(caught.value)


def test_a_schedule_that_fires_everything_passes() -> None:
    schedule = SteeringSchedule().after_tool(0, "a").when("add", "b", nth=2).follow_up("c")
    provider = _adds((1, 1), (2, 2), then="x")
    provider.add("after the follow-up")
    _run(provider, schedule, steering_mode="after_batch")
    assert [d.message.text for d in schedule.delivered] == ["a", "b", "c"]
    schedule.assert_complete()


def test_when_in_a_nested_run_is_counted_per_run() -> None:
    registry = Registry()
    add = register_add(registry)
    research = register_research(registry)
    provider = ScriptedProvider(
        [
            turn(call("research", {"topic": "cats"})),
            turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})),
            "inner answer",
            "outer answer",
        ]
    )
    schedule = SteeringSchedule().when("add", "stop adding", args={"a": 3}, run="research")
    schedule.when("add", "not in the outer run")  # the outer run calls research only
    runtime = Runtime(provider, "m", registry=registry)
    tree = run_exec_sync(runtime, "go", tools=[research, add], schedule=schedule)
    check_invariants(tree)
    (d,) = tree["research"].trace.deliveries
    assert (d.message.text, d.after_tool, d.path) == ("stop adding", 1, ("research",))
    with pytest.raises(SteeringNotFired) as caught:
        schedule.assert_complete()
    assert [e.describe() for e in caught.value.entries] == ["when(add): 'not in the outer run'"]
    assert [m.name for m in caught.value.calls[""]] == ["research"]
    assert [m.name for m in caught.value.calls["research"]] == ["add", "add"]


def test_non_json_arguments_fit_no_args_but_the_name() -> None:
    provider = ScriptedProvider(
        [turn(call("add", raw="{not json"), call("add", {"a": 1, "b": 1})), "done"]
    )
    schedule = SteeringSchedule().when("add", "by args", args={"a": 1})
    schedule.when("add", "by name")
    trace = _run(provider, schedule, steering_mode="after_batch")
    assert [(d.message.text, d.after_tool) for d in trace.deliveries] == [
        ("by name", 0),
        ("by args", 1),
    ]


def test_thousands_of_calls_stay_fast_and_the_failure_short() -> None:
    pairs = [(i, 1) for i in range(3000)]
    schedule = SteeringSchedule().when("add", "late", args={"a": 2999}, nth=1)
    schedule.when("add", "never", args={"a": -1})
    trace = _run(_adds(*pairs), schedule, steering_mode="after_batch")
    assert [d.after_tool for d in trace.deliveries] == [2999]
    with pytest.raises(SteeringNotFired) as caught:
        schedule.assert_complete()
    text = str(caught.value)
    assert "executed 3000 call(s)" in text and "... 2989 more" in text
    assert len(text) < 3000


def test_bad_conditions_are_refused_where_written() -> None:
    s = SteeringSchedule()
    with pytest.raises(ValueError, match="invalid regular expression"):
        s.when("add", "x", args={"a": {"$regex": "("}})
    with pytest.raises(ValueError, match="nth must be an int >= 1"):
        s.when("add", "x", nth=0)
    with pytest.raises(ValueError, match="nth must be an int >= 1"):
        s.when("add", "x", nth=True)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="belong to a tool name"):
        s.when(lambda calls: True, "x", args={"a": 1})
    with pytest.raises(TypeError, match="tool name or a predicate"):
        s.when(3, "x")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="tool name or a predicate"):
        s.when("", "x")
    with pytest.raises(ValueError, match="at least one message"):
        s.when("add", [])
    assert s.entries == []


def test_a_predicate_that_raises_ends_the_run_naming_it() -> None:
    def broken(calls: Any) -> bool:
        raise KeyError("boom")

    schedule = SteeringSchedule().when(broken, "x")
    with pytest.raises(SteeringConditionError, match="broken raised KeyError"):
        run_loop_sync(_adds((1, 1)), "go", tools=[add_tool()], schedule=schedule)


def test_a_schedule_nobody_feeds_events_says_so() -> None:
    from openprogram import AgentContext, LoopConfig, agent_loop, run_sync
    from openprogram.tools import normalize_tools

    schedule = SteeringSchedule().when("add", "x")
    config = schedule.configure(LoopConfig(provider=_adds((1, 1)), model="m"))
    context = AgentContext(messages=[], tools=normalize_tools([add_tool()]))

    async def drive() -> None:
        async for _ in agent_loop(["go"], context, config):
            pass

    with pytest.raises(SteeringConditionError, match="never saw this run's events"):
        run_sync(drive)


# -- the simulated user ------------------------------------------------------------------------


def test_a_scripted_dialogue_answers_each_reply() -> None:
    provider = ScriptedProvider(["Which city?", "How many seats?", "Booked 2 seats to Oslo."])
    schedule = SteeringSchedule().simulated_user(
        [UserLine("Oslo.", expect=r"(?i)which city"), ("Two.", re.compile("seats"))]
    )
    trace = run_loop_sync(provider, "Book a flight.", schedule=schedule)
    check_invariants(trace)
    assert [m.text for m in trace.user_messages] == ["Book a flight.", "Oslo.", "Two."]
    assert [(d.kind, d.round) for d in trace.deliveries] == [("follow_up", 1), ("follow_up", 2)]
    assert trace.final_text == "Booked 2 seats to Oslo."
    schedule.assert_complete()


def test_a_reply_that_does_not_fit_its_line_fails_naming_both() -> None:
    provider = ScriptedProvider(["Which city?", "Where to?"])
    schedule = SteeringSchedule().simulated_user(
        [UserLine("Oslo.", expect="(?i)which city"), UserLine("Two.", expect="seats"), "Bye."]
    )
    trace = run_loop_sync(provider, "Book a flight.", schedule=schedule)
    assert trace.termination == "completed" and trace.final_text == "Where to?"
    with pytest.raises(DialogueMismatch) as caught:
        schedule.assert_complete()
    failure = caught.value
    assert (failure.line, failure.say, failure.expect, failure.reply) == (
        1,
        "Two.",
        "seats",
        "Where to?",
    )
    assert "'Where to?'" in str(failure) and "/seats/" in str(failure)
    assert schedule.unfired == []  # the lines after the mismatch are not a second failure


def test_dialogue_lines_never_said_are_reported_unless_optional() -> None:
    provider = ScriptedProvider(["Which city?", "Done."])
    schedule = SteeringSchedule().simulated_user(["Oslo.", "Two.", UserLine("x", required=False)])
    run_loop_sync(provider, "Book.", schedule=schedule, max_iterations=2)
    with pytest.raises(SteeringNotFired, match=r"simulated user line 1: 'Two.'"):
        schedule.assert_complete()


def test_a_callable_user_answers_until_it_returns_none() -> None:
    seen: list[tuple[str, list[str]]] = []

    def user(reply: str, history: Any) -> str | None:
        seen.append((reply, [m.role for m in history]))
        return None if "Booked" in reply else f"yes ({len(seen)})"

    provider = ScriptedProvider(["Sure?", "Really?", "Booked."])
    schedule = SteeringSchedule().simulated_user(user)
    trace = run_loop_sync(provider, "Book.", schedule=schedule)
    check_invariants(trace)
    assert [r for r, _ in seen] == ["Sure?", "Really?", "Booked."]
    assert seen[1][1] == ["user", "assistant", "user", "assistant"]
    assert [d.message.text for d in trace.deliveries] == ["yes (1)", "yes (2)"]
    schedule.assert_complete()


def test_the_simulated_user_answers_a_runtime_exec_run() -> None:
    provider = ScriptedProvider(["Which city?", "How many seats?", "Booked."])
    schedule = SteeringSchedule().simulated_user(
        [UserLine("Oslo.", expect="city"), UserLine("Two.", expect="passengers")]
    )
    tree = run_exec_sync(Runtime(provider, "m"), "Book", schedule=schedule)
    check_invariants(tree)
    assert [m.text for m in tree.trace.user_messages] == ["Book", "Oslo."]
    assert tree.final_text == "How many seats?"  # the dialogue ended at the mismatch
    with pytest.raises(DialogueMismatch, match="/passengers/, but the agent replied"):
        schedule.assert_complete()
    assert len(provider.requests) == 2  # the third scripted turn is never asked for


def test_a_callable_user_that_never_stops_is_stopped_by_the_cap() -> None:
    provider = ScriptedProvider(["again?"] * 3)
    schedule = SteeringSchedule().simulated_user(lambda reply, history: "go on")
    trace = run_loop_sync(provider, "Book.", schedule=schedule, max_iterations=3)
    assert trace.model_calls == 3 and trace.termination == "completed"


def test_scheduled_follow_ups_go_before_the_simulated_user() -> None:
    provider = ScriptedProvider(["one", "two", "three"])
    schedule = SteeringSchedule().follow_up("scheduled").simulated_user(["simulated"])
    trace = run_loop_sync(provider, "go", schedule=schedule)
    assert [d.message.text for d in trace.deliveries] == ["scheduled", "simulated"]


@pytest.mark.parametrize(
    ("dialogue", "error", "match"),
    [
        ("Oslo.", TypeError, "a dialogue is a list of lines"),
        (None, TypeError, "a dialogue is a list of lines"),
        ([""], ValueError, r"dialogue\[0\]: a dialogue line says something"),
        ([UserLine("x", expect="(")], ValueError, r"dialogue\[0\]: invalid regular expression"),
        ([3], TypeError, r"dialogue\[0\]: a dialogue line must be a str"),
    ],
)
def test_a_bad_dialogue_is_refused(dialogue: Any, error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        SteeringSchedule().simulated_user(dialogue)


@pytest.mark.parametrize("answer", [3, "", b"x"])
def test_a_callable_user_returning_nonsense_ends_the_run_naming_it(answer: Any) -> None:
    def user(reply: str, history: Any) -> Any:
        return answer

    schedule = SteeringSchedule().simulated_user(user)
    with pytest.raises((TypeError, ValueError), match=r"the simulated user .*user returned"):
        run_loop_sync(ScriptedProvider(["hi"]), "go", schedule=schedule)


# -- the fixtures judge the schedule at teardown ---------------------------------------------------

pytest_plugins = ["pytester"]

_FIXTURE_TESTS = '''
from openprogram import function
from openprogram_testing import SteeringSchedule, UserLine, call, turn

@function
def add(a: int, b: int) -> int:
    """Add."""
    return a + b

def test_unfired(scripted_provider, steering, loop_runner):
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), "done")
    steering.when("add", "never", nth=2)
    loop_runner("go", tools=[add])

def test_optional(scripted_provider, steering, loop_runner):
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), "done")
    steering.when("add", "never", nth=2, required=False).when("add", "fires")
    loop_runner("go", tools=[add])

def test_explicit_schedule(scripted_provider, loop_runner):
    scripted_provider.add("done")
    loop_runner("go", schedule=SteeringSchedule().after_tool(0, "never"))

def test_dialogue(scripted_provider, steering, loop_runner):
    scripted_provider.add("Which city?", "Anything else?")
    steering.simulated_user([UserLine("Oslo.", expect="city"), UserLine("Two.", expect="seats")])
    loop_runner("go")

def test_not_run(steering):
    steering.after_tool(3, "the test never ran a loop")
'''


def test_the_fixtures_fail_a_test_whose_entries_never_fired(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=_FIXTURE_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-rA", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    outcomes = result.parseoutcomes()
    assert (outcomes.get("passed"), outcomes.get("errors")) == (5, 3), result.stdout.str()
    out = result.stdout.str()
    assert "ERROR at teardown of test_unfired" in out
    assert "SteeringNotFired: 1 steering entry never fired" in out
    assert "when(add, nth=2): 'never'" in out and 'call 0 add {"a": 1, "b": 2}' in out
    assert "ERROR at teardown of test_explicit_schedule" in out
    assert "after_tool(0): 'never'" in out
    assert "ERROR at teardown of test_dialogue" in out
    assert "DialogueMismatch: simulated user: line 1 ('Two.')" in out
    assert "teardown of test_optional" not in out and "teardown of test_not_run" not in out
