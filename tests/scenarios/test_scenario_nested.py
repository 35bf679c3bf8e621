"""Scenarios over an agent whose imported ``@agentic_function`` runs nested ``Runtime.exec``
runs: the runs are traced as a tree (lanes, ``nested_exec`` coverage, invariants on every
run), the script's calls are checked against the menu of the run that makes them, steering
targets a nested run by its tool path, and ``expect.runs`` holds expectations per run."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.scenarios._scenarios import load_error

TRAVEL = '''
from openprogram import agentic_function, function

WEATHER = {"Rome": 24, "Oslo": 3}


@function
def get_weather(city: str) -> str:
    """Current weather of a city."""
    return f"{city}: {WEATHER[city]} C"


@agentic_function
def compare_options(cities: list[str], runtime) -> str:
    """Compare the weather of several cities."""
    return runtime.exec("Compare the weather of " + ", ".join(cities), tools=[get_weather])


@agentic_function
async def plan_trip(goal: str, runtime) -> str:
    """Plan a trip."""
    return await runtime.aexec("Plan: " + goal, tools=[compare_options])
'''

HEAD = """
prompt: Where should I go this weekend?
tools:
  - import: travel:plan_trip
script:
  - calls: [{name: plan_trip, args: {goal: a warm city}}]         # outermost run
  - calls: [{name: compare_options, args: {cities: [Rome, Oslo]}}]  # run plan_trip
  - calls:                                                          # run plan_trip/compare_options
      - {name: get_weather, args: {city: Rome}}
      - {name: get_weather, args: {city: Oslo}}
  - Rome is warmer.
  - Go to Rome.
  - Rome it is.
"""


@pytest.fixture
def travel(tmp_path: Path) -> Path:
    (tmp_path / "travel.py").write_text(TRAVEL)
    (tmp_path / "pyproject.toml").write_text("")
    return tmp_path


def write(root: Path, body: str, name: str = "scenario_trip.yaml") -> Path:
    path = root / name
    path.write_text(textwrap.dedent(body))
    return path


def run(root: Path, body: str) -> object:
    return run_scenario(load_scenario(write(root, body), import_roots=[root]))


def test_the_nested_runs_of_an_imported_agentic_function_are_traced(travel: Path) -> None:
    from openprogram_testing import add_trace_listener, remove_trace_listener
    from openprogram_testing.core.tree import TraceTree
    from openprogram_testing.report import RunCollector

    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        result = run(travel, HEAD + "expect: {termination: completed, final_text: Rome it is.}\n")
    finally:
        remove_trace_listener(collector.add)
    assert result.passed, result.failure_text
    tree = result.tree
    assert isinstance(tree, TraceTree) and result.trace is tree.trace
    assert [node.path for node in tree.walk()] == ["", "plan_trip", "plan_trip/compare_options"]
    assert [node.trace.path for node in tree.walk()] == [node.path for node in tree.walk()]
    assert tree["plan_trip/compare_options"].final_text == "Rome is warmer."
    [record] = collector.runs  # one report record, the nested runs as its lanes
    assert record["behaviours"]["nested_exec"] == 2
    assert len(record["children"]) == 1 and len(record["children"][0]["children"]) == 1
    assert "run plan_trip/compare_options" in result.timeline


def test_the_validator_knows_the_nested_runs_menus(travel: Path) -> None:
    load_scenario(write(travel, HEAD), import_roots=[travel])  # no unknown_tool workaround
    bad = HEAD.replace("{city: Oslo}}", "{city: Oslo}}\n      - {name: get_wether}")
    message = load_error(write(travel, bad), import_roots=[travel])
    assert "get_wether" in message
    assert "run plan_trip/compare_options: get_weather" in message


def test_a_call_is_judged_by_the_menu_of_the_run_that_makes_it(travel: Path) -> None:
    # get_weather is offered to plan_trip/compare_options only: the outer run asking for it
    # is the "not found" path, and the scenario must say so.
    body = HEAD.replace(
        "- calls: [{name: plan_trip, args: {goal: a warm city}}]",
        "- calls: [{name: get_weather, args: {city: Rome}}]\n"
        "  - calls: [{name: plan_trip, args: {goal: a warm city}}]",
    ).replace("- Rome it is.", "- Rome it is.\n  - spare")
    result = run(travel, body)
    assert not result.passed
    assert any(
        "script[0].calls[0].name" in f and "outermost run" in f and "plan_trip" in f
        for f in result.failures
    ), result.failures
    marked = body.replace(
        "{name: get_weather, args: {city: Rome}}]",
        "{name: get_weather, args: {city: Rome}, unknown_tool: true}]",
        1,
    )
    result = run(travel, marked)
    assert not any("script[0]" in f for f in result.failures), result.failures


def test_steering_targets_a_nested_run_and_expectations_hold_per_run(travel: Path) -> None:
    body = HEAD + textwrap.dedent(
        """
        steering:
          - {message: "Only Rome, please.", after_tool: 0, run: plan_trip/compare_options}
        expect:
          termination: completed
          runs:
            plan_trip/compare_options:
              termination: completed
              delivered: 1
              tool_results:
                - {name: get_weather, text: "Rome: 24 C"}
                - {name: get_weather, skipped: true}
            plan_trip:
              final_text: Go to Rome.
              delivered: 0
        """
    )
    result = run(travel, body)
    assert result.passed, result.failure_text
    nested = result.tree["plan_trip/compare_options"]
    assert nested.trace.user_messages[-1].text == "Only Rome, please."


def test_a_per_run_expectation_fails_naming_the_run(travel: Path) -> None:
    body = HEAD + textwrap.dedent(
        """
        expect:
          runs:
            plan_trip: {final_text: Go to Oslo.}
            plan_trip/nowhere: {termination: completed}
        """
    )
    message = load_error(write(travel, body), import_roots=[travel])
    assert "expect.runs" in message and "plan_trip/nowhere" in message
    result = run(travel, body.replace("    plan_trip/nowhere: {termination: completed}\n", ""))
    assert not result.passed
    assert result.failures == [
        "expect.runs['plan_trip'].final_text: expected 'Go to Oslo.', got 'Go to Rome.'"
    ]


def test_an_unknown_steering_run_is_a_load_error(travel: Path) -> None:
    body = HEAD + "steering:\n  - {message: hi, after_tool: 0, run: plan_trip/compare}\n"
    message = load_error(write(travel, body), import_roots=[travel])
    assert "steering[0].run" in message and "plan_trip/compare_options" in message


def test_invariants_are_checked_on_the_nested_runs(travel: Path) -> None:
    from openprogram_testing.frontends.scenarios import runner

    result = run(travel, HEAD)
    assert result.passed
    seen: list[object] = []
    original = runner._check_invariants

    def spy(ran: object) -> list[str]:
        seen.append(ran)
        return original(ran)

    runner._check_invariants = spy  # type: ignore[assignment]
    try:
        run(travel, HEAD)
    finally:
        runner._check_invariants = original  # type: ignore[assignment]
    from openprogram_testing.core.tree import TraceTree

    assert seen and isinstance(seen[0], TraceTree)


def test_show_and_the_result_json_keep_the_nested_runs(
    travel: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import json

    from openprogram_testing.frontends.cli.main import main

    monkeypatch.syspath_prepend(str(travel))
    result = run(travel, HEAD)
    data = result.to_dict()
    assert [r["path"] for r in data["runs"]] == ["", "plan_trip", "plan_trip/compare_options"]
    saved = tmp_path / "result.json"
    saved.write_text(json.dumps(data))
    assert main(["show", str(saved)]) == 0
    out, _ = capsys.readouterr()
    assert "run plan_trip/compare_options" in out
    assert main(["show", str(travel / "scenario_trip.yaml")]) == 0
    out, _ = capsys.readouterr()
    assert "run plan_trip/compare_options" in out and "PASSED" in out
