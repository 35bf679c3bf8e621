"""The prompt-cache check and the tool-array rules (issue 37, items 5 and 6): each fails on the
broken run and passes on the correct one.

The broken run is the one upstream's design page describes and its code no longer does: a tool
``tool_search`` loads is promoted into the array at the loop's next iteration, inside the run.
``Promoting`` plays it over the scripted provider, appending the loaded tool's spec to the
array the loop sends; the correct run is the runtime's own, whose array is frozen per run.
"""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Registry, Runtime, function
from openprogram.tool_search import TOOL_SEARCH
from openprogram.types import ToolSpec
from openprogram_testing import (
    CachePrefixMoved,
    InvariantViolation,
    ScriptedProvider,
    assert_cache_prefix_kept,
    call,
    check_invariants,
    run_exec_sync,
    turn,
)


def _registry() -> Registry:
    registry = Registry()

    @function(registry=registry)
    def bash(command: str) -> str:
        """Run a shell command."""
        return command

    @function(registry=registry, defer=True)
    def cron(schedule: str) -> str:
        """Schedule a job."""
        return schedule

    return registry


SCRIPT = [
    turn(call(TOOL_SEARCH, {"select": "select:cron"})),
    turn(call("cron", {"schedule": "hourly"})),
    "done",
]


class Promoting:
    """The scripted provider behind a loop that promotes loaded tools into the array at its
    next iteration (upstream's doc, step 7): from the second model call on, ``cron``'s spec is
    in the array."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner = inner
        self.calls = 0

    @property
    def requests(self) -> Any:
        return self.inner.requests

    def stream(self, model: str, context: Any, options: Any) -> Any:
        self.calls += 1
        if self.calls == 2:
            context.tools.insert(
                1, ToolSpec("cron", "Schedule a job.", {"type": "object", "properties": {}})
            )
        return self.inner.stream(model, context, options)


def _run(provider: Any) -> Any:
    runtime = Runtime(provider, registry=_registry())
    return run_exec_sync(runtime, "schedule it")


def test_the_check_passes_on_the_frozen_array():
    tree = _run(ScriptedProvider(list(SCRIPT)))
    assert [r.tool_names for r in tree.trace.requests] == [["bash", TOOL_SEARCH]] * 3
    assert_cache_prefix_kept(tree)
    check_invariants(tree)


def test_the_check_fails_on_an_array_changed_mid_run():
    tree = _run(Promoting(ScriptedProvider(list(SCRIPT))))
    with pytest.raises(CachePrefixMoved) as caught:
        assert_cache_prefix_kept(tree)
    text = str(caught.value)
    assert "model call #1: the tool array changed since model call #0: added cron" in text
    with pytest.raises(InvariantViolation) as broken:
        check_invariants(tree)
    names = {v.rule for v in broken.value.violations}
    assert {"tool_array_frozen", "deferred_tools_hidden_until_loaded", "cache_prefix_kept"} <= names
    # the reason a test gives lets its runs move the prefix; the array rules still hold
    with pytest.raises(InvariantViolation) as still:
        check_invariants(tree, moves_cache_prefix="compaction rewrites the history")
    assert "cache_prefix_kept" not in {v.rule for v in still.value.violations}


def test_a_changed_system_prompt_or_an_edited_message_moves_the_prefix():
    class Editing:
        def __init__(self, inner: ScriptedProvider) -> None:
            self.inner = inner
            self.calls = 0

        @property
        def requests(self) -> Any:
            return self.inner.requests

        def stream(self, model: str, context: Any, options: Any) -> Any:
            self.calls += 1
            if self.calls == 2:
                context.system_prompt = "changed"
                context.messages[0] = type(context.messages[0])("edited")
            return self.inner.stream(model, context, options)

    tree = _run(Editing(ScriptedProvider(list(SCRIPT))))
    with pytest.raises(CachePrefixMoved) as caught:
        assert_cache_prefix_kept(tree)
    text = str(caught.value)
    assert "the system prompt changed" in text
    assert "message 0 (user)" in text


def test_moves_cache_prefix_needs_a_reason():
    tree = _run(ScriptedProvider(list(SCRIPT)))
    with pytest.raises(ValueError, match="reason"):
        check_invariants(tree, moves_cache_prefix="")


pytest_plugins = ["pytester"]

MARKER_TESTS = '''
import pytest
from openprogram import Registry, Runtime, function
from openprogram.types import ToolSpec
from openprogram_testing import call, turn

registry = Registry()

@function(registry=registry)
def bash(command: str) -> str:
    """Run a shell command."""
    return command


class Promoting:
    """A provider that adds a tool to the array from the second model call on."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = 0

    @property
    def requests(self):
        return self.inner.requests

    def stream(self, model, context, options):
        self.calls += 1
        if self.calls == 2:
            context.system_prompt = "a new prompt"
        return self.inner.stream(model, context, options)


def _run(exec_runner, scripted_provider):
    scripted_provider.turns.extend([turn(call("bash", {"command": "ls"})), "done"])
    runtime = Runtime(Promoting(scripted_provider), registry=registry)
    return exec_runner(runtime, "go")


def test_unmarked(exec_runner, scripted_provider):
    _run(exec_runner, scripted_provider)


@pytest.mark.moves_cache_prefix(reason="the agent rewrites its prompt after the first call")
def test_marked(exec_runner, scripted_provider):
    _run(exec_runner, scripted_provider)


@pytest.mark.moves_cache_prefix(reason="")
def test_marked_without_a_reason(exec_runner, scripted_provider):
    _run(exec_runner, scripted_provider)
'''


def test_the_runners_fail_a_moved_prefix_unless_the_test_says_why(pytester: pytest.Pytester):
    pytester.makepyfile(test_agent=MARKER_TESTS)
    result = pytester.runpytest_inprocess(
        "-p",
        "no:cacheprovider",
        "--strict-markers",
        "-rA",
        "-o",
        "asyncio_default_fixture_loop_scope=function",
    )
    result.assert_outcomes(passed=1, failed=1, errors=1)
    text = result.stdout.str()
    assert "FAILED test_agent.py::test_unmarked" in text
    assert "loop invariant 14 violated" in text
    assert "PASSED test_agent.py::test_marked" in text
    assert "the system prompt changed since model call #0" in text
    assert "moves_cache_prefix needs reason=" in text
