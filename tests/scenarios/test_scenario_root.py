"""One root for ``validate``, ``run`` and pytest collection: the same file gets the same verdict
from all three, whatever pytest's rootdir is; and whatever a cassette path holds (a name too long
for the file system, a NUL, odd segments), the answer is a positioned error, never an OSError."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram_testing.scenarios import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]
CASSETTE = ROOT / "scenarios" / "cassettes" / "openai_chat_text.yaml"


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("openprogram-testing")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [str(exe), *args], capture_output=True, text=True, timeout=120, env=env, cwd=cwd
    )


def scenario(path: str) -> str:
    return f"prompt: hi\ncassette: {{path: '{path}', api: openai_chat, match_body: false}}\n"


@pytest.fixture
def nested(tmp_path: Path) -> Path:
    """A repository (``.git``) inside a directory holding a ``pyproject.toml`` (pytest's rootdir
    from inside the repository), with a cassette in a sibling of the repository."""
    (tmp_path / "pyproject.toml").write_text("[tool.pytest.ini_options]\n")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (tmp_path / "sibling").mkdir()
    (tmp_path / "sibling" / "x.yaml").write_text(CASSETTE.read_text())
    (repo / "scenario_sibling.yaml").write_text(scenario("../sibling/x.yaml"))
    (repo / "scenario_long.yaml").write_text(scenario("c" * 300 + ".yaml"))
    return repo


def test_validate_run_and_collection_give_the_same_verdict(nested: Path) -> None:
    validate = cli("validate", ".", cwd=nested)
    run = cli("run", ".", cwd=nested)
    collect = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "."],
        capture_output=True, text=True, timeout=120, cwd=nested,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )  # fmt: skip
    outside = "cassette.path: the cassette path leads outside the scenario's root"
    too_long = "cassette.path: cannot use the cassette path: File name too long"
    for done in (validate, run, collect):
        assert done.returncode == 1, done.stdout + done.stderr
        assert outside in done.stdout and too_long in done.stdout, done.stdout
        assert "Traceback" not in done.stdout + done.stderr
    assert "2 of 2 scenario file(s) invalid" in validate.stdout


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.one_of(
            st.sampled_from(["..", ".", "", "c" * 300, "x.yaml", "\x00", "~", "a" * 255]),
            st.text(max_size=12),
        ),
        min_size=1,
        max_size=5,
    ).map("/".join)
)
def test_any_cassette_path_is_a_positioned_error_or_loads(tmp_path: Path, path: str) -> None:
    (tmp_path / "pyproject.toml").touch()
    file = tmp_path / "scenario_p.yaml"
    escaped = path.replace("\\", "\\\\").replace('"', '\\"')
    file.write_text(
        f'prompt: hi\ncassette: {{path: "{escaped}", api: openai_chat}}\n', encoding="utf-8"
    )
    try:
        load_scenario(file)
    except ScenarioError as exc:
        assert all(p.line >= 1 and p.column >= 1 for p in exc.problems)
