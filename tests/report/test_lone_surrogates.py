"""A lone UTF-16 surrogate never crashes a writer.

The stream builder joins a pair split across deltas (JSON's ``"smile \\ud83d"`` then
``"\\ude00 done"``) and turns a half left alone into U+FFFD; text that reaches a writer another
way (a tool's result, a prompt) is made whole by every writer: the timeline, the snapshot, the
HTML report, JUnit XML, the run records and pytest-xdist's transport."""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram import function
from openprogram.providers.base import MessageBuilder
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.core.render import render_snapshot, render_timeline
from openprogram_testing.core.trace import run_loop_sync
from openprogram_testing.report import RunCollector, render_html

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
LONE = "half \ud83d of a pair, and \udc00 alone"


def code_units(text: str) -> list[str]:
    """``text`` as UTF-16 code units, each a one-character string (an emoji becomes its two
    surrogate halves, as a JSON parser gives them from ``\\ud83d\\ude00``)."""
    data = text.encode("utf-16-le", "surrogatepass")
    return [chr(u) for u in struct.unpack(f"<{len(data) // 2}H", data)]


def streamed(deltas: list[str], kind: str = "text") -> str:
    builder = MessageBuilder()
    index, _ = builder.text_start() if kind == "text" else builder.thinking_start()
    for delta in deltas:
        event = (builder.text_delta if kind == "text" else builder.thinking_delta)(index, delta)
        assert event.delta is not None
        event.delta.encode("utf-8")  # every delta event is writable on its own
    (builder.text_end if kind == "text" else builder.thinking_end)(index)
    block = builder.message.content[0]
    return block.text if kind == "text" else block.thinking  # type: ignore[union-attr]


@given(
    st.text(max_size=30),
    st.lists(st.integers(0, 60), max_size=8),
    st.sampled_from(["text", "thinking"]),
)
def test_a_pair_split_across_deltas_is_joined(text: str, cuts: list[int], kind: str) -> None:
    units = code_units(text)
    points = sorted({min(c, len(units)) for c in cuts})
    pieces = ["".join(units[a:b]) for a, b in zip([0, *points], [*points, len(units)], strict=True)]
    assert streamed(pieces, kind) == text


ANY_UNIT = st.one_of(st.characters(), st.characters(categories=["Cs"]))
"""Any character, a lone surrogate half included (hypothesis leaves those out by default)."""


@given(st.lists(st.lists(ANY_UNIT, max_size=6).map("".join), max_size=6))
def test_whatever_arrives_the_message_is_writable(deltas: list[str]) -> None:
    text = streamed(deltas)
    text.encode("utf-8")
    expected = "".join(deltas).encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    assert text == expected


def test_a_lone_half_becomes_the_replacement_character() -> None:
    assert streamed(["smile \ud83d", "\ude00 done"]) == "smile \U0001f600 done"
    assert streamed(["smile \ud83d"]) == "smile \ufffd"
    assert streamed(["\ude00 x", "\ud83d", " y \ud83d"]) == "\ufffd x\ufffd y \ufffd"


def test_tool_arguments_and_error_messages_are_whole() -> None:
    builder = MessageBuilder()
    index, _ = builder.toolcall_start("c1", "t")
    builder.toolcall_delta(index, '{"q": "a \\ud83d", "\\udc00": ["\\ud83d\\ude00"]}')
    builder.toolcall_end(index)
    assert builder.message.content[0].arguments == {  # type: ignore[union-attr]
        "q": "a \ufffd",
        "\ufffd": ["\U0001f600"],
    }
    builder.error("server said \ud83d")
    assert builder.message.error_message == "server said \ufffd"


@function
def bad() -> str:
    """A tool whose result holds lone surrogates."""
    return LONE


def lone_trace() -> object:
    return run_loop_sync(
        ScriptedProvider([turn(call("bad")), "done"]), f"prompt {LONE}", tools=[bad]
    )


def test_the_timeline_snapshot_record_and_html_of_such_a_run_are_writable() -> None:
    trace = lone_trace()
    for text in (
        render_timeline(trace),
        render_timeline(trace, color=True),
        render_snapshot(trace),
    ):
        assert "\ufffd" in text
        text.encode("utf-8")
    collector = RunCollector()
    collector.add(trace)  # type: ignore[arg-type]
    tests = [{"name": "t", "nodeid": "t", "outcome": "failed", "ms": 1.0, "failure": LONE,
              "runs": collector.runs}]  # fmt: skip
    render_html(tests, coverage=None).encode("utf-8")


SUITE = f'''
from openprogram import function
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.core.render import render_timeline
from openprogram_testing.core.trace import run_loop_sync

LONE = {LONE!r}

@function
def bad() -> str:
    """A tool whose result holds lone surrogates."""
    return LONE

def run():
    return run_loop_sync(ScriptedProvider([turn(call("bad")), "done"]), "p " + LONE, tools=[bad])

def test_passes():
    assert run().termination == "completed"

def test_fails():
    raise AssertionError(render_timeline(run()))

def test_snapshot(trace_snapshot):
    assert trace_snapshot == run()
'''


def test_pytest_xdist_html_junit_and_snapshots_survive(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_lone=SUITE)
    html, junit = pytester.path / "r.html", pytester.path / "j.xml"
    result = pytester.runpytest_subprocess(
        "-n", "2", "-p", "xdist", f"--openprogram-html={html}", f"--junitxml={junit}",
        "--snapshot-update",
    )  # fmt: skip
    result.assert_outcomes(passed=2, failed=1)
    assert "DumpError" not in result.stdout.str() + result.stderr.str()
    page = html.read_text(encoding="utf-8")
    summary = json.loads(page.split('id="summary">', 1)[1].split("</script>", 1)[0])
    assert sorted(r["runs"] for r in summary) == [1, 1, 1]
    failure = ET.parse(junit).getroot().find(".//failure")
    assert failure is not None and "\ufffd" in (failure.text or "")
    (snapshot,) = (pytester.path / "__snapshots__").rglob("*.trace.txt")
    assert "\ufffd" in snapshot.read_text(encoding="utf-8")


def test_the_cli_run_html_and_failure_block_survive(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("")
    (tmp_path / "lone_tools.py").write_text(
        textwrap.dedent(f'''
            from openprogram import function

            @function
            def bad() -> str:
                """A tool whose result holds lone surrogates."""
                return {LONE!r}
        ''')
    )
    (tmp_path / "scenario_lone.yaml").write_text(
        "prompt: go\ntools: [{import: 'lone_tools:bad'}]\nscript: [{calls: [{name: bad}]}, done]\n"
        "expect: {final_text: something else}\n"
    )
    html = tmp_path / "r.html"
    exe = Path(sys.executable).with_name("openprogram-testing")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONIOENCODING": "utf-8"}
    done = subprocess.run(
        [str(exe), "run", str(tmp_path), "--html", str(html), "--results-dir", str(tmp_path / "o")],
        capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "expect.final_text: expected 'something else', got 'done'" in done.stdout
    assert "\ufffd" in done.stdout and "Error" not in done.stderr
    assert "\ufffd" in html.read_text(encoding="utf-8")
