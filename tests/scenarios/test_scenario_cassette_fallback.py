"""A cassette scenario's ``fallback``: turns that answer the model calls the recording does not
hold (here: a tool that now answers differently, so the second request drifts from the one
recorded), marked on the run, and never a silent pass."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openprogram_testing.scenarios import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]

DRIFTED = """
prompt: What is the weather in Paris?
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    returns: rainy, 9 C in Paris
cassette:
  path: cassettes/openai_chat_weather.yaml
  api: openai_chat
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "cassettes").mkdir()
    shutil.copy(
        ROOT / "scenarios" / "cassettes" / "openai_chat_weather.yaml", tmp_path / "cassettes"
    )
    return tmp_path


def run(root: Path, body: str) -> object:
    path = root / "scenario_drift.yaml"
    path.write_text(body)
    return run_scenario(load_scenario(path))


def test_without_a_fallback_a_drifted_request_fails_the_scenario(project: Path) -> None:
    result = run(project, DRIFTED + "expect: {termination: completed}\n")
    assert not result.passed  # type: ignore[attr-defined]
    assert "the body differs from interaction 1" in result.failure_text  # type: ignore[attr-defined]


def test_the_fallback_answers_the_drifted_request_and_marks_it(project: Path) -> None:
    body = DRIFTED + (
        "  allow_unplayed: true\n"
        "  fallback:\n"
        "    - It is rainy and 9 C in Paris, says the script.\n"
        "expect: {termination: completed, final_text: 'It is rainy and 9 C in Paris, says the "
        "script.', model_calls: 2}\n"
    )
    result = run(project, body)
    assert result.passed, result.failure_text  # type: ignore[attr-defined]
    timeline = result.timeline  # type: ignore[attr-defined]
    assert "served from script: fallback turn 0 answered POST /v1/chat/completions" in timeline
    assert "the body differs from interaction 1" in timeline


def test_a_fallback_never_used_fails_the_scenario(project: Path) -> None:
    body = DRIFTED.replace("rainy, 9 C", "sunny, 21 C") + (
        "  fallback: [never asked]\nexpect: {termination: completed}\n"
    )
    result = run(project, body)
    assert not result.passed  # type: ignore[attr-defined]
    assert "answered nothing" in result.failure_text  # type: ignore[attr-defined]
