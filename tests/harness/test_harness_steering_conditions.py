"""A ``when`` predicate is judged on its own copy of the calls and must answer plainly: one that
edits its list leaves the schedule's record whole (and the other conditions' view of the run), an
``async`` one is refused where it is written, and one that returns a coroutine is an error naming
it, never a coroutine taken for "yes"."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from openprogram_testing import ScriptedProvider, SteeringSchedule, call, run_loop_sync, turn
from openprogram_testing.core.conditions import SteeringConditionError
from tests.harness._harness import add_tool


def _adds(n: int) -> ScriptedProvider:
    return ScriptedProvider(
        [turn(*(call("add", {"a": k, "b": 1}, id=f"c{k}") for k in range(n))), "done"]
    )


def test_a_predicate_that_edits_its_list_leaves_the_record_whole() -> None:
    def greedy(calls: list[Any]) -> bool:
        calls.clear()
        return False

    schedule = SteeringSchedule().when(greedy, "never", required=False)
    schedule.when(lambda calls: len(calls) >= 3, "third")
    run_loop_sync(
        _adds(4), "go", tools=[add_tool()], schedule=schedule, steering_mode="after_batch"
    )
    assert [d.message.text for d in schedule.delivered] == ["third"]
    assert schedule.delivered[0].after_tool == 2
    assert [c.arguments["a"] for c in schedule.calls_seen()[""]] == [0, 1, 2, 3]


def test_an_async_predicate_is_refused_where_it_is_written() -> None:
    async def later(calls: Any) -> bool:
        return False

    class Async:
        async def __call__(self, calls: Any) -> bool:
            return False

    for predicate in (later, Async()):
        with pytest.raises(TypeError, match=r"async .*make it a def"):
            SteeringSchedule().when(predicate, "x")


def test_a_predicate_returning_a_coroutine_is_an_error_not_a_yes() -> None:
    async def no(calls: Any) -> bool:
        return False

    schedule = SteeringSchedule().when(lambda calls: no(calls), "fired")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no "coroutine ... was never awaited" either
        with pytest.raises(SteeringConditionError, match="returned an awaitable"):
            run_loop_sync(_adds(1), "go", tools=[add_tool()], schedule=schedule)
    assert schedule.delivered == []
