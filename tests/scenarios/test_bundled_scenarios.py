"""The bundled suite (``scenarios/``, the README's main job) loads and passes, scenario by
scenario, and covers what it claims to cover."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_testing.scenarios import SCENARIO_PATTERNS, load_scenario, run_scenario

SUITE = Path(__file__).resolve().parents[2] / "scenarios"
FILES = sorted(p for pattern in SCENARIO_PATTERNS for p in SUITE.glob(pattern))


def test_the_suite_is_substantial_and_covers_every_kind_of_run() -> None:
    assert len(FILES) >= 25
    scenarios = [load_scenario(f) for f in FILES]
    terminations = {s.expect.termination for s in scenarios}
    assert terminations == {"completed", "max_iterations", "error", "aborted"}
    assert {s.options.steering_mode for s in scenarios if s.steering} == {"skip", "after_batch"}
    assert {s.cassette.api for s in scenarios if s.cassette} == {
        "openai_chat",
        "openai_responses",
        "anthropic",
        "gemini",
        "bedrock",
    }
    assert any(s.cassette and s.cassette.faults for s in scenarios)
    assert {s.options.max_iterations for s in scenarios} >= {0, 1, 2}
    assert all(s.description for s in scenarios), "every bundled scenario says what it shows"


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_bundled_scenario_passes(path: Path) -> None:
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text
