"""A helper's failure about a nested run shows that run's lane, with the path of runs that led
to it, not the whole tree's timeline (most of which is about other runs)."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Registry, Runtime, agentic_function, function
from openprogram_testing import (
    ScriptedProvider,
    TraceFailure,
    TraceTree,
    assert_final_text,
    assert_tool_results,
    assert_trajectory,
    call,
    run_exec_sync,
    turn,
)


def _trip() -> TraceTree:
    registry = Registry()

    @function(registry=registry)
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return f"{city}: {dict(Rome=24, Oslo=3)[city]} C"

    @agentic_function(registry=registry)
    def compare_options(cities: list[str], runtime: Any) -> str:
        """Compare the weather of several cities."""
        return str(runtime.exec("Compare " + ", ".join(cities), tools=[get_weather]))

    @agentic_function(registry=registry)
    def plan_trip(goal: str, runtime: Any) -> str:
        """Plan a trip."""
        return str(runtime.exec("Plan: " + goal, tools=[compare_options]))

    provider = ScriptedProvider(
        [
            turn(call("plan_trip", {"goal": "a warm city"})),
            turn(call("compare_options", {"cities": ["Rome", "Oslo"]})),
            turn(call("get_weather", {"city": "Rome"}), call("get_weather", {"city": "Oslo"})),
            "Rome is warmer.",
            "Go to Rome, the planner says.",
            "Rome it is, says the outermost run.",
        ]
    )
    tree = run_exec_sync(Runtime(provider, "m", registry=registry), "where?", tools=[plan_trip])
    provider.assert_complete()
    return tree


def test_a_failure_in_a_nested_run_shows_its_lane_and_the_path_to_it() -> None:
    tree = _trip()
    with pytest.raises(TraceFailure) as info:
        assert_tool_results(tree, ["get_weather"], run="plan_trip/compare_options")
    failure = info.value
    assert failure.run == "plan_trip/compare_options"
    text = str(failure)
    assert text.startswith("in run plan_trip/compare_options: tool results differ:")
    assert failure.timeline.splitlines()[0] == (
        "path: outermost run > run plan_trip (call call_0, depth 1) > "
        "run plan_trip/compare_options (call call_1, depth 2)"
    )
    assert "get_weather" in failure.timeline and "Rome is warmer." in failure.timeline
    # Nothing of the two runs around it: their replies are not in the lane.
    assert "says the outermost run" not in text and "the planner says" not in text
    assert len(failure.timeline.splitlines()) < len(tree.timeline().splitlines())


def test_every_helper_shows_the_lane_of_the_run_it_checked() -> None:
    tree = _trip()
    checks = [
        lambda: assert_final_text(tree, "Oslo", run="plan_trip"),
        lambda: assert_trajectory(tree, ["lookup"], run="plan_trip/compare_options"),
    ]
    for check in checks:
        with pytest.raises(AssertionError) as info:
            check()
        text = str(info.value)
        assert "says the outermost run" not in text, text
        assert "\npath: outermost run > run plan_trip (call call_0, depth 1)" in text
    # Without run= (or a path that names no run) the whole tree is shown, as before.
    with pytest.raises(TraceFailure) as whole:
        assert_final_text(tree, "Oslo")
    assert "says the outermost run" in str(whole.value) and "path:" not in str(whole.value)
    with pytest.raises(AssertionError, match="no run at 'nope'") as missing:
        assert_final_text(tree, "x", run="nope")
    assert "says the outermost run" in str(missing.value)
