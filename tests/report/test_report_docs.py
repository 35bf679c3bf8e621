"""docs/report.md stays true: its behaviour table is the definitions in code, its screenshot
exists and is a real PNG."""

from __future__ import annotations

import re
from pathlib import Path

from openprogram_testing.report import BEHAVIOURS

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "report.md"


def test_behaviour_table_matches_the_definitions() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (.+?) \| (.+?) \|$", PAGE.read_text(), re.M)
    assert [(name, title, definition) for name, title, definition in rows] == [
        (b.name, b.title, b.definition) for b in BEHAVIOURS
    ]


def test_screenshot_is_shown_and_exists() -> None:
    (target,) = re.findall(r"!\[[^\]]+\]\((img/[^)]+\.png)\)", PAGE.read_text())
    png = (PAGE.parent / target).read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
