"""A project written against 0.1.0 (``city_agent_0_1/``: ``examples/city_agent`` at commit
``216717e``) runs its own tests on this release: everything passes except what CHANGELOG.md lists
as breaking, and each of those fails with a message naming the change and the exact migration,
which applied as written makes the project pass."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OLD_PROJECT = Path(__file__).resolve().parent / "city_agent_0_1"


def _pytest(project: Path, *args: str) -> tuple[int, str]:
    """The project's own pytest in a fresh interpreter, importing this checkout's packages
    (``PYTHONPATH``), with nothing of this session's environment (an xdist worker's
    ``PYTEST_*`` variables) leaking in."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")}
    env["PYTHONPATH"] = str(ROOT)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rfE",
            "-W",
            "default::DeprecationWarning",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "-p",
            "no:asyncio",
            *args,
        ],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return result.returncode, f"{result.stdout}\n{result.stderr}"


def test_the_0_1_project_passes_or_fails_naming_the_change(tmp_path: Path) -> None:
    project = tmp_path / "city_agent"
    shutil.copytree(OLD_PROJECT, project, ignore=shutil.ignore_patterns("__pycache__"))

    code, out = _pytest(project)
    # Everything but the cassette test and the trace snapshot passes unchanged: the scripted
    # runs, steering into the nested run, the property tests and the YAML scenario over the
    # real tools.
    assert code == 1 and "1 failed, 7 passed, 1 error" in out, out
    assert not re.search(r"\d+ snapshots? (written|updated|unused)", out), out
    # The committed trace-tree snapshot is CHANGELOG.md's "Trace snapshots are format v2": it
    # fails saying so and what to run, not with a diff.
    (snapshot,) = re.findall(r"^FAILED (\S+)", out, re.M)
    assert snapshot == "tests/test_agent.py::test_the_trace_tree_snapshot", out
    assert "trace format v1 and this harness writes v2" in out, out
    assert "run once with --snapshot-update" in out, out
    # The other failure is CHANGELOG.md's "Default cassette names are path-aware", saying what
    # changed and the move to make.
    (failed,) = re.findall(r"^ERROR (\S+)", out, re.M)
    assert failed == "tests/test_cassette.py::test_replayed_from_the_cassette", out
    assert "is now named cassettes/tests/test_cassette/test_replayed_from_the_cassette.yaml" in out
    assert "path-aware" in out, out
    move = re.search(r"\(git mv (\S+) (\S+)\)", out)
    assert move, out

    # The migration, applied exactly as the message spells it, is the whole fix.
    old, new = (project / p for p in shlex.split(f"{move[1]} {move[2]}"))
    new.parent.mkdir(parents=True, exist_ok=True)
    old.rename(new)
    code, out = _pytest(project, "--snapshot-update")
    assert code == 0 and "9 passed" in out and "1 snapshot updated" in out, out
    snapshot_file = (
        project / "tests/__snapshots__/test_agent/test_the_trace_tree_snapshot.trace.txt"
    )
    assert snapshot_file.read_text().startswith("# openprogram trace v2"), out
    code, out = _pytest(project)
    assert code == 0 and "9 passed" in out and "1 snapshot passed" in out, out
