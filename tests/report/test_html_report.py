"""The HTML report's data and page: records of runs (rounds, calls, skipped calls, arrivals,
annotations, nested lanes), escaping of hostile text, lazy per-test data, and the pytest options
(``--openprogram-html``, ``--openprogram-coverage``, ``--openprogram-coverage-fail-under``),
also under pytest-xdist."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openprogram import Runtime
from openprogram_testing import run_exec_sync
from openprogram_testing.base.recording import add_trace_listener, annotate, remove_trace_listener
from openprogram_testing.core.trace import run_loop_sync
from openprogram_testing.report import (
    Coverage,
    RunCollector,
    exhibited,
    render_html,
    trace_record,
)
from openprogram_testing.transport.scripted import ScriptedProvider
from tests.report._report_traces import Node, Tree, batch, call, run, steer_after, turn
from tests.runtime._agents import research_agent, research_script

pytest_plugins = ["pytester"]

HOSTILE = "</script><script>alert(1)</script><b>bold</b>"


@pytest.fixture(autouse=True)
def _ini(request: pytest.FixtureRequest) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester").makeini(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )


def blocks(page: str) -> dict[str, object]:
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    return {key: json.loads(text) for key, text in found}


def test_record_of_a_steered_run() -> None:
    trace = run(batch(3), "done", schedule=steer_after(0))
    record = trace_record(trace, label="run 1")
    assert record["termination"] == "completed" and record["model_calls"] == 2
    first, second = record["rounds"]
    assert [c["name"] for c in first["reply"]["calls"]] == ["a", "b", "c"]
    assert [t["status"] for t in first["tools"]] == ["ok", "skipped", "skipped"]
    assert first["reply"]["calls"][0]["args"] == "{}"
    (arrival,) = second["arrivals"]
    assert arrival["kind"] == "steering" and arrival["after_tool"] == 0
    assert arrival["skipped"] == ["b (call_1)", "c (call_2)"]
    assert record["behaviours"]["steering_skip_first"] == 1
    assert record["ms"] is not None and first["tools"][0]["ms"] is not None
    json.dumps(record)  # plain JSON all the way down


def test_record_pretty_prints_arguments_and_marks_annotations_and_lanes() -> None:
    def noisy(args: dict[str, object]) -> str:
        annotate("fault", "truncated after frame 3")
        return "ok"

    tools = [{"spec": {"name": "noisy", "parameters": {"type": "object"}}, "execute": noisy}]
    outer = run_loop_sync(
        ScriptedProvider([turn(call("noisy", {"city": "Paris", "days": [1, 2]})), turn("done")]),
        "go",
        tools=tools,
    )
    record = trace_record(Tree(outer, [Node(run("inner reply"))]))  # type: ignore[arg-type]
    args = record["rounds"][0]["reply"]["calls"][0]["args"]
    assert args == '{\n  "city": "Paris",\n  "days": [\n    1,\n    2\n  ]\n}'
    assert record["rounds"][0]["notes"] == [
        {"kind": "fault", "text": "truncated after frame 3", "at": "tool 0"}
    ]
    (lane,) = record["children"]
    assert lane["label"] == "exec from summarize (call_7)"
    assert lane["final_text"] == "inner reply"


def test_hostile_text_stays_data() -> None:
    trace = run(turn(call("a", {"q": HOSTILE}), HOSTILE), HOSTILE)
    tests = [{"name": HOSTILE, "nodeid": "t", "outcome": "failed", "ms": 1.0,
              "failure": HOSTILE, "runs": [trace_record(trace)]}]  # fmt: skip
    page = render_html(tests, coverage=Coverage.of([exhibited(trace)]))
    assert HOSTILE not in page  # never verbatim, anywhere
    assert page.count("<script") == page.count("</script>")
    data = blocks(page)
    assert data["summary"][0]["name"] == HOSTILE  # type: ignore[index]
    assert data["d-0"]["failure"] == HOSTILE  # type: ignore[index]
    assert "textContent" in page and "innerHTML" not in page


def test_page_is_self_contained_and_lazy() -> None:
    tests = [
        {"name": f"t{i}", "nodeid": f"t{i}", "outcome": "passed", "ms": 1.0, "failure": None,
         "runs": [trace_record(run("hi"))]}
        for i in range(3)
    ]  # fmt: skip
    page = render_html(tests, coverage=None)
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)
    assert "@import" not in page and "http://" not in page and "https://" not in page
    data = blocks(page)
    assert set(data) == {"summary", "d-0", "d-1", "d-2"}
    assert "rounds" not in json.dumps(data["summary"])  # details only in their own blocks


def test_a_thousand_runs_stay_small_enough(tmp_path: Path) -> None:
    record = trace_record(run(batch(2), "done", schedule=steer_after(0)))
    tests = [{"name": f"t{i}", "nodeid": f"t{i}", "outcome": "passed", "ms": 1.0,
              "failure": None, "runs": [record]} for i in range(1000)]  # fmt: skip
    page = render_html(tests, coverage=Coverage.of([record["behaviours"]] * 1000))
    assert len(page) < 8_000_000


SUITE = """
from openprogram_testing.transport.scripted import ScriptedProvider, call, turn
from openprogram_testing.core.trace import run_loop_sync

TOOL = {"spec": {"name": "t", "parameters": {"type": "object"}}, "execute": lambda a: "<script>x</script>"}

def test_tool_round():
    run_loop_sync(ScriptedProvider([turn(call("t")), turn("done")]), "go", tools=[TOOL])

def test_fails():
    run_loop_sync(ScriptedProvider([turn("hello")]), "go")
    assert False, "expected goodbye"

def test_no_loop():
    pass
"""


def test_pytest_options_write_the_report_and_the_coverage(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    out = pytester.path / "out" / "report.html"
    result = pytester.runpytest("--openprogram-html", str(out), "--openprogram-coverage")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines([
        "*openprogram loop-behaviour coverage*",
        "loop-behaviour coverage: 2/* behaviours * over 2 runs",
        f"openprogram HTML report: {out}",
    ])  # fmt: skip
    data = blocks(out.read_text())
    rows = {r["name"].split("::")[-1]: r for r in data["summary"]}  # type: ignore[union-attr]
    assert rows["test_fails"]["outcome"] == "failed" and rows["test_no_loop"]["runs"] == 0
    assert "tool_round" in rows["test_tool_round"]["behaviours"]
    failing = data[f"d-{rows['test_fails']['i']}"]
    assert "expected goodbye" in failing["failure"]  # type: ignore[index]
    tool = data[f"d-{rows['test_tool_round']['i']}"]["runs"][0]["rounds"][0]["tools"][0]  # type: ignore[index]
    assert tool["result"] == "<script>x</script>"


def test_coverage_threshold_fails_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.replace("assert False", "assert True"))
    result = pytester.runpytest("--openprogram-coverage-fail-under", "90")
    assert result.ret == 1
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(["FAIL: loop-behaviour coverage *% is below the required 90 %*"])
    assert pytester.runpytest("--openprogram-coverage-fail-under", "5").ret == 0


def test_nothing_recorded_without_options(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=1)
    assert "loop-behaviour coverage" not in result.stdout.str()


def test_report_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    out = pytester.path / "x.html"
    result = pytester.runpytest_subprocess("-n", "2", "--openprogram-html", str(out), "-p", "xdist")
    result.assert_outcomes(passed=2, failed=1)
    rows = blocks(out.read_text())["summary"]
    assert sorted(r["runs"] for r in rows) == [0, 1, 1]  # type: ignore[union-attr]


def test_cassette_interactions_and_faults_are_marked_at_their_model_call() -> None:
    from openprogram_testing.scenarios import run_scenario

    root = Path(__file__).resolve().parents[2]
    result = run_scenario(root / "scenarios" / "scenario_44_fault_truncated_stream.yaml")
    (only,) = trace_record(result.trace)["rounds"]
    cassette, fault = only["notes"]
    assert cassette["kind"] == "cassette" and cassette["at"] == "model"
    assert cassette["text"].startswith("interaction 0: http://127.0.0.1:")
    assert cassette["text"].endswith("/v1/chat/completions -> HTTP 200")
    assert fault == {
        "kind": "fault",
        "text": "TruncateAfter(n=3, disconnect=False) on interaction 0",
        "at": "model",
    }


def test_runtime_exec_runs_become_nested_lanes_of_one_record() -> None:
    """A trace tree announces each run; the collector files nested ``exec`` runs and
    ``choices=`` asks under the run that started them and counts their behaviours there."""
    registry, tools = research_agent()
    provider = ScriptedProvider(
        [
            *research_script((1, 2)),
            "I think x.",  # the first choices ask: no pick
            turn(call("choose", {"choice": "x"})),  # the re-ask picks
        ]
    )
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        tree = run_exec_sync(
            Runtime(provider, "m", registry=registry), "go", tools=tools, choices=["x", "y"]
        )
    finally:
        remove_trace_listener(collector.add)
    assert tree.result == "x"
    (record,) = collector.runs
    labels = [child["label"] for child in record["children"]]
    assert labels == [
        "exec from research (call call_0, depth 1)",
        "choices ask (depth 0)",
        "choices ask (depth 0)",
    ]
    assert record["children"][0]["final_text"] == "inner answer"
    assert record["ms"] is not None and record["children"][0]["ms"] is not None  # durations
    assert record["behaviours"]["nested_exec"] == 1
    assert record["behaviours"]["choices_retry"] == 1
    assert record["behaviours"]["tool_round"] == 2  # the outer run's and the nested run's


def test_a_scenarios_agentic_tool_run_is_a_nested_lane_under_its_tool_call() -> None:
    """A scenario with an agentic tool runs through ``Runtime.exec``: the nested run is filed
    under the outer run, labelled with the tool call that started it, as an exec tree's."""
    from openprogram_testing.scenarios import run_scenario

    root = Path(__file__).resolve().parents[2]
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        result = run_scenario(root / "scenarios" / "scenario_33_nested_agentic_function.yaml")
    finally:
        remove_trace_listener(collector.add)
    assert result.passed
    (record,) = collector.runs
    assert record["label"] == "run 1"
    (lane,) = record["children"]
    call_id = result.trace.tool_calls[0].id
    name = result.trace.tool_calls[0].name
    assert lane["label"] == f"exec from {name} (call {call_id}, depth 1)"
    assert lane["rounds"] and record["behaviours"]["nested_exec"] == 1
    assert all(note["kind"] != "nested_run" for r in record["rounds"] for note in r["notes"])
