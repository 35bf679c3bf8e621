"""The providers page's examples run as written (offline, against the emulator)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _example(section: str) -> str:
    page = (ROOT / "docs" / "providers.md").read_text()
    text = page.split(f"<!-- section: {section} -->", 1)[1]
    match = re.search(r"```python\n(.*?)```", text, re.S)
    assert match, f"the {section} section's example is missing"
    return match.group(1)


@pytest.mark.parametrize(
    ("section", "output"),
    [
        ("providers", "completed 2 + 3 = 5"),
        ("gemini", "completed 2 + 3 = 5 call_emu0_0"),  # the emulator sends no call ids
        ("bedrock", "completed 2 + 3 = 5"),
        ("claude-on-bedrock-and-vertex", "completed Hello from Bedrock"),
    ],
)
def test_providers_examples_run(
    capsys: pytest.CaptureFixture[str], section: str, output: str
) -> None:
    exec(compile(_example(section), "providers.md", "exec"), {})
    assert capsys.readouterr().out.strip() == output
