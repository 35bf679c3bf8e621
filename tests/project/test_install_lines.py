"""Every install line in the docs works verbatim: it names this project's distribution (not the
unrelated package that owns the import name on the index) and only extras that exist.  The
built wheel is installed by exactly these lines in CI (tests/harness/test_harness_example.py)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
DIST = PYPROJECT["project"]["name"]
EXTRAS = set(PYPROJECT["project"]["optional-dependencies"])

# `pip install "name[a,b]"`, `pip install name`, `pip install -e ".[x]"`
LINE = re.compile(r"pip install (?:-e )?[\"']?([A-Za-z0-9_.-]*)(?:\[([^\]]*)\])?[\"']?")


def documented_installs() -> list[tuple[str, str, set[str]]]:
    """(file, requirement name, extras) of every ``pip install`` of this project in the docs."""
    found = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for match in LINE.finditer(path.read_text(encoding="utf-8")):
            name, extras = match.group(1), match.group(2)
            if name.lower().startswith("openprogram") or name == ".":
                chosen = {e.strip() for e in extras.split(",")} if extras else set()
                found.append((path.name, name, chosen))
    return found


def test_the_distribution_name_is_not_the_taken_import_name() -> None:
    # `openprogram` on the package index is someone else's project: a user who typed the import
    # name would get its code.
    assert DIST != "openprogram"


def test_every_install_line_names_this_distribution_and_real_extras() -> None:
    installs = documented_installs()
    assert len(installs) >= 5, installs  # the docs do document installing
    for where, name, extras in installs:
        if name != ".":
            assert name == DIST, f"{where}: `pip install {name}` is not this project ({DIST})"
        assert extras <= EXTRAS, f"{where}: unknown extras {sorted(extras - EXTRAS)}"


def test_the_line_checker_catches_a_wrong_name_and_a_missing_extra() -> None:
    text = 'pip install "openprogram[testing]" and pip install "openprogram-loop[nope]"'
    (a, b) = [(m.group(1), m.group(2)) for m in LINE.finditer(text)]
    assert a == ("openprogram", "testing") and a[0] != DIST
    assert b == (DIST, "nope") and "nope" not in EXTRAS
