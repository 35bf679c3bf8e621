"""Property tests of a user's agent in one call: generated runs over real tools (schema-derived
calls, steering, injected failures), checked against the invariants, the labels and the user's
predicates; a failure shrinks and is written as YAML naming the tools by import path."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings

import openprogram.calls as calls_module
from openprogram_testing.scenarios import load_scenario, run_scenario
from openprogram_testing.strategies import (
    AgentCall,
    AgentCheckFailed,
    AgentScenario,
    agent_scenarios,
    check_agent,
    check_agent_run,
    import_path,
    schema_calls,
)
from tests.properties._schema_tools import REFUND_SCHEMA, book_hotel, get_order, refund
from tests.properties._settings import fixed_settings

HERE = Path(__file__).resolve().parent
QUICK = fixed_settings(60)
TOOLS = [get_order, book_hotel, refund]


@pytest.fixture
def failure_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "failures"
    monkeypatch.setenv("OPENPROGRAM_FAILURE_DIR", str(folder))
    return folder


def test_a_correct_agent_passes_with_its_predicates() -> None:
    seen: list[int] = []

    def every_run_ends(trace: Any) -> bool:
        seen.append(trace.model_calls)
        return trace.termination in ("completed", "max_iterations")

    check_agent(TOOLS, predicates=[every_run_ends], settings=QUICK)
    assert len(seen) >= 50


def test_the_strategy_draws_every_ingredient(event_runner: asyncio.Runner) -> None:
    found: set[str] = set()

    @fixed_settings(300)  # drawing only (nothing runs): enough for every ingredient to show up
    @given(scenario=agent_scenarios(TOOLS))
    def sample(scenario: AgentScenario) -> None:
        for c in scenario.calls.values():
            found.add(c.call.label)
            if c.failure:
                found.add(f"failure_{c.failure}")
        found.update(f"steer_{s.kind}" for s in scenario.steering)
        found.add(f"mode_{scenario.steering_mode}")
        if max(len(b) for b in scenario.rounds) > 1:
            found.add("parallel")

    sample()
    assert {"valid", "wrong_type", "not_json", "failure_before", "failure_after"} <= found
    assert {"steer_after_call", "steer_follow_up", "mode_after_batch", "parallel"} <= found
    assert {"steer_when", "steer_user"} <= found  # when: steering and simulated-user lines


def test_injected_failures_happen_around_the_real_tool(event_runner: asyncio.Runner) -> None:
    ran: list[str] = []

    def spy(args: dict[str, Any]) -> str:
        ran.append(args["order_id"])
        return "ok"

    tool = {"spec": {"name": "refund", "parameters": REFUND_SCHEMA}, "execute": spy}
    valid = {"order_id": "ORD-0001", "amount": 1, "reason": "late"}
    from openprogram_testing.strategies import SchemaCall

    call = SchemaCall("refund", "valid", valid)
    scenario = AgentScenario(
        ((AgentCall(call, "before", "down"), AgentCall(call, "after", "lost"), AgentCall(call)),),
        tools=(tool,),
    )
    trace = scenario.run_sync(runner=event_runner)
    assert [(r.is_error, r.text) for r in trace.tool_results] == [
        (True, "down"),
        (True, "lost"),
        (False, "ok"),
    ]
    assert ran == ["ORD-0001", "ORD-0001"]  # "before" never reached the tool
    check_agent_run(scenario, trace)


def test_a_predicate_failure_shrinks_to_one_call_and_is_written_with_import_paths(
    failure_folder: Path,
) -> None:
    def no_refund_over_100(trace: Any) -> bool:
        amounts = [
            c.arguments.get("amount")
            for m in trace.assistant_messages
            for c in m.tool_calls
            if c.name == "refund"
        ]
        return not any(type(a) in (int, float) and a > 100 for a in amounts)

    with pytest.raises(AgentCheckFailed, match="predicate no_refund_over_100"):
        check_agent(
            TOOLS, predicates=[no_refund_over_100], settings=settings(QUICK, max_examples=300)
        )
    (path,) = failure_folder.glob("agent_failure_*.scenario.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # Shrunk: one round, one call to refund, no injected failure, no steering.
    assert [len(turn["calls"]) for turn in data["script"] if isinstance(turn, dict)] == [1]
    (called,) = data["script"][0]["calls"]
    assert called["name"] == "refund" and called["args"]["amount"] > 100
    assert "steering" not in data
    assert {"import": "tests.properties._schema_tools:refund"} in data["tools"]
    assert {"import": "tests.properties._schema_tools:get_order"} in data["tools"]
    assert "no_refund_over_100" in data["description"]
    # The file loads with the tools imported by path and replays the run: the labelled outcomes
    # hold (the predicate cannot be written in YAML).
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert result.passed, result.failure_text


def test_a_loop_that_feeds_back_the_wrong_refusal_is_caught(
    failure_folder: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = calls_module.validation_failed_text

    def buggy(name: str, problems: Any, raw: Any) -> str:
        # The planted bug: argument text that did not parse is not shown back to the model.
        return real(name, problems, "" if isinstance(raw, str) else raw)

    monkeypatch.setattr(calls_module, "validation_failed_text", buggy)
    with pytest.raises(AgentCheckFailed, match="labelled outcomes differ"):
        check_agent([get_order], settings=settings(QUICK, max_examples=300))
    (path,) = failure_folder.glob("agent_failure_*.scenario.yaml")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    # Shrunk to one call whose argument text is not JSON, expected with the exact refusal.
    (called,) = [c for t in data["script"] if isinstance(t, dict) for c in t["calls"]]
    assert "raw_args" in called and data["tools"] == [
        {"import": "tests.properties._schema_tools:get_order"}
    ]
    (expected,) = data["expect"]["tool_results"]
    assert expected["is_error"] and called["raw_args"] in expected["text"]
    # The committed file fails while the bug is in and passes once it is fixed.
    scenario = load_scenario(path, import_roots=[HERE])
    assert not run_scenario(scenario, import_roots=[HERE]).passed
    monkeypatch.undo()
    assert run_scenario(scenario, import_roots=[HERE]).passed


def test_a_tool_with_injected_failures_is_exported_as_a_replaying_stub(
    event_runner: asyncio.Runner, tmp_path: Path
) -> None:
    from openprogram_testing.strategies import SchemaCall, agent_scenario_to_yaml

    valid = {"order_id": "ORD-0001", "amount": 1, "reason": "late"}
    call = SchemaCall("refund", "valid", valid)
    scenario = AgentScenario(
        ((AgentCall(call, "before", "down"), AgentCall(call)),), tools=(refund, get_order)
    )
    trace = scenario.run_sync(runner=event_runner)
    text = agent_scenario_to_yaml(scenario, trace)
    data = yaml.safe_load(text)
    stub = next(t for t in data["tools"] if t.get("name") == "refund")
    assert stub["parameters"] == REFUND_SCHEMA
    assert stub["sequence"] == [{"raises": "down"}, {"returns": "refunded 1 on ORD-0001"}]
    assert {"import": "tests.properties._schema_tools:get_order"} in data["tools"]
    path = tmp_path / "replay.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert result.passed, result.failure_text


def test_import_paths_are_found_for_decorated_functions_and_dict_tools() -> None:
    assert import_path(book_hotel) == "tests.properties._schema_tools:book_hotel"
    assert import_path(refund) == "tests.properties._schema_tools:refund"
    assert import_path({"spec": {"name": "anon"}, "execute": print}) is None
    assert import_path(refund, {"refund": "pkg.mod:refund"}) == "pkg.mod:refund"


def test_no_tools_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="at least one tool"):
        agent_scenarios([])
    assert schema_calls(get_order) is not None


def test_when_steering_and_a_simulated_user_are_run_checked_and_exported(
    event_runner: asyncio.Runner, tmp_path: Path
) -> None:
    """A drawn ``when:`` entry fires right after the call of its tool and a drawn simulated
    user's line answers the model's final text; the run passes ``check_agent_run`` and its YAML
    export replays both (``steering: when:``, ``simulated_user:``)."""
    from openprogram_testing.strategies import GenSteering, SchemaCall, agent_scenario_to_yaml

    valid = {"order_id": "ORD-0001", "amount": 1, "reason": "late"}
    call = SchemaCall("refund", "valid", valid)
    steering = (
        GenSteering("stop refunding", when_tool="refund", nth=1),
        GenSteering("user 1", user=True, expect=r"(?i)^done"),
    )
    scenario = AgentScenario(
        ((AgentCall(call), AgentCall(call)),), steering, tools=(refund, get_order)
    )
    trace = scenario.run_sync(runner=event_runner)
    check_agent_run(scenario, trace)
    texts = [d.message.text for d in trace.deliveries]
    assert texts == ["stop refunding", "user 1"]
    assert [r.skipped for r in trace.tool_results] == [False, True]  # skip mode: the rest
    data = yaml.safe_load(agent_scenario_to_yaml(scenario, trace))
    assert data["steering"] == [{"message": "stop refunding", "when": {"tool": "refund", "nth": 1}}]
    assert data["simulated_user"] == [{"say": "user 1", "expect": "(?i)^done"}]  # both fired
    path = tmp_path / "replay.scenario.yaml"
    path.write_text(agent_scenario_to_yaml(scenario, trace), encoding="utf-8")
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert result.passed, result.failure_text


def test_a_steering_entry_the_run_never_reached_is_optional_in_the_export(
    event_runner: asyncio.Runner, tmp_path: Path
) -> None:
    """A drawn entry may point past the run (round 2 of a one-round run): exported as required,
    the replay failed with "steering entry never fired" instead of the failure found."""
    from openprogram_testing.strategies import GenSteering, SchemaCall, agent_scenario_to_yaml

    call = SchemaCall("refund", "valid", {"order_id": "ORD-0001", "amount": 1, "reason": "late"})
    steering = (GenSteering("steer 0", after_call=(2, 0)), GenSteering("follow 1", follow_up=True))
    scenario = AgentScenario(((AgentCall(call),),), steering, tools=(refund, get_order))
    trace = scenario.run_sync(runner=event_runner)
    text = agent_scenario_to_yaml(scenario, trace)
    data = yaml.safe_load(text)
    assert data["steering"] == [
        {"message": "steer 0", "after_call": {"round": 2, "index": 0}, "optional": True},
        {"message": "follow 1", "follow_up": True},  # it fired: the replay checks it does
    ]
    path = tmp_path / "replay.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    result = run_scenario(load_scenario(path, import_roots=[HERE]), import_roots=[HERE])
    assert result.passed, result.failure_text
