"""``check_agent`` over an agent built on ``Runtime.exec`` whose planner is an
``@agentic_function`` offering a nested ``@agentic_function``: the generated rounds are the outer
run's (each nested run, with its narrower menu, is answered on its own), and a falsifying example
written as YAML replays the same run and fails the same way."""

from __future__ import annotations

import asyncio
import re
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given

import openprogram.calls as calls_module
from openprogram.texts import NOT_JSON_TEXT
from openprogram_testing.frontends.strategies.agent import agent_problems
from openprogram_testing.frontends.strategies.agent_export import save_agent_failure
from openprogram_testing.scenarios import load_scenario, run_scenario
from openprogram_testing.strategies import (
    AgentCall,
    AgentCheckFailed,
    AgentScenario,
    SchemaCall,
    agent_scenarios,
    check_agent,
    check_agent_run,
)
from tests.properties._settings import fixed_settings
from tests.properties._travel_agent import TOOLS, make_runtime, planner

HERE = Path(__file__).resolve().parent


@pytest.fixture
def failure_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "failures"
    monkeypatch.setenv("OPENPROGRAM_FAILURE_DIR", str(folder))
    return folder


def _runs(scenario: AgentScenario, outer: Any) -> list[Any]:
    return [outer, *scenario.nested]


def test_generated_rounds_are_played_into_the_run_that_offers_their_tools(
    event_runner: asyncio.Runner,
) -> None:
    nested_runs = 0

    @fixed_settings(25)
    @given(scenario=agent_scenarios(TOOLS, steering=False))
    def every_call_is_on_its_runs_menu(scenario: AgentScenario) -> None:
        nonlocal nested_runs
        scenario = replace(scenario, runtime=make_runtime)
        outer = scenario.run_sync(runner=event_runner)
        for trace in _runs(scenario, outer):
            called = [c.name for m in trace.assistant_messages for c in m.tool_calls]
            assert set(called) <= set(trace.tool_names or ()), (trace.tool_names, called)
        nested_runs += len(scenario.nested)
        # Every generated round is the outer run's: one model call each, in order.
        outer_calls = [c.id for m in outer.assistant_messages for c in m.tool_calls]
        assert outer_calls == list(scenario.calls)[: len(outer_calls)]
        check_agent_run(scenario, outer)

    every_call_is_on_its_runs_menu()
    assert nested_runs > 0


def test_check_agent_passes_a_correct_nested_agent() -> None:
    check_agent(TOOLS, runtime=make_runtime, settings=fixed_settings(60))


def _planted_refusal_bug(monkeypatch: pytest.MonkeyPatch) -> None:
    real = calls_module.validation_failed_text

    def buggy(name: str, problems: Any, raw: Any) -> str:
        # The planted bug: argument text that did not parse is not shown back to the model.
        return real(name, problems, "" if isinstance(raw, str) else raw)

    monkeypatch.setattr(calls_module, "validation_failed_text", buggy)


def _same_failure(original: str, replay: Any) -> None:
    """The replayed run fails its expectations on the very calls the original failure names,
    each with the same wrong answer."""
    assert not replay.passed, "the exported scenario passed"
    assert "unexpected model call" not in replay.failure_text
    assert any(f.startswith("expect.tool_results[") for f in replay.failures), replay.failures
    named = re.findall(r"^  - (call_\d+_\d+) ", original, flags=re.M)
    assert named, original
    answered = {r.tool_call_id: r for r in replay.trace.tool_results}
    for call_id in named:
        assert call_id in answered, (call_id, sorted(answered))
        assert f"got an error {answered[call_id].text!r}" in original


def test_an_exported_failure_after_a_nested_run_reproduces_the_same_failure(
    event_runner: asyncio.Runner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    raw = '{"city": "Ro'
    refusal = calls_module.validation_failed_text("find_flight", [("root", NOT_JSON_TEXT)], raw)
    _planted_refusal_bug(monkeypatch)
    plan = SchemaCall("planner", "valid", {"goal": "a week in Rome"})
    broken = SchemaCall("find_flight", "not_json", None, raw, refusal)
    scenario = AgentScenario(
        ((AgentCall(plan),), (AgentCall(broken),)), tools=tuple(TOOLS), runtime=make_runtime
    )
    outer = scenario.run_sync(runner=event_runner)
    assert len(scenario.nested) == 1  # the planner's run (answered in one model call)
    with pytest.raises(AgentCheckFailed) as failed:
        check_agent_run(scenario, outer)
    original = str(failed.value)
    assert "call_1_0" in original  # the broken call ran in the outer run, as generated
    monkeypatch.setenv("OPENPROGRAM_FAILURE_DIR", str(tmp_path))
    path = save_agent_failure(scenario, outer, failed.value)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["runtime"] == "tests.properties._travel_agent:make_runtime"
    assert {"import": "tests.properties._travel_agent:planner"} in data["tools"]
    # The outer rounds and the nested run's final turn, in the order they were played.
    assert len(data["script"]) == outer.model_calls + 1
    assert data["description"].endswith(original.split()[-1])  # not cut mid-word
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    _same_failure(original, result)
    assert agent_problems(scenario, result.trace) == agent_problems(scenario, outer)
    monkeypatch.undo()
    fixed = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert fixed.passed, fixed.failure_text


def test_check_agent_writes_a_nested_failure_that_replays_it(
    failure_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _planted_refusal_bug(monkeypatch)
    with pytest.raises(AgentCheckFailed, match="labelled outcomes differ") as failed:
        check_agent([planner], runtime=make_runtime, settings=fixed_settings(200, print_blob=False))
    (path,) = failure_folder.glob("agent_failure_*.scenario.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert data["runtime"] == "tests.properties._travel_agent:make_runtime"
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    _same_failure(str(failed.value), result)


def test_an_agentic_tool_exported_as_a_stub_leaves_its_nested_turns_out(
    event_runner: asyncio.Runner, tmp_path: Path
) -> None:
    from openprogram_testing.strategies import agent_scenario_to_yaml

    plan = SchemaCall("planner", "valid", {"goal": "a week in Rome"})
    flight = SchemaCall("find_flight", "valid", {"city": "Oslo"})
    scenario = AgentScenario(
        ((AgentCall(plan, "after", "lost"), AgentCall(plan)), (AgentCall(flight),)),
        tools=tuple(TOOLS),
        runtime=make_runtime,
    )
    outer = scenario.run_sync(runner=event_runner)
    assert len(scenario.nested) == 2  # both planner calls ran their nested run
    data = yaml.safe_load(agent_scenario_to_yaml(scenario, outer))
    stub = next(t for t in data["tools"] if t.get("name") == "planner")
    assert stub["sequence"] == [{"raises": "lost"}, {"returns": "done"}]
    # The stub runs no nested run, so the script holds the outer run's turns only.
    assert len(data["script"]) == outer.model_calls == 3
    path = tmp_path / "replay.scenario.yaml"
    path.write_text(agent_scenario_to_yaml(scenario, outer), encoding="utf-8")
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert result.passed, result.failure_text
