"""The scenario trust model: a scenario with ``import:``/``runtime:`` is code trusted like a
``conftest.py``, and within that model validation calls nothing that was not made to be called
(builtins that hang or kill, stdlib functions, unmarked callables are reported without being
called), runs a factory with stdin closed and a time limit, and turns every way out (exception,
``SystemExit``, timeout) into a positioned error."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openprogram_testing.frontends.scenarios import imports
from openprogram_testing.scenarios import ScenarioError, load_scenario

ROOT = Path(__file__).resolve().parents[2]

FACTORIES = '''
import sys, time
from openprogram import Runtime, function
from openprogram_testing import scenario_factory

CALLED = []

@function
def ping() -> str:
    """Ping."""
    return "pong"

def unmarked():
    CALLED.append("unmarked")
    return [ping]

@scenario_factory
def marked():
    return [ping]

@scenario_factory
def reads_stdin():
    return [ping] if sys.stdin.read() == "" else None

@scenario_factory
def asks():
    input("really? ")
    return [ping]

@scenario_factory
def sleeps():
    time.sleep(30)

@scenario_factory
def exits():
    raise SystemExit(3)

def runtime_reads(provider):
    input()
'''


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").touch()
    (tmp_path / "factories.py").write_text(textwrap.dedent(FACTORIES))
    return tmp_path


def problem(project: Path, entry: str) -> str:
    file = project / "scenario_t.yaml"
    file.write_text(f"prompt: hi\nscript: [x]\n{entry}\n")
    try:
        load_scenario(file, import_roots=[project])
    except ScenarioError as exc:
        (only,) = exc.problems
        assert only.line == 3 and only.column > 1
        return only.message
    return ""


HOSTILE = [
    "signal:pause",
    "builtins:input",
    "sys:stdin.read",
    "os:abort",
    "tempfile:mkdtemp",
    "os:getcwd",
    "factories:unmarked",
]


@pytest.mark.parametrize("path", HOSTILE)
def test_a_callable_that_is_not_a_marked_factory_is_reported_without_being_called(
    project: Path, path: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    called: list[str] = []
    monkeypatch.setattr(imports, "_guarded", lambda p, *_a: called.append(p))
    message = problem(project, f"tools: [{{import: '{path}'}}]")
    assert "not a tool" in message and "@scenario_factory" in message
    assert called == []
    assert "unmarked" not in getattr(sys.modules.get("factories"), "CALLED", [])


@pytest.mark.parametrize("path", ["signal:pause", "builtins:input", "os:abort", "builtins:dict"])
def test_a_runtime_that_is_not_a_python_function_is_not_called(project: Path, path: str) -> None:
    message = problem(project, f"runtime: '{path}'")
    assert "not a factory f(provider) -> Runtime" in message


def test_a_marked_factory_is_called_with_stdin_closed(project: Path) -> None:
    assert problem(project, "tools: [{import: 'factories:marked'}]") == ""
    assert problem(project, "tools: [{import: 'factories:reads_stdin'}]") == ""
    assert "raised EOFError" in problem(project, "tools: [{import: 'factories:asks'}]")
    assert "raised EOFError" in problem(project, "runtime: 'factories:runtime_reads'")
    assert "raised SystemExit: 3" in problem(project, "tools: [{import: 'factories:exits'}]")


def test_a_factory_past_its_time_limit_is_a_positioned_error(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(imports, "FACTORY_TIME_LIMIT_S", 0.2)
    message = problem(project, "tools: [{import: 'factories:sleeps'}]")
    assert message == "the factory 'factories:sleeps' did not return within 0.2 s"


def test_validate_with_hostile_imports_ends_with_every_file_reported(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").touch()
    for i, path in enumerate([*HOSTILE[:-1], "antigravity:geohash"]):
        (tmp_path / f"scenario_{i}.yaml").write_text(
            f"prompt: hi\nscript: [x]\ntools: [{{import: '{path}'}}]\n"
        )
    exe = Path(sys.executable).with_name("openprogram-testing")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "BROWSER": "true"}
    done = subprocess.run(
        [str(exe), "validate", "."], capture_output=True, text=True, timeout=60, env=env,
        cwd=tmp_path, stdin=None,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "7 of 7 scenario file(s) invalid" in done.stdout
    assert done.stdout.count(":3:18: tools[0].import:") == 7
