"""Claude on AWS Bedrock and Google Vertex AI through the ``anthropic`` SDK's own clients and the
Anthropic adapter: requests go to InvokeModel / ``streamRawPredict``, the streams (AWS
event-stream ``chunk`` frames, or SSE) carry Anthropic's events, and the fault matrix ends in
one clean error."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram.providers import guard
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.base import StreamOptions
from openprogram.types import ToolResultMessage
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.transport.scripted import call, turn
from tests.providers._adapters_http import (
    Recorder,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    collect,
    json_response,
    sse,
    sse_response,
)
from tests.providers._helper import CTX, run_mul_loop

AWS = {"aws_region": "us-east-1", "aws_access_key": "AKIDTEST", "aws_secret_key": "test-secret"}


def on_bedrock(emu: ProviderEmulator, **kw: Any) -> AnthropicProvider:
    return AnthropicProvider(platform="bedrock", base_url=emu.base_url, **AWS, **kw)


@pytest.fixture(autouse=True)
def _no_real_calls() -> Any:
    with guard.allow_model_requests(False):
        yield


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_full_loop_on_bedrock_invoke_model(stream: bool) -> None:
    run, messages, requests = await run_mul_loop(
        [turn(call("mul", {"a": 6, "b": 7}), chunk_size=3), turn("It is 42.")],
        on_bedrock,
        stream=stream,
        model="anthropic.claude:0",
    )
    request = requests[0]
    assert run.termination == "completed" and messages[-1].text == "It is 42."
    assert isinstance(messages[2], ToolResultMessage) and messages[2].text == "42"
    op = "invoke-with-response-stream" if stream else "invoke"
    assert request.path.endswith(f"/{op}") and "anthropic.claude" in request.path
    assert request.json["tool_choice"] == {"type": "any"} and "model" not in request.json


FAULTS = {
    "status_429": lambda: Fault.http_error(429, headers={"retry-after": "3"}),
    "truncate_after_2_disconnect": lambda: Fault.truncate_after(2, disconnect=True),
    "drop_terminal": Fault.drop_terminal,
    "malformed_frame_2": lambda: Fault.malformed_frame(2),
    "crc_mismatch_2": lambda: Fault.crc_mismatch(2),
}


@pytest.mark.parametrize("fault", FAULTS)
async def test_faults_on_the_event_stream_framing(fault: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn(call("mul", {"a": 1, "b": 2}), "text", chunk_size=2), faults=[FAULTS[fault]()])
        async with on_bedrock(emu) as provider:
            events = [e async for e in provider.stream("anthropic.claude:0", CTX, StreamOptions())]
    assert sum(e.is_terminal for e in events) == 1
    message = events[-1].message
    if fault == "malformed_frame_2":
        # The anthropic SDK's Bedrock decoder skips a chunk whose payload is not JSON (by design,
        # see docs/decisions.md): the adapter never sees it, the message just lacks that event.
        assert message.stop_reason in ("toolUse", "error")
        return
    assert message.stop_reason == "error" and message.error_retryable is True
    if fault == "status_429":
        assert (message.error_status, message.error_retry_after_s) == (429, 3.0)


def anthropic_text_stream(text: str) -> bytes:
    return sse([anthropic_start(3), *anthropic_text(0, text), *anthropic_end(out=4)])


async def test_vertex_client_is_accepted() -> None:
    from anthropic import AsyncAnthropicVertex

    rec = Recorder(
        sse_response(anthropic_text_stream("from vertex")),
        json_response(
            {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, 529
        ),
    )
    client = AsyncAnthropicVertex(
        region="us-east5",
        project_id="proj",
        access_token="test-token",
        **rec.sdk_options(),
    )
    provider = AnthropicProvider(client)
    with guard.replaying():
        _, message = await collect(provider, CTX, model="claude-x@1")
        _, failed = await collect(provider, CTX, model="claude-x@1")
    assert message.text == "from vertex" and (
        message.usage.input_tokens,
        message.usage.output_tokens,
    ) == (3, 4)
    assert (
        rec.requests[0].url.path
        == "/projects/proj/locations/us-east5/publishers/anthropic/models/claude-x@1:streamRawPredict"
    )
    assert rec.requests[0].headers["authorization"] == "Bearer test-token"
    assert (failed.error_status, failed.error_retryable) == (529, True)


def test_platform_builds_the_sdk_client() -> None:
    from anthropic import AsyncAnthropicBedrock, AsyncAnthropicVertex

    bedrock = AnthropicProvider(platform="bedrock", **AWS)
    assert isinstance(bedrock.client, AsyncAnthropicBedrock)
    assert bedrock.base_url.startswith("https://bedrock-runtime.us-east-1.amazonaws.com")
    vertex = AnthropicProvider(
        platform="vertex", region="us-east5", project_id="p", access_token="t"
    )
    assert isinstance(vertex.client, AsyncAnthropicVertex)
    with pytest.raises(ValueError, match="unknown platform 'azure'"):
        AnthropicProvider(platform="azure")


@pytest.mark.parametrize(
    ("status", "error_type"),
    [(429, "ThrottlingException"), (400, "ValidationException"), (403, "AccessDeniedException")],
)
async def test_bedrock_error_type_comes_from_the_amzn_header(status: int, error_type: str) -> None:
    # Bedrock's error body is only {"message": ...}: the type travels in x-amzn-ErrorType
    # ("ThrottlingException:http://internal.amazon.com/..."), cut at the first ':'.
    with ProviderEmulator() as emu:
        emu.add(turn("never"), faults=[Fault.http_error(status, body={"message": "slow down"})])
        async with on_bedrock(emu) as provider:
            events = [e async for e in provider.stream("anthropic.claude:0", CTX, StreamOptions())]
    message = events[-1].message
    assert message.stop_reason == "error" and message.error_status == status
    assert message.error_message == f"HTTP {status} ({error_type}): slow down"
