"""The README's scenario example is a valid scenario that passes."""

from __future__ import annotations

import re
from pathlib import Path

from openprogram_testing.scenarios import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]


def test_readme_scenario_example_passes(tmp_path: Path) -> None:
    readme = (ROOT / "docs" / "scenarios.md").read_text()
    section = readme.split("<!-- section: scenarios -->", 1)[1]
    match = re.search(r"```yaml\n(.*?)```", section, re.S)
    assert match, "the scenarios section's YAML example is missing"
    path = tmp_path / "scenario_example.yaml"
    path.write_text(match.group(1))
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text
    assert result.trace.skipped
