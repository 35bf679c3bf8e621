"""OpenAI Chat Completions adapter through the real ``openai`` SDK on a MockTransport."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import httpx2
import pytest

from openprogram.cancel import CancelToken
from openprogram.providers import guard
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import TextContent, ThinkingContent, ToolCall, ToolSpec, Usage, UserMessage
from tests.providers._adapters_http import (
    BASE,
    Recorder,
    StallingStream,
    block_types,
    chat_provider,
    chat_tool_call,
    collect,
    json_response,
    sse,
    sse_response,
    stream_frames,
    types,
)
from tests.providers._helper import CTX


def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


def usage_chunk(prompt: int, completion: int, cached: int = 0) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-test",
        "choices": [],
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def tc(index: int, args: str, id: str | None = None, name: str | None = None) -> dict[str, Any]:
    frag: dict[str, Any] = {"index": index, "function": {"arguments": args}}
    if id:
        frag["id"] = id
        frag["type"] = "function"
        frag["function"]["name"] = name
    return frag


run = partial(stream_frames, chat_provider, done=True)


async def test_text_with_usage() -> None:
    rec, events, msg = await run(
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, "stop"),
        usage_chunk(10, 2, cached=4),
    )
    assert types(events) == [
        "start",
        "text_start",
        "text_delta",
        "text_delta",
        "text_end",
        "done",
    ]
    assert [e.delta for e in events if e.type == "text_delta"] == ["Hel", "lo"]
    assert msg.content == [TextContent(text="Hello")]
    assert msg.stop_reason == "stop"
    assert msg.usage == Usage(input_tokens=6, output_tokens=2, cache_read_tokens=4)
    assert (msg.provider, msg.api, msg.model) == ("openai", "openai-chat", "m")
    body = rec.bodies[0]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    assert "tools" not in body and "tool_choice" not in body


async def test_reasoning_content_becomes_thinking() -> None:
    _, events, msg = await run(
        chunk({"reasoning_content": "Let me "}),
        chunk({"reasoning_content": "think."}),
        chunk({"content": "42"}),
        chunk({}, "stop"),
    )
    assert types(events) == ["start", *block_types("thinking", 2), *block_types("text"), "done"]
    assert msg.content == [ThinkingContent(thinking="Let me think."), TextContent(text="42")]


async def test_one_tool_call_from_fragments() -> None:
    _, events, msg = await run(
        chunk({"role": "assistant", "tool_calls": [tc(0, "", "call_a", "get_weather")]}),
        chunk({"tool_calls": [tc(0, '{"ci')]}),
        chunk({"tool_calls": [tc(0, 'ty": "Paris"}')]}),
        chunk({}, "tool_calls"),
        usage_chunk(20, 9),
    )
    assert types(events) == [
        "start",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "done",
    ]
    assert msg.content == [ToolCall(id="call_a", name="get_weather", arguments={"city": "Paris"})]
    assert events[-2].tool_call == msg.content[0]
    assert msg.stop_reason == "toolUse"
    assert msg.usage.output_tokens == 9


async def test_parallel_calls_and_text_in_one_message() -> None:
    _, events, msg = await run(
        chunk({"content": "Checking both."}),
        chunk({"tool_calls": [tc(0, '{"city":', "call_1", "weather")]}),
        chunk({"tool_calls": [tc(0, '"Paris"}')]}),
        chunk({"tool_calls": [tc(1, "", "call_2", "weather")]}),
        chunk({"tool_calls": [tc(1, '{"city": "Rome"}')]}),
        chunk({}, "tool_calls"),
    )
    assert msg.content == [
        TextContent(text="Checking both."),
        ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="weather", arguments={"city": "Rome"}),
    ]
    assert types(events)[1:4] == ["text_start", "text_delta", "text_end"]
    assert [e.content_index for e in events if e.type == "toolcall_end"] == [1, 2]


async def test_empty_arguments_and_invalid_json() -> None:
    _, _, msg = await run(
        chunk({"tool_calls": [tc(0, "", "call_1", "now")]}),
        chunk({"tool_calls": [tc(1, "{not json", "call_2", "add")]}),
        chunk({}, "tool_calls"),
    )
    assert msg.content[0] == ToolCall(id="call_1", name="now", arguments={})
    assert msg.content[1] == ToolCall(
        id="call_2", name="add", arguments={}, raw_arguments="{not json"
    )


@pytest.mark.parametrize(
    ("finish", "reason"),
    [("stop", "stop"), ("length", "length"), ("tool_calls", "toolUse"), ("content_filter", "stop")],
)
async def test_stop_reasons(finish: str, reason: str) -> None:
    frames = [chunk({"content": "x"})]
    if finish == "tool_calls":
        frames.append(chunk({"tool_calls": [tc(0, "{}", "c", "f")]}))
    _, events, msg = await run(*frames, chunk({}, finish))
    assert msg.stop_reason == reason == events[-1].reason


async def test_stream_ending_without_finish_reason_is_an_error() -> None:
    _, events, msg = await run(chunk({"content": "partial"}), done=False)
    assert events[-1].type == "error"
    assert msg.stop_reason == "error"
    assert msg.error_message == "stream ended without a final event"
    assert msg.error_retryable is True
    assert msg.text == "partial"


async def test_malformed_frame_is_an_error() -> None:
    _, events, msg = await run(chunk({"content": "a"}), "data: {broken\n\n")
    assert events[-1].type == "error"
    assert msg.error_message is not None and msg.error_message.startswith("malformed stream frame")
    assert msg.error_retryable is True


async def test_non_streaming_response() -> None:
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-test",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": "On it.",
                    "tool_calls": [
                        chat_tool_call("call_9", "add", '{"a": 1, "b": 2}'),
                        chat_tool_call("call_10", "now", ""),
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12},
    }
    rec = Recorder(json_response(body))
    events, msg = await collect(chat_provider(rec, stream=False), CTX)
    assert "stream" not in rec.bodies[0]
    assert msg.content == [
        TextContent(text="On it."),
        ToolCall(id="call_9", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="call_10", name="now", arguments={}),
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.usage == Usage(input_tokens=7, output_tokens=5)
    assert types(events)[0] == "start" and types(events)[-1] == "done"


async def test_request_carries_tools_choice_and_options() -> None:
    tools = [
        ToolSpec(name="add", description="Add.", parameters={"type": "object", "properties": {}})
    ]
    rec = Recorder(sse_response(sse([chunk({"content": "x"}, "stop")], done=True)))
    opts = StreamOptions(
        tool_choice={"type": "function", "name": "add"},
        parallel_tool_calls=False,
        max_tokens=50,
        temperature=0.2,
        extras={"seed": 7},
    )
    await collect(
        chat_provider(rec),
        Context(system_prompt="Be brief.", messages=[UserMessage(content="hi")], tools=tools),
        opts,
    )
    body = rec.bodies[0]
    assert body["messages"][0] == {"role": "system", "content": "Be brief."}
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add.",
                "parameters": {"type": "object", "properties": {}},
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["parallel_tool_calls"] is False
    assert body["max_completion_tokens"] == 50 and body["temperature"] == 0.2 and body["seed"] == 7


async def test_bad_tool_choice_is_an_error_event_not_a_raise() -> None:
    tools = [ToolSpec(name="add")]
    rec = Recorder()
    opts = StreamOptions(tool_choice={"type": "function", "name": "nope"})
    _, msg = await collect(
        chat_provider(rec), Context(messages=[UserMessage(content="x")], tools=tools), opts
    )
    assert msg.stop_reason == "error"
    assert "could not build the request" in (msg.error_message or "")
    assert rec.requests == []


async def test_cancel_closes_a_stalled_stream() -> None:
    body = StallingStream(sse([chunk({"content": "Hel"})]))
    rec = Recorder(httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body))
    cancel = CancelToken()
    seen: list[str] = []

    async def consume() -> Any:
        async for event in chat_provider(rec).stream("m", CTX, StreamOptions(cancel=cancel)):
            seen.append(event.type)
            if event.type == "text_delta":
                asyncio.get_running_loop().call_later(0.01, cancel.cancel)
            if event.is_terminal:
                return event

    final = await asyncio.wait_for(consume(), 5)
    assert final.type == "error" and final.reason == "aborted"
    assert final.message.stop_reason == "aborted"
    assert final.message.text == "Hel"
    assert body.closed
    assert seen[-1] == "error"


async def test_already_cancelled_makes_no_request() -> None:
    rec = Recorder()
    cancel = CancelToken()
    cancel.cancel()
    events, msg = await collect(chat_provider(rec), CTX, StreamOptions(cancel=cancel))
    assert msg.stop_reason == "aborted" and rec.requests == []


async def test_guard_blocks_remote_and_passes_replay() -> None:
    import openai

    from openprogram.providers.openai_chat import OpenAIChatProvider

    rec = Recorder(sse_response(sse([chunk({"content": "ok"}, "stop")], done=True)))
    client = openai.AsyncOpenAI(
        api_key="k", base_url="https://api.openai.com/v1", http_client=rec.client()
    )
    provider = OpenAIChatProvider(client)
    with guard.allow_model_requests(False):
        with pytest.raises(guard.ModelRequestsBlocked, match=r"api\.openai\.com"):
            await collect(provider, CTX)
        assert rec.requests == []
        with guard.replaying():
            _, msg = await collect(provider, CTX)
    assert msg.text == "ok"


def test_constructor_defaults_and_lazy_client() -> None:
    from openprogram.providers.openai_chat import OpenAIChatProvider

    provider = OpenAIChatProvider(api_key="sk-x", base_url=BASE + "/v1")
    assert provider.streaming is True
    assert provider.client.max_retries == 0
    assert provider.base_url.startswith(BASE)
    assert OpenAIChatProvider(api_key="k", max_retries=3).client.max_retries == 3


async def test_error_object_inside_the_stream() -> None:
    _, events, msg = await run(
        chunk({"content": "a"}),
        {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
            }
        },
    )
    assert events[-1].type == "error"
    assert (msg.error_status, msg.error_retryable) == (500, True)
    assert msg.error_message == (
        "HTTP 500 (server_error): The server had an error while processing your request."
    )


async def test_cancel_while_waiting_for_a_non_streaming_response() -> None:
    hang = asyncio.Event()

    async def handler(request: httpx2.Request) -> httpx2.Response:
        await hang.wait()  # the server never answers
        raise AssertionError("unreachable")

    import openai

    from openprogram.providers.openai_chat import OpenAIChatProvider

    client = openai.AsyncOpenAI(
        api_key="k",
        base_url=BASE + "/v1",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler)),
    )
    cancel = CancelToken()
    asyncio.get_running_loop().call_later(0.05, cancel.cancel)
    provider = OpenAIChatProvider(client, stream=False)
    _, msg = await asyncio.wait_for(collect(provider, CTX, StreamOptions(cancel=cancel)), 5)
    assert msg.stop_reason == "aborted"


async def test_parallel_calls_reusing_index_zero_with_new_ids() -> None:
    _, _, msg = await run(
        chunk({"tool_calls": [tc(0, '{"city": "Paris"}', "call_1", "weather")]}),
        chunk({"tool_calls": [tc(0, '{"city": "Rome"}', "call_2", "weather")]}),
        chunk({}, "tool_calls"),
    )
    assert msg.tool_calls == [
        ToolCall(id="call_1", name="weather", arguments={"city": "Paris"}),
        ToolCall(id="call_2", name="weather", arguments={"city": "Rome"}),
    ]
