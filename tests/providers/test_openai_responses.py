"""OpenAI Responses adapter through the real ``openai`` SDK on a MockTransport."""

from __future__ import annotations

from functools import partial
from typing import Any

import pytest

from openprogram.providers.base import Context, StreamOptions
from openprogram.types import TextContent, ThinkingContent, ToolCall, ToolSpec, Usage, UserMessage
from tests.providers._adapters_http import (
    Recorder,
    collect,
    json_response,
    responses_provider,
    stream_frames,
    types,
)
from tests.providers._helper import CTX

RESP = {
    "id": "resp_1",
    "object": "response",
    "created_at": 1,
    "model": "gpt-test",
    "output": [],
    "status": "in_progress",
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
}


def ev(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    return kind, {"type": kind, "sequence_number": 0, **fields}


def completed(status: str = "completed", usage: tuple[int, int, int] = (11, 4, 0), **extra: Any):
    inp, out, cached = usage
    kind = {"completed": "response.completed", "incomplete": "response.incomplete"}[status]
    return ev(
        kind,
        response={
            **RESP,
            "status": status,
            **extra,
            "usage": {
                "input_tokens": inp,
                "output_tokens": out,
                "total_tokens": inp + out,
                "input_tokens_details": {"cached_tokens": cached},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        },
    )


def text_events(oi: int, pieces: list[str]) -> list[tuple[str, dict[str, Any]]]:
    item = {
        "id": f"msg_{oi}",
        "type": "message",
        "role": "assistant",
        "status": "in_progress",
        "content": [],
    }
    return [
        ev("response.output_item.added", output_index=oi, item=item),
        ev(
            "response.content_part.added",
            output_index=oi,
            item_id=f"msg_{oi}",
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        ),
        *[
            ev(
                "response.output_text.delta",
                output_index=oi,
                item_id=f"msg_{oi}",
                content_index=0,
                delta=p,
            )
            for p in pieces
        ],
        ev(
            "response.output_text.done",
            output_index=oi,
            item_id=f"msg_{oi}",
            content_index=0,
            text="".join(pieces),
        ),
        ev("response.output_item.done", output_index=oi, item={**item, "status": "completed"}),
    ]


def call_events(oi: int, call_id: str, name: str, pieces: list[str], with_done: bool = True):
    item = {
        "id": f"fc_{oi}",
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": "",
        "status": "in_progress",
    }
    out = [ev("response.output_item.added", output_index=oi, item=item)]
    out += [
        ev("response.function_call_arguments.delta", output_index=oi, item_id=f"fc_{oi}", delta=p)
        for p in pieces
    ]
    if with_done:
        out.append(
            ev(
                "response.function_call_arguments.done",
                output_index=oi,
                item_id=f"fc_{oi}",
                arguments="".join(pieces),
            )
        )
    out.append(
        ev(
            "response.output_item.done",
            output_index=oi,
            item={**item, "arguments": "".join(pieces), "status": "completed"},
        )
    )
    return out


run = partial(stream_frames, responses_provider)


async def test_text_with_usage() -> None:
    rec, events, msg = await run(
        ev("response.created", response=RESP),
        *text_events(0, ["Hel", "lo"]),
        completed(usage=(11, 4, 3)),
    )
    assert types(events) == ["start", "text_start", "text_delta", "text_delta", "text_end", "done"]
    assert msg.content == [TextContent(text="Hello")]
    assert msg.stop_reason == "stop"
    assert msg.usage == Usage(input_tokens=8, output_tokens=4, cache_read_tokens=3)
    assert rec.bodies[0]["stream"] is True and rec.bodies[0]["input"] == [
        {"role": "user", "content": "hi"}
    ]


async def test_reasoning_summary_becomes_thinking() -> None:
    _, _, msg = await run(
        ev(
            "response.output_item.added",
            output_index=0,
            item={"id": "rs_1", "type": "reasoning", "summary": []},
        ),
        ev(
            "response.reasoning_summary_text.delta",
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            delta="Think",
        ),
        ev(
            "response.reasoning_summary_text.delta",
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            delta="ing.",
        ),
        ev(
            "response.reasoning_summary_text.done",
            output_index=0,
            item_id="rs_1",
            summary_index=0,
            text="Thinking.",
        ),
        *text_events(1, ["Done"]),
        completed(),
    )
    assert msg.content == [ThinkingContent(thinking="Thinking."), TextContent(text="Done")]


async def test_parallel_calls_with_text() -> None:
    _, events, msg = await run(
        *text_events(0, ["Both:"]),
        *call_events(1, "call_a", "weather", ['{"city":', ' "Paris"}']),
        *call_events(2, "call_b", "weather", ['{"city": "Rome"}']),
        completed(),
    )
    assert msg.content == [
        TextContent(text="Both:"),
        ToolCall(id="call_a", name="weather", arguments={"city": "Paris"}),
        ToolCall(id="call_b", name="weather", arguments={"city": "Rome"}),
    ]
    assert msg.stop_reason == "toolUse"
    assert types(events).count("toolcall_end") == 2


async def test_empty_and_invalid_arguments_and_done_only_arguments() -> None:
    only_done = call_events(2, "call_c", "f", [])
    # arguments delivered only by the .done event (no deltas)
    only_done[1][1]["arguments"] = '{"x": 1}'
    _, _, msg = await run(
        *call_events(0, "call_a", "now", []),
        *call_events(1, "call_b", "add", ["{oops"]),
        *only_done,
        completed(),
    )
    assert msg.content == [
        ToolCall(id="call_a", name="now", arguments={}),
        ToolCall(id="call_b", name="add", arguments={}, raw_arguments="{oops"),
        ToolCall(id="call_c", name="f", arguments={"x": 1}),
    ]


async def test_incomplete_max_output_tokens_is_length() -> None:
    _, events, msg = await run(
        *text_events(0, ["cut"]),
        completed("incomplete", incomplete_details={"reason": "max_output_tokens"}),
    )
    assert msg.stop_reason == "length" == events[-1].reason


async def test_response_failed_and_error_event() -> None:
    _, _, msg = await run(
        *text_events(0, ["a"]),
        ev(
            "response.failed",
            response={
                **RESP,
                "status": "failed",
                "error": {"code": "server_error", "message": "The server had an error"},
            },
        ),
    )
    assert msg.stop_reason == "error"
    assert msg.error_message == "API error (server_error): The server had an error"
    assert msg.error_status == 500 and msg.error_retryable is True
    _, _, msg = await run(ev("error", code="rate_limit_exceeded", message="Slow down", param=None))
    assert (msg.error_status, msg.error_retryable) == (429, True)
    assert "Slow down" in (msg.error_message or "")


async def test_stream_without_completed_is_an_error() -> None:
    _, _, msg = await run(*text_events(0, ["partial"]))
    assert msg.stop_reason == "error"
    assert msg.error_message == "stream ended without a final event"
    assert msg.text == "partial"


async def test_non_streaming_response() -> None:
    body = {
        **RESP,
        "status": "completed",
        "output": [
            {
                "id": "rs",
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Plan."}],
            },
            {
                "id": "m",
                "type": "message",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": "Calling.", "annotations": []}],
            },
            {
                "id": "fc",
                "type": "function_call",
                "call_id": "call_z",
                "name": "add",
                "arguments": '{"a": 2, "b": 3}',
                "status": "completed",
            },
        ],
        "usage": {
            "input_tokens": 9,
            "output_tokens": 6,
            "total_tokens": 15,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
    rec = Recorder(json_response(body))
    _, msg = await collect(responses_provider(rec, stream=False), CTX)
    assert "stream" not in rec.bodies[0]
    assert msg.content == [
        ThinkingContent(thinking="Plan."),
        TextContent(text="Calling."),
        ToolCall(id="call_z", name="add", arguments={"a": 2, "b": 3}),
    ]
    assert msg.stop_reason == "toolUse" and msg.usage == Usage(input_tokens=9, output_tokens=6)


async def test_request_fields() -> None:
    tools = [ToolSpec(name="add", description="Add.")]
    _, _, _ = rec_events = await run(
        completed(),
        ctx=Context(system_prompt="Sys.", messages=[UserMessage(content="hi")], tools=tools),
        opts=StreamOptions(tool_choice="required", parallel_tool_calls=False, max_tokens=64),
    )
    body = rec_events[0].bodies[0]
    assert body["instructions"] == "Sys."
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": "Add.",
            "parameters": {"type": "object", "properties": {}},
            "strict": False,
        }
    ]
    assert body["tool_choice"] == "required" and body["parallel_tool_calls"] is False
    assert body["max_output_tokens"] == 64


@pytest.mark.parametrize("kind", ["response.refusal.delta"])
async def test_refusal_is_text(kind: str) -> None:
    _, _, msg = await run(
        ev(kind, output_index=0, item_id="m", content_index=0, delta="I can't."),
        ev(
            "response.refusal.done",
            output_index=0,
            item_id="m",
            content_index=0,
            refusal="I can't.",
        ),
        completed(),
    )
    assert msg.content == [TextContent(text="I can't.")]
