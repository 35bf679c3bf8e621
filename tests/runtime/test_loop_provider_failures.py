"""Provider failures: error events, providers that raise, cut streams, aborted stops."""

from __future__ import annotations

from openprogram import (
    AssistantMessage,
    AssistantMessageEvent,
    Context,
    MessageBuilder,
    StreamOptions,
)
from openprogram_testing import (
    ScriptedProvider,
    aborted_turn,
    call,
    cut_turn,
    error_turn,
    raising_turn,
    turn,
)
from tests.runtime._loop import FAILED_REPLY, USER, add_tool, run, run_order, tokens


def test_error_event_ends_the_run_with_termination_error_and_keeps_the_details() -> None:
    provider = ScriptedProvider(
        [error_turn("rate limited", status=429, retryable=True, retry_after_s=2.5)]
    )
    events, stream = run(provider)
    message = events[-1].messages[-1]
    assert isinstance(message, AssistantMessage)
    assert (message.error_status, message.error_retryable, message.error_retry_after_s) == (
        429,
        True,
        2.5,
    )
    assert stream.termination == "error"


def test_a_provider_that_raises_is_an_error_message_not_a_crash() -> None:
    ran: list = []
    provider = ScriptedProvider(
        [raising_turn(ConnectionError("socket closed"), call("add", {"a": 1, "b": 1}))]
    )
    events, stream = run(provider, tools=[add_tool(ran)])
    message = events[-1].messages[-1]
    assert (message.stop_reason, message.error_message) == ("error", "socket closed")
    assert ran == []  # its tool calls never run
    assert tokens(events)[-4:] == ["upd…", "me(assistant)", "turn_end(0)", "agent_end(error)"]


def test_a_provider_that_raises_before_streaming() -> None:
    class Broken:
        def stream(self, model: str, context: Context, options: StreamOptions):
            raise RuntimeError()

    events, stream = run(Broken())
    assert tokens(events) == run_order([*USER, *FAILED_REPLY], end="error")
    assert events[-1].messages[-1].error_message == "RuntimeError"


def test_a_stream_cut_before_its_terminal_event_never_runs_its_tool_calls() -> None:
    ran: list = []
    provider = ScriptedProvider([cut_turn("thinking about it", call("add", {"a": 1, "b": 2}))])
    events, stream = run(provider, tools=[add_tool(ran)])
    assert ran == []
    message = events[-1].messages[-1]
    assert (message.stop_reason, message.error_message) == (
        "error",
        "stream ended without a final event",
    )
    assert "me(assistant)" in tokens(events)  # message_end is emitted for it
    assert stream.termination == "error"
    assert not any(e.type == "tool_execution_start" for e in events)


def test_an_aborted_stop() -> None:
    provider = ScriptedProvider([aborted_turn("half")])
    events, stream = run(provider)
    assert stream.termination == "aborted"
    assert events[-1].messages[-1].stop_reason == "aborted"


def test_a_length_stop_without_tool_calls_finishes() -> None:
    provider = ScriptedProvider([turn("truncated answ", stop="length")])
    events, stream = run(provider)
    assert stream.termination == "completed"
    assert events[-1].messages[-1].stop_reason == "length"


def test_a_handwritten_provider_using_the_builder() -> None:
    class Echo:
        async def _gen(self, model: str, context: Context):
            b = MessageBuilder(model=model, provider="echo")
            yield b.start()
            i, ev = b.text_start()
            yield ev
            yield b.text_delta(i, context.messages[-1].text.upper())
            yield b.text_end(i)
            yield b.done()

        def stream(self, model: str, context: Context, options: StreamOptions):
            return self._gen(model, context)

    events, stream = run(Echo(), "shout")
    assert events[-1].messages[-1].text == "SHOUT"
    assert all(
        isinstance(e.event, AssistantMessageEvent) for e in events if e.type == "message_update"
    )


def test_exactly_one_agent_end_when_a_steering_hook_raises() -> None:
    def steering() -> list[str]:
        raise ValueError("hook broke")

    events: list = []

    async def consume() -> None:
        from openprogram import AgentContext, LoopConfig, agent_loop

        stream = agent_loop(
            "hi",
            AgentContext(),
            LoopConfig(provider=ScriptedProvider([]), get_steering_messages=steering),
        )
        async for e in stream:
            events.append(e)

    import asyncio

    import pytest

    with pytest.raises(ValueError, match="hook broke"):
        asyncio.run(consume())
    assert [e.type for e in events].count("agent_end") == 1
    assert events[-1].termination == "error"
