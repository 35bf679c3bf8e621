"""Trace trees of ``Runtime.exec``: one trace per run, linked to the tool call that started it;
invariants per run; nested lanes in the timeline and snapshot; steering into a nested run;
assertions addressing a nested run; ``choices=`` asks; the runtime's own steering queue."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram import ProviderError, Registry, Runtime, function
from openprogram_testing import (
    InvariantViolation,
    ScriptedProvider,
    SteeringSchedule,
    TraceTree,
    assert_final_text,
    assert_skipped,
    assert_terminated,
    call,
    check_invariants,
    run_exec,
    run_exec_sync,
    turn,
)
from openprogram_testing.base.recording import annotate
from openprogram_testing.judges.invariants import Violation, find_tree_violations
from tests.runtime._agents import register_answers, research_agent, research_script


def _script() -> list[Any]:
    """The research run with two adds in its nested run (steering after the first skips the
    second)."""
    return research_script((0, 1), (1, 1))


def _run(schedule: SteeringSchedule | None = None) -> tuple[TraceTree, Any]:
    registry, tools = research_agent()
    provider = ScriptedProvider(_script())
    runtime = Runtime(provider, "m", registry=registry)
    tree = run_exec_sync(runtime, "go", tools=tools, schedule=schedule)
    provider.assert_complete()
    return tree, provider


def test_a_nested_exec_is_a_child_linked_to_its_tool_call() -> None:
    tree, provider = _run()
    assert tree.result == "outer answer" and tree.exception is None
    # One form of a run's address everywhere: the string tree[...] takes, what walk() yields.
    assert [n.path for n in tree.walk()] == ["", "research"]
    assert [n.steps for n in tree.walk()] == [(), ("research",)]
    assert all(tree[n.path] is n for n in tree.walk())
    (child,) = tree.children
    outer_call = tree.trace.tool_calls[0]
    assert (child.tool_call_id, child.tool_name, child.depth) == (outer_call.id, "research", 1)
    assert child.parent is tree and child.kind == "exec"
    assert child.trace.final_text == "inner answer"
    assert tree.trace.final_text == "outer answer"
    # each run keeps only its own events and model calls (nothing interleaved)
    assert [e.type for e in tree.trace.events].count("agent_start") == 1
    assert tree.trace.model_calls == 2 and child.trace.model_calls == 2
    assert [r.index for r in tree.trace.requests or []] == [0, 3]
    assert [r.index for r in child.trace.requests or []] == [1, 2]
    assert [m.text for m in child.trace.prompts or []] == ["research cats"]
    check_invariants(tree)  # every run


def test_addressing_a_nested_run_by_tool_path() -> None:
    tree, _ = _run()
    assert tree["research"] is tree.children[0] is tree.find(["research"])
    assert tree.find("research/add") is None and tree.find_all("nope") == []
    with pytest.raises(KeyError, match="no run at 'summarize'; nested runs: 'research'"):
        tree["summarize"]
    assert_final_text(tree, "outer answer")
    assert_final_text(tree, "inner answer", run="research")
    assert_terminated(tree, "completed", run=("research",))
    with pytest.raises(AssertionError) as info:
        assert_final_text(tree, "other", run="research")
    text = str(info.value)
    assert text.startswith("in run research: expected final text 'other', got 'inner answer'")
    # The lane of the run checked, after the path to it (not the whole tree).
    assert "run timeline:\npath: outermost run > run research (call call_0, depth 1)\n" in text
    assert "outer answer" not in text
    with pytest.raises(AssertionError, match="no run at 'x/y'"):
        assert_terminated(tree, "completed", run="x/y")
    with pytest.raises(TypeError, match="run= addresses a nested run of a TraceTree"):
        assert_terminated(tree.trace, "completed", run="research")


def test_timeline_and_snapshot_show_nested_runs_as_indented_lanes() -> None:
    tree, _ = _run()
    lines = tree.timeline().splitlines()
    start = next(
        i for i, line in enumerate(lines) if "tool_execution_start call_0 research" in line
    )
    assert (
        lines[start + 1].startswith("r1:")
        and "┌ run research (call call_0, depth 1)" in lines[start + 1]
    )
    inner = [line for line in lines if line.startswith("r1#")]
    assert inner[0].split() == ["r1#0", "agent_start"] and "agent_end" in inner[-1]
    indent = lambda line: len(line) - len(line.lstrip())  # noqa: E731
    outer_start = lines[0].split("  ", 1)[1]
    inner_start = inner[0].split("  ", 1)[1]
    assert indent(inner_start) > indent(outer_start) + 2
    end = next(i for i, line in enumerate(lines) if "tool_execution_end call_0 research" in line)
    assert end > lines.index(inner[-1]) and not lines[end].startswith("r1")
    snap = tree.snapshot_text()
    assert snap.startswith("# openprogram trace v2: cap=50 steering_mode=skip runs=2\n")
    assert "    ┌ run research (call call#1, depth 1)\n      agent_start\n        sent " in snap
    assert '        prompt "research cats"' in snap
    assert "call_0" not in snap  # ids normalised across the whole tree


def test_steering_targets_a_nested_run_by_tool_path() -> None:
    schedule = SteeringSchedule().after_tool(0, "use metric", run="research")
    tree, provider = _run(schedule)
    inner = tree["research"]
    assert_skipped(tree, ["add"], run="research")
    assert_skipped(tree, [])  # the outer run is not touched
    (delivery,) = inner.trace.deliveries
    assert delivery.run is not None and delivery.run.run_id == inner.run.run_id
    assert (delivery.path, delivery.after_tool, delivery.round) == (("research",), 0, 1)
    assert tree.trace.deliveries == []
    assert provider.requests[2].messages[-1].text == "use metric"
    assert schedule.pending == []
    check_invariants(tree)
    assert 'steering "use metric"' in tree.snapshot_text()


def test_an_entry_for_a_run_that_never_starts_stays_pending() -> None:
    schedule = SteeringSchedule().after_tool(0, "x", run="summarize").follow_up("more")
    registry, tools = research_agent()
    provider = ScriptedProvider([*_script(), "after the follow-up"])
    tree = run_exec_sync(
        Runtime(provider, "m", registry=registry), "go", tools=tools, schedule=schedule
    )
    assert [e.describe() for e in schedule.pending] == ["after_tool(0) in run summarize: 'x'"]
    assert [d.message.text for d in tree.trace.deliveries] == ["more"]
    assert tree.final_text == "after the follow-up"
    check_invariants(tree)


def test_a_broken_nested_run_is_reported_with_its_lane() -> None:
    tree, _ = _run()
    inner = tree["research"].trace
    inner.events.insert(1, inner.events[0])  # a second agent_start in the nested run
    violations = find_tree_violations(tree)
    assert {v.run for v in violations} == {"r1 (run research (call call_0, depth 1))"}
    with pytest.raises(InvariantViolation) as info:
        check_invariants(tree)
    text = str(info.value)
    assert "in r1 (run research (call call_0, depth 1)): 2 agent_start events" in text
    assert "[events r1#0, r1#1]" in text


def test_choices_asks_are_traced_as_runs_too() -> None:
    registry = Registry()
    approve, reject = register_answers(registry, approve="approved", reject="rejected")

    provider = ScriptedProvider(["a refund is fair", turn(call("choose", {"choice": "approve"}))])
    runtime = Runtime(provider, "m", registry=registry)
    tree = run_exec_sync(runtime, "refund #12", tools=[], choices=[approve, reject])
    assert tree.result == "approved"
    (ask,) = tree.children
    assert ask.kind == "choices" and ask.tool_call_id is None and ask.path == ":choices"
    assert tree[":choices"] is ask and ask.trace.tool_calls[0].name == "choose"
    assert "choices run" in tree.timeline()
    check_invariants(tree)


def test_run_exec_async_and_errors() -> None:
    registry, tools = research_agent()
    provider = ScriptedProvider(_script()[:2])  # runs out inside the nested run
    runtime = Runtime(provider, "m", registry=registry)
    with pytest.raises(ProviderError) as info:
        asyncio.run(run_exec(runtime, "go", tools=tools))
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "runs timeline:" in notes and "r1#0" in notes
    kept = asyncio.run(run_exec(Runtime(ScriptedProvider([]), "m"), "go", tools=[], raises=False))
    assert isinstance(kept.exception, ProviderError) and kept.result is None
    assert kept.termination == "error"
    with pytest.raises(ValueError):  # fails before any run: nothing to build a tree from
        run_exec_sync(runtime, "go", tools=[], toolset="full")


def test_runtime_steer_from_a_tool_is_a_handed_over_message() -> None:
    registry = Registry()
    runtime_box: list[Runtime] = []

    @function(registry=registry)
    def lookup(city: str) -> str:
        """Look a city up."""
        runtime_box[0].steer("also check Oslo")
        return f"{city}: sunny"

    provider = ScriptedProvider(
        [turn(call("lookup", {"city": "Rome"}), call("lookup", {"city": "Paris"})), "done"]
    )
    runtime = Runtime(provider, "m", registry=registry)
    runtime_box.append(runtime)
    tree = run_exec_sync(runtime, "weather", tools=[lookup])
    assert [d.message.text for d in tree.trace.deliveries] == ["also check Oslo"]
    (d,) = tree.trace.deliveries  # where the runtime handed it over: after call 0 of round 0
    assert (d.kind, d.round, d.call_index, d.after_tool, d.run) == ("steering", 1, 0, 0, tree.run)
    assert_skipped(tree, ["lookup"])
    check_invariants(tree)


def test_every_run_of_a_tree_knows_the_menu_it_offered() -> None:
    """A call to a tool that is not offered, with arguments that are not JSON, is correctly
    answered ``Tool nope not found``: invariant 6 must accept it on the exec path too, which
    needs each run's own menu (a nested run offers its own, a ``choices=`` ask its tool)."""

    @function
    def echo(x: int) -> int:
        """Echo."""
        return x

    provider = ScriptedProvider([turn(call("nope", raw='{"x": 1', unknown=True)), "done"])
    tree = run_exec_sync(Runtime(provider, "m"), "go", tools=[echo])
    check_invariants(tree)
    assert tree.trace.tool_names == ["echo"]

    registry, tools = research_agent()
    nested = run_exec_sync(
        Runtime(ScriptedProvider(_script()), "m", registry=registry), "go", tools=tools
    )
    outer, inner = nested.runs
    assert outer.trace.tool_names == [t.name for t in tools]
    assert inner.trace.tool_names == outer.trace.tool_names  # inherited, as the runtime does


def test_run_exec_takes_check_invariants_as_the_docs_say(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram_testing.core import tree as tree_module

    def rt() -> Runtime:
        return Runtime(ScriptedProvider(["done"]), "m")

    # accepted (it used to reach Runtime.aexec as an unknown keyword) and off means not checked
    checked: list[TraceTree] = []
    monkeypatch.setattr(tree_module, "check_tree_invariants", checked.append)
    assert run_exec_sync(rt(), "go", tools=[], check_invariants=False).final_text == "done"
    assert checked == []
    # on means every run of the tree goes through the checker, and what it raises reaches the caller
    tree = run_exec_sync(rt(), "go", tools=[], check_invariants=True)
    assert checked == [tree]

    def broken(tree: TraceTree) -> None:
        raise InvariantViolation([Violation(1, "planted")])

    monkeypatch.setattr(tree_module, "check_tree_invariants", broken)
    with pytest.raises(InvariantViolation, match="planted"):
        run_exec_sync(rt(), "go", tools=[], check_invariants=True)


def test_notes_from_beneath_the_loop_land_on_the_tree_run_they_happened_in() -> None:
    """What a cassette notes in the run's own context (an interaction, a fault) is marked on
    the run of the tree that was running, at the event where it happened."""
    registry = Registry()

    @function(registry=registry)
    def probe() -> str:
        """Probe."""
        annotate("probe", "inside the tool")
        return "ok"

    provider = ScriptedProvider([turn(call("probe", {})), "done"])
    tree = run_exec_sync(Runtime(provider, "m", registry=registry), "go", tools=[probe])
    (note,) = tree.trace.annotations
    assert (note.kind, note.text) == ("probe", "inside the tool")
    assert tree.trace.events[note.event_index - 1].type == "tool_execution_start"
