"""docs/decisions.md opens with an index by topic: every link there leads to a section, and
every section is listed (a new section goes under its topic)."""

from __future__ import annotations

import re
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"
INDEX = "Index by topic"


def anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces to dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def index_problems(text: str) -> list[str]:
    headings = [h for h in re.findall(r"(?m)^## (.+)$", text) if h != INDEX]
    index = text.partition(f"## {INDEX}\n")[2].partition("\n## ")[0]
    links = re.findall(r"\]\(#([^)]+)\)", index)
    anchors = {anchor(h): h for h in headings}
    problems = [f"the index links #{a}, which is no section" for a in links if a not in anchors]
    problems += [f"section {h!r} is not in the index" for a, h in anchors.items() if a not in links]
    return problems


def test_the_index_lists_every_section() -> None:
    assert index_problems(PAGE.read_text(encoding="utf-8")) == []


def test_the_index_check_finds_a_missing_or_dead_link() -> None:
    text = f"# D\n\n## {INDEX}\n\n- **A**: [One](#one) · [Gone](#gone)\n\n## One\n\n## Two\n"
    assert index_problems(text) == [
        "the index links #gone, which is no section",
        "section 'Two' is not in the index",
    ]
