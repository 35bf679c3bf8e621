"""The malformed-scenario corpus: every file in ``malformed/`` ends in a clean error placed at
``file:line:column`` (never a traceback, never a hang) through the loader, ``validate``,
``run`` and pytest collection.  ``malformed/EXPECTED.txt`` names what each file must be
rejected for, so a file cannot start passing for the wrong reason."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path(__file__).resolve().parent / "malformed"
CATEGORIES = (
    "syntax",
    "types",
    "alias",
    "depth",
    "enc",
    "path",
    "regex",
    "index",
    "event",
    "import",
    "matcher",
)


def expected() -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in (CORPUS / "EXPECTED.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            name, _, fragment = line.partition("\t")
            out[name] = fragment.split("|")
    return out


EXPECTED = expected()
FILES = sorted(CORPUS / name for name in EXPECTED)


def test_the_corpus_is_large_and_covers_every_category() -> None:
    assert len(FILES) >= 80
    on_disk = {p.name for p in CORPUS.glob("*.yaml")}
    assert on_disk == set(EXPECTED)
    for category in CATEGORIES:
        assert sum(name.startswith(category + "_") for name in EXPECTED) >= 5, category


def positioned_lines(text: str, path: Path) -> list[str]:
    lines = [line for line in text.splitlines() if line.startswith(str(path) + ":")]
    for line in lines:
        assert re.match(re.escape(str(path)) + r":\d+:\d+: ", line), line
    return lines


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_the_loader_gives_a_positioned_error(path: Path) -> None:
    started = time.perf_counter()
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert time.perf_counter() - started < 20
    message = str(info.value)
    lines = positioned_lines(message, path)
    assert lines and len(lines) == len(message.splitlines()), message
    assert "Traceback" not in message and "RecursionError" not in message
    assert any(f in message for f in EXPECTED[path.name]), message


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "COLUMNS": "2000", "NO_COLOR": "1"}
    return subprocess.run(
        [sys.executable, "-m", "openprogram_testing.frontends.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_cli_reports_every_file_with_its_position(command: str) -> None:
    done = cli(command, *map(str, FILES))
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output and "RecursionError" not in output
    for path in FILES:
        assert positioned_lines(output, path), f"{path.name} has no positioned error:\n{output}"


def test_pytest_collection_fails_every_file_cleanly(pytester: pytest.Pytester) -> None:
    globs = "\n".join(f"    {CORPUS}/{c}_*.yaml" for c in CATEGORIES)
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        f"testpaths = {CORPUS}\nopenprogram_scenarios =\n{globs}\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-p", "no:randomly", timeout=300
    )
    result.assert_outcomes(failed=len(FILES))
    output = result.stdout.str()
    assert "Traceback" not in output and "RecursionError" not in output
    for path in FILES:
        assert positioned_lines(output, path), path.name
