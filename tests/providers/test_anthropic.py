"""Anthropic Messages adapter through the real ``anthropic`` SDK on a MockTransport."""

from __future__ import annotations

from functools import partial

import pytest

from openprogram.providers.anthropic import DEFAULT_MAX_TOKENS
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import TextContent, ThinkingContent, ToolCall, ToolSpec, Usage, UserMessage
from tests.providers._adapters_http import (
    Recorder,
    anthropic_block,
    anthropic_end,
    anthropic_provider,
    anthropic_start,
    anthropic_text,
    anthropic_tool,
    collect,
    json_response,
    sse_event,
    stream_frames,
    types,
)
from tests.providers._helper import CTX

run = partial(stream_frames, anthropic_provider)


async def test_text_with_ping_and_usage() -> None:
    rec, events, msg = await run(
        anthropic_start(12, 5, 2),
        sse_event("ping"),
        *anthropic_text(0, "Hel", "lo"),
        *anthropic_end(out=3),
    )
    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert msg.content == [TextContent(text="Hello")]
    assert msg.stop_reason == "stop"
    assert msg.usage == Usage(
        input_tokens=12, output_tokens=3, cache_read_tokens=5, cache_write_tokens=2
    )
    body = rec.bodies[0]
    assert body["stream"] is True and body["max_tokens"] == DEFAULT_MAX_TOKENS
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


async def test_thinking_with_signature_and_redacted_thinking() -> None:
    _, events, msg = await run(
        anthropic_start(),
        *anthropic_block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Hmm, "},
            {"type": "thinking_delta", "thinking": "ok."},
            {"type": "signature_delta", "signature": "sig-abc"},
        ),
        *anthropic_block(1, {"type": "redacted_thinking", "data": "ENCRYPTED"}),
        *anthropic_text(2, "Answer"),
        *anthropic_end(),
    )
    assert msg.content == [
        ThinkingContent(thinking="Hmm, ok.", signature="sig-abc"),
        ThinkingContent(thinking="", signature="ENCRYPTED", redacted=True),
        TextContent(text="Answer"),
    ]
    assert types(events)[1:5] == [
        "thinking_start",
        "thinking_delta",
        "thinking_delta",
        "thinking_end",
    ]


async def test_text_and_parallel_tool_use_including_empty_arguments() -> None:
    _, events, msg = await run(
        anthropic_start(),
        *anthropic_text(0, "Let me check."),
        *anthropic_tool(1, "toolu_1", "weather", '{"city"', ': "Paris"}'),
        *anthropic_tool(2, "toolu_2", "now", ""),
        *anthropic_tool(3, "toolu_3", "ping"),
        *anthropic_end("tool_use", 40),
    )
    assert msg.content == [
        TextContent(text="Let me check."),
        ToolCall(id="toolu_1", name="weather", arguments={"city": "Paris"}),
        ToolCall(id="toolu_2", name="now", arguments={}),
        ToolCall(id="toolu_3", name="ping", arguments={}),
    ]
    assert msg.stop_reason == "toolUse" and msg.usage.output_tokens == 40
    assert [e.delta for e in events if e.type == "toolcall_delta"] == ['{"city"', ': "Paris"}']


async def test_invalid_argument_json_keeps_raw() -> None:
    _, _, msg = await run(
        anthropic_start(),
        *anthropic_tool(0, "toolu_1", "add", '{"a": 1,'),
        *anthropic_end("tool_use"),
    )
    assert msg.content == [
        ToolCall(id="toolu_1", name="add", arguments={}, raw_arguments='{"a": 1,')
    ]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("end_turn", "stop"),
        ("max_tokens", "length"),
        ("stop_sequence", "stop"),
        ("tool_use", "toolUse"),
    ],
)
async def test_stop_reasons(wire: str, ours: str) -> None:
    frames = [anthropic_start(), *anthropic_text(0, "x")]
    if wire == "tool_use":
        frames += anthropic_tool(1, "t", "f", "{}")
    _, events, msg = await run(*frames, *anthropic_end(wire))
    assert msg.stop_reason == ours == events[-1].reason


async def test_overloaded_error_event_mid_stream() -> None:
    _, _, msg = await run(
        anthropic_start(),
        *anthropic_text(0, "a"),
        sse_event("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    )
    assert msg.stop_reason == "error"
    assert (msg.error_status, msg.error_retryable) == (529, True)
    assert msg.error_message == "HTTP 529 (overloaded_error): Overloaded"


async def test_stream_without_message_stop() -> None:
    _, _, msg = await run(anthropic_start(), *anthropic_text(0, "partial"))
    assert msg.stop_reason == "error" and msg.error_message == "stream ended without a final event"


async def test_malformed_frame() -> None:
    _, _, msg = await run(anthropic_start(), "event: content_block_start\ndata: {nope\n\n")
    assert msg.stop_reason == "error"
    assert (msg.error_message or "").startswith("malformed stream frame")


async def test_non_streaming_response() -> None:
    body = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-test",
        "content": [
            {"type": "thinking", "thinking": "Plan", "signature": "s1"},
            {"type": "text", "text": "Calling."},
            {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "toolu_10", "name": "now", "input": {}},
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 30, "output_tokens": 20},
    }
    rec = Recorder(json_response(body))
    _, msg = await collect(anthropic_provider(rec, stream=False), CTX)
    assert "stream" not in rec.bodies[0]
    assert msg.content == [
        ThinkingContent(thinking="Plan", signature="s1"),
        TextContent(text="Calling."),
        ToolCall(id="toolu_9", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="toolu_10", name="now", arguments={}),
    ]
    assert msg.stop_reason == "toolUse" and msg.usage == Usage(input_tokens=30, output_tokens=20)


async def test_request_fields() -> None:
    tools = [ToolSpec(name="add", description="Add.")]
    rec, _, _ = await run(
        anthropic_start(),
        *anthropic_end(),
        ctx=Context(system_prompt="Sys.", messages=[UserMessage(content="hi")], tools=tools),
        opts=StreamOptions(
            tool_choice="required",
            parallel_tool_calls=False,
            max_tokens=99,
            extras={"thinking": {"type": "enabled", "budget_tokens": 50}},
        ),
    )
    body = rec.bodies[0]
    assert body["system"] == "Sys." and body["max_tokens"] == 99
    assert body["tools"] == [
        {"name": "add", "description": "Add.", "input_schema": {"type": "object", "properties": {}}}
    ]
    assert body["tool_choice"] == {"type": "any", "disable_parallel_tool_use": True}
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 50}
