"""All three adapters: HTTP/transport failures become terminal error events (never raises), and
a full tool round → text round through ``agent_loop``."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.types import AssistantMessage, ToolResultMessage
from tests.providers._adapters_http import (
    FACTORIES,
    Recorder,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    anthropic_tool,
    collect,
    json_response,
    sse,
    sse_event,
    sse_response,
)
from tests.providers._helper import ADD, CTX, run_add_loop


def error_body(api: str, status: int, message: str) -> dict[str, Any]:
    kind = {
        400: "invalid_request_error",
        401: "authentication_error",
        404: "not_found_error",
        429: "rate_limit_error",
        500: "api_error",
        529: "overloaded_error",
    }[status]
    if api == "anthropic":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


@pytest.mark.parametrize("api", FACTORIES)
@pytest.mark.parametrize(
    ("status", "headers", "retryable", "retry_after"),
    [
        (400, {}, False, None),
        (401, {}, False, None),
        (404, {}, False, None),
        (429, {"retry-after": "7"}, True, 7.0),
        (429, {"retry-after-ms": "1500"}, True, 1.5),
        (500, {}, True, None),
        (529, {"retry-after": "2"}, True, 2.0),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_status_errors(
    api: str,
    status: int,
    headers: dict[str, str],
    retryable: bool,
    retry_after: float | None,
    stream: bool,
) -> None:
    rec = Recorder(json_response(error_body(api, status, f"boom {status}"), status, headers))
    events, msg = await collect(FACTORIES[api](rec, stream), CTX)
    assert [e.type for e in events] == ["start", "error"]
    assert msg.stop_reason == "error"
    assert msg.error_status == status
    assert msg.error_retryable is retryable
    assert msg.error_retry_after_s == retry_after
    assert f"boom {status}" in (msg.error_message or "")
    assert msg.error_message.startswith(f"HTTP {status}")  # type: ignore[union-attr]
    assert len(rec.requests) == 1  # max_retries=0: the SDK did not retry


@pytest.mark.parametrize("api", FACTORIES)
@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx2.ConnectError("refused"), "connection error"),
        (httpx2.ReadTimeout("slow"), "timed out"),
    ],
)
async def test_transport_errors(api: str, exc: Exception, expected: str) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        raise exc

    rec = Recorder(fail)
    _, msg = await collect(FACTORIES[api](rec), CTX)
    assert msg.stop_reason == "error" and msg.error_status is None
    assert msg.error_retryable is True
    assert expected in (msg.error_message or "")


@pytest.mark.parametrize("api", FACTORIES)
async def test_non_json_error_body(api: str) -> None:
    rec = Recorder(httpx2.Response(502, content=b"<html>Bad gateway</html>"))
    _, msg = await collect(FACTORIES[api](rec), CTX)
    assert (msg.error_status, msg.error_retryable) == (502, True)
    assert "Bad gateway" in (msg.error_message or "")


# -- full loop -------------------------------------------------------------------------------


def chat_tool_round() -> bytes:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return sse(
        [
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "delta": {
                            "tool_calls": [
                                {
                                    "index": 0,
                                    "id": "call_1",
                                    "type": "function",
                                    "function": {"name": "add", "arguments": '{"a": 2,'},
                                }
                            ]
                        },
                    }
                ],
            },
            {
                **base,
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": None,
                        "delta": {
                            "tool_calls": [{"index": 0, "function": {"arguments": ' "b": 3}'}}]
                        },
                    }
                ],
            },
            {**base, "choices": [{"index": 0, "finish_reason": "tool_calls", "delta": {}}]},
        ],
        done=True,
    )


def chat_text_round() -> bytes:
    base = {"id": "c", "object": "chat.completion.chunk", "created": 1, "model": "m"}
    return sse(
        [
            {
                **base,
                "choices": [
                    {"index": 0, "finish_reason": "stop", "delta": {"content": "It is 5."}}
                ],
            }
        ],
        done=True,
    )


RESPONSES_COMPLETED = sse_event(
    "response.completed", response={"id": "r", "status": "completed", "output": []}
)


def responses_tool_round() -> bytes:
    item = {
        "id": "fc",
        "type": "function_call",
        "call_id": "call_1",
        "name": "add",
        "arguments": "",
        "status": "in_progress",
    }
    arguments = '{"a": 2, "b": 3}'
    return sse(
        [
            sse_event("response.output_item.added", output_index=0, item=item),
            sse_event(
                "response.function_call_arguments.delta",
                output_index=0,
                item_id="fc",
                delta=arguments,
            ),
            sse_event(
                "response.function_call_arguments.done",
                output_index=0,
                item_id="fc",
                arguments=arguments,
            ),
            RESPONSES_COMPLETED,
        ]
    )


def responses_text_round() -> bytes:
    return sse(
        [
            sse_event(
                "response.output_text.delta",
                output_index=0,
                content_index=0,
                item_id="m",
                delta="It is 5.",
            ),
            RESPONSES_COMPLETED,
        ]
    )


def anthropic_tool_round() -> bytes:
    return sse(
        [
            anthropic_start(1),
            *anthropic_tool(0, "call_1", "add", '{"a": 2, "b": 3}'),
            *anthropic_end("tool_use", 2),
        ]
    )


def anthropic_text_round() -> bytes:
    return sse([anthropic_start(1), *anthropic_text(0, "It is 5."), *anthropic_end(out=2)])


ROUNDS = {
    "chat": (chat_tool_round, chat_text_round),
    "responses": (responses_tool_round, responses_text_round),
    "anthropic": (anthropic_tool_round, anthropic_text_round),
}


@pytest.mark.parametrize("api", FACTORIES)
async def test_full_loop_tool_round_then_text(api: str) -> None:
    tool_round, text_round = ROUNDS[api]
    rec = Recorder(sse_response(tool_round()), sse_response(text_round()))
    events, stream, messages = await run_add_loop(FACTORIES[api](rec))
    assert stream.termination == "completed"
    assert [type(m).__name__ for m in messages] == [
        "UserMessage",
        "AssistantMessage",
        "ToolResultMessage",
        "AssistantMessage",
    ]
    first, result, final = messages[1], messages[2], messages[3]
    assert isinstance(first, AssistantMessage) and first.stop_reason == "toolUse"
    assert first.tool_calls[0].arguments == {"a": 2, "b": 3}
    assert isinstance(result, ToolResultMessage) and result.text == "5" and not result.is_error
    assert isinstance(final, AssistantMessage) and final.text == "It is 5."
    assert events[-1].type == "agent_end"
    # The second request carried the assistant tool call and its result in the API's own shape.
    second = json.loads(rec.requests[1].content)
    dumped = json.dumps(second)
    assert "call_1" in dumped and '"5"' in dumped
    if api == "chat":
        assert second["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "5"}
        assert second["tool_choice"] == "auto"
    elif api == "responses":
        assert second["input"][-1] == {
            "type": "function_call_output",
            "call_id": "call_1",
            "output": "5",
        }
    else:
        assert second["messages"][-1] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "5"}],
        }
        assert second["tool_choice"] == {"type": "auto"}


@pytest.mark.parametrize("api", FACTORIES)
async def test_loop_ends_with_error_termination_on_http_error(api: str) -> None:
    rec = Recorder(json_response(error_body(api, 401, "bad key"), 401))
    stream = agent_loop(
        "hi", AgentContext(tools=[ADD]), LoopConfig(provider=FACTORIES[api](rec), model="m")
    )
    [e async for e in stream]
    messages = await stream.result()
    assert stream.termination == "error"
    assert messages[-1].error_status == 401  # type: ignore[union-attr]


@pytest.mark.parametrize("api", FACTORIES)
async def test_blocked_real_call_escapes_the_loop(api: str) -> None:
    """The guard's BaseException is not turned into an error message: the run fails loudly."""
    import anthropic
    import openai

    from openprogram.providers import guard
    from openprogram.providers.anthropic import AnthropicProvider
    from openprogram.providers.openai_chat import OpenAIChatProvider
    from openprogram.providers.openai_responses import OpenAIResponsesProvider

    rec = Recorder()
    if api == "anthropic":
        provider: Any = AnthropicProvider(
            anthropic.AsyncAnthropic(
                api_key="k", base_url="https://api.anthropic.com", http_client=rec.client()
            )
        )
    else:
        cls = OpenAIChatProvider if api == "chat" else OpenAIResponsesProvider
        provider = cls(
            openai.AsyncOpenAI(
                api_key="k", base_url="https://api.openai.com/v1", http_client=rec.client()
            )
        )
    with guard.allow_model_requests(False):
        stream = agent_loop("hi", AgentContext(), LoopConfig(provider=provider, model="m"))
        with pytest.raises(guard.ModelRequestsBlocked):
            async for _ in stream:
                pass
    assert rec.requests == []


@pytest.mark.parametrize("api", FACTORIES)
async def test_no_tool_fields_without_tools(api: str) -> None:
    """tool_choice / parallel knobs are sent only when the request carries tools."""
    from openprogram.providers.base import StreamOptions

    rounds = {
        "chat": chat_text_round,
        "responses": responses_text_round,
        "anthropic": anthropic_text_round,
    }
    rec = Recorder(sse_response(rounds[api]()))
    _, msg = await collect(
        FACTORIES[api](rec), CTX, StreamOptions(tool_choice="required", parallel_tool_calls=False)
    )
    assert msg.text == "It is 5."
    assert not {"tools", "tool_choice", "parallel_tool_calls"} & set(rec.bodies[0])
