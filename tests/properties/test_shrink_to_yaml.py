"""Shrink to YAML: a property failure becomes a YAML scenario that reproduces it.

Two bugs are planted in the loop for the length of a test (``monkeypatch``): a tool result that
comes back wrong for one input, and a wrong skip text.  The property suite must catch each,
hypothesis must shrink it to a minimal script, the falsifying example must be written as a YAML
scenario file, and that file — loaded and run by ``openprogram_testing.scenarios`` — must fail the
same way while the bug is in, and pass once it is gone (it is a regression test).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given

import openprogram.calls as calls_module
import openprogram.loop as loop_module
from openprogram.tools import make_result
from openprogram_testing.judges.invariants import InvariantViolation
from openprogram_testing.scenarios import arun_scenario, load_scenario, parse_scenario, run_scenario
from openprogram_testing.strategies import (
    GeneratedScenario,
    GenTool,
    GenTurn,
    OutcomeMismatch,
    check_run,
    failure_dir,
    report_failure,
    save_failure,
    scenario_to_yaml,
    scenarios,
)
from tests.properties._settings import fixed_settings

_HUNT = fixed_settings(400, suppress_health_check=[HealthCheck.too_slow], print_blob=False)


def run_property(runner: asyncio.Runner) -> None:
    """The loop property of ``test_loop_properties``, run here so a planted bug can be hunted."""

    @_HUNT
    @given(generated=scenarios())
    def prop(generated: GeneratedScenario) -> None:
        with report_failure(generated):
            check_run(generated, generated.run_sync(runner=runner))

    prop()


def the_failure_file(folder: Path) -> Path:
    files = sorted(folder.glob("*.scenario.yaml"))
    assert len(files) == 1, f"expected one falsifying example file (final run only), got {files}"
    return files[0]


@pytest.fixture
def failure_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "failures"
    monkeypatch.setenv("OPENPROGRAM_FAILURE_DIR", str(folder))
    return folder


def test_wrong_tool_value_is_caught_shrunk_and_replayed_from_yaml(
    failure_folder: Path, monkeypatch: pytest.MonkeyPatch, event_runner: asyncio.Runner
) -> None:
    def buggy_make_result(call_id: str, name: str, value: Any) -> Any:
        # The planted bug: a tool echoing x >= 5 reports x + 1 (wrong values on some inputs).
        if isinstance(value, dict) and isinstance(value.get("x"), int) and value["x"] >= 5:
            value = {**value, "x": value["x"] + 1}
        return make_result(call_id, name, value)

    monkeypatch.setattr(calls_module, "make_result", buggy_make_result)
    with pytest.raises(OutcomeMismatch) as caught:
        run_property(event_runner)
    assert '{"x": 6}' in str(caught.value)

    path = the_failure_file(failure_folder)
    assert str(path) in "\n".join(getattr(caught.value, "__notes__", []))
    scenario = load_scenario(path)
    # Shrunk to the minimum: one echo tool, one call with the smallest failing x, nothing else.
    assert [t.name for t in scenario.tools] == ["t0"] and scenario.tools[0].echo
    calls = [c for turn in scenario.turns for c in turn.calls]
    assert [(c.name, c.args) for c in calls] == [("t0", {"x": 5})]
    assert not scenario.steering and scenario.options.max_iterations is None
    assert len(scenario.turns) == 2 and scenario.turns[1].text == "done"  # the padded reply

    result = run_scenario(scenario)
    assert not result.passed
    assert any('{"x": 5}' in f and '{"x": 6}' in f for f in result.failures), result.failures

    monkeypatch.undo()  # the bug is fixed: the committed file is a passing regression test
    assert run_scenario(load_scenario(path)).passed


def test_broken_skip_is_caught_as_an_invariant_and_replayed_from_yaml(
    failure_folder: Path, monkeypatch: pytest.MonkeyPatch, event_runner: asyncio.Runner
) -> None:
    monkeypatch.setattr(loop_module, "SKIPPED_TEXT", "Skipped.")  # the planted bug
    with pytest.raises(InvariantViolation) as caught:
        run_property(event_runner)
    assert "5" in str(caught.value) and "Skipped." in str(caught.value)

    scenario = load_scenario(the_failure_file(failure_folder))
    assert scenario.options.steering_mode == "skip" and len(scenario.steering) == 1
    assert scenario.steering[0].after_tool == 0 and scenario.options.max_iterations is None
    # One batch of two calls (the second skipped), then the padded reply.
    assert [len(turn.calls) for turn in scenario.turns] == [2, 0]

    result = run_scenario(scenario)
    assert not result.passed
    assert any("invariant 5" in f for f in result.failures), result.failures
    assert any("Skipped due to queued user message." in f for f in result.failures)

    monkeypatch.undo()
    assert run_scenario(scenario).passed


def test_report_failure_writes_nothing_for_a_passing_body(failure_folder: Path) -> None:
    with report_failure(GeneratedScenario(script=(GenTurn(text="hi"),))):
        pass
    assert not failure_folder.exists()


def test_report_failure_outside_hypothesis_writes_the_file(failure_folder: Path) -> None:
    generated = GeneratedScenario(script=(GenTurn(text="hi"),))
    with pytest.raises(AssertionError) as caught, report_failure(generated):
        raise AssertionError("a failing check")
    path = the_failure_file(failure_folder)
    assert "a failing check" in path.read_text(encoding="utf-8")
    assert any(str(path) in note for note in caught.value.__notes__)


def test_failure_dir_default_and_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("OPENPROGRAM_FAILURE_DIR", raising=False)
    assert failure_dir() == Path(".hypothesis/openprogram-failures")
    monkeypatch.setenv("OPENPROGRAM_FAILURE_DIR", str(tmp_path))
    generated = GeneratedScenario(
        tools=(GenTool("t0", "returns", None),), script=(GenTurn(text="ok"),)
    )
    first = save_failure(generated, "why")
    assert first.parent == tmp_path and first.name.endswith(".scenario.yaml")
    assert save_failure(generated, "why") == first  # named by content: written once
    assert "returns: null" in first.read_text(encoding="utf-8")


_ROUND_TRIP = fixed_settings(60, suppress_health_check=[HealthCheck.too_slow])


def test_every_exported_scenario_replays_the_same_run(event_runner: asyncio.Runner) -> None:
    """Fidelity of the export: for any generated scenario the YAML file passes its own
    expectations and its run produces exactly the messages of the direct run."""

    @_ROUND_TRIP
    @given(generated=scenarios())
    def round_trip(generated: GeneratedScenario) -> None:
        text = scenario_to_yaml(generated)
        result = event_runner.run(arun_scenario(parse_scenario(text)))
        assert result.passed, text + "\n" + result.failure_text
        direct = generated.run_sync(runner=event_runner)
        dump = [json.dumps(m.model_dump(mode="json"), sort_keys=True) for m in direct.messages]
        replay = [
            json.dumps(m.model_dump(mode="json"), sort_keys=True) for m in result.trace.messages
        ]
        assert dump == replay

    round_trip()
