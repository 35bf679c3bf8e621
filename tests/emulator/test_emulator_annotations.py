"""Faults the provider emulator injects are marked on the recorded run (as a cassette's are),
at the model call they hit, so the timeline and the HTML report show them."""

from __future__ import annotations

import asyncio

from openprogram import Runtime
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing import run_exec
from openprogram_testing.base.recording import annotate_in_flight
from openprogram_testing.core.trace import LoopTrace, run_loop
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.transport.scripted import call, turn
from tests.runtime._agents import research_agent


async def _run(emu: ProviderEmulator) -> LoopTrace:
    provider = OpenAIChatProvider(base_url=emu.openai_base_url, api_key="test", stream=True)
    try:
        return await run_loop(provider, "hi")
    finally:
        await provider._client.close()


async def test_an_injected_fault_is_marked_at_the_model_call_it_hit() -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello"), faults=[Fault.drop_terminal()])
        trace = await _run(emu)
    faults = [a for a in trace.annotations if a.kind == "fault"]
    assert len(faults) == 1
    (fault,) = faults
    assert fault.text == f"{Fault.drop_terminal()!r} on emulated request 0"
    # placed inside that model call's message, before any of its content arrived (the adapter
    # announces the message before it sends the request)
    types = [e.type for e in trace.events]
    reply_start = types.index("message_start", types.index("message_end"))
    first_delta = next(
        i
        for i, e in enumerate(trace.events)
        if getattr(e, "event", None) and e.event.type == "text_delta"
    )
    assert reply_start < fault.event_index < first_delta


async def test_a_clean_answer_is_not_marked() -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello"))
        trace = await _run(emu)
    assert [a for a in trace.annotations if a.kind == "fault"] == []


def test_a_note_is_placed_only_where_it_cannot_be_misattributed() -> None:
    # With no run in flight there is nobody to tell.  A request is planned while the run that
    # sent it is in flight, so when exactly one run is in flight the note is that run's; with
    # several in flight it is placed nowhere.  Two runs side by side therefore each get their
    # own fault or none, never the other's.
    assert annotate_in_flight("fault", "nobody listens") is False

    async def side_by_side() -> tuple[LoopTrace, LoopTrace]:
        with ProviderEmulator() as a, ProviderEmulator() as b:
            a.add(turn("from a"), faults=[Fault.drop_terminal()])
            b.add(turn("from b"), faults=[Fault.latency(0.001)])
            first, second = await asyncio.gather(_run(a), _run(b))
        return first, second

    for _ in range(5):
        first, second = asyncio.run(side_by_side())
        assert {x.text for x in first.annotations if x.kind == "fault"} <= {
            f"{Fault.drop_terminal()!r} on emulated request 0"
        }
        assert {x.text for x in second.annotations if x.kind == "fault"} <= {
            f"{Fault.latency(0.001)!r} on emulated request 0"
        }


async def test_a_fault_is_marked_on_the_run_of_an_exec_tree_it_hit() -> None:
    """On the ``Runtime.exec`` path the fault lands on the run whose model call it hit: the
    nested run here, not the outer one (nor nowhere); a recorded loop run around the tree (a
    scenario's agentic tool) does not take it either."""
    registry, tools = research_agent()
    with ProviderEmulator() as emu:
        emu.add(turn(call("research", {"topic": "cats"})))
        emu.add(turn("inner answer"), faults=[Fault.latency(0.001)])
        emu.add(turn("outer answer"))
        provider = OpenAIChatProvider(base_url=emu.openai_base_url, api_key="test", stream=True)
        try:
            tree = await run_exec(Runtime(provider, "m", registry=registry), "go", tools=tools)
        finally:
            await provider._client.close()
    outer, inner = tree.runs
    assert tree.result == "outer answer"
    assert [a.text for a in inner.trace.annotations if a.kind == "fault"] == [
        f"{Fault.latency(0.001)!r} on emulated request 1"
    ]
    assert [a for a in outer.trace.annotations if a.kind == "fault"] == []
    (fault,) = inner.trace.annotations
    types = [e.type for e in inner.trace.events]
    reply_start = types.index("message_start", types.index("message_end"))  # after the prompt
    assert reply_start < fault.event_index <= types.index("message_end", reply_start)


async def test_the_timeline_names_every_note_the_report_shows() -> None:
    """The text timeline (what a failure prints) names an injected fault as the HTML report
    does, from one selection of the run's notes (``recording.shown_notes``): it named none."""
    from openprogram_testing.report import trace_record

    with ProviderEmulator() as emu:
        emu.add(turn("hello"), faults=[Fault.drop_terminal()])
        trace = await _run(emu)
    timeline = trace.timeline()
    assert f"! fault injected: {Fault.drop_terminal()!r} on emulated request 0" in timeline
    notes = [n for r in trace_record(trace)["rounds"] for n in r["notes"]]
    assert [n["kind"] for n in notes] == ["fault"]
    for note in notes:
        assert note["text"] in timeline
    # where it happened: inside the model call, before the reply's message_end
    lines = timeline.splitlines()
    at = next(i for i, line in enumerate(lines) if "fault injected" in line)
    assert "message_start assistant" in "\n".join(lines[:at])
    assert "message_end assistant" in "\n".join(lines[at:])
