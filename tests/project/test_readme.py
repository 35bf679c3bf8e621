"""The README's loop example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_loop_example_runs(capsys) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- section: loop -->\n\n```python\n(.*?)```", readme, re.S)
    assert match, "the loop section's example is missing"
    exec(compile(match.group(1), "README.md", "exec"), {})
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "agent_start" and out[-1] == "completed 2 + 3 = 5"
