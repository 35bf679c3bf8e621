"""The coverage report says which tests checked a trajectory, and in which mode: a Python test
through ``assert_trajectory`` (passing or failing), a scenario through ``expect.trajectory``;
a test that checked none is not listed."""

from __future__ import annotations

import pytest

from openprogram_testing.frontends.report.coverage import Coverage

pytest_plugins = ["pytester"]

SUITE = """
from openprogram_testing import ScriptedProvider, assert_trajectory, call, run_loop_sync, turn

TOOL = {"spec": {"name": "t", "parameters": {"type": "object"}}, "execute": lambda a: "ok"}

def _run():
    return run_loop_sync(ScriptedProvider([turn(call("t")), turn("done")]), "go", tools=[TOOL])

def test_strict():
    assert_trajectory(_run(), ["t"])

def test_subset_twice():
    trace = _run()
    assert_trajectory(trace, ["t"], mode="subset")
    assert_trajectory(trace, [], mode="subset")

def test_failing_unordered():
    assert_trajectory(_run(), ["u"], mode="unordered")

def test_no_trajectory():
    _run()
"""

SCENARIO = """
prompt: go
tools: [{name: t, returns: ok}]
script: [{calls: [{name: t}]}, done]
expect:
  trajectory: {mode: superset, calls: [t]}
"""


def test_the_coverage_names_the_tests_that_checked_a_trajectory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    pytester.makefile(".yaml", scenario_trajectory=SCENARIO)
    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--openprogram-coverage", "-o",
        "asyncio_default_fixture_loop_scope=function",
    )  # fmt: skip
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines([
        "trajectory checked by 4 tests: strict 1, subset 1, superset 1, unordered 1",
    ])  # fmt: skip


def test_the_coverage_data_per_mode() -> None:
    coverage = Coverage()
    coverage.add_trajectories([
        {"nodeid": "a", "trajectory": [{"mode": "strict"}, {"mode": "strict"}]},
        {"nodeid": "b", "trajectory": [{"mode": "subset"}, {"mode": "strict"}]},
        {"nodeid": "c"},
        {"nodeid": "d", "trajectory": [None, "x"]},  # hostile: ignored
    ])  # fmt: skip
    assert coverage.trajectory == {"strict": ["a", "b"], "subset": ["b"]}
    assert coverage.trajectory_line() == "trajectory checked by 2 tests: strict 2, subset 1"
    assert "trajectory checked by no test" in Coverage().text()


def test_the_html_report_and_a_merged_report_say_the_same(pytester: pytest.Pytester) -> None:
    """The session's page, its records and ``report merge`` of those records count the same
    trajectory checks: one counting function, so a merged report cannot lose them."""
    from openprogram_testing.frontends.report.merge import merge, read_records

    pytester.makepyfile(test_suite=SUITE)
    pytester.makefile(".yaml", scenario_trajectory=SCENARIO)
    html = pytester.path / "report.html"
    records = pytester.path / "records.json"
    # In a subprocess: modules an in-process pytester session imported are dropped after it,
    # so a second in-process session would count through a fresh module's listeners.
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--openprogram-coverage", f"--openprogram-html={html}",
        f"--openprogram-records={records}", "-o", "asyncio_default_fixture_loop_scope=function",
    )  # fmt: skip
    result.assert_outcomes(passed=4, failed=1)
    line = "trajectory checked by 4 tests: strict 1, subset 1, superset 1, unordered 1"
    page = html.read_text(encoding="utf-8")
    shown = page.split('<p id="coverage-trajectory">', 1)[1].split("</p>", 1)[0]
    assert shown == line
    merged = merge([read_records(records)])
    assert merged.coverage.trajectory_line() == line
    assert merged.coverage.runs == Coverage.of_tests(read_records(records).tests).runs > 0
