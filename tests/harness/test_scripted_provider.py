"""ScriptedProvider: ordering, ids, chunking, responders, recorded requests, strictness."""

from __future__ import annotations

import asyncio

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop, agent_loop_continue
from openprogram_testing import (
    ScriptedProvider,
    UnconsumedTurns,
    UnexpectedModelCall,
    call,
    think,
    turn,
)
from tests.runtime._loop import add_tool, run


def test_deterministic_ids_across_turns() -> None:
    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 1, "b": 1}), call("add", {"a": 2, "b": 2})),
            turn(call("add", {"a": 0, "b": 0})),
            "ok",
        ]
    )
    events, _ = run(provider, tools=[add_tool()])
    ids = [e.tool_call_id for e in events if e.type == "tool_execution_start"]
    assert ids == ["call_0", "call_1", "call_2"]


def test_chunking_of_text_and_arguments() -> None:
    provider = ScriptedProvider(
        [turn("abcdefg", call("add", {"a": 1, "b": 2}), chunk_size=3), "x"], chunk_size=1
    )
    events, _ = run(provider, tools=[add_tool()])
    text_deltas = [
        e.event.delta for e in events if e.type == "message_update" and e.event.type == "text_delta"
    ]
    assert text_deltas == ["abc", "def", "g", "x"]


def test_thinking_blocks() -> None:
    provider = ScriptedProvider([turn(think("hmm", signature="sig"), "answer")])
    events, _ = run(provider)
    message = events[-1].messages[-1]
    assert message.content[0].thinking == "hmm" and message.content[0].signature == "sig"
    assert message.text == "answer"


def test_requests_are_recorded_as_snapshots() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1})), "ok"])
    run(provider, tools=[add_tool()], tool_choice="required", parallel_tool_calls=False)
    first, second = provider.requests
    assert len(first.messages) == 1 and len(second.messages) == 3
    assert (
        first.tool_names == ["add"]
        and first.tool_choice == "required"
        and first.parallel_tool_calls is False
    )


def test_responder_computed_from_the_request() -> None:
    provider = ScriptedProvider([lambda req: f"you said {req.last_message.text}"])
    events, _ = run(provider, "ping")
    assert events[-1].messages[-1].text == "you said ping"


def test_async_responder() -> None:
    async def responder(req):
        await asyncio.sleep(0)
        return turn(call("add", {"a": 2, "b": 3}))

    provider = ScriptedProvider([responder, lambda req: req.last_message.text])
    events, _ = run(provider, tools=[add_tool()])
    assert events[-1].messages[-1].text == "5"


def test_unexpected_model_call_is_named_and_raised_by_assert_complete() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1}))])
    events, stream = run(provider, tools=[add_tool()])
    assert stream.termination == "error"
    assert "unexpected model call #1" in events[-1].messages[-1].error_message
    with pytest.raises(
        UnexpectedModelCall,
        match=r"unexpected model call #1 \(0-based\).*last message: toolResult '2'",
    ):
        provider.assert_complete()


def test_unconsumed_turns() -> None:
    provider = ScriptedProvider(["one", "two", turn(call("x"))])
    run(provider)
    with pytest.raises(
        UnconsumedTurns,
        match=r"2 scripted turn\(s\) were never played \(played 1 of 3\): text 'two', \[call x\]",
    ):
        provider.assert_complete()


def test_per_event_delay() -> None:
    provider = ScriptedProvider(["slow"], delay_s=0.001)
    _, stream = run(provider)
    assert stream.termination == "completed"


def test_continue_from_tool_results() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1})), "two"])
    context = AgentContext(tools=[add_tool()])
    first = agent_loop("hi", context, LoopConfig(provider=provider, max_iterations=1))
    asyncio.run(first.result())
    assert first.termination == "max_iterations"
    assert context.messages[-1].role == "toolResult"
    second = agent_loop_continue(context, LoopConfig(provider=provider))
    new = asyncio.run(second.result())
    assert [m.role for m in new] == ["assistant"] and new[0].text == "two"


def test_continue_rejects_empty_and_assistant_ending_contexts() -> None:
    with pytest.raises(ValueError, match="no messages"):
        agent_loop_continue(AgentContext(), LoopConfig(provider=ScriptedProvider()))
    provider = ScriptedProvider(["x"])
    context = AgentContext()
    asyncio.run(agent_loop("hi", context, LoopConfig(provider=provider)).result())
    with pytest.raises(ValueError, match="assistant message"):
        agent_loop_continue(context, LoopConfig(provider=provider))


def test_event_stream_result_without_iterating_and_single_iteration() -> None:
    stream = agent_loop("hi", AgentContext(), LoopConfig(provider=ScriptedProvider(["ok"])))

    async def go():
        messages = await stream
        with pytest.raises(RuntimeError, match="only once"):
            stream.__aiter__()
        return messages

    messages = asyncio.run(go())
    assert [m.role for m in messages] == ["user", "assistant"]


def test_messages_round_trip_through_json() -> None:
    from pydantic import TypeAdapter

    from openprogram import Message

    provider = ScriptedProvider([turn(think("t"), "a", call("add", {"a": 1, "b": 2})), "ok"])
    events, _ = run(provider, tools=[add_tool()])
    adapter = TypeAdapter(list[Message])
    dumped = adapter.dump_json(events[-1].messages)
    assert adapter.validate_json(dumped) == events[-1].messages


def test_import_openprogram_imports_no_sdk() -> None:
    import subprocess
    import sys

    code = "import sys, openprogram, openprogram_testing; print([m for m in ('openai','anthropic','vcr','hypothesis') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_import_openprogram_defers_pydantic_until_a_boundary_is_crossed() -> None:
    """The import-time budget leaves no room for pydantic: it is imported when a
    value is validated or dumped, or a tool schema is generated — not by ``import openprogram``."""
    import subprocess
    import sys

    code = (
        "import sys, openprogram; before = 'pydantic' in sys.modules; "
        "m = openprogram.UserMessage.model_validate({'content': 'hi'}); "
        "print(before, 'pydantic' in sys.modules, m.text)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "True", "hi"]
