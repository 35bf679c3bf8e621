"""Failure text is bounded whatever the run produced: every value a failure line, an assertion
message or the report quotes is clipped with the number of characters cut (one function,
``openprogram.texts.clip``), so a 20 MB reply is not a 20 MB failure, terminal block or report."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram import function
from openprogram.texts import clip, clipped_repr
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.core.trace import run_loop_sync
from openprogram_testing.judges.assertions import assert_final_text, assert_tool_results
from openprogram_testing.scenarios import run_scenario

ROOT = Path(__file__).resolve().parents[2]
HUGE = 300_000


@given(st.text(max_size=50), st.integers(1, 40))
def test_clip_keeps_the_head_and_says_how_much_was_cut(text: str, limit: int) -> None:
    out = clip(text, limit)
    if len(text) <= limit:
        assert out == text
    else:
        assert out == f"{text[:limit]}…(+{len(text) - limit} chars)"
    assert clipped_repr(text, limit).startswith(repr(text[:limit]))


@function
def flood() -> str:
    """A tool whose result is huge."""
    return "B" * HUGE


def write_project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "flood_tools.py").write_text(
        textwrap.dedent(f'''
            from openprogram import function

            @function
            def flood() -> str:
                """A tool whose result is huge."""
                return "B" * {HUGE}

            @function
            def fail() -> str:
                """A tool that raises with a huge message."""
                raise RuntimeError("C" * {HUGE})
        ''')
    )
    scenario = tmp_path / "scenario_flood.yaml"
    scenario.write_text(
        "prompt: go\ntools: [{import: 'flood_tools:flood'}, {import: 'flood_tools:fail'}]\n"
        "script: [{calls: [{name: flood}, {name: fail}]}, done]\n"
        "expect:\n"
        "  final_text: x\n"
        "  tool_results: [{name: flood, text: x}, {name: fail, text: y, is_error: false}]\n"
        "  request_roles: [[user]]\n"
        "check_invariants: false\n"
    )
    return scenario


def test_every_failure_line_of_a_scenario_is_clipped(tmp_path: Path) -> None:
    scenario = write_project(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        result = run_scenario(scenario)
    finally:
        sys.path.remove(str(tmp_path))
    assert not result.passed and len(result.failures) >= 3
    for line in result.failures:
        assert len(line) <= 5_000, line[:200]
    assert any("chars)" in line for line in result.failures)
    assert len(result.failure_text) < 100_000


def test_assertion_messages_are_clipped() -> None:
    trace = run_loop_sync(ScriptedProvider([turn(call("flood")), "A" * HUGE]), "go", tools=[flood])
    with pytest.raises(AssertionError) as final:
        assert_final_text(trace, "x")
    with pytest.raises(AssertionError) as results:
        assert_tool_results(trace, [{"name": "flood", "text": "x"}])
    for error in (final, results):
        message = str(error.value).split("\n\nrun timeline:\n")[0]
        assert len(message) < 10_000 and "chars)" in message


def test_the_cli_output_and_the_html_report_are_bounded(tmp_path: Path) -> None:
    write_project(tmp_path)
    html = tmp_path / "r.html"
    exe = Path(sys.executable).with_name("openprogram-testing")
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{tmp_path}"}
    done = subprocess.run(
        [str(exe), "run", str(tmp_path), "--html", str(html)],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "expect.final_text: expected 'x', got 'done'" in done.stdout
    assert len(done.stdout) < 200_000 and len(done.stderr) < 10_000
    assert html.stat().st_size < 500_000
