"""The ``cassette`` fixture's ``fallback=``: asked for on the marker, it answers what the
recording lacks and marks it; without it the same test fails; a fallback never used fails."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]

TEST = """
import pytest
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.transport.faults import HttpError
from openprogram_testing.core.trace import run_loop

ADD = {{"spec": {{"name": "add", "description": "Add two integers.", "parameters": {{
    "type": "object", "properties": {{"a": {{"type": "integer"}}, "b": {{"type": "integer"}}}},
    "required": ["a", "b"]}}}}, "execute": lambda args: str(args["a"] + args["b"])}}

@pytest.mark.op_cassette("loop", {marker})
async def test_fault(cassette):
    provider = OpenAIChatProvider(api_key="x", base_url="http://127.0.0.1:9/v1", max_retries=1)
    trace = await run_loop(provider, "What is 2 + 3?", tools=[ADD])
    print("FINAL", trace.termination, trace.final_text, cassette.served_from_script)
"""


def _run(pytester: pytest.Pytester, marker: str) -> pytest.RunResult:
    (pytester.path / "cassettes").mkdir()
    shutil.copy(
        ROOT / "cassettes" / "emulator" / "chat_tool_loop.yaml",
        pytester.path / "cassettes" / "loop.yaml",
    )
    pytester.makepyfile(test_fb=TEST.format(marker=marker))
    return pytester.runpytest_subprocess("-s", "-p", "asyncio", "-o", "asyncio_mode=auto")


def test_the_fixture_falls_back_when_asked(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        'mutations={0: [HttpError(503)]}, fallback=["From the script."], allow_unplayed=True',
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*FINAL completed From the script. ['served from script: fallback turn 0*"]
    )


def test_without_fallback_the_same_test_fails(pytester: pytest.Pytester) -> None:
    result = _run(pytester, "mutations={0: [HttpError(503)]}, allow_unplayed=True")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*the body differs from interaction 1*"])


def test_an_unused_fallback_fails_the_test(pytester: pytest.Pytester) -> None:
    result = _run(pytester, 'fallback=["never asked"]')
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*answered nothing*"])


def test_cassette_errors_show_no_contextlib_or_library_frames(pytester: pytest.Pytester) -> None:
    (pytester.path / "cassettes").mkdir()
    shutil.copy(
        ROOT / "cassettes" / "emulator" / "chat_tool_loop.yaml",
        pytester.path / "cassettes" / "loop.yaml",
    )
    pytester.makepyfile(
        test_frames="""
import pytest

@pytest.mark.op_cassette("missing")
def test_missing(cassette):
    pass

@pytest.mark.op_cassette("loop")
def test_unplayed(cassette):
    pass
"""
    )
    result = pytester.runpytest_subprocess("--tb=long")
    result.assert_outcomes(passed=1, errors=2)  # test_unplayed passes, then its teardown errs
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "*CassetteError: cassette *missing.yaml not found and record_mode='none'*",
            "*CassetteError: cassette *loop.yaml: 2 of 2 recorded interaction(s) were never played*",
        ]
    )
    for frame in (
        "contextlib.py",
        "cassettes/session.py",
        "openprogram_testing/frontends/pytest/plugin.py",
    ):
        assert frame not in out, frame
