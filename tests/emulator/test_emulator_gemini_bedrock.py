"""The Gemini, Bedrock Converse and Anthropic-on-Bedrock endpoints: raw HTTP, the official SDKs'
own parsers, every fault, and the shapes of the shared real recordings."""

from __future__ import annotations

import base64
import json
import time
from typing import Any

import httpx
import pytest

from openprogram_testing.cassettes import load_interactions
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.transport.scripted import ModelRequest, call, error_turn, think, turn
from openprogram_testing.transport.wire import FORMATS, eventstream, sse
from tests.conftest import require_conformance_dir

genai = pytest.importorskip("google.genai")
botocore_eventstream = pytest.importorskip("botocore.eventstream")


REQUESTS: dict[str, tuple[str, dict[str, Any]]] = {
    "gemini": (
        "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
        {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]},
    ),
    "bedrock": (
        "/model/us.amazon.nova-micro-v1%3A0/converse-stream",
        {"messages": [{"role": "user", "content": [{"text": "hi"}]}]},
    ),
    "invoke": (
        "/model/anthropic.claude-3-sonnet:0/invoke-with-response-stream",
        {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "hi"}],
        },
    ),
}
WIRE = {"gemini": "gemini", "bedrock": "bedrock", "invoke": "bedrock_invoke"}
ENDPOINTS = list(REQUESTS)


@pytest.fixture
def emu() -> Any:
    emulator = ProviderEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def post(emu: ProviderEmulator, endpoint: str, timeout: float = 10) -> httpx.Response:
    path, body = REQUESTS[endpoint]
    return httpx.post(emu.base_url + path, json=body, timeout=timeout)


def frames_of(endpoint: str, body: bytes) -> list[Any]:
    """The body cut by the format's own splitter: SSE frame texts or raw event-stream messages."""
    if endpoint == "gemini":
        return sse.split_frames(body.decode())
    return eventstream.split_messages(body)


def is_terminal(endpoint: str, frame: Any) -> bool:
    wire: Any = FORMATS[WIRE[endpoint]]
    if endpoint == "gemini":
        return bool(wire.is_terminal(frame))
    return bool(wire.is_terminal_message(eventstream.decode_message(frame)))


def payloads(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """Event-stream messages parsed by botocore's own decoder (it checks both CRCs)."""
    buffer = botocore_eventstream.EventStreamBuffer()
    buffer.add_data(body)
    out = []
    for message in buffer:
        out.append((message.headers[":event-type"], json.loads(message.payload)))
    return out


def anthropic_events(body: bytes) -> list[dict[str, Any]]:
    return [json.loads(base64.b64decode(p["bytes"])) for _, p in payloads(body)]


# -- raw HTTP: the wire shapes --------------------------------------------------------------


def test_gemini_stream_is_data_only_crlf_sse_with_cumulative_usage(emu):
    emu.add(turn("hello world", call("add", {"a": 1}), chunk_size=4, usage=usage(5, 6)))
    r = post(emu, "gemini")
    assert r.headers["content-type"].startswith("text/event-stream")
    assert "\r\n\r\n" in r.text and "event:" not in r.text and "[DONE]" not in r.text
    chunks = [json.loads(sse.frame_data(f) or "") for f in sse.split_frames(r.text)]
    parts = [c["candidates"][0]["content"]["parts"][0] for c in chunks]
    assert parts[:3] == [{"text": "hell"}, {"text": "o wo"}, {"text": "rld"}]
    assert parts[3] == {"functionCall": {"name": "add", "args": {"a": 1}}}  # no id: like 2.x
    finishes = [c["candidates"][0].get("finishReason") for c in chunks]
    assert finishes == [None, None, None, "STOP"]  # STOP even after a function call
    counts = [c["usageMetadata"]["candidatesTokenCount"] for c in chunks]
    assert counts == sorted(counts) and counts[-1] == 6
    assert {c["usageMetadata"]["promptTokenCount"] for c in chunks} == {5}
    request = emu.requests[0]
    assert (request.api, request.stream, request.model_request.model) == (
        "gemini",
        True,
        "gemini-2.5-flash",
    )


def usage(inp: int, out: int) -> Any:
    from openprogram.types import Usage

    return Usage(input_tokens=inp, output_tokens=out)


def test_gemini_non_streaming_and_scripted_call_ids(emu):
    emu.add(turn("a", call("f", {}, id="c1"), usage=usage(2, 3)))
    path = "/v1beta/models/g:generateContent"
    r = httpx.post(emu.base_url + path, json=REQUESTS["gemini"][1])
    body = r.json()
    assert body["candidates"][0]["content"] == {
        "parts": [{"text": "a"}, {"functionCall": {"id": "c1", "name": "f", "args": {}}}],
        "role": "model",
    }
    assert body["candidates"][0]["finishReason"] == "STOP"
    assert body["usageMetadata"]["totalTokenCount"] == 5


def test_gemini_stream_without_alt_sse_is_a_json_array(emu):
    emu.add("x")
    r = httpx.post(
        emu.base_url + "/v1beta/models/g:streamGenerateContent", json=REQUESTS["gemini"][1]
    )
    assert r.headers["content-type"] == "application/json"
    assert r.json()[0]["candidates"][0]["content"]["parts"] == [{"text": "x"}]


def test_bedrock_converse_stream_frames_and_crcs_parse_with_botocore(emu):
    emu.add(turn("ok", call("add", {"a": 1}), chunk_size=4, usage=usage(3, 4)))
    r = post(emu, "bedrock")
    assert r.headers["content-type"] == "application/vnd.amazon.eventstream"
    events = payloads(r.content)
    assert [e for e, _ in events] == [
        "messageStart",
        "contentBlockDelta",
        "contentBlockStop",  # text: no block start
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    ]
    assert events[3][1]["start"] == {"toolUse": {"toolUseId": "call_0", "name": "add"}}
    assert "".join(p["delta"]["toolUse"]["input"] for e, p in events[4:6]) == '{"a": 1}'
    assert events[7][1]["stopReason"] == "tool_use"
    assert events[8][1]["usage"] == {"inputTokens": 3, "outputTokens": 4, "totalTokens": 7}
    assert all("p" in p for _, p in events)  # Bedrock's length padding
    request = emu.requests[0]
    assert (request.api, request.stream, request.model_request.model) == (
        "bedrock",
        True,
        "us.amazon.nova-micro-v1:0",
    )


def test_invoke_stream_wraps_anthropic_events_in_chunks(emu):
    emu.add(turn("hi", usage=usage(2, 1)))
    r = post(emu, "invoke")
    assert {e for e, _ in payloads(r.content)} == {"chunk"}
    events = anthropic_events(r.content)
    assert [e["type"] for e in events] == [
        "message_start",
        "content_block_start",
        "ping",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    assert events[-1]["amazon-bedrock-invocationMetrics"]["outputTokenCount"] == 1
    assert emu.requests[0].api == "anthropic" and emu.requests[0].stream


# -- the official SDKs ------------------------------------------------------------------------


def gemini_client(emu: ProviderEmulator, timeout_ms: int | None = None) -> Any:
    from google.genai import types

    options = types.HttpOptions(base_url=emu.base_url, timeout=timeout_ms)
    return genai.Client(api_key="test", http_options=options)


def bedrock_client(emu: ProviderEmulator, read_timeout: float = 10) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(retries={"max_attempts": 0}, read_timeout=read_timeout, connect_timeout=5)
    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=emu.base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=config,
    )


def bedrock_anthropic(emu: ProviderEmulator, timeout: float = 10) -> Any:
    import anthropic

    return anthropic.AnthropicBedrock(
        aws_access_key="test",
        aws_secret_key="test",
        aws_region="us-east-1",
        base_url=emu.base_url,
        max_retries=0,
        timeout=timeout,
    )


def test_google_genai_reads_stream_and_json(emu):
    emu.add(turn(think("hm", signature="c2ln"), "hello", call("add", {"a": 1}), chunk_size=2))
    emu.add(turn("done", usage=usage(4, 2)))
    client = gemini_client(emu)
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    parts = [p for c in chunks for p in c.candidates[0].content.parts]
    assert "".join(p.text for p in parts if p.text and not p.thought) == "hello"
    assert [p.thought_signature for p in parts if p.thought_signature] == [b"sig"]
    (fc,) = [p.function_call for p in parts if p.function_call]
    assert (fc.name, fc.args, fc.id) == ("add", {"a": 1}, None)
    assert chunks[-1].candidates[0].finish_reason.name == "STOP"
    r = client.models.generate_content(model="gemini-2.5-flash", contents="again")
    assert r.text == "done" and r.usage_metadata.total_token_count == 6


def test_gemini_request_parses_back_into_a_model_request(emu):
    from google.genai import types

    emu.add("ok")
    tool = types.Tool(
        function_declarations=[
            types.FunctionDeclaration(
                name="add", description="adds", parameters_json_schema={"type": "object"}
            )
        ]
    )
    config = types.GenerateContentConfig(
        system_instruction="be brief",
        tools=[tool],
        max_output_tokens=7,
        temperature=0.5,
        tool_config=types.ToolConfig(
            function_calling_config=types.FunctionCallingConfig(
                mode="ANY", allowed_function_names=["add"]
            )
        ),
    )
    contents = [
        types.Content(role="user", parts=[types.Part(text="add 1")]),
        types.Content(
            role="model",
            parts=[
                types.Part(function_call=types.FunctionCall(name="add", args={"a": 1}, id="c9"))
            ],
        ),
        types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(name="add", response={"r": 1}, id="c9")
                )
            ],
        ),
    ]
    client = gemini_client(emu)  # held: a collected client closes its connection pool
    client.models.generate_content(model="g", contents=contents, config=config)
    req: ModelRequest = emu.requests[0].model_request
    assert req.system_prompt == "be brief" and req.max_tokens == 7 and req.temperature == 0.5
    assert [t.name for t in req.tools] == ["add"]
    assert req.tool_choice == {"type": "function", "name": "add"}
    user, assistant, result = req.messages
    assert assistant.content[0].arguments == {"a": 1} and assistant.content[0].id == "c9"
    assert (result.tool_call_id, result.tool_name, result.content[0].text) == (
        "c9",
        "add",
        '{"r": 1}',
    )


def test_boto3_converse_stream_and_converse(emu):
    emu.add(turn(think("why", signature="s1"), "hi", call("add", {"a": 1}), chunk_size=3))
    emu.add(turn("plain", usage=usage(2, 3)))
    client = bedrock_client(emu)
    out = client.converse_stream(
        modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    events = list(out["stream"])
    text = "".join(
        e["contentBlockDelta"]["delta"].get("text", "") for e in events if "contentBlockDelta" in e
    )
    assert text == "hi"
    reasoning = [
        e["contentBlockDelta"]["delta"]["reasoningContent"]
        for e in events
        if "reasoningContent" in e.get("contentBlockDelta", {}).get("delta", {})
    ]
    assert reasoning == [{"text": "why"}, {"signature": "s1"}]
    assert events[-2] == {"messageStop": {"stopReason": "tool_use"}}
    r = client.converse(modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}])
    assert r["output"]["message"]["content"] == [{"text": "plain"}]
    assert r["usage"] == {"inputTokens": 2, "outputTokens": 3, "totalTokens": 5}


def test_bedrock_request_parses_back_into_a_model_request(emu):
    emu.add("ok")
    bedrock_client(emu).converse(
        modelId="m",
        system=[{"text": "sys"}],
        messages=[
            {"role": "user", "content": [{"text": "go"}]},
            {
                "role": "assistant",
                "content": [{"toolUse": {"toolUseId": "t1", "name": "add", "input": {"a": 1}}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "toolResult": {
                            "toolUseId": "t1",
                            "content": [{"json": {"r": 2}}],
                            "status": "error",
                        }
                    }
                ],
            },
        ],
        toolConfig={
            "tools": [{"toolSpec": {"name": "add", "inputSchema": {"json": {"type": "object"}}}}],
            "toolChoice": {"any": {}},
        },
        inferenceConfig={"maxTokens": 9},
    )
    req = emu.requests[0].model_request
    assert req.system_prompt == "sys" and req.max_tokens == 9 and req.tool_choice == "required"
    assert req.tools[0].parameters == {"type": "object"}
    result = req.messages[2]
    assert (result.tool_name, result.is_error, result.content[0].text) == ("add", True, '{"r": 2}')


def test_anthropic_bedrock_client_streams_and_reads_json(emu):
    emu.add(turn("hi", call("add", {"a": 1}), chunk_size=1), "plain")
    client = bedrock_anthropic(emu)
    with client.messages.stream(
        model="anthropic.claude:0", max_tokens=5, messages=[{"role": "user", "content": "x"}]
    ) as stream:
        message = stream.get_final_message()
    assert [b.type for b in message.content] == ["text", "tool_use"]
    assert message.content[1].input == {"a": 1} and message.stop_reason == "tool_use"
    plain = client.messages.create(
        model="anthropic.claude:0", max_tokens=5, messages=[{"role": "user", "content": "x"}]
    )
    assert plain.content[0].text == "plain"


# -- the fault matrix -------------------------------------------------------------------------


@pytest.mark.parametrize("endpoint", ENDPOINTS)
@pytest.mark.parametrize("code", [400, 429, 500, 503])
def test_status_fault(emu, endpoint, code):
    emu.add(Fault.http_error(code, headers={"retry-after": "3"}))
    r = post(emu, endpoint)
    assert r.status_code == code and r.headers["retry-after"] == "3"
    if endpoint == "gemini":
        assert r.json()["error"]["code"] == code and r.json()["error"]["status"]
    else:
        assert set(r.json()) == {"message"}
        assert r.headers["x-amzn-ErrorType"].split(":")[0].endswith("Exception")


def test_status_faults_through_the_sdks(emu):
    from botocore.exceptions import ClientError
    from google.genai import errors

    emu.add(Fault.http_error(429), Fault.http_error(429), Fault.http_error(503))
    client = gemini_client(emu)
    with pytest.raises(errors.ClientError) as info:
        client.models.generate_content(model="g", contents="x")
    assert info.value.code == 429 and info.value.status == "RESOURCE_EXHAUSTED"
    with pytest.raises(ClientError) as caught:
        bedrock_client(emu).converse(
            modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
        )
    assert caught.value.response["Error"]["Code"] == "ThrottlingException"
    import anthropic

    with pytest.raises(anthropic.InternalServerError) as err:
        bedrock_anthropic(emu).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
    assert err.value.status_code == 503


def read_until_drop(emu: ProviderEmulator, endpoint: str) -> tuple[bytes, bool]:
    """The bytes received before the connection ended, and whether it ended cleanly."""
    path, body = REQUESTS[endpoint]
    received = b""
    try:
        with httpx.stream("POST", emu.base_url + path, json=body, timeout=10) as r:
            for piece in r.iter_raw():
                received += piece
    except httpx.TransportError:
        return received, False
    return received, True


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_disconnect_after_n_frames(emu, endpoint):
    emu.add(turn("hello world", chunk_size=2), faults=[Fault.truncate_after(3, disconnect=True)])
    received, clean = read_until_drop(emu, endpoint)
    assert not clean and len(frames_of(endpoint, received)) == 3


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_no_terminal_frame(emu, endpoint):
    emu.add(turn("hello", chunk_size=1), faults=[Fault.drop_terminal()])
    received, clean = read_until_drop(emu, endpoint)
    frames = frames_of(endpoint, received)
    assert clean and len(frames) >= 2
    assert not any(is_terminal(endpoint, f) for f in frames)
    emu.add("hello")
    complete, _ = read_until_drop(emu, endpoint)
    assert is_terminal(endpoint, frames_of(endpoint, complete)[-1])


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_malformed_frame(emu, endpoint):
    emu.add(turn("hello", chunk_size=1), faults=[Fault.malformed_frame(1)])
    frames = frames_of(endpoint, post(emu, endpoint).content)
    if endpoint == "gemini":
        data = sse.frame_data(frames[1]) or ""
    else:
        data = eventstream.decode_message(frames[1]).payload.decode()  # CRCs still valid
    with pytest.raises(ValueError):
        json.loads(data)


def test_malformed_frames_fail_the_sdks(emu):
    emu.add(turn("hello", chunk_size=1), faults=[Fault.malformed_frame(1)])
    emu.add(turn("hello", chunk_size=1), faults=[Fault.malformed_frame(1)])
    client = gemini_client(emu)
    with pytest.raises(Exception) as info:  # google-genai lets the JSON error through
        list(client.models.generate_content_stream(model="g", contents="x"))
    assert isinstance(info.value, ValueError) or "JSON" in str(info.value)
    out = bedrock_client(emu).converse_stream(
        modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    # botocore swallows the JSON error: the adapter gets an event with nothing in it
    assert list(out["stream"])[1] == {"contentBlockDelta": {}}


@pytest.mark.parametrize("endpoint", ["bedrock", "invoke"])
def test_crc_mismatch(emu, endpoint):
    from botocore.eventstream import ChecksumMismatch

    emu.add(turn("hello", chunk_size=1), faults=[Fault.crc_mismatch(2)])
    frames = frames_of(endpoint, post(emu, endpoint).content)
    eventstream.decode_message(frames[1])
    with pytest.raises(eventstream.EventStreamError, match="CRC"):
        eventstream.decode_message(frames[2])
    emu.add(turn("hello", chunk_size=1), faults=[Fault.crc_mismatch(2)])
    with pytest.raises(ChecksumMismatch):
        payloads(post(emu, endpoint).content)


def test_crc_mismatch_on_sse_is_a_clear_error(emu):
    emu.add("x", faults=[Fault.crc_mismatch(0)])
    r = post(emu, "gemini")
    assert r.status_code == 500 and "CRC" in r.json()["error"]["message"]
    with pytest.raises(AssertionError, match="only event-stream"):
        emu.assert_complete()


def test_crc_mismatch_fails_boto3(emu):
    from botocore.eventstream import ChecksumMismatch

    emu.add(turn("hello", chunk_size=1), faults=[Fault.crc_mismatch(1)])
    out = bedrock_client(emu).converse_stream(
        modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    with pytest.raises(ChecksumMismatch):
        list(out["stream"])


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_stall_times_the_client_out_and_stop_interrupts_it(emu, endpoint):
    # one character a frame: the stall comes before the terminal frame on every endpoint
    emu.add(turn("hello", chunk_size=1), faults=[Fault.stall(30, after_frame=1)])
    path, body = REQUESTS[endpoint]
    with pytest.raises(httpx.ReadTimeout):
        with httpx.stream("POST", emu.base_url + path, json=body, timeout=0.5) as r:
            for _ in r.iter_raw():
                pass
    started = time.monotonic()
    emu.stop()
    assert time.monotonic() - started < 10


def test_stall_times_the_sdks_out(emu):
    from botocore.exceptions import ReadTimeoutError

    emu.add("x", faults=[Fault.stall(30)])
    with pytest.raises(ReadTimeoutError):
        bedrock_client(emu, read_timeout=0.5).converse(
            modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
        )


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_latency_slows_every_frame_and_keeps_content(emu, endpoint):
    emu.add(turn("abcd", chunk_size=1), faults=[Fault.latency(0.03)])
    started = time.monotonic()
    r = post(emu, endpoint)
    frames = frames_of(endpoint, r.content)
    assert time.monotonic() - started >= 0.03 * len(frames)
    emu.add(turn("abcd", chunk_size=1))
    assert len(frames_of(endpoint, post(emu, endpoint).content)) == len(frames)


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_mid_stream_error_turn(emu, endpoint):
    emu.add(error_turn("overloaded now", "partial", status=429))
    frames = frames_of(endpoint, post(emu, endpoint).content)
    if endpoint == "gemini":
        assert json.loads(sse.frame_data(frames[-1]) or "")["error"]["code"] == 429
    else:
        last = eventstream.decode_message(frames[-1])
        assert last.headers[":message-type"] == "exception"
        assert last.headers[":exception-type"] == "throttlingException"


def test_error_turn_through_boto3_stream(emu):
    from botocore.exceptions import EventStreamError

    emu.add(error_turn("slow down", "partial", status=429))
    out = bedrock_client(emu).converse_stream(
        modelId="m", messages=[{"role": "user", "content": [{"text": "x"}]}]
    )
    with pytest.raises(EventStreamError, match="throttlingException"):
        list(out["stream"])


# -- the shapes of real recordings ------------------------------------------------------------


def recorded(path: str, index: int = 0) -> bytes:
    body = load_interactions(require_conformance_dir() / path)[index]["response"]["body"]["string"]
    return body if isinstance(body, bytes) else body.encode()


def keys(value: Any, prefix: str = "") -> set[str]:
    """Every key path of a JSON value (list items merged), e.g. ``candidates.content.parts``."""
    out: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            out.add(prefix + k)
            out |= keys(v, prefix + k + ".")
    elif isinstance(value, list):
        for item in value:
            out |= keys(item, prefix)
    return out


def test_converse_stream_frames_have_the_recorded_shape(emu):
    real = payloads(recorded("dd-trace-py/bedrock/bedrock_converse_stream.yaml"))
    emu.add(turn("Okay, let me", call("fetch_concept", {"concept": "x"}), chunk_size=5))
    ours = payloads(post(emu, "bedrock").content)
    by_event: dict[str, set[str]] = {}
    for event, payload in real:
        by_event.setdefault(event, set()).update(keys(payload))
    assert [e for e, _ in ours if e != "contentBlockDelta"] == [
        e for e, _ in real if e != "contentBlockDelta"
    ]
    for event, payload in ours:
        assert keys(payload) <= by_event[event], event


def test_invoke_chunks_have_the_recorded_shape(emu):
    real = recorded("chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml")
    real_events = anthropic_events(real)
    emu.add(turn(call("get_weather", {})))  # the recorded call has no arguments
    ours = anthropic_events(post(emu, "invoke").content)
    assert [e["type"] for e in ours if e["type"] != "ping"] == [e["type"] for e in real_events]
    assert keys(ours[-1]) == keys(real_events[-1])  # message_stop with invocation metrics
    assert [set(p) for _, p in payloads(real)] == [{"bytes", "p"}] * len(real_events)


def test_gemini_chunks_have_the_recorded_shape(emu):
    path = "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml"
    real = [json.loads(sse.frame_data(f) or "") for f in sse.split_frames(recorded(path).decode())]
    emu.add(turn(call("secret_retrieval_tool", {"password": "x"})))
    body = post(emu, "gemini").text
    ours = [json.loads(sse.frame_data(f) or "") for f in sse.split_frames(body)]
    assert recorded(path).count(b"\r\n\r\n") == len(real) and body.count("\r\n\r\n") == len(ours)
    real_keys = set().union(*(keys(c) for c in real))
    for chunk in ours:
        assert keys(chunk) <= real_keys
    assert "candidates.finishReason" in keys(real[-1]) and "candidates.finishReason" in keys(
        ours[-1]
    )


@pytest.mark.parametrize("endpoint", ENDPOINTS)
def test_inject_error_fault(emu, endpoint):
    from openprogram_testing.transport.faults import InjectError

    emu.add(turn("hello", chunk_size=1), faults=[InjectError(2, "busy")])
    frames = frames_of(endpoint, post(emu, endpoint).content)
    assert len(frames) == 3
    if endpoint == "gemini":
        assert json.loads(sse.frame_data(frames[2]) or "")["error"]["status"] == "UNAVAILABLE"
    else:
        assert eventstream.decode_message(frames[2]).headers[":message-type"] == "exception"


def test_garble_fault_on_converse_stream(emu):
    from openprogram_testing.transport.faults import GARBLE_PREFIX, GarbleToolArguments

    emu.add(turn(call("add", {"a": 1}), chunk_size=3), faults=[GarbleToolArguments(0)])
    events = payloads(post(emu, "bedrock").content)
    text = "".join(p["delta"]["toolUse"]["input"] for e, p in events if e == "contentBlockDelta")
    assert text == GARBLE_PREFIX + '{"a": 1}'
