"""The JSON our adapters send for a multi-round transcript (thinking, parallel calls, an invalid
call, an error result, images, an errored assistant message, follow-ups): exact shapes, and
validated against each SDK's own typed request params (strict: unknown keys fail)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from openprogram.providers.base import Context, StreamOptions
from openprogram.types import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.providers._adapters_http import (
    Recorder,
    anthropic_provider,
    chat_provider,
    chat_tool_call,
    collect,
    json_response,
    responses_provider,
    sse,
    sse_response,
)
from tests.providers._sdk_types import validate

IMG = ImageContent(data_b64="iVBORw0KGgo=", mime_type="image/png")
URL = "data:image/png;base64,iVBORw0KGgo="
ERR = 'Validation failed for tool "add":\n  - root: bad JSON'
TOOLS = [
    ToolSpec(
        name="add",
        description="Add.",
        parameters={
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        },
    ),
    ToolSpec(name="snapshot", description="Take a picture."),
]
CONTEXT = Context(
    system_prompt="Sys.",
    tools=TOOLS,
    messages=[
        UserMessage(content=[TextContent(text="Look, then add."), IMG]),
        AssistantMessage(
            stop_reason="toolUse",
            content=[
                ThinkingContent(thinking="Look first.", signature="sig1"),
                ThinkingContent(thinking="unsigned, from elsewhere"),
                TextContent(text="Using tools."),
                ToolCall(id="call_1", name="add", arguments={"a": 1, "b": 2}),
                ToolCall(id="call_2", name="add", raw_arguments="{bad"),
                ToolCall(id="call_3", name="snapshot"),
            ],
        ),
        ToolResultMessage(tool_call_id="call_1", tool_name="add", content=[TextContent(text="3")]),
        ToolResultMessage(
            tool_call_id="call_2", tool_name="add", content=[TextContent(text=ERR)], is_error=True
        ),
        ToolResultMessage(
            tool_call_id="call_3", tool_name="snapshot", content=[TextContent(text="here"), IMG]
        ),
        AssistantMessage(
            stop_reason="error", content=[TextContent(text="partial")], error_message="boom"
        ),
        UserMessage(content="Go on."),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="", signature="RED", redacted=True),
                TextContent(text="Done: 3."),
            ]
        ),
        UserMessage(content="Once more."),
    ],
)
OPTIONS = StreamOptions(
    tool_choice={"type": "function", "name": "add"},
    parallel_tool_calls=False,
    max_tokens=100,
    temperature=0.5,
)

CHAT_MESSAGES = [
    {"role": "system", "content": "Sys."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Look, then add."},
            {"type": "image_url", "image_url": {"url": URL}},
        ],
    },
    {
        "role": "assistant",
        "content": "Using tools.",
        "tool_calls": [
            chat_tool_call("call_1", "add", '{"a": 1, "b": 2}'),
            chat_tool_call("call_2", "add", "{bad"),
            chat_tool_call("call_3", "snapshot", "{}"),
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "3"},
    {"role": "tool", "tool_call_id": "call_2", "content": ERR},
    {"role": "tool", "tool_call_id": "call_3", "content": "here"},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "Images returned by the tools:"},
            {"type": "image_url", "image_url": {"url": URL}},
        ],
    },
    {"role": "user", "content": "Go on."},
    {"role": "assistant", "content": "Done: 3."},
    {"role": "user", "content": "Once more."},
]

RESPONSES_INPUT = [
    {
        "role": "user",
        "content": [
            {"type": "input_text", "text": "Look, then add."},
            {"type": "input_image", "image_url": URL, "detail": "auto"},
        ],
    },
    {"role": "assistant", "content": "Using tools."},
    {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
    {"type": "function_call", "call_id": "call_2", "name": "add", "arguments": "{bad"},
    {"type": "function_call", "call_id": "call_3", "name": "snapshot", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "call_1", "output": "3"},
    {"type": "function_call_output", "call_id": "call_2", "output": ERR},
    {
        "type": "function_call_output",
        "call_id": "call_3",
        "output": [
            {"type": "input_text", "text": "here"},
            {"type": "input_image", "image_url": URL, "detail": "auto"},
        ],
    },
    {"role": "user", "content": "Go on."},
    {"role": "assistant", "content": "Done: 3."},
    {"role": "user", "content": "Once more."},
]

IMAGE_BLOCK = {
    "type": "image",
    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
}
ANTHROPIC_MESSAGES = [
    {"role": "user", "content": [{"type": "text", "text": "Look, then add."}, IMAGE_BLOCK]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Look first.", "signature": "sig1"},
            {"type": "text", "text": "Using tools."},
            {"type": "tool_use", "id": "call_1", "name": "add", "input": {"a": 1, "b": 2}},
            {"type": "tool_use", "id": "call_2", "name": "add", "input": {}},
            {"type": "tool_use", "id": "call_3", "name": "snapshot", "input": {}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "call_1", "content": "3"},
            {"type": "tool_result", "tool_use_id": "call_2", "content": ERR, "is_error": True},
            {
                "type": "tool_result",
                "tool_use_id": "call_3",
                "content": [{"type": "text", "text": "here"}, IMAGE_BLOCK],
            },
            {"type": "text", "text": "Go on."},
        ],
    },
    {
        "role": "assistant",
        "content": [
            {"type": "redacted_thinking", "data": "RED"},
            {"type": "text", "text": "Done: 3."},
        ],
    },
    {"role": "user", "content": [{"type": "text", "text": "Once more."}]},
]


def _chat_ok() -> Any:
    return sse_response(
        sse(
            [
                {
                    "id": "c",
                    "object": "chat.completion.chunk",
                    "created": 1,
                    "model": "m",
                    "choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}],
                }
            ],
            done=True,
        )
    )


def _responses_ok() -> Any:
    return sse_response(
        sse(
            [
                (
                    "response.completed",
                    {
                        "type": "response.completed",
                        "response": {"id": "r", "status": "completed", "output": []},
                    },
                )
            ]
        )
    )


def _anthropic_ok() -> Any:
    return sse_response(
        sse(
            [
                (
                    "message_start",
                    {"type": "message_start", "message": {"usage": {"input_tokens": 1}}},
                ),
                ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}}),
                ("message_stop", {"type": "message_stop"}),
            ]
        )
    )


async def _sent(factory: Any, ok: Any) -> dict[str, Any]:
    rec = Recorder(ok())
    _, message = await collect(factory(rec), CONTEXT, OPTIONS)
    assert message.stop_reason == "stop", message.error_message
    return rec.bodies[0]


async def test_chat_request() -> None:
    from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming

    body = await _sent(chat_provider, _chat_ok)
    assert body["messages"] == CHAT_MESSAGES
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["parallel_tool_calls"] is False
    assert [t["function"]["name"] for t in body["tools"]] == ["add", "snapshot"]
    validate(CompletionCreateParamsStreaming, body)


async def test_responses_request() -> None:
    from openai.types.responses.response_create_params import ResponseCreateParamsStreaming

    body = await _sent(responses_provider, _responses_ok)
    assert body["input"] == RESPONSES_INPUT
    assert body["instructions"] == "Sys."
    assert body["tool_choice"] == {"type": "function", "name": "add"}
    assert body["parallel_tool_calls"] is False
    assert body["max_output_tokens"] == 100
    validate(ResponseCreateParamsStreaming, body)


async def test_anthropic_request() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    body = await _sent(anthropic_provider, _anthropic_ok)
    assert body["messages"] == ANTHROPIC_MESSAGES
    assert body["system"] == "Sys."
    assert body["tool_choice"] == {"type": "tool", "name": "add", "disable_parallel_tool_use": True}
    assert body["max_tokens"] == 100 and body["temperature"] == 0.5
    # temperature is sent deliberately through extra_body (no longer a typed param in anthropic 2.x)
    validate(MessageCreateParamsStreaming, {k: v for k, v in body.items() if k != "temperature"})


@pytest.mark.parametrize(
    ("factory", "api"),
    [(chat_provider, "chat"), (responses_provider, "responses"), (anthropic_provider, "anthropic")],
)
async def test_non_streaming_request_validates(factory: Any, api: str) -> None:
    from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
    from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
    from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming

    rec = Recorder(json_response({}))
    await collect(
        factory(rec, False), CONTEXT, OPTIONS
    )  # the empty reply is an error; we check the request
    body = rec.bodies[0]
    assert "stream" not in body
    params = {
        "chat": CompletionCreateParamsNonStreaming,
        "responses": ResponseCreateParamsNonStreaming,
        "anthropic": MessageCreateParamsNonStreaming,
    }[api]
    body.pop("temperature", None) if api == "anthropic" else None
    validate(params, body)


def test_strict_validation_catches_a_wrong_shape() -> None:
    from anthropic.types.message_create_params import MessageCreateParamsStreaming

    bad = {
        "model": "m",
        "max_tokens": 1,
        "stream": True,
        "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_call_id": "x"}]}],
    }
    with pytest.raises(ValidationError):
        validate(MessageCreateParamsStreaming, bad)


def test_anthropic_empty_tool_result_has_no_content() -> None:
    from openprogram.providers.anthropic import anthropic_messages

    context = Context(
        messages=[
            UserMessage(content="go"),
            AssistantMessage(stop_reason="toolUse", content=[ToolCall(id="t1", name="noop")]),
            ToolResultMessage(tool_call_id="t1", tool_name="noop", content=[TextContent(text="")]),
        ]
    )
    assert anthropic_messages(context)[-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1"}],
    }
