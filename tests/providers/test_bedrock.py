"""BedrockProvider on the real botocore client (fed through botocore's ``before-send`` hook):
request building checked against botocore's own parameter validation and on the wire, event
stream assembly, every error class, cancellation of the worker thread and a full loop."""

from __future__ import annotations

import asyncio
import base64
import json
import threading
import time
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.cancel import CancelToken
from openprogram.providers.base import Context, StreamOptions
from openprogram.providers.wire import BEDROCK_NO_TOOLS_INSTRUCTION
from openprogram.types import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from tests.providers._adapters_http import collect, types
from tests.providers._google_aws import (
    BedrockStub,
    RawBody,
    Reply,
    aws_error,
    bedrock_provider,
    converse_events,
    event_frame,
    event_stream,
    json_reply,
    raw_pieces,
)
from tests.providers._helper import ADD, ADD_SPEC, CTX, PNG, request_history, run_add_loop


def text_round(text: str = "It is 5.") -> Reply:
    return Reply(200, event_stream(converse_events([("text", text)])))


def validate_request(params: dict[str, Any], stream: bool = True) -> None:
    """botocore's own validation of the operation's input shape (what the SDK enforces)."""
    import boto3
    from botocore.validate import ParamValidator

    client = boto3.session.Session().client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    shape = client.meta.service_model.operation_model(
        "ConverseStream" if stream else "Converse"
    ).input_shape
    report = ParamValidator().validate(params, shape)
    assert not report.has_errors(), report.generate_report()


# -- request building ------------------------------------------------------------------------


def history() -> Context:
    own = AssistantMessage(
        content=[
            ThinkingContent(thinking="adding", signature="sig-1"),
            ThinkingContent(
                thinking="", signature=base64.b64encode(b"secret").decode(), redacted=True
            ),
            TextContent(text="Adding."),
            ToolCall(id="t0", name="add", arguments={"a": 2, "b": 3}),
            ToolCall(id="t1", name="add", arguments={"a": 1, "b": 1}),
        ],
        stop_reason="toolUse",
        api="bedrock-converse",
    )
    return request_history(
        own,
        [
            ToolResultMessage(tool_call_id="t0", tool_name="add", content=[TextContent(text="5")]),
            ToolResultMessage(tool_call_id="t1", tool_name="add", content=[], is_error=True),
        ],
        AssistantMessage(
            content=[TextContent(text="lost")], stop_reason="aborted", api="bedrock-converse"
        ),
    )


@pytest.mark.parametrize("stream", [True, False])
async def test_request_on_the_wire_and_in_the_sdk_types(stream: bool) -> None:
    reply = (
        text_round()
        if stream
        else json_reply(
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "It is 5."}]}},
                "stopReason": "end_turn",
                "usage": {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3},
            }
        )
    )
    stub = BedrockStub(reply)
    provider = bedrock_provider(stub, stream)
    options = StreamOptions(
        tool_choice={"type": "function", "name": "add"},
        max_tokens=99,
        temperature=0.5,
        extras={"additionalModelRequestFields": {"top_k": 5}},
    )
    validate_request(provider.build_request("us.model:0", history(), options), stream)
    _, msg = await collect(provider, history(), options, model="us.model:0")
    assert msg.text == "It is 5."
    request = stub.requests[0]
    assert request.url.endswith(
        "/model/us.model%3A0/converse-stream" if stream else "/model/us.model%3A0/converse"
    )
    assert request.headers["Authorization"].startswith(b"AWS4-HMAC-SHA256")  # signed by botocore
    body = stub.bodies[0]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [{"text": "look"}, {"image": {"format": "png", "source": {"bytes": PNG}}}],
        },
        {
            "role": "assistant",
            "content": [
                {"reasoningContent": {"reasoningText": {"text": "adding", "signature": "sig-1"}}},
                {"reasoningContent": {"redactedContent": base64.b64encode(b"secret").decode()}},
                {"text": "Adding."},
                {"toolUse": {"toolUseId": "t0", "name": "add", "input": {"a": 2, "b": 3}}},
                {"toolUse": {"toolUseId": "t1", "name": "add", "input": {"a": 1, "b": 1}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": "t0",
                        "content": [{"text": "5"}],
                        "status": "success",
                    }
                },
                {
                    "toolResult": {
                        "toolUseId": "t1",
                        "content": [{"text": "(no output)"}],
                        "status": "error",
                    }
                },
                {"text": "and?"},
            ],
        },
    ]
    assert body["system"] == [{"text": "Be brief."}]
    assert body["toolConfig"] == {
        "tools": [
            {
                "toolSpec": {
                    "name": "add",
                    "description": "Add two integers.",
                    "inputSchema": {"json": ADD_SPEC.parameters},
                }
            }
        ],
        "toolChoice": {"tool": {"name": "add"}},
    }
    assert body["inferenceConfig"] == {"maxTokens": 99, "temperature": 0.5}
    assert body["additionalModelRequestFields"] == {"top_k": 5}


@pytest.mark.parametrize(
    ("choice", "expected", "system"),
    [
        ("auto", {"auto": {}}, None),
        ("required", {"any": {}}, None),
        ({"type": "function", "name": "add"}, {"tool": {"name": "add"}}, None),
        ("none", None, BEDROCK_NO_TOOLS_INSTRUCTION),
        (None, None, None),
    ],
)
async def test_tool_choice_on_the_wire(choice: Any, expected: Any, system: str | None) -> None:
    stub = BedrockStub(text_round())
    ctx = Context(system_prompt="S", messages=[UserMessage(content="hi")], tools=[ADD_SPEC])
    await collect(
        bedrock_provider(stub), ctx, StreamOptions(tool_choice=choice, parallel_tool_calls=False)
    )
    body = stub.bodies[0]
    assert body["toolConfig"].get("toolChoice") == expected
    assert body["system"] == [{"text": "S"}] + ([{"text": system}] if system else [])
    assert "parallel" not in json.dumps(body).lower()


async def test_no_tool_fields_without_tools_and_foreign_reasoning_is_not_sent() -> None:
    foreign = AssistantMessage(
        content=[ThinkingContent(thinking="t", signature="s"), TextContent(text="a")],
        api="anthropic-messages",
    )
    stub = BedrockStub(text_round())
    ctx = Context(messages=[UserMessage(content="q"), foreign, UserMessage(content="r")])
    await collect(bedrock_provider(stub), ctx, StreamOptions(tool_choice="required"))
    body = stub.bodies[0]
    assert "toolConfig" not in body and "system" not in body
    assert body["messages"][1] == {"role": "assistant", "content": [{"text": "a"}]}


# -- stream assembly -------------------------------------------------------------------------


def assembly_events() -> list[tuple[str, dict[str, Any]]]:
    events = converse_events(
        [
            ("reasoning", ("think", "sig-9")),
            ("text", "Let me add."),
            ("tool", ("t0", "add", ["", '{"a": 2,', ' "b": 3}'])),
            ("tool", ("t1", "noargs", [])),
        ],
        "tool_use",
        (30, 12),
    )
    events[-1][1]["usage"].update(cacheReadInputTokens=7, cacheWriteInputTokens=2)
    return events


async def test_stream_assembly() -> None:
    data = event_stream(assembly_events())
    events, msg = await collect(bedrock_provider(BedrockStub(Reply(200, data))), CTX)
    assert types(events) == [
        "start",
        "thinking_start",
        "thinking_delta",
        "thinking_end",
        "text_start",
        "text_delta",
        "text_end",
        "toolcall_start",
        "toolcall_delta",
        "toolcall_delta",
        "toolcall_end",
        "toolcall_start",
        "toolcall_end",
        "done",
    ]
    assert msg.stop_reason == "toolUse"
    assert msg.content[0] == ThinkingContent(thinking="think", signature="sig-9")
    assert msg.text == "Let me add."
    assert [(c.id, c.name, c.arguments, c.raw_arguments) for c in msg.tool_calls] == [
        ("t0", "add", {"a": 2, "b": 3}, None),
        ("t1", "noargs", {}, None),
    ]
    assert (
        msg.usage.input_tokens,
        msg.usage.output_tokens,
        msg.usage.cache_read_tokens,
        msg.usage.cache_write_tokens,
    ) == (30, 12, 7, 2)
    assert (msg.provider, msg.api) == ("amazon-bedrock", "bedrock-converse")
    # any cut of the body into pieces gives the same message
    for size in (1, 7, 64):
        _, cut = await collect(
            bedrock_provider(BedrockStub(Reply(200, raw_pieces(data, size)))), CTX
        )
        assert cut.model_dump() == msg.model_dump()


async def test_redacted_reasoning_and_non_streaming_reasoning() -> None:
    stream_events = [
        ("messageStart", {"role": "assistant"}),
        (
            "contentBlockDelta",
            {
                "contentBlockIndex": 0,
                "delta": {
                    "reasoningContent": {"redactedContent": base64.b64encode(b"xyz").decode()}
                },
            },
        ),
        ("contentBlockStop", {"contentBlockIndex": 0}),
        ("messageStop", {"stopReason": "end_turn"}),
        ("metadata", {"usage": {}}),
    ]
    _, msg = await collect(
        bedrock_provider(BedrockStub(Reply(200, event_stream(stream_events)))), CTX
    )
    assert msg.content == [
        ThinkingContent(thinking="", signature=base64.b64encode(b"xyz").decode(), redacted=True)
    ]
    body = {
        "output": {
            "message": {
                "role": "assistant",
                "content": [
                    {"reasoningContent": {"reasoningText": {"text": "hm", "signature": "s1"}}},
                    {"reasoningContent": {"redactedContent": base64.b64encode(b"r").decode()}},
                    {"text": "ok"},
                    {"toolUse": {"toolUseId": "t", "name": "add", "input": {"a": 1}}},
                ],
            }
        },
        "stopReason": "tool_use",
        "usage": {"inputTokens": 4, "outputTokens": 5, "totalTokens": 9},
    }
    events, msg = await collect(bedrock_provider(BedrockStub(json_reply(body)), stream=False), CTX)
    assert [b.type for b in msg.content] == ["thinking", "thinking", "text", "toolCall"]
    assert msg.content[0] == ThinkingContent(thinking="hm", signature="s1")
    assert msg.content[1].redacted and msg.stop_reason == "toolUse"  # type: ignore[union-attr]
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (4, 5)


@pytest.mark.parametrize(
    ("stop", "reason", "text", "retryable"),
    [
        ("end_turn", "stop", None, None),
        ("stop_sequence", "stop", None, None),
        ("max_tokens", "length", None, None),
        ("model_context_window_exceeded", "length", None, None),
        ("guardrail_intervened", "error", "response blocked (guardrail_intervened)", False),
        ("content_filtered", "error", "response blocked (content_filtered)", False),
        ("malformed_tool_use", "error", "generation stopped (malformed_tool_use)", True),
    ],
)
@pytest.mark.parametrize("stream", [True, False])
async def test_stop_reasons(
    stop: str, reason: str, text: str | None, retryable: bool | None, stream: bool
) -> None:
    if stream:
        reply = Reply(200, event_stream(converse_events([("text", "x")], stop)))
    else:
        reply = json_reply(
            {
                "output": {"message": {"role": "assistant", "content": [{"text": "x"}]}},
                "stopReason": stop,
                "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
            }
        )
    _, msg = await collect(bedrock_provider(BedrockStub(reply), stream), CTX)
    assert msg.stop_reason == reason
    if text is not None:
        assert (msg.error_message, msg.error_retryable, msg.error_status) == (text, retryable, None)


async def test_guardrail_stop_after_a_call_does_not_run_it() -> None:
    data = event_stream(
        converse_events([("tool", ("t0", "add", ['{"a": 1, "b": 2}']))], "guardrail_intervened")
    )
    ran: list[Any] = []
    tool = {**ADD, "execute": lambda args: ran.append(args) or 3}
    stream = agent_loop(
        "hi",
        AgentContext(tools=[tool]),
        LoopConfig(provider=bedrock_provider(BedrockStub(Reply(200, data))), model="m"),
    )
    [e async for e in stream]
    assert stream.termination == "error" and ran == []


# -- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("status", "code", "retryable"),
    [
        (400, "ValidationException", False),
        (403, "AccessDeniedException", False),
        (403, "ExpiredTokenException", False),
        (404, "ResourceNotFoundException", False),
        (408, "ModelTimeoutException", True),
        (424, "ModelErrorException", False),
        (429, "ThrottlingException", True),
        (429, "ModelNotReadyException", True),
        (500, "InternalServerException", True),
        (503, "ServiceUnavailableException", True),
        (
            400,
            "ThrottlingException",
            True,
        ),  # botocore's throttling codes are retryable whatever the status
        (503, None, True),  # the error-type header dropped: botocore reports the status as the code
        (418, None, False),
    ],
)
async def test_status_errors(stream: bool, status: int, code: str | None, retryable: bool) -> None:
    stub = BedrockStub(
        aws_error(status, code, f"boom {status}", {"retry-after": "4"} if status == 429 else None)
    )
    events, msg = await collect(bedrock_provider(stub, stream), CTX)
    assert types(events) == ["start", "error"]
    assert (msg.error_status, msg.error_retryable) == (status, retryable)
    assert (
        msg.error_message == f"HTTP {status}" + (f" ({code})" if code else "") + f": boom {status}"
    )
    assert msg.error_retry_after_s == (4.0 if status == 429 else None)
    assert len(stub.requests) == 1  # botocore's retries are off


@pytest.mark.parametrize(
    ("code", "status", "retryable"),
    [
        ("throttlingException", 429, True),
        ("modelStreamErrorException", 424, True),
        ("internalServerException", 500, True),
        ("validationException", 400, False),
        ("serviceUnavailableException", 503, True),
    ],
)
async def test_exception_event_inside_the_stream(code: str, status: int, retryable: bool) -> None:
    events = converse_events([("text", "par")])[:2]
    data = event_stream(events) + event_frame(
        code, {"message": "went wrong"}, message_type="exception"
    )
    _, msg = await collect(bedrock_provider(BedrockStub(Reply(200, data))), CTX)
    assert (msg.stop_reason, msg.error_status, msg.error_retryable) == ("error", status, retryable)
    assert "went wrong" in (msg.error_message or "") and msg.text == "par"


@pytest.mark.parametrize("cut", ["before_stop", "after_stop"])
async def test_stream_ending_before_the_metadata_frame_is_an_error(cut: str) -> None:
    events = converse_events([("tool", ("t0", "add", ['{"a": 1}']))], "tool_use", metadata=False)
    if cut == "before_stop":
        events = events[:-1]
    _, msg = await collect(bedrock_provider(BedrockStub(Reply(200, event_stream(events)))), CTX)
    assert (msg.stop_reason, msg.error_message) == ("error", "stream ended without a final event")
    assert msg.error_retryable is True


async def test_tool_without_description_is_sent_without_one() -> None:
    stub = BedrockStub(text_round())
    bare = ToolSpec(name="ping", description="", parameters={"type": "object", "properties": {}})
    await collect(
        bedrock_provider(stub), Context(messages=[UserMessage(content="x")], tools=[bare])
    )
    assert stub.bodies[0]["toolConfig"]["tools"] == [
        {
            "toolSpec": {
                "name": "ping",
                "inputSchema": {"json": {"type": "object", "properties": {}}},
            }
        }
    ]


@pytest.mark.parametrize("damage", ["crc", "truncated_frame", "garbage"])
async def test_malformed_frames(damage: str) -> None:
    good = event_stream(converse_events([("text", "hi")])[:2])
    if damage == "crc":
        data = good + event_frame("contentBlockStop", {"contentBlockIndex": 0}, corrupt_crc=True)
    elif damage == "truncated_frame":
        data = good + event_frame("contentBlockStop", {"contentBlockIndex": 0})[:-6]
    else:
        data = good + b"\x00\x00\x00\x10\x00\x00\x00\x00garbagegarbage"
    _, msg = await collect(bedrock_provider(BedrockStub(Reply(200, data))), CTX)
    assert msg.stop_reason == "error" and msg.error_retryable is True
    assert (
        msg.error_message == "stream ended without a final event"
        or "malformed stream frame" in (msg.error_message or "")
    )
    if damage != "truncated_frame":
        assert "malformed stream frame" in (msg.error_message or "")


async def test_connection_errors() -> None:
    import urllib3
    from botocore.exceptions import EndpointConnectionError, ReadTimeoutError

    body = RawBody(
        [event_stream(converse_events([("text", "hel")])[:2])],
        then=urllib3.exceptions.ProtocolError("Connection broken"),
    )
    _, msg = await collect(bedrock_provider(BedrockStub(Reply(200, body))), CTX)
    assert (msg.stop_reason, msg.error_retryable, msg.text) == ("error", True, "hel")
    assert "connection error" in (msg.error_message or "")
    _, msg = await collect(
        bedrock_provider(BedrockStub(EndpointConnectionError(endpoint_url="http://x"))), CTX
    )
    assert msg.error_retryable is True and "connection error" in (msg.error_message or "")
    _, msg = await collect(
        bedrock_provider(BedrockStub(ReadTimeoutError(endpoint_url="http://x"))), CTX
    )
    assert msg.error_retryable is True and "timed out" in (msg.error_message or "")


async def test_missing_credentials_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    from openprogram.providers.bedrock import BedrockProvider

    for name in (
        "AWS_ACCESS_KEY_ID",
        "AWS_SECRET_ACCESS_KEY",
        "AWS_SESSION_TOKEN",
        "AWS_PROFILE",
        "AWS_BEARER_TOKEN_BEDROCK",
        "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
        "AWS_CONTAINER_CREDENTIALS_FULL_URI",
        "AWS_WEB_IDENTITY_TOKEN_FILE",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    provider = BedrockProvider(region_name="us-east-1", base_url="http://127.0.0.1:9")
    _, msg = await collect(provider, CTX)
    assert msg.stop_reason == "error" and msg.error_retryable is False
    assert "credentials" in (msg.error_message or "").lower()


async def test_cancel_during_a_stall_returns_promptly_and_stops_the_worker() -> None:
    body = RawBody([event_stream(converse_events([("text", "wait")])[:2])], stall=True)
    cancel = CancelToken()
    events = []
    async for event in bedrock_provider(BedrockStub(Reply(200, body))).stream(
        "m", CTX, StreamOptions(cancel=cancel)
    ):
        events.append(event)
        if event.type == "text_delta":  # the worker is now blocked in a read that never returns
            await asyncio.sleep(0.1)
            cancel.cancel()
            started = time.monotonic()
    assert time.monotonic() - started < 2
    msg = events[-1].message
    assert msg.stop_reason == "aborted" and msg.text == "wait"
    assert body.closed.wait(10)  # the response under the worker was closed
    deadline = time.monotonic() + 10
    while (
        any(t.name == "openprogram-bedrock" for t in threading.enumerate())
        and time.monotonic() < deadline
    ):
        await asyncio.sleep(0.02)
    assert not any(t.name == "openprogram-bedrock" for t in threading.enumerate())


async def test_task_cancellation_also_stops_the_worker() -> None:
    body = RawBody([event_stream(converse_events([("text", "wait")])[:2])], stall=True)
    provider = bedrock_provider(BedrockStub(Reply(200, body)))
    reading = asyncio.Event()

    async def consume() -> None:
        async for event in provider.stream("m", CTX, StreamOptions()):
            if event.type == "text_delta":
                reading.set()

    task = asyncio.ensure_future(consume())
    await asyncio.wait_for(reading.wait(), 20)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert body.closed.wait(10)


async def test_the_event_loop_keeps_running_while_the_sdk_blocks() -> None:
    gate = threading.Event()
    data = event_stream(converse_events([("text", "late")]))

    def slow(request: Any) -> Reply:
        gate.wait(5)
        return Reply(200, data)

    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while not gate.is_set():
            ticks += 1
            await asyncio.sleep(0.01)

    provider = bedrock_provider(BedrockStub(slow))  # building a boto3 client is slow itself
    tick_task = asyncio.ensure_future(ticker())
    asyncio.get_running_loop().call_later(0.3, gate.set)
    _, msg = await collect(provider, CTX)
    await tick_task
    assert msg.text == "late" and ticks >= 10


# -- full loop ---------------------------------------------------------------------------------


async def test_full_loop_tool_round_then_text() -> None:
    tool_round = Reply(
        200,
        event_stream(converse_events([("tool", ("t0", "add", ['{"a": 2, "b": 3}']))], "tool_use")),
    )
    stub = BedrockStub(tool_round, text_round())
    _, stream, messages = await run_add_loop(bedrock_provider(stub))
    assert stream.termination == "completed" and messages[-1].text == "It is 5."  # type: ignore[union-attr]
    second = stub.bodies[1]
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": [{"toolUse": {"toolUseId": "t0", "name": "add", "input": {"a": 2, "b": 3}}}],
        },
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": "t0", "content": [{"text": "5"}], "status": "success"}}
            ],
        },
    ]
    assert second["toolConfig"]["toolChoice"] == {"auto": {}}


async def test_blocked_real_call_escapes() -> None:
    from openprogram.providers import guard
    from openprogram.providers.bedrock import BedrockProvider

    stub = BedrockStub()
    provider = BedrockProvider(
        stub.client(endpoint="https://bedrock-runtime.us-east-1.amazonaws.com")
    )
    with guard.allow_model_requests(False), pytest.raises(guard.ModelRequestsBlocked):
        await collect(provider, CTX)
    assert stub.requests == []


async def test_a_frame_whose_payload_is_not_json_is_malformed() -> None:
    """botocore turns such a payload into an empty event; the adapter notices the missing
    members instead of dropping the frame silently."""
    from openprogram_testing.transport.wire.eventstream import encode_message

    events = converse_events([("text", "hi")])
    bad = encode_message(
        {
            ":message-type": "event",
            ":event-type": "contentBlockDelta",
            ":content-type": "application/json",
        },
        b'{"corrupted frame": tru',
    )
    data = event_stream(events[:1]) + bad + event_stream(events[2:])
    _, msg = await collect(bedrock_provider(BedrockStub(Reply(200, data))), CTX)
    assert (msg.stop_reason, msg.error_retryable) == ("error", True)
    assert (
        msg.error_message
        == "malformed stream frame: contentBlockDelta event without delta, contentBlockIndex"
    )
