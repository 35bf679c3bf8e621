"""The pytest plugin, exercised through pytester: fixtures, strictness, markers, options,
coexistence with pytest-recording, the real-call guard, snapshots (also under pytest-xdist) and
the README example."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
BASE = (
    "-p",
    "no:cacheprovider",
    "--strict-markers",
    "-o",
    "asyncio_default_fixture_loop_scope=function",
)


# xdist workers are fresh interpreters: keep them from importing unrelated heavy plugins.
LEAN = ("-p", "no:langsmith_plugin", "-p", "no:hypothesispytest", "-p", "no:anyio")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_inprocess(*BASE, *args)


ADD = """
ADD = {
    "spec": {"name": "add", "parameters": {"type": "object",
             "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}},
    "execute": lambda a: a["a"] + a["b"],
}
"""


def test_fixtures_are_available(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "from openprogram_testing import LoopTrace, ScriptedProvider, SteeringSchedule, call, turn\n"
        + ADD
        + """
def test_fixtures(scripted_provider, loop_runner, steering, trace_snapshot):
    assert isinstance(scripted_provider, ScriptedProvider)
    assert isinstance(steering, SteeringSchedule) and steering.entries == []
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), "3")
    steering.follow_up("again")
    scripted_provider.add("4")
    trace = loop_runner("add", tools=[ADD])
    assert isinstance(trace, LoopTrace) and trace.schedule is steering
    assert [m.text for m in trace.user_messages] == ["add", "again"]
    assert loop_runner.traces == [trace] and loop_runner.last is trace
    other = loop_runner(ScriptedProvider(["x"]), "hi", schedule=None)
    assert other.final_text == "x" and other.schedule is None

async def test_async_runner(loop_runner):
    trace = await loop_runner.arun(ScriptedProvider(["y"]), "hi")
    assert trace.final_text == "y"
"""
    )
    _run(pytester, "-p", "asyncio", "-o", "asyncio_mode=auto").assert_outcomes(passed=2)


def test_strict_consumption_failures_name_the_problem(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
from openprogram_testing import call, turn

def test_leftover(scripted_provider, loop_runner):
    scripted_provider.add("one", "two")
    loop_runner("hi")

def test_extra_call(scripted_provider, loop_runner):
    scripted_provider.add(turn(call("missing", unknown=True)))
    trace = loop_runner("hi")
    assert trace.termination == "error"
"""
    )
    result = _run(pytester)
    # leftover turns can only be known at the end (a teardown error); running past the script
    # fails the test itself, at the run, and only once
    result.assert_outcomes(passed=1, failed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*UnconsumedTurns: 1 scripted turn(s) were never played (played 1 of 2): text 'two'*",
            "E *UnexpectedModelCall: unexpected model call #1 (0-based): the script has 1 "
            "turn(s), all played; last message: toolResult 'Tool missing not found'",
            "FAILED *test_extra_call*",
        ]
    )


def test_markers_are_registered_under_strict_markers(pytestconfig: pytest.Config) -> None:
    # This suite itself runs with --strict-markers (pyproject addopts), so the marked test
    # below would be a collection error if the plugin did not register the markers.
    assert pytestconfig.option.strict_markers or "--strict-markers" in pytestconfig.getini(
        "addopts"
    )
    lines = pytestconfig.getini("markers")
    assert any(m.startswith("allow_model_requests:") for m in lines)
    assert any(m.startswith("op_no_invariants:") for m in lines)


@pytest.mark.allow_model_requests
@pytest.mark.op_no_invariants
def test_marked_with_both_markers(loop_runner, scripted_provider) -> None:  # type: ignore[no-untyped-def]
    from openprogram.providers import guard

    assert guard.model_requests_allowed() and loop_runner.check is False
    scripted_provider.add("hi")
    assert loop_runner("hello").final_text == "hi"


def test_loop_runner_checks_invariants_and_shows_the_timeline_on_failure(
    pytester: pytest.Pytester,
) -> None:
    # A provider that repeats a tool call id: the loop answers both calls, and invariant 4
    # reports the duplicate id (a real provider bug the harness must surface).
    pytester.makepyfile(
        "import pytest\nfrom openprogram_testing import call, turn\n"
        + ADD
        + """
SCRIPT = [turn(call("add", {"a": 1, "b": 1}, id="dup"), call("add", {"a": 2, "b": 2}, id="dup")), "ok"]

def test_checked(scripted_provider, loop_runner):
    scripted_provider.add(*SCRIPT)
    loop_runner("go", tools=[ADD])

@pytest.mark.op_no_invariants
def test_marker_opts_out(scripted_provider, loop_runner):
    scripted_provider.add(*SCRIPT)
    loop_runner("go", tools=[ADD])

def test_argument_opts_out(scripted_provider, loop_runner):
    scripted_provider.add(*SCRIPT)
    loop_runner("go", tools=[ADD], check_invariants=False)

def test_failing_test_shows_timeline(scripted_provider, loop_runner):
    scripted_provider.add("hello")
    trace = loop_runner("hi")
    assert trace.final_text == "bye"
"""
    )
    result = _run(pytester)
    result.assert_outcomes(passed=2, failed=2)
    out = result.stdout.str()
    assert "InvariantViolation: loop invariant 4 violated:" in out
    assert "the assistant message repeats tool call id(s) ['dup']" in out
    assert out.count("openprogram timeline (last run)") == 1  # the plain assertion failure
    # (under CI pytest repeats full failure messages in its short summary: count above it)
    body = out.split("short test summary info")[0]
    assert len(re.findall(r"#0 +agent_start", body)) == 2  # one timeline per failing test
    assert re.search(r"#\d+\s+message_end assistant stop=stop", out)
    _run(pytester, "--openprogram-no-invariants", "-k", "checked").assert_outcomes(passed=1)
    _run(pytester, "-o", "openprogram_check_invariants=false", "-k", "checked").assert_outcomes(
        passed=1
    )


def test_coexists_with_pytest_recording(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
import pytest

def test_both_plugins_active(request, loop_runner, scripted_provider):
    pm = request.config.pluginmanager
    assert pm.hasplugin("recording") and pm.hasplugin("openprogram_testing")
    assert request.config.getoption("--record-mode") == "none"
    assert request.config.getoption("--openprogram-record-mode") == "none"
    scripted_provider.add("hi")
    assert loop_runner("hello").final_text == "hi"

@pytest.mark.vcr
@pytest.mark.block_network
@pytest.mark.allow_model_requests
@pytest.mark.op_no_invariants
def test_both_plugins_markers_under_strict_markers(vcr, loop_runner):
    assert vcr is not None and loop_runner.check is False
"""
    )
    result = _run(
        pytester, "-p", "recording", "--record-mode=none", "--openprogram-record-mode=none"
    )
    result.assert_outcomes(passed=2)
    help_text = _run(pytester, "-p", "recording", "--help").stdout.str()
    for option in (
        "--record-mode",
        "--openprogram-record-mode",
        "--openprogram-allow-model-requests",
    ):
        assert option in help_text


GUARD_TESTS = """
import pytest
from openprogram.providers import guard

def test_blocked_by_default():
    with pytest.raises(guard.ModelRequestsBlocked, match="Real model request to https://api.openai.com/v1 blocked"):
        guard.check("https://api.openai.com/v1")
    guard.check("http://127.0.0.1:8080/v1")  # loopback always passes

@pytest.mark.allow_model_requests
def test_marker_allows():
    guard.check("https://api.openai.com/v1")
"""


def test_real_call_guard_is_on_by_default(pytester: pytest.Pytester) -> None:
    from openprogram.providers import guard

    before = guard.model_requests_allowed()
    pytester.makepyfile(GUARD_TESTS)
    _run(pytester).assert_outcomes(passed=2)
    # With the option or the ini setting, "blocked by default" no longer holds.
    _run(pytester, "--openprogram-allow-model-requests").assert_outcomes(passed=1, failed=1)
    _run(pytester, "-o", "openprogram_allow_model_requests=true").assert_outcomes(
        passed=1, failed=1
    )
    assert guard.model_requests_allowed() == before  # restored after each test


def test_guard_blocks_a_real_adapter_in_this_suite() -> None:
    from openprogram.providers import guard
    from openprogram.providers.openai_chat import OpenAIChatProvider
    from openprogram_testing import run_loop_sync

    assert not guard.model_requests_allowed()  # our own autouse fixture is active here too
    provider = OpenAIChatProvider(api_key="sk-test", base_url="https://api.openai.com/v1")
    with pytest.raises(guard.ModelRequestsBlocked):
        run_loop_sync(provider, "hi")


SNAPSHOT_TEST = (
    "from openprogram_testing import call, turn\n"
    + ADD
    + """
def test_snap(scripted_provider, loop_runner, trace_snapshot):
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), "The answer is 3.")
    assert trace_snapshot == loop_runner("add 1 and 2", tools=[ADD])
"""
)


def test_snapshot_round_trip(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=SNAPSHOT_TEST)
    _run(pytester).assert_outcomes(failed=1)  # no snapshot yet
    result = _run(pytester, "--snapshot-update")
    result.assert_outcomes(passed=1)
    path = pytester.path / "__snapshots__" / "test_snap" / "test_snap.trace.txt"
    text = path.read_text()
    assert 'tool_execution_end call#1 add ok "3"' in text and 'text "The answer is 3."' in text
    path.write_text(text.replace('ok "3"', 'ok "4"'))
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ['*-*tool_execution_end call#1 add ok "4"*', '*+*tool_execution_end call#1 add ok "3"*']
    )


LONG_SNAPSHOT_TEST = (
    "from openprogram_testing import call, turn\n"
    + ADD
    + """
def test_long(scripted_provider, loop_runner, trace_snapshot):
    booked = "Booked: " + ", ".join(f"DY{1870 + i}-2026-05-0{i}" for i in range(1, 9)) + "."
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), booked + " Confirmed for Ada.")
    assert trace_snapshot == loop_runner("book it " + "please " * 30, tools=[ADD])
"""
)


def test_a_snapshot_diff_shows_each_changed_line_whole_at_default_verbosity(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_long=LONG_SNAPSHOT_TEST)
    _run(pytester, "--snapshot-update").assert_outcomes(passed=1)
    path = pytester.path / "__snapshots__" / "test_long" / "test_long.trace.txt"
    text = path.read_text()
    path.write_text(text.replace("DY1872-2026-05-02", "DY1872-2026-05-01").replace("Ada", "Bob"))
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    # Both changes, each line whole with its marker, without -vv.
    changed = [line for line in out.splitlines() if "Booked: DY1871-2026-05-01" in line]
    assert any(line.startswith("- ") and "DY1872-2026-05-01" in line and "Bob." in line
               for line in changed), out  # fmt: skip
    assert any(line.startswith("+ ") and "DY1872-2026-05-02" in line and "Ada." in line
               for line in changed), out  # fmt: skip
    marker = next(line for line in out.splitlines() if line.strip().startswith("^"))
    plus = next(line for line in changed if line.startswith("+ "))
    assert plus[marker.index("^")] == "2" and marker.rstrip().endswith("^")  # 05-0[2] ... [Ada]
    assert "trace snapshot diff (- snapshot, + this run)" in out


XDIST_TESTS = (
    "import pytest\nfrom openprogram_testing import call, turn\n"
    + ADD
    + """
@pytest.mark.parametrize("n", range(8))
def test_many(n, scripted_provider, loop_runner, trace_snapshot):
    scripted_provider.add(turn(call("add", {"a": n, "b": BUMP})), f"done {n}")
    assert trace_snapshot == loop_runner(f"case {n}", tools=[ADD])
"""
)


def test_snapshot_update_under_xdist_neither_loses_nor_corrupts(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="BUMP = 0\n" + XDIST_TESTS)
    _run(pytester, *LEAN, "-n", "2", "--snapshot-update").assert_outcomes(passed=8)
    folder = pytester.path / "__snapshots__" / "test_x"
    files = sorted(folder.iterdir())
    assert [f.name for f in files] == [f"test_many[{n}].trace.txt" for n in range(8)]
    first = {f.name: f.read_text() for f in files}
    for n in range(8):
        body = first[f"test_many[{n}].trace.txt"]
        assert f'prompt "case {n}"' in body and f'text "done {n}"' in body and body.endswith("\n")

    # A behaviour change, updated in parallel: every file is rewritten, none is lost.
    pytester.makepyfile(test_x="BUMP = 1\n" + XDIST_TESTS)
    _run(pytester, *LEAN, "-n", "2", "--snapshot-update").assert_outcomes(passed=8)
    second = {f.name: f.read_text() for f in sorted(folder.iterdir())}
    assert second.keys() == first.keys()
    for n in range(8):
        assert '"b": 1' in second[f"test_many[{n}].trace.txt"]
    # A sequential run agrees byte for byte with what the workers wrote.
    _run(pytester).assert_outcomes(passed=8)


def _readme_example() -> tuple[str, str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("<!-- section: harness -->", 1)[1]
    match = re.search(
        r"```python\n(# test_refund_agent\.py.*?)```\n.*?```text\n(.*?)```", section, re.S
    )
    assert match, "the harness section of README.md has no `# test_refund_agent.py` example"
    return match.group(1), match.group(2)


def test_readme_example_runs_verbatim(pytester: pytest.Pytester) -> None:
    code, shown = _readme_example()
    body = [line for line in code.splitlines() if line.strip() and not line.startswith("#")]
    assert len(body) <= 16, "the README example should stay short"
    pytester.makepyfile(test_refund_agent=code)
    _run(pytester, "--snapshot-update").assert_outcomes(passed=1)
    snap = (pytester.path / "__snapshots__" / "test_refund_agent").glob("*.trace.txt")
    text = next(iter(snap)).read_text()
    assert "SKIPPED" in text and "  steering " in text
    assert text == shown  # the README shows the real snapshot
