"""``capture_runs``: the runs of any ``Runtime`` made inside a block, with no runner in between
(the application's own entry point), as trace trees; and the report of a test that makes them."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from typing import Any

import pytest

from openprogram import Runtime
from openprogram_testing import CapturedRuns, ScriptedProvider, call, capture_runs, turn
from tests.runtime._agents import research_agent, research_script

pytest_plugins = ["pytester"]


def plan_trip(text: str, *, runtime: Runtime) -> str:
    """An application's entry point: it runs the agent itself, no harness in between."""
    _, tools = AGENT
    return str(runtime.exec(text, tools=tools))


AGENT = research_agent()


def research_runtime(*adds: tuple[int, int]) -> Runtime:
    registry, _ = AGENT
    return Runtime(ScriptedProvider(research_script(*adds)), "m", registry=registry)


def test_runs_of_an_entry_point_are_captured_as_a_tree() -> None:
    runtime = research_runtime((1, 2))
    with capture_runs() as runs:
        assert plan_trip("plan it", runtime=runtime) == "outer answer"
    assert isinstance(runs, CapturedRuns)
    (tree,) = runs
    assert tree.termination == "completed" and tree.final_text == "outer answer"
    (nested,) = tree.children
    assert nested.path == "research" and nested.final_text == "inner answer"
    assert nested.tool_call_id == tree.trace.tool_calls[0].id
    assert [t.termination for t in runs.traces] == ["completed", "completed"]
    assert runs[0] is tree and runs[-1:] == [tree] and "1 outermost run(s), 2 in all" in repr(runs)


def test_runs_outside_the_block_and_beside_it_are_not_captured() -> None:
    before = research_runtime((1, 2))
    plan_trip("before", runtime=before)
    beside: list[str] = []

    def elsewhere() -> None:  # a thread started without this context: a concurrent test
        beside.append(plan_trip("beside", runtime=research_runtime((3, 4))))

    with capture_runs() as runs:
        thread = threading.Thread(target=elsewhere)
        with pytest.warns(RuntimeWarning, match="outside that block's context"):
            thread.start()  # not captured, and it says so
            thread.join()
        plan_trip("inside", runtime=research_runtime((5, 6)))
    plan_trip("after", runtime=research_runtime((7, 8)))
    assert beside == ["outer answer"]
    (tree,) = runs
    assert tree.trace.messages[0].text == "inside"  # type: ignore[union-attr]
    assert len(runs) == 1  # the block is closed: later runs stay out


def test_asyncio_tasks_and_steering_are_seen() -> None:
    runtime = Runtime(
        ScriptedProvider([turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})),
                          "done"]),
        "m",
        registry=AGENT[0],
    )  # fmt: skip
    runtime.steer("only the first")

    async def main() -> Any:
        return await asyncio.create_task(runtime.aexec("add", tools=[AGENT[1][1]]))

    with capture_runs() as runs:
        asyncio.run(main())
    (tree,) = runs
    from openprogram_testing.core.rounds import split_rounds

    origins = [a.origin for r in split_rounds(tree.trace) for a in r.arrivals]
    assert origins == ["prompt", "steering"]  # the queued steering, known as handed over


def test_a_run_that_ended_at_its_cap_shows_that_cap() -> None:
    runtime = Runtime(
        ScriptedProvider([turn(call("add", {"a": 1, "b": 2}))] * 2), "m", registry=AGENT[0]
    )
    with capture_runs() as runs:
        runtime.exec("add", tools=[AGENT[1][1]], max_iterations=2)
    (tree,) = runs
    assert tree.termination == "max_iterations" and tree.trace.cap == 2


def test_observe_all_refuses_what_it_cannot_call() -> None:
    with pytest.raises(TypeError, match="observe_all"), Runtime.observe_all(42):  # type: ignore[arg-type]
        pass


APP = """
from openprogram import Runtime
from openprogram_testing import ScriptedProvider
from tests.runtime._agents import research_agent, research_script

REGISTRY, TOOLS = research_agent()
APP_RUNTIME = Runtime(ScriptedProvider(), "real-model", registry=REGISTRY)  # built at import


def plan_trip(text, *, runtime):
    return runtime.exec(text, tools=TOOLS)


def test_entry_point():
    runtime = Runtime(ScriptedProvider(research_script((1, 2))), "m", registry=REGISTRY)
    assert plan_trip("plan", runtime=runtime) == "outer answer"


def test_app_runtime_overridden(runtime_override, scripted_provider):
    scripted_provider.add(*research_script((1, 2)))
    assert plan_trip("plan", runtime=APP_RUNTIME) == "outer answer"


def test_through_the_runner(exec_runner, scripted_provider):
    scripted_provider.add(*research_script((1, 2)))
    exec_runner.runtime.registry = REGISTRY
    assert exec_runner("plan", tools=TOOLS).result == "outer answer"
"""


def test_the_report_shows_runs_no_runner_started(pytester: pytest.Pytester) -> None:
    from pathlib import Path

    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.syspathinsert(Path(__file__).resolve().parents[2])
    pytester.makepyfile(test_app=APP)
    out = pytester.path / "report.html"
    result = pytester.runpytest("--openprogram-html", str(out), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=3)
    found = re.findall(
        r'<script type="application/json" id="([^"]+)">(.*?)</script>', out.read_text(), re.S
    )
    data = {key: json.loads(text) for key, text in found}
    assert len(data["summary"]) == 3
    for row in data["summary"]:
        assert row["runs"] == 1, row  # the entry point's run is there; the runner's is not doubled
        (run,) = data[f"d-{row['i']}"]["runs"]
        (lane,) = run["children"]
        assert lane["label"].startswith("exec from research") and lane["call_id"]
        assert run["behaviours"]["nested_exec"] == 1


def test_a_run_still_going_when_the_block_ends_is_recorded_to_its_end() -> None:
    """The block ends while a run (on a thread given its context) waits in a tool: reading it
    afterwards shows how it ended, not a cut trace that reads as an error; a run started after
    the block still stays out."""
    started, go = threading.Event(), threading.Event()
    registry, (research, add) = AGENT

    def wait_then_add(a: int, b: int) -> int:
        started.set()
        go.wait(10)
        return a + b

    from openprogram import function

    slow = function(registry=registry, name="slow_add")(wait_then_add)
    provider = ScriptedProvider([turn(call("slow_add", {"a": 1, "b": 2})), "three"])
    runtime = Runtime(provider, "m", registry=registry)
    import contextvars

    with capture_runs() as runs:
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run,
            args=(
                runtime.exec,
                "add",
            ),
            kwargs={"tools": [slow]},
        )
        thread.start()
        assert started.wait(10)
    go.set()
    thread.join(10)
    context.run(plan_trip, "after", runtime=research_runtime((1, 2)))  # a new run: not taken
    (tree,) = runs
    assert tree.termination == "completed" and tree.final_text == "three"


def test_reading_after_each_run_builds_each_run_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Reading the runs after each of n runs rebuilds only the runs that changed (n builds,
    not n²/2)."""
    from openprogram_testing.core import trace as trace_module

    built: list[int] = []
    real = trace_module.LoopTrace.from_events.__func__  # type: ignore[attr-defined]

    def counting(cls: Any, *args: Any, **kwargs: Any) -> Any:
        built.append(1)
        return real(cls, *args, **kwargs)

    monkeypatch.setattr(trace_module.LoopTrace, "from_events", classmethod(counting))
    n = 40
    script = [step for i in range(n) for step in research_script((i, i))]
    runtime = Runtime(ScriptedProvider(script), "m", registry=AGENT[0])
    with capture_runs() as runs:
        for i in range(n):
            plan_trip(f"plan {i}", runtime=runtime)
            assert len(runs) == i + 1 and runs[-1].final_text == "outer answer"
    assert len(built) == 2 * n  # each outer run and its nested run, once
    assert [tree.trace.messages[0].text for tree in runs] == [f"plan {i}" for i in range(n)]  # type: ignore[union-attr]


def test_a_run_on_a_thread_started_without_the_context_warns_and_one_with_it_is_captured() -> None:
    """A plain ``threading.Thread`` starts with an empty context, so the block cannot see a run
    on it: that run says so (it went missing from the capture and the report in silence); a
    thread started with a copy of the context is captured."""
    import contextvars
    import warnings

    from openprogram.runtime import UNOBSERVED_RUN

    def in_thread(target: Any) -> list[str]:
        answers: list[str] = []
        caught: list[warnings.WarningMessage] = []

        def body() -> None:
            with warnings.catch_warnings(record=True) as seen:
                warnings.simplefilter("always")
                answers.append(plan_trip("plan it", runtime=research_runtime((1, 2))))
            caught.extend(seen)

        thread = threading.Thread(target=target(body))
        thread.start()
        thread.join(30)
        assert answers == ["outer answer"]
        return [str(w.message) for w in caught if w.category is RuntimeWarning]

    with capture_runs() as runs:
        plain = in_thread(lambda body: body)
    assert len(runs) == 0
    assert plain and set(plain) == {UNOBSERVED_RUN}
    assert "copy_context" in UNOBSERVED_RUN  # it says what to do

    with capture_runs() as runs:
        context = contextvars.copy_context()  # here, inside the block
        copied = in_thread(lambda body: lambda: context.run(body))
    assert copied == [] and len(runs) == 1 and runs[0].final_text == "outer answer"

    # with no block open, a run on a plain thread has nothing to warn about
    assert in_thread(lambda body: body) == []


def test_a_capture_that_cannot_record_warns_and_never_fails_the_run() -> None:
    """An observer's exception fails the run (docs/decisions.md), and every report option opens
    a capture: one that cannot record says so once and the run goes on as it would unobserved
    (a report option changes no verdict)."""

    class Broken:
        def __call__(self, info: Any, event: Any) -> None:
            raise KeyError("recorder bug")

        def handed_over(self, handover: Any) -> None:
            raise KeyError("recorder bug")

    runtime = research_runtime((1, 2))
    runtime.follow_up("and then?")
    runtime.provider.turns.append("after the follow-up")  # type: ignore[attr-defined]
    with pytest.warns(
        RuntimeWarning, match=r"capture_runs failed \(.*\); the captured runs are incomplete"
    ) as caught:
        with capture_runs() as runs:
            runs._recorder = Broken()  # type: ignore[assignment]
            assert plan_trip("plan it", runtime=runtime) == "after the follow-up"
    assert len([w for w in caught if "capture_runs failed" in str(w.message)]) == 1
    assert isinstance(runs.error, KeyError)
