"""What a failing test shows: the real cause on the FAILED line, the harness's own frames hidden,
the timeline once; the ``exec_runner`` fixture (trace trees, steering into a nested run,
snapshots of a tree)."""

from __future__ import annotations

import re

import pytest

pytest_plugins = ["pytester"]

BASE = (
    "-p",
    "no:cacheprovider",
    "--strict-markers",
    "-rA",
    "-o",
    "asyncio_default_fixture_loop_scope=function",
)

AGENT = '''
import pytest
from openprogram import Registry, Runtime, agentic_function, function
from openprogram_testing import (
    assert_final_text, assert_skipped, assert_terminated, call, turn,
)

registry = Registry()

@function(registry=registry)
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"{city}: sunny"

@agentic_function(registry=registry)
def summarize_cities(cities: list[str], runtime) -> str:
    """Summarise the weather of several cities."""
    return runtime.exec("summarise " + ", ".join(cities), tools=[lookup])

TOOLS = [summarize_cities, lookup]
'''


def _run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_agent=AGENT + body)
    return pytester.runpytest_inprocess(*BASE, *args)


def test_running_past_the_script_fails_the_test_at_the_run(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
def test_overrun(scripted_provider, exec_runner):
    scripted_provider.add(turn(call("lookup", {"city": "Rome"})))
    tree = exec_runner("weather?", tools=TOOLS)
    assert tree.final_text == "never reached"
""",
    )
    result.assert_outcomes(failed=1)  # a FAILED test, no teardown ERROR
    out = result.stdout.str()
    assert (
        "UnexpectedModelCall: unexpected model call #1 (0-based): the script has 1 turn(s), all "
        "played; last message: toolResult 'Rome: sunny'" in out
    )
    assert '>       tree = exec_runner("weather?", tools=TOOLS)' in out  # the test's own line
    assert "ProviderError" not in out  # the cause, not its consequence
    assert "runners.py" not in out and "def _finish" not in out  # harness frames hidden
    assert out.count("openprogram timeline (last run)") == 1
    assert "no running event loop" not in out
    assert "ERROR" not in out.split("short test summary info")[1]


def test_an_assertion_helper_failure_shows_the_test_line_and_one_timeline(
    pytester: pytest.Pytester,
) -> None:
    result = _run(
        pytester,
        """
def test_wrong_text(scripted_provider, exec_runner):
    scripted_provider.add("hello")
    tree = exec_runner("hi", tools=[])
    assert_final_text(tree, "bye")
""",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert '>       assert_final_text(tree, "bye")' in out
    assert (
        "E       openprogram_testing.base.failures.TraceFailure: expected final text 'bye', got 'hello'"
        in out
    )
    assert "def assert_final_text" not in out and "assertions.py" not in out
    # (under CI pytest repeats full failure messages in its short summary: count above it)
    body = out.split("short test summary info")[0]
    assert len(re.findall(r"#0 +agent_start", body)) == 1  # in the message, not again below
    assert "openprogram timeline (last run)" not in out


def test_a_plain_failure_gets_the_tree_timeline_once(pytester: pytest.Pytester) -> None:
    result = _run(
        pytester,
        """
def test_plain(scripted_provider, exec_runner):
    scripted_provider.add(
        turn(call("summarize_cities", {"cities": ["Rome"]})),
        turn(call("lookup", {"city": "Rome"})),
        "Rome is sunny",
        "All sunny",
    )
    tree = exec_runner("weather?", tools=TOOLS)
    assert tree.final_text == "All rainy"
""",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert out.count("openprogram timeline (last run)") == 1
    assert "r1:" in out and "┌ run summarize_cities (call call_0, depth 1)" in out


def test_exec_runner_steers_a_nested_run_and_checks_every_run(
    pytester: pytest.Pytester,
) -> None:
    result = _run(
        pytester,
        """
def test_steer_nested(scripted_provider, steering, exec_runner):
    scripted_provider.add(
        turn(call("summarize_cities", {"cities": ["Rome", "Oslo"]})),
        turn(call("lookup", {"city": "Rome"}), call("lookup", {"city": "Oslo"})),
        "Rome is sunny; Oslo skipped",
        "Summary: Rome sunny",
    )
    steering.after_tool(0, "skip the rest", run="summarize_cities")
    tree = exec_runner("weather?", tools=TOOLS)
    assert_skipped(tree, ["lookup"], run="summarize_cities")
    assert_terminated(tree, "completed")
    assert exec_runner.last is tree and len(tree.runs) == 2

@pytest.mark.op_no_invariants
def test_opt_out(exec_runner, scripted_provider):
    scripted_provider.add("x")
    assert exec_runner.check is False and exec_runner("hi", tools=[]).final_text == "x"

async def test_async(exec_runner, scripted_provider):
    scripted_provider.add("async answer")
    tree = await exec_runner.arun("hi", tools=[])
    assert tree.result == "async answer"

def test_own_runtime(exec_runner):
    from openprogram_testing import ScriptedProvider
    provider = ScriptedProvider(["mine"])
    tree = exec_runner(Runtime(provider, "m", registry=registry), "hi", tools=[])
    assert tree.result == "mine"
    provider.assert_complete()
""",
        "-p",
        "asyncio",
        "-o",
        "asyncio_mode=auto",
    )
    result.assert_outcomes(passed=4)


def test_a_trace_tree_snapshot(pytester: pytest.Pytester) -> None:
    body = """
def test_snap(scripted_provider, exec_runner, trace_snapshot):
    scripted_provider.add(
        turn(call("summarize_cities", {"cities": ["Rome"]})),
        turn(call("lookup", {"city": "Rome"})),
        "Rome is sunny",
        "All sunny",
    )
    assert trace_snapshot == exec_runner("weather?", tools=TOOLS)
"""
    _run(pytester, body, "--snapshot-update").assert_outcomes(passed=1)
    (snap,) = pytester.path.glob("__snapshots__/**/*.trace.txt")
    text = snap.read_text(encoding="utf-8")
    assert "┌ run summarize_cities (call call#1, depth 1)" in text
    assert '        prompt "summarise Rome"' in text
    _run(pytester, body).assert_outcomes(passed=1)


def test_assertion_helpers_and_invariants_fail_with_fields_not_strings() -> None:
    """One failure type carrying its facts: a caller reads ``summary``, ``violations`` and
    ``timeline``, never splits the text."""
    from openprogram_testing import (
        InvariantViolation,
        LoopTrace,
        ScriptedProvider,
        TraceFailure,
        assert_final_text,
        check_invariants,
        run_loop_sync,
    )

    trace = run_loop_sync(ScriptedProvider(["hi"]), "go")
    try:
        assert_final_text(trace, "bye")
    except TraceFailure as exc:
        assert "bye" in exc.summary and "run timeline" not in exc.summary
        assert exc.violations == [] and "agent_end" in exc.timeline and exc.timeline_shown
    else:
        raise AssertionError("assert_final_text passed on the wrong text")
    broken = LoopTrace.from_events(trace.events[:-1])
    try:
        check_invariants(broken)
    except InvariantViolation as exc:
        assert isinstance(exc, TraceFailure) and exc.summary.startswith("loop invariant")
        assert exc.violations and exc.invariant == exc.violations[0].invariant
        assert str(exc) == f"{exc.summary}\n\nrun timeline:\n{exc.timeline}"
    else:
        raise AssertionError("check_invariants passed a trace without agent_end")
