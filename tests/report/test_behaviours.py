"""Every loop behaviour has one definition; each is shown on a run that exhibits it and on a
near miss that does not (so a definition that matched everything, or nothing, fails here)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from openprogram import Approve, Deny, Modify
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.report import BEHAVIOURS, Coverage, exhibited
from tests.report._report_traces import (
    Node,
    Tree,
    aborted_turn,
    batch,
    call,
    choose_run,
    cut_turn,
    error_turn,
    run,
    steer_after,
    think,
    turn,
)

Build = Callable[[], LoopTrace]


def deferred(script: list[object]) -> LoopTrace:
    """A Runtime run whose menu has the deferred tool ``cron``, playing ``script``."""
    from openprogram import Registry, Runtime, function
    from openprogram_testing import ScriptedProvider, run_exec_sync

    registry = Registry()

    @function(registry=registry, defer=True)
    def cron(schedule: str) -> str:
        """Schedule a job."""
        return schedule

    tree = run_exec_sync(Runtime(ScriptedProvider(script), registry=registry), "go")
    return tree.trace


def reviewed(decision: object) -> LoopTrace:
    """A call of a tool that requires approval, decided by ``decision``."""
    from openprogram import Runtime
    from openprogram_testing import ScriptedProvider
    from openprogram_testing.core.trace import run_loop_sync

    gated = {
        "spec": {"name": "gated", "parameters": {"type": "object", "properties": {}}},
        "execute": lambda args: "ran",
        "requires_approval": True,
    }
    with Runtime.override(approval_gate=lambda request: decision):
        return run_loop_sync(ScriptedProvider([turn(call("gated")), "done"]), "go", tools=[gated])


CASES: dict[str, tuple[Build, Build]] = {
    "text_finish": (lambda: run("hello"), lambda: run(turn(call("a")), max_iterations=1)),
    "tool_round": (lambda: run(turn(call("a")), "done"), lambda: run("hello")),
    "parallel_batch": (lambda: run(batch(2), "done"), lambda: run(batch(1), "done")),
    "several_prompts": (
        lambda: run("ok", prompts=["one", "two"]),
        lambda: run("ok", prompts=["one"]),
    ),
    "steering_with_prompt": (
        lambda: run("ok", schedule=SteeringSchedule().before_round(0, "be brief")),
        lambda: run("ok", "ok", schedule=SteeringSchedule().before_round(1, "more")),
    ),
    "steering_skip_first": (
        lambda: run(batch(3), "done", schedule=steer_after(0)),
        lambda: run(batch(3), "done", schedule=steer_after(1)),
    ),
    "steering_skip_middle": (
        lambda: run(batch(3), "done", schedule=steer_after(1)),
        lambda: run(batch(3), "done", schedule=steer_after(0)),
    ),
    "steering_after_last_call": (
        lambda: run(batch(2), "done", schedule=steer_after(1)),
        lambda: run(batch(2), "done", schedule=steer_after(0)),
    ),
    "steering_after_batch": (
        lambda: run(batch(2), "done", schedule=steer_after(0), steering_mode="after_batch"),
        lambda: run(batch(2), "done", schedule=steer_after(0)),
    ),
    "steering_after_text": (
        lambda: run("draft", "final", schedule=SteeringSchedule().before_round(1, "more")),
        lambda: run("draft", "final", schedule=SteeringSchedule().follow_up("more")),
    ),
    "follow_up": (
        lambda: run("draft", "final", schedule=SteeringSchedule().follow_up("more")),
        lambda: run("draft", "final", schedule=SteeringSchedule().before_round(1, "more")),
    ),
    "cap_reached": (
        lambda: run(turn(call("a")), max_iterations=1),
        lambda: run(turn(call("a")), "done", max_iterations=2),
    ),
    "cap_undelivered": (
        lambda: run(turn(call("a")), max_iterations=1, schedule=steer_after(0)),
        lambda: run(turn(call("a")), max_iterations=1),
    ),
    "provider_error": (
        lambda: run(error_turn("bad request", status=400, retryable=False)),
        lambda: run(error_turn("overloaded", status=529, retryable=True)),
    ),
    "retryable_error": (
        lambda: run(error_turn("overloaded", status=529, retryable=True)),
        lambda: run(error_turn("bad request", status=400, retryable=False)),
    ),
    "cut_stream": (lambda: run(cut_turn("par")), lambda: run(error_turn("bad", retryable=False))),
    "aborted": (lambda: run(aborted_turn("par")), lambda: run(cut_turn("par"))),
    "length_stop": (lambda: run(turn("long…", stop="length")), lambda: run("short")),
    "thinking": (lambda: run(turn(think("hmm"), "ok")), lambda: run("ok")),
    "unknown_tool": (
        lambda: run(turn(call("nope", unknown=True)), "done"),
        lambda: run(turn(call("boom")), "done"),
    ),
    "invalid_arguments": (
        lambda: run(turn(call("a", {"n": "not a number"})), "done"),
        lambda: run(turn(call("a", raw='{"n": ')), "done"),
    ),
    "unparsable_arguments": (
        lambda: run(turn(call("a", raw='{"n": ')), "done"),
        lambda: run(turn(call("a", {"n": "not a number"})), "done"),
    ),
    "raising_tool": (
        lambda: run(turn(call("boom")), "done"),
        lambda: run(turn(call("slow")), "done", tool_timeout_s=0.01),
    ),
    "tool_timeout": (
        lambda: run(turn(call("slow")), "done", tool_timeout_s=0.01),
        lambda: run(turn(call("boom")), "done"),
    ),
    "error_recovered": (
        lambda: run(turn(call("boom")), "done"),
        lambda: run(turn(call("boom")), max_iterations=1),
    ),
    "tool_updates": (
        lambda: run(turn(call("progress")), "done"),
        lambda: run(turn(call("a")), "done"),
    ),
    "nested_exec": (
        lambda: Tree(run(turn(call("a")), "done"), [Node(run("inner"))]),  # type: ignore[return-value]
        lambda: Tree(run(turn(call("a")), "done")),  # type: ignore[return-value]
    ),
    "choices_retry": (lambda: choose_run(2), lambda: choose_run(1)),
    "approval_refused": (lambda: reviewed(Deny("no")), lambda: reviewed(Approve())),
    "approval_modified": (lambda: reviewed(Modify({})), lambda: reviewed(Approve())),
    "tool_search_load": (
        lambda: deferred([turn(call("tool_search", {"select": "select:cron"})), "done"]),
        lambda: deferred([turn(call("tool_search", {"select": "kubernetes"})), "done"]),
    ),
    "deferred_call": (
        lambda: deferred(
            [
                turn(call("tool_search", {"select": "select:cron"})),
                turn(call("cron", {"schedule": "hourly"})),
                "done",
            ]
        ),
        lambda: deferred(  # loaded, but called with arguments its schema refuses: it never ran
            [
                turn(call("tool_search", {"select": "select:cron"})),
                turn(call("cron", {"schedule": 1})),
                "done",
            ]
        ),
    ),
}


def test_every_behaviour_has_a_case_and_a_unique_name() -> None:
    names = [b.name for b in BEHAVIOURS]
    assert len(names) == len(set(names)) >= 25
    assert set(CASES) == set(names)
    assert all(b.definition and b.title for b in BEHAVIOURS)


@pytest.mark.parametrize("name", sorted(CASES))
def test_definition_shows_and_misses(name: str) -> None:
    shows, misses = CASES[name]
    trace = shows()
    assert exhibited(trace).get(name, 0) >= 1, (name, exhibited(trace), trace.timeline())
    near = misses()
    assert name not in exhibited(near), (name, exhibited(near), near.timeline())


def test_counts_add_up_over_nested_runs_and_coverage() -> None:
    outer = run(turn(call("boom")), "done")
    tree = Tree(outer, [Node(run(turn(call("boom")), "done")), Node(run("x"))])
    counts = exhibited(tree)  # type: ignore[arg-type]
    assert counts["raising_tool"] == 2 and counts["nested_exec"] == 2
    assert counts["text_finish"] == 3
    coverage = Coverage.of([counts, exhibited(run("hello"))])
    assert coverage.runs == 2
    assert coverage.runs_by_behaviour["text_finish"] == 2
    assert coverage.occurrences["text_finish"] == 4
    assert [b.name for b in coverage.missing][:2] == ["parallel_batch", "several_prompts"]
    text = coverage.text()
    assert text.startswith(f"loop-behaviour coverage: {len(coverage.covered)}/{len(BEHAVIOURS)}")
    assert "parallel_batch" in text and "<- never exercised" in text
    full = Coverage.of([{b.name: 1 for b in BEHAVIOURS}])
    assert full.percent == 100.0 and not full.missing and "never exercised:" not in full.text()


def test_a_trace_tree_and_its_runs_are_read_one_way_by_exhibited_the_report_and_coverage() -> None:
    """``exhibited(tree)`` counts the tree (it raised ``AttributeError`` on a ``TraceTree``);
    ``exhibited(tree.trace)`` counts the nested runs that run started (it reported none); the
    report's record of the tree, the collector's records (what the coverage table adds up) and
    ``exhibited`` agree, and a ``choices=`` ask is no nested ``exec``."""
    from openprogram import Runtime
    from openprogram_testing import add_trace_listener, remove_trace_listener, run_exec_sync
    from openprogram_testing.report import RunCollector, trace_record
    from openprogram_testing.transport.scripted import ScriptedProvider
    from tests.runtime._agents import research_agent, research_script

    registry, tools = research_agent()
    script = [*research_script((1, 2)), "I think x.", turn(call("choose", {"choice": "x"}))]
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        tree = run_exec_sync(
            Runtime(ScriptedProvider(script), "m", registry=registry),
            "go",
            tools=tools,
            choices=["x", "y"],
        )
    finally:
        remove_trace_listener(collector.add)
    assert [node.kind for node in tree.children] == ["exec", "choices", "choices"]
    whole = exhibited(tree)  # type: ignore[arg-type]
    assert whole["nested_exec"] == 1 and whole["tool_round"] == 2
    assert whole["choices_retry"] == 1
    outer = exhibited(tree.trace)
    assert outer["nested_exec"] == 1 and outer["tool_round"] == 1
    assert "nested_exec" not in exhibited(tree.children[0].trace)
    summed: dict[str, int] = {}
    for node in tree.walk():
        for name, n in exhibited(node.trace).items():
            summed[name] = summed.get(name, 0) + n
    assert whole == summed
    (record,) = collector.runs
    assert record["behaviours"] == whole == trace_record(tree)["behaviours"]  # type: ignore[arg-type]
    assert Coverage.of([record["behaviours"]]).occurrences["nested_exec"] == 1
