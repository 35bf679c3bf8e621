"""Every view of a run says the same thing about where each user message came from: the
timeline, the trace snapshot, the HTML report's record and the behaviour counts all read
``openprogram_testing.core.rounds``."""

from __future__ import annotations

import re

from openprogram import Registry, Runtime, function
from openprogram.types import UserMessage
from openprogram_testing import (
    LoopTrace,
    ScriptedProvider,
    SteeringSchedule,
    call,
    check_invariants,
    render_snapshot,
    render_timeline,
    run_exec_sync,
    run_loop_sync,
    turn,
)
from openprogram_testing.core.rounds import message_origin, split_rounds
from openprogram_testing.report import trace_record

ORIGINS = ("prompt", "steering", "follow_up", "user")


def _views(trace: LoopTrace) -> dict[str, list[str]]:
    """The origin each view gives the run's user messages, in order."""
    users = [m for m in trace.messages if isinstance(m, UserMessage)]
    timeline = re.findall(r"message_end (prompt|steering|follow_up|user) ", render_timeline(trace))
    snapshot = re.findall(
        r"^ *(prompt|steering|follow_up|user) [\"<]", render_snapshot(trace), re.M
    )
    record = [a["kind"] for r in trace_record(trace)["rounds"] for a in r["arrivals"]]
    rounds = [a.origin for r in split_rounds(trace) for a in r.arrivals]
    return {
        "origin": [message_origin(trace, m) for m in users],
        "timeline": timeline,
        "snapshot": snapshot,
        "record": record,
        "rounds": rounds,
    }


def _agree(trace: LoopTrace, expected: list[str]) -> None:
    views = _views(trace)
    assert {name: expected for name in views} == views


def test_a_runtime_steer_and_follow_up_message_render_the_same_everywhere() -> None:
    registry = Registry()
    box: list[Runtime] = []

    @function(registry=registry)
    def lookup(city: str) -> str:
        """Look a city up."""
        box[0].steer("also check Oslo")
        box[0].follow_up("and summarise")
        return f"{city}: sunny"

    provider = ScriptedProvider([turn(call("lookup", {"city": "Rome"})), "noted", "summary"])
    runtime = Runtime(provider, "m", registry=registry)
    box.append(runtime)
    tree = run_exec_sync(runtime, "weather", tools=[lookup])
    check_invariants(tree)
    _agree(tree.trace, ["prompt", "steering", "follow_up"])


def test_schedule_messages_and_unknown_ones_render_the_same_everywhere() -> None:
    schedule = SteeringSchedule().before_round(0, "metric units").follow_up("one more")
    trace = run_loop_sync(ScriptedProvider(["a", "b"]), "go", schedule=schedule)
    _agree(trace, ["prompt", "steering", "follow_up"])
    # A trace that does not know its prompts or its deliveries: every view says ``user``.
    bare = LoopTrace.from_events(trace.events)
    _agree(bare, ["user", "user", "user"])
