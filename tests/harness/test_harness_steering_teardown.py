"""The ``steering`` fixture's teardown judges a test that passed, never one that already
failed: the entries a failed run left unreached are the failure's consequence, and a second
error for them would count the test twice."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

TESTS = '''
from openprogram import function
from openprogram_testing import call, turn

@function
def add(a: int, b: int) -> int:
    """Add."""
    return a + b

def test_predicate_raises(scripted_provider, steering, loop_runner):
    scripted_provider.add(turn(call("add", {"a": 1, "b": 2})))
    steering.when(lambda calls: 1 / 0, "never said")
    loop_runner("go", tools=[add])

def test_assertion_after_the_run(scripted_provider, steering, loop_runner):
    scripted_provider.add("done")
    steering.after_tool(0, "never said")
    loop_runner("go", tools=[add])
    assert False, "the test's own failure"

def test_passes_but_an_entry_never_fired(scripted_provider, steering, loop_runner):
    scripted_provider.add("done")
    steering.after_tool(0, "never said")
    loop_runner("go", tools=[add])
'''


def test_a_failed_test_gets_no_second_error_for_its_unreached_entries(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_agent=TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    out = result.stdout.str()
    assert result.parseoutcomes() == {"failed": 2, "passed": 1, "errors": 1}, out
    assert "ERROR at teardown of test_passes_but_an_entry_never_fired" in out
    assert "SteeringNotFired" in out and "after_tool(0): 'never said'" in out
    assert "teardown of test_predicate_raises" not in out
    assert "teardown of test_assertion_after_the_run" not in out
    assert "the steering condition" in out and "the test's own failure" in out
