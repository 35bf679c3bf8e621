"""Each test outcome is its own in the HTML report (xfailed and xpassed are neither skipped nor
passed), failing tests come first, failure text is kept whole, and a nested run names the tool
call that started it so the page draws it there."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openprogram import Runtime
from openprogram_testing import add_trace_listener, remove_trace_listener, run_exec_sync
from openprogram_testing.frontends.report.html import failures_first
from openprogram_testing.report import RunCollector, render_html, trace_record
from openprogram_testing.transport.scripted import ScriptedProvider
from tests.report._report_traces import call, run, turn
from tests.runtime._agents import research_agent, research_script

pytest_plugins = ["pytester"]


def blocks(page: str) -> dict[str, object]:
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    return {key: json.loads(text) for key, text in found}


OUTCOMES = """
import pytest

def test_passes():
    pass

@pytest.mark.xfail(reason="known bug")
def test_expected_failure():
    assert False

@pytest.mark.xfail(reason="maybe fixed")
def test_unexpected_pass():
    pass

@pytest.mark.skip(reason="later")
def test_skipped():
    pass

@pytest.fixture
def broken():
    raise RuntimeError("setup broke")

def test_errors(broken):
    pass

def test_fails():
    raise AssertionError("x" * 30000 + " THE END")
"""


def test_every_outcome_is_counted_and_shown_as_itself(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_outcomes=OUTCOMES)
    out = pytester.path / "report.html"
    result = pytester.runpytest("--openprogram-html", str(out))
    result.assert_outcomes(passed=1, failed=1, errors=1, skipped=1, xfailed=1, xpassed=1)
    page = out.read_text()
    data = blocks(page)
    summary = data["summary"]
    assert isinstance(summary, list)
    outcomes = {r["name"].split("::")[-1]: r["outcome"] for r in summary}
    assert outcomes == {
        "test_passes": "passed",
        "test_expected_failure": "xfailed",
        "test_unexpected_pass": "xpassed",
        "test_skipped": "skipped",
        "test_errors": "error",
        "test_fails": "failed",
    }
    for count in ("1 passed", "1 failed", "1 error", "1 skipped", "1 xfailed", "1 xpassed"):
        assert f">{count}</span>" in page
    # the failing tests first, in the order they ran; then the rest in theirs
    names = [r["name"].split("::")[-1] for r in summary]
    assert names[:2] == ["test_errors", "test_fails"]
    assert names[2:] == [
        "test_passes",
        "test_expected_failure",
        "test_unexpected_pass",
        "test_skipped",
    ]
    # the failure text whole (a 30,000-character message is not clipped)
    failing = data[f"d-{summary[1]['i']}"]
    assert isinstance(failing, dict)
    assert "x" * 30000 + " THE END" in failing["failure"]
    xfail = data[f"d-{summary[3]['i']}"]
    assert isinstance(xfail, dict) and "known bug" in xfail["failure"]


def test_failures_first_is_stable_and_takes_any_outcome() -> None:
    tests = [{"outcome": o} for o in ("passed", "error", "xfailed", "failed", "<b>", "failed")]
    assert failures_first(tests) == [1, 3, 5, 0, 2, 4]
    page = render_html(
        [{"name": "t", "nodeid": "t", "outcome": "<b>odd</b>", "ms": 1.0, "failure": None,
          "runs": []}],
        coverage=None,
    )  # fmt: skip
    assert "<b>odd</b>" not in page and "1 &lt;b&gt;odd&lt;/b&gt;" in page


def test_a_nested_run_names_the_tool_call_that_started_it() -> None:
    registry, tools = research_agent()
    provider = ScriptedProvider(research_script((1, 2)))
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        tree = run_exec_sync(Runtime(provider, "m", registry=registry), "go", tools=tools)
    finally:
        remove_trace_listener(collector.add)
    (record,) = collector.runs
    (lane,) = record["children"]
    call_id = tree.trace.tool_calls[0].id
    assert lane["call_id"] == call_id
    assert [t["id"] for t in record["rounds"][0]["tools"]] == [call_id]
    # the same from the trace tree itself
    whole = trace_record(tree)
    assert whole["final_text"] == "outer answer"
    (child,) = whole["children"]
    assert child["call_id"] == call_id and child["final_text"] == "inner answer"


def test_a_run_announced_twice_is_recorded_once() -> None:
    registry, tools = research_agent()
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        tree = run_exec_sync(
            Runtime(ScriptedProvider(research_script((1, 2))), "m", registry=registry),
            "go",
            tools=tools,
        )
    finally:
        remove_trace_listener(collector.add)
    for node in tree.walk():  # as a test's capture hands them over again at its end
        collector.add(node.trace)
    (record,) = collector.runs
    assert len(record["children"]) == 1


def test_notes_are_placed_in_their_round_without_rescanning() -> None:
    from openprogram_testing.base.recording import Annotation

    trace = run(turn(call("a")), "done")
    trace.annotations = [
        Annotation(len(trace.events), "cassette", "late"),
        Annotation(3, "cassette", "early"),
    ]  # out of order, as a hand-built trace may be
    record = trace_record(trace)
    assert [[n["text"] for n in r["notes"]] for r in record["rounds"]] == [["early"], ["late"]]


def test_report_file_of_many_runs_grows_linearly(tmp_path: Path) -> None:
    """Bytes per run stay the same from 500 to 5,000 runs: nothing in the page grows with the
    square of the runs."""
    from tests.report._report_traces import batch, steer_after

    record = trace_record(run(batch(2), "done", schedule=steer_after(0)))

    def size(n: int) -> int:
        tests = [{"name": f"t{i}", "nodeid": f"t{i}", "outcome": "passed", "ms": 1.0,
                  "failure": None, "runs": [record]} for i in range(n)]  # fmt: skip
        return len(render_html(tests, coverage=None).encode())

    small, large = size(500) / 500, size(5000) / 5000
    assert large <= small * 1.05
    assert large < 8_000  # one two-round run
