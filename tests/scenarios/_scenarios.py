"""Helpers the scenario tests share: a small scenario to run, the error a file load raises, the
command in a fresh interpreter, and a session collecting as a pytest-xdist worker."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario

#: A scenario (YAML, its ``expect:`` line still to append) in which the model calls tool ``t``,
#: which returns "ok", and then answers "done".
ONE_TOOL_CALL = """
prompt: hi
tools: [{name: t, returns: ok}]
script:
  - calls: [{name: t}]
  - done
"""


def load_error(path: Path, **options: Any) -> str:
    """The message of the ``ScenarioError`` that loading the scenario file at ``path`` (with
    ``load_scenario``'s ``options``) raises; the test fails if the file loads."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, **options)
    return str(info.value)


ROOT = Path(__file__).resolve().parents[2]


def run_command(*args: str, cwd: Path, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m openprogram_testing.frontends.cli.main ARGS`` in a fresh interpreter (the command as its
    own process), this checkout first on the path."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-m", "openprogram_testing.frontends.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=cwd,
    )


class XdistWorker:
    """A plugin making an in-process pytest session collect and run as a pytest-xdist worker
    does (the collector reads ``config.workerinput``)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_configure(self, config: pytest.Config) -> None:
        config.workerinput = {"workerid": "gw0"}  # type: ignore[attr-defined]
