"""The README's providers example runs as written (offline, against the emulator)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_providers_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    readme = (ROOT / "docs" / "providers.md").read_text()
    section = readme.split("<!-- section: providers -->", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the providers section's example is missing"
    exec(compile(match.group(1), "README.md", "exec"), {})
    assert capsys.readouterr().out.strip() == "completed 2 + 3 = 5"
