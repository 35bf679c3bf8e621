"""GeminiProvider on the real google-genai client (httpx2 MockTransport): request building
checked against the SDK's own types and on the wire, stream assembly, every error class,
cancellation and a full loop."""

from __future__ import annotations

import asyncio
import base64
import json
import time
from typing import Any

import httpx2
import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.cancel import CancelToken
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from tests.providers._adapters_http import (
    Recorder,
    StallingStream,
    block_types,
    collect,
    json_response,
    sse_response,
    types,
)
from tests.providers._google_aws import gemini_chunk, gemini_provider, gemini_sse
from tests.providers._helper import ADD, ADD_SPEC, CTX, PNG, request_history, run_add_loop

SIG = base64.b64encode(bytes(range(200, 256)) + b"\xfb\xff").decode()  # has '+' and '/'


def gsse(*chunks: dict[str, Any] | str) -> httpx2.Response:
    return sse_response(gemini_sse(chunks))


def text_round(text: str = "It is 5.") -> httpx2.Response:
    return gsse(gemini_chunk([{"text": text}], "STOP", (3, 4)))


# -- request building ------------------------------------------------------------------------


def history() -> Context:
    own = AssistantMessage(
        content=[
            ThinkingContent(thinking="let me add", signature=SIG),
            TextContent(text="Adding."),
            ToolCall(id="call_r_0", name="add", arguments={"a": 2, "b": 3}, signature=SIG),
            ToolCall(id="call_r_1", name="add", arguments={"a": 1, "b": 1}),
        ],
        stop_reason="toolUse",
        api="google-gemini",
        provider="google",
    )
    return request_history(
        own,
        [
            ToolResultMessage(
                tool_call_id="call_r_0", tool_name="add", content=[TextContent(text="5")]
            ),
            ToolResultMessage(
                tool_call_id="call_r_1",
                tool_name="add",
                content=[TextContent(text="no")],
                is_error=True,
            ),
        ],
        AssistantMessage(
            content=[TextContent(text="lost")], stop_reason="error", api="google-gemini"
        ),
    )


async def test_request_on_the_wire_and_in_the_sdk_types() -> None:
    from google.genai import types as gtypes

    rec = Recorder(text_round())
    provider = gemini_provider(rec)
    options = StreamOptions(
        tool_choice="required",
        max_tokens=99,
        temperature=0.5,
        extras={"thinkingConfig": {"includeThoughts": True}},
    )
    params = provider.build_request("gemini-x", history(), options)
    # the SDK's own (extra="forbid") types accept every part of it
    for content in params["contents"]:
        gtypes.Content.model_validate(content)
    gtypes.GenerateContentConfig.model_validate(params["config"])
    _, msg = await collect(provider, history(), options, model="gemini-x")
    assert msg.text == "It is 5."
    request = rec.requests[0]
    assert request.url.path == "/v1beta/models/gemini-x:streamGenerateContent"
    assert request.url.params["alt"] == "sse"
    body = rec.bodies[0]
    url_sig = base64.urlsafe_b64encode(base64.b64decode(SIG)).decode()
    assert body["contents"] == [
        {
            "role": "user",
            "parts": [{"text": "look"}, {"inlineData": {"mime_type": "image/png", "data": PNG}}],
        },
        {
            "role": "model",
            "parts": [
                {"text": "let me add", "thought": True, "thoughtSignature": url_sig},
                {"text": "Adding."},
                {
                    "functionCall": {"id": "call_r_0", "name": "add", "args": {"a": 2, "b": 3}},
                    "thoughtSignature": url_sig,
                },
                {"functionCall": {"id": "call_r_1", "name": "add", "args": {"a": 1, "b": 1}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "call_r_0",
                        "name": "add",
                        "response": {"output": "5"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "call_r_1",
                        "name": "add",
                        "response": {"error": "no"},
                    }
                },
                {"text": "and?"},
            ],
        },
    ]
    assert body["systemInstruction"]["parts"] == [{"text": "Be brief."}]
    assert body["tools"] == [
        {
            "functionDeclarations": [
                # the SDK writes this field in its proto name; the API accepts both spellings
                {
                    "name": "add",
                    "description": "Add two integers.",
                    "parameters_json_schema": ADD_SPEC.parameters,
                }
            ]
        }
    ]
    assert body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
    assert body["generationConfig"] == {
        "maxOutputTokens": 99,
        "temperature": 0.5,
        "thinkingConfig": {"include_thoughts": True},
    }  # SDK spelling


@pytest.mark.parametrize(
    ("choice", "expected"),
    [
        ("auto", {"mode": "AUTO"}),
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ({"type": "function", "name": "add"}, {"mode": "ANY", "allowedFunctionNames": ["add"]}),
        (None, None),
    ],
)
async def test_tool_choice_on_the_wire(choice: Any, expected: Any) -> None:
    rec = Recorder(text_round())
    ctx = Context(messages=[UserMessage(content="hi")], tools=[ADD_SPEC])
    await collect(
        gemini_provider(rec), ctx, StreamOptions(tool_choice=choice, parallel_tool_calls=False)
    )
    body = rec.bodies[0]
    assert body.get("toolConfig") == (
        None if expected is None else {"functionCallingConfig": expected}
    )
    assert "parallel" not in json.dumps(body).lower()  # no Gemini knob: ignored


async def test_no_tool_fields_without_tools() -> None:
    rec = Recorder(text_round())
    await collect(gemini_provider(rec), CTX, StreamOptions(tool_choice="required"))
    assert not {"tools", "toolConfig"} & set(rec.bodies[0])


async def test_other_providers_signatures_and_thinking_are_not_sent() -> None:
    foreign = AssistantMessage(
        content=[
            ThinkingContent(thinking="t", signature="anthropic-sig"),
            ToolCall(id="t1", name="add", arguments={}, signature="x"),
        ],
        stop_reason="toolUse",
        api="anthropic-messages",
    )
    rec = Recorder(text_round())
    ctx = Context(
        messages=[
            UserMessage(content="q"),
            foreign,
            ToolResultMessage(tool_call_id="t1", tool_name="add", content=[]),
        ]
    )
    await collect(gemini_provider(rec), ctx)
    model_turn = rec.bodies[0]["contents"][1]
    assert model_turn == {
        "role": "model",
        "parts": [{"functionCall": {"id": "t1", "name": "add", "args": {}}}],
    }
    assert rec.bodies[0]["contents"][2]["parts"] == [
        {"functionResponse": {"id": "t1", "name": "add", "response": {"output": ""}}}
    ]


# -- stream assembly -------------------------------------------------------------------------


def assembly_body() -> bytes:
    return gemini_sse(
        [
            gemini_chunk([{"text": "plan", "thought": True}], usage=None),
            gemini_chunk([{"text": " more", "thought": True, "thoughtSignature": SIG}]),
            gemini_chunk([{"text": "Let me "}], usageMetadata={"trafficType": "ON_DEMAND"}),
            gemini_chunk(
                [
                    {"text": "add."},
                    {
                        "functionCall": {"name": "add", "args": {"a": 2, "b": 3}},
                        "thoughtSignature": SIG,
                    },
                ],
                usage=(10, 7),
            ),
            gemini_chunk(
                [{"functionCall": {"name": "add", "args": {"a": 1, "b": 1}}}], usage=(12, 9)
            ),
            gemini_chunk(
                [{"text": ""}],
                "STOP",
                (12, 11),
                usageMetadata={
                    "promptTokenCount": 12,
                    "candidatesTokenCount": 11,
                    "thoughtsTokenCount": 5,
                    "cachedContentTokenCount": 4,
                    "totalTokenCount": 28,
                },
            ),
        ]
    )


async def test_stream_assembly() -> None:
    rec = Recorder(sse_response(assembly_body()))
    events, msg = await collect(gemini_provider(rec), CTX)
    assert types(events) == [
        "start",
        *block_types("thinking", 2),
        *block_types("text", 2),
        *block_types("toolcall"),
        *block_types("toolcall"),
        "done",
    ]
    assert msg.stop_reason == "toolUse"  # STOP + function calls
    assert msg.content[0] == ThinkingContent(thinking="plan more", signature=SIG)
    assert msg.text == "Let me add."
    assert [(c.id, c.name, c.arguments, c.signature) for c in msg.tool_calls] == [
        ("call_resp1_0", "add", {"a": 2, "b": 3}, SIG),
        ("call_resp1_1", "add", {"a": 1, "b": 1}, None),
    ]
    # the last counts win; thoughts are output, cached tokens are reported apart
    assert (msg.usage.input_tokens, msg.usage.output_tokens, msg.usage.cache_read_tokens) == (
        8,
        16,
        4,
    )
    assert (msg.provider, msg.api) == ("google", "google-gemini")


async def test_any_chunking_gives_the_same_message() -> None:
    data = assembly_body()
    _, whole = await collect(gemini_provider(Recorder(sse_response(data))), CTX)

    class Pieces(httpx2.AsyncByteStream):
        async def __aiter__(self):  # type: ignore[override]
            for i in range(0, len(data), 5):
                yield data[i : i + 5]

    response = httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=Pieces())
    _, cut = await collect(gemini_provider(Recorder(response)), CTX)
    assert cut.model_dump() == whole.model_dump()


async def test_given_ids_are_kept_and_made_up_ids_are_unique_per_response() -> None:
    rec = Recorder(
        gsse(
            gemini_chunk(
                [
                    {"functionCall": {"id": "abc", "name": "add", "args": {}}},
                    {"functionCall": {"name": "add", "args": {}}},
                ],
                "STOP",
                response_id="r2",
            )
        )
    )
    _, msg = await collect(gemini_provider(rec), CTX)
    assert [c.id for c in msg.tool_calls] == ["abc", "call_r2_1"]


async def test_non_streaming_generate_content() -> None:
    body = gemini_chunk(
        [
            {"text": "Sure."},
            {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}, "thoughtSignature": SIG},
        ],
        "STOP",
        (5, 6),
    )
    rec = Recorder(json_response(body))
    events, msg = await collect(gemini_provider(rec, stream=False), CTX)
    assert rec.requests[0].url.path.endswith(":generateContent")
    assert msg.stop_reason == "toolUse" and msg.text == "Sure."
    assert msg.tool_calls[0].signature == SIG and msg.tool_calls[0].arguments == {"a": 1, "b": 2}
    assert types(events)[-1] == "done"


@pytest.mark.parametrize(
    ("finish", "reason", "text", "retryable"),
    [
        ("MAX_TOKENS", "length", None, None),
        ("SAFETY", "error", "response blocked (SAFETY): blocked: HARM_CATEGORY_HARASSMENT", False),
        ("RECITATION", "error", "response blocked (RECITATION)", False),
        ("PROHIBITED_CONTENT", "error", "response blocked (PROHIBITED_CONTENT)", False),
        ("MALFORMED_FUNCTION_CALL", "error", "generation stopped (MALFORMED_FUNCTION_CALL)", True),
        ("OTHER", "error", "generation stopped (OTHER)", False),
    ],
)
async def test_finish_reasons(
    finish: str, reason: str, text: str | None, retryable: bool | None
) -> None:
    chunk = gemini_chunk([{"text": "partial"}], finish, (1, 1))
    chunk["candidates"][0]["finishMessage"] = "unsafe"  # the SDK drops it
    chunk["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_HARASSMENT", "probability": "HIGH", "blocked": True},
        {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "LOW"},
    ]
    _, msg = await collect(gemini_provider(Recorder(gsse(chunk))), CTX)
    assert msg.stop_reason == reason
    if text is not None:
        assert text in (msg.error_message or "") and msg.error_retryable is retryable
        assert msg.error_status is None


async def test_blocked_prompt_is_an_error_with_the_reason() -> None:
    chunk = {
        "promptFeedback": {"blockReason": "SAFETY", "blockReasonMessage": "nope"},
        "usageMetadata": {"promptTokenCount": 3, "totalTokenCount": 3},
    }
    _, msg = await collect(gemini_provider(Recorder(gsse(chunk))), CTX)
    assert (msg.stop_reason, msg.error_message, msg.error_retryable) == (
        "error",
        "prompt blocked (SAFETY): nope",
        False,
    )


async def test_safety_stop_after_a_call_does_not_run_it() -> None:
    chunk = gemini_chunk([{"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}], "SAFETY")
    ran: list[Any] = []
    tool = {**ADD, "execute": lambda args: ran.append(args) or 3}
    stream = agent_loop(
        "hi",
        AgentContext(tools=[tool]),
        LoopConfig(provider=gemini_provider(Recorder(gsse(chunk))), model="m"),
    )
    [e async for e in stream]
    assert stream.termination == "error" and ran == []


# -- errors ------------------------------------------------------------------------------------


def google_error(
    code: int, status: str, message: str, details: list[Any] | None = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details is not None:
        error["details"] = details
    return {"error": error}


RETRY_INFO = [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}]


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("code", "status", "headers", "details", "retryable", "retry_after"),
    [
        (400, "INVALID_ARGUMENT", {}, None, False, None),
        (401, "UNAUTHENTICATED", {}, None, False, None),
        (403, "PERMISSION_DENIED", {}, None, False, None),
        (404, "NOT_FOUND", {}, None, False, None),
        (429, "RESOURCE_EXHAUSTED", {}, RETRY_INFO, True, 12.0),
        (429, "RESOURCE_EXHAUSTED", {"retry-after": "3"}, None, True, 3.0),
        (500, "INTERNAL", {}, None, True, None),
        (503, "UNAVAILABLE", {"x-should-retry": "false"}, None, False, None),
        (400, "FAILED_PRECONDITION", {"x-should-retry": "true"}, None, True, None),
    ],
)
async def test_status_errors(
    stream: bool,
    code: int,
    status: str,
    headers: dict[str, str],
    details: Any,
    retryable: bool,
    retry_after: float | None,
) -> None:
    rec = Recorder(
        json_response(google_error(code, status, f"boom {code}", details), code, headers)
    )
    events, msg = await collect(gemini_provider(rec, stream), CTX)
    assert types(events) == ["start", "error"]
    assert (msg.error_status, msg.error_retryable, msg.error_retry_after_s) == (
        code,
        retryable,
        retry_after,
    )
    assert msg.error_message == f"HTTP {code} ({status}): boom {code}"
    assert len(rec.requests) == 1  # max_retries=0: the SDK did not retry


async def test_error_document_under_an_event_stream_content_type() -> None:
    body = json.dumps(google_error(404, "NOT_FOUND", "no model"), indent=2).encode()
    rec = Recorder(
        httpx2.Response(404, headers={"content-type": "text/event-stream"}, content=body)
    )
    _, msg = await collect(gemini_provider(rec), CTX)
    assert (msg.error_status, msg.error_retryable) == (404, False) and "no model" in (
        msg.error_message or ""
    )


async def test_error_chunk_inside_a_200_stream() -> None:
    rec = Recorder(
        gsse(gemini_chunk([{"text": "par"}]), google_error(503, "UNAVAILABLE", "overloaded"))
    )
    events, msg = await collect(gemini_provider(rec), CTX)
    assert (msg.stop_reason, msg.error_status, msg.error_retryable) == ("error", 503, True)
    assert msg.text == "par" and types(events)[-1] == "error"


async def test_cut_stream_without_finish_reason_is_an_error() -> None:
    rec = Recorder(gsse(gemini_chunk([{"functionCall": {"name": "add", "args": {}}}])))
    _, msg = await collect(gemini_provider(rec), CTX)
    assert (msg.stop_reason, msg.error_message) == ("error", "stream ended without a final event")
    assert msg.error_retryable is True


async def test_malformed_chunk() -> None:
    rec = Recorder(gsse("data: {not json\r\n\r\n"))
    _, msg = await collect(gemini_provider(rec), CTX)
    assert msg.stop_reason == "error" and msg.error_retryable is True
    assert "malformed stream frame" in (msg.error_message or "")


class Dropping(httpx2.AsyncByteStream):
    def __init__(self, first: bytes, exc: Exception) -> None:
        self.first, self.exc = first, exc

    async def __aiter__(self):  # type: ignore[override]
        yield self.first
        raise self.exc


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx2.RemoteProtocolError("peer closed connection"), "connection error"),
        (httpx2.ReadTimeout("slow"), "request timed out"),
    ],
)
async def test_transport_failures_mid_stream(exc: Exception, expected: str) -> None:
    first = gemini_sse([gemini_chunk([{"text": "hel"}])])
    rec = Recorder(
        httpx2.Response(
            200, headers={"content-type": "text/event-stream"}, stream=Dropping(first, exc)
        )
    )
    _, msg = await collect(gemini_provider(rec), CTX)
    assert msg.stop_reason == "error" and msg.error_retryable is True and msg.text == "hel"
    assert expected in (msg.error_message or "")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (httpx2.ConnectError("refused"), "connection error"),
        (httpx2.ConnectTimeout("slow"), "request timed out"),
    ],
)
async def test_transport_failures_before_the_response(exc: Exception, expected: str) -> None:
    def fail(request: httpx2.Request) -> httpx2.Response:
        raise exc

    _, msg = await collect(gemini_provider(Recorder(fail)), CTX)
    assert (msg.stop_reason, msg.error_status, msg.error_retryable) == ("error", None, True)
    assert expected in (msg.error_message or "")


async def test_cancel_during_a_stall_aborts_promptly_and_closes_the_body() -> None:
    body = StallingStream(gemini_sse([gemini_chunk([{"text": "wait"}])]))
    rec = Recorder(httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body))
    cancel = CancelToken()
    asyncio.get_running_loop().call_later(0.2, cancel.cancel)
    started = time.monotonic()
    _, msg = await collect(gemini_provider(rec), CTX, StreamOptions(cancel=cancel))
    assert msg.stop_reason == "aborted" and time.monotonic() - started < 5
    assert body.closed


async def test_bad_request_values_end_in_an_error_not_an_exception() -> None:
    ctx = Context(messages=[UserMessage(content="hi")])
    _, msg = await collect(
        gemini_provider(Recorder()), ctx, StreamOptions(extras={"noSuchField": 1})
    )
    assert msg.stop_reason == "error" and "noSuchField" in (msg.error_message or "")


# -- full loop and Vertex ---------------------------------------------------------------------


async def test_full_loop_sends_the_results_and_the_signature_back() -> None:
    tool_round = gsse(
        gemini_chunk(
            [{"functionCall": {"name": "add", "args": {"a": 2, "b": 3}}, "thoughtSignature": SIG}],
            "STOP",
            (5, 5),
            response_id="R",
        )
    )
    rec = Recorder(tool_round, text_round())
    _, stream, messages = await run_add_loop(gemini_provider(rec))
    assert stream.termination == "completed" and messages[-1].text == "It is 5."  # type: ignore[union-attr]
    second = rec.bodies[1]
    url_sig = base64.urlsafe_b64encode(base64.b64decode(SIG)).decode()
    assert second["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"id": "call_R_0", "name": "add", "args": {"a": 2, "b": 3}},
                    "thoughtSignature": url_sig,
                }
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"id": "call_R_0", "name": "add", "response": {"output": "5"}}}
            ],
        },
    ]
    assert second["toolConfig"] == {"functionCallingConfig": {"mode": "AUTO"}}


async def test_vertex_ai_through_the_same_adapter() -> None:
    rec = Recorder(text_round())
    _, msg = await collect(gemini_provider(rec, vertex=True), CTX, model="gemini-x")
    assert msg.text == "It is 5."
    assert rec.requests[0].url.path == (
        "/v1beta1/projects/test-project/locations/test-location/publishers/google/models/"
        "gemini-x:streamGenerateContent"
    )
    assert rec.requests[0].headers["authorization"] == "Bearer test-token"


def test_client_built_from_options(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram.providers.gemini import GeminiProvider

    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI"):
        monkeypatch.delenv(name, raising=False)
    provider = GeminiProvider(
        api_key="k", base_url="http://127.0.0.1:9/", timeout=2.5, max_retries=2
    )
    options = provider.client._api_client._http_options
    assert provider.base_url == "http://127.0.0.1:9/"
    assert options.timeout == 2500 and options.retry_options.attempts == 3


async def test_blocked_real_call_escapes() -> None:
    from google import genai

    from openprogram.providers import guard
    from openprogram.providers.gemini import GeminiProvider

    rec = Recorder()
    provider = GeminiProvider(
        genai.Client(api_key="k", http_options={"httpx_async_client": rec.client()})
    )
    with guard.allow_model_requests(False), pytest.raises(guard.ModelRequestsBlocked):
        await collect(provider, CTX)
    assert rec.requests == []
