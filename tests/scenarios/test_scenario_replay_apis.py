"""Cassette scenarios for every ``WireAPI``: real Gemini and Bedrock recordings (from the shared
conformance set) replay through their adapters from YAML, and an API without an adapter is a
load error at ``cassette.api``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openprogram_testing.frontends.scenarios import replay
from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.conftest import require_conformance_dir
from tests.scenarios._scenarios import load_error

GEMINI = """
prompt: "Please retrieve the secrets associated with each of these passwords: mellon,radiance"
system_prompt: Use parallel tool calling.
tools:
  - name: secret_retrieval_tool
    parameters: {type: object, properties: {password: {type: string}}, required: [password]}
    echo: true
# recorded by another client (its own request bodies): body matching is relaxed
cassette: {path: recorded.yaml, api: gemini, match_body: false}
expect:
  termination: completed
  model_calls: 2
  tool_results:
    - {name: secret_retrieval_tool, text: '{"password": "mellon"}'}
    - {name: secret_retrieval_tool, text: '{"password": "radiance"}'}
"""

BEDROCK = """
prompt: What is the weather in Seattle and San Francisco today?
tools:
  - name: get_current_weather
    parameters: {type: object, properties: {location: {type: string}}, required: [location]}
    returns: sunny
# recorded by another client (its own request bodies): body matching is relaxed
cassette: {path: recorded.yaml, api: bedrock, match_body: false}
expect: {termination: completed, model_calls: 2}
"""


@pytest.mark.parametrize(
    ("recording", "text"),
    [
        ("mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml", GEMINI),
        (
            "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml",
            BEDROCK,
        ),
    ],
    ids=["gemini", "bedrock"],
)
def test_recordings_of_other_apis_replay_from_yaml(
    tmp_path: Path, recording: str, text: str
) -> None:
    shutil.copy(require_conformance_dir() / recording, tmp_path / "recorded.yaml")
    path = tmp_path / "scenario_replay.yaml"
    path.write_text(text)
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text


def test_an_api_without_an_adapter_is_a_load_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(replay.ADAPTERS, "gemini", ("openprogram.providers.no_such", "X"))
    shutil.copy(
        Path(__file__).parent / "malformed" / "cassettes" / "text.yaml", tmp_path / "recorded.yaml"
    )
    path = tmp_path / "scenario_g.yaml"
    path.write_text("prompt: hi\ncassette: {path: recorded.yaml, api: gemini}\n")
    assert load_error(path) == (
        f"{path}:2:38: cassette.api: this openprogram has no gemini adapter yet: its cassettes "
        "cannot be replayed"
    )
