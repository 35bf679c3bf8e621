"""The README's cassettes example runs as written and prints what it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_cassettes_example_runs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    readme = (ROOT / "docs" / "cassettes.md").read_text()
    match = re.search(r"<!-- section: cassettes -->\n\n```python\n(.*?)```", readme, re.S)
    assert match, "the cassettes section's example is missing"
    code = match.group(1)
    monkeypatch.chdir(ROOT)
    exec(compile(code, "README.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    promised = [line.removeprefix("# ") for line in code.splitlines()[-2:]]
    assert printed == promised
