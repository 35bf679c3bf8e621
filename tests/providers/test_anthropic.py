"""Anthropic Messages adapter through the real ``anthropic`` SDK on a MockTransport."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram.providers.anthropic import DEFAULT_MAX_TOKENS
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import TextContent, ThinkingContent, ToolCall, ToolSpec, Usage, UserMessage
from tests.providers._adapters_http import (
    Recorder,
    anthropic_provider,
    collect,
    json_response,
    sse,
    sse_response,
    types,
)

CTX = Context(messages=[UserMessage(content="hi")])


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, **fields}


def start(inp: int = 12, cache_read: int = 0, cache_write: int = 0):
    return ev(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": inp,
                "output_tokens": 1,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    )


def block(i: int, content_block: dict[str, Any], *deltas: dict[str, Any]):
    return [
        ev("content_block_start", index=i, content_block=content_block),
        *[ev("content_block_delta", index=i, delta=d) for d in deltas],
        ev("content_block_stop", index=i),
    ]


def text(i: int, *pieces: str):
    return block(
        i, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces]
    )


def tool(i: int, id: str, name: str, *pieces: str):
    return block(
        i,
        {"type": "tool_use", "id": id, "name": name, "input": {}},
        *[{"type": "input_json_delta", "partial_json": p} for p in pieces],
    )


def end(stop_reason: str = "end_turn", out: int = 7):
    return [
        ev(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": out},
        ),
        ev("message_stop"),
    ]


async def run(
    *frames: Any, stream: bool = True, ctx: Context = CTX, opts: StreamOptions | None = None
):
    rec = Recorder(sse_response(sse(frames)))
    events, message = await collect(anthropic_provider(rec, stream), ctx, opts)
    return rec, events, message


async def test_text_with_ping_and_usage() -> None:
    rec, events, msg = await run(start(12, 5, 2), ev("ping"), *text(0, "Hel", "lo"), *end(out=3))
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
        start(),
        *block(
            0,
            {"type": "thinking", "thinking": "", "signature": ""},
            {"type": "thinking_delta", "thinking": "Hmm, "},
            {"type": "thinking_delta", "thinking": "ok."},
            {"type": "signature_delta", "signature": "sig-abc"},
        ),
        *block(1, {"type": "redacted_thinking", "data": "ENCRYPTED"}),
        *text(2, "Answer"),
        *end(),
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
        start(),
        *text(0, "Let me check."),
        *tool(1, "toolu_1", "weather", '{"city"', ': "Paris"}'),
        *tool(2, "toolu_2", "now", ""),
        *tool(3, "toolu_3", "ping"),
        *end("tool_use", 40),
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
    _, _, msg = await run(start(), *tool(0, "toolu_1", "add", '{"a": 1,'), *end("tool_use"))
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
    frames = [start(), *text(0, "x")]
    if wire == "tool_use":
        frames += tool(1, "t", "f", "{}")
    _, events, msg = await run(*frames, *end(wire))
    assert msg.stop_reason == ours == events[-1].reason


async def test_overloaded_error_event_mid_stream() -> None:
    _, _, msg = await run(
        start(),
        *text(0, "a"),
        ev("error", error={"type": "overloaded_error", "message": "Overloaded"}),
    )
    assert msg.stop_reason == "error"
    assert (msg.error_status, msg.error_retryable) == (529, True)
    assert msg.error_message == "HTTP 529 (overloaded_error): Overloaded"


async def test_stream_without_message_stop() -> None:
    _, _, msg = await run(start(), *text(0, "partial"))
    assert msg.stop_reason == "error" and msg.error_message == "stream ended without a final event"


async def test_malformed_frame() -> None:
    _, _, msg = await run(start(), "event: content_block_start\ndata: {nope\n\n")
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
        start(),
        *end(),
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
