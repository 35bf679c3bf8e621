"""Finished traces are announced to listeners (the report and coverage see every run), carry
event arrival times, and collect transport annotations placed at the event where they happened."""

from __future__ import annotations

import asyncio
import threading
import warnings

import pytest

from openprogram_testing.base.recording import add_trace_listener, annotate, remove_trace_listener
from openprogram_testing.core.trace import LoopTrace, run_loop, run_loop_sync
from openprogram_testing.transport.scripted import ScriptedProvider, call, turn


def _echo_tool() -> dict[str, object]:
    def execute(args: dict[str, object]) -> str:
        annotate("probe", "inside the tool")
        return "ok"

    return {"spec": {"name": "echo", "parameters": {"type": "object"}}, "execute": execute}


def test_listeners_see_every_finished_run_until_removed() -> None:
    seen: list[LoopTrace] = []
    add_trace_listener(seen.append)
    try:
        first = run_loop_sync(ScriptedProvider([turn("one")]), "hi")
        second = asyncio.run(run_loop(ScriptedProvider([turn("two")]), "hi"))
    finally:
        remove_trace_listener(seen.append)
    third = run_loop_sync(ScriptedProvider([turn("three")]), "hi")
    assert seen == [first, second]
    assert third not in seen
    remove_trace_listener(seen.append)  # removing twice is harmless


def test_a_run_that_raises_is_announced_too() -> None:
    seen: list[LoopTrace] = []

    def boom(args: dict[str, object]) -> str:
        raise KeyboardInterrupt

    tool = {"spec": {"name": "boom", "parameters": {"type": "object"}}, "execute": boom}
    add_trace_listener(seen.append)
    try:
        with pytest.raises(KeyboardInterrupt):
            run_loop_sync(ScriptedProvider([turn(call("boom", {})), turn("x")]), "hi", tools=[tool])
    finally:
        remove_trace_listener(seen.append)
    assert len(seen) == 1 and seen[0].termination == "aborted"


def test_a_failing_listener_warns_and_does_not_change_the_run() -> None:
    def broken(trace: LoopTrace) -> None:
        raise ValueError("listener bug")

    add_trace_listener(broken)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trace = run_loop_sync(ScriptedProvider([turn("fine")]), "hi")
    finally:
        remove_trace_listener(broken)
    assert trace.final_text == "fine"
    assert any("listener bug" in str(w.message) for w in caught)


def test_listeners_are_called_from_helper_threads() -> None:
    seen: list[str] = []

    def listener(trace: LoopTrace) -> None:
        seen.append(threading.current_thread().name)

    add_trace_listener(listener)
    try:

        async def inside_a_loop() -> LoopTrace:
            return run_loop_sync(ScriptedProvider([turn("x")]), "hi")  # runs on a helper thread

        asyncio.run(inside_a_loop())
    finally:
        remove_trace_listener(listener)
    assert len(seen) == 1 and seen[0] != threading.main_thread().name  # run_sync's helper


def test_event_times_and_annotations() -> None:
    trace = run_loop_sync(
        ScriptedProvider([turn(call("echo", {})), turn("done")]), "hi", tools=[_echo_tool()]
    )
    assert trace.event_times is not None and len(trace.event_times) == len(trace.events)
    assert trace.event_times == sorted(trace.event_times)
    (note,) = trace.annotations
    assert (note.kind, note.text) == ("probe", "inside the tool")
    # placed after the tool_execution_start of the call that ran the tool
    assert trace.events[note.event_index - 1].type == "tool_execution_start"
    annotate("probe", "outside any run")  # a no-op, not an error
