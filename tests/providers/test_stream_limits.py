"""What an adapter buffers is bounded: a stream that never completes an event ends the turn with
an error at ``max_event_bytes`` (instead of the SDK buffering it without end), a long stream of
complete events is not affected, and an error message holding a whole body is clipped."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx2
import pytest

from openprogram.providers._http import MAX_EVENT_BYTES
from openprogram.texts import CLIP_LIMIT
from tests.providers._adapters_http import (
    FACTORIES,
    Recorder,
    anthropic_end,
    anthropic_start,
    anthropic_text,
    collect,
    sse,
    sse_response,
)
from tests.providers._google_aws import (
    BedrockStub,
    aws_error,
    bedrock_provider,
    gemini_chunk,
    gemini_provider,
    gemini_sse,
)
from tests.providers._helper import CTX

LIMIT = 64 * 1024
SENT = 2 * 1024 * 1024  # what the server sends in all: 32 times the limit


class Endless(httpx2.AsyncByteStream):
    """``head``, then ``piece`` until ``SENT`` bytes went out (then the body ends)."""

    def __init__(self, piece: bytes, head: bytes = b"") -> None:
        self.head, self.piece = head, piece
        self.sent = 0

    async def __aiter__(self) -> AsyncIterator[bytes]:
        if self.head:
            yield self.head
        while self.sent < SENT:
            self.sent += len(self.piece)
            yield self.piece


# Incomplete events, per wire: data lines that never get their blank line, an unbalanced
# brace (Gemini reads non-data lines until the braces balance), one line without its end.
NEVER_ENDING = {
    "data lines without a blank line": b'data: {"a": "' + b"x" * 1000 + b'"}\r\n',
    "an unbalanced brace": b"{" + b'"a": 1, ' * 128 + b"\n",
    "a line without its end": b"x" * 1024,
}
ADAPTERS: dict[str, Callable[[Recorder, bool], Any]] = {**FACTORIES, "gemini": gemini_provider}


def limited(adapter: str, rec: Recorder) -> Any:
    provider = ADAPTERS[adapter](rec, True)
    provider.max_event_bytes = LIMIT
    return provider


@pytest.mark.parametrize("shape", list(NEVER_ENDING))
@pytest.mark.parametrize("adapter", list(ADAPTERS))
async def test_a_stream_that_never_completes_an_event_ends_at_the_limit(
    adapter: str, shape: str
) -> None:
    body = Endless(NEVER_ENDING[shape])
    rec = Recorder(httpx2.Response(200, headers={"content-type": "text/event-stream"}, stream=body))
    _, message = await collect(limited(adapter, rec), CTX)
    assert (message.stop_reason, message.error_retryable) == ("error", True)
    assert message.error_message == (
        f"stream event over {LIMIT} bytes: no complete event in {LIMIT} bytes"
    )
    assert body.sent < 4 * LIMIT  # stopped reading there, not at the end of the body


def many_events(adapter: str) -> bytes:
    """A correct stream of 40 events of 4 KiB each: 2.5 times the limit in all."""
    text = "y" * 4096
    if adapter == "gemini":
        chunks = [gemini_chunk([{"text": text}]) for _ in range(39)]
        return gemini_sse([*chunks, gemini_chunk([{"text": text}], "STOP", (3, 4))])
    if adapter == "anthropic":
        return sse([anthropic_start(), *anthropic_text(0, *[text] * 40), *anthropic_end()])
    if adapter == "chat":
        delta = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        frames = [
            {**delta, "choices": [{"index": 0, "delta": {"content": text}}]} for _ in range(40)
        ]
        frames.append({**delta, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
        return sse(frames, done=True)
    return b""


@pytest.mark.parametrize("adapter", ["gemini", "anthropic", "chat"])
async def test_complete_events_past_the_limit_in_all_are_not_cut(adapter: str) -> None:
    rec = Recorder(sse_response(many_events(adapter)))
    _, message = await collect(limited(adapter, rec), CTX)
    assert message.stop_reason == "stop", message.error_message
    assert len(message.text) == 40 * 4096


def test_the_limit_is_on_by_default_and_can_be_lifted() -> None:
    from openprogram.providers.gemini import GeminiProvider

    assert GeminiProvider(api_key="k").max_event_bytes == MAX_EVENT_BYTES == 16 * 2**20
    assert GeminiProvider(api_key="k", max_event_bytes=None).max_event_bytes is None


HUGE = "E" * 1_000_000


@pytest.mark.parametrize("adapter", list(ADAPTERS))
async def test_an_error_message_holding_a_whole_body_is_clipped(adapter: str) -> None:
    document = {"error": {"code": 500, "message": HUGE, "status": "INTERNAL"}, "message": HUGE}
    rec = Recorder(
        httpx2.Response(500, headers={"content-type": "application/json"}, content=HUGE.encode())
        if adapter == "chat"
        else httpx2.Response(500, json=document)
    )
    _, message = await collect(ADAPTERS[adapter](rec, True), CTX)
    assert message.error_status == 500
    text = message.error_message or ""
    assert len(text) < CLIP_LIMIT + 100 and text.endswith(" chars)") and "EEEE" in text


async def test_a_bedrock_error_message_holding_a_whole_body_is_clipped() -> None:
    stub = BedrockStub(aws_error(500, "InternalServerException", HUGE))
    _, message = await collect(bedrock_provider(stub), CTX)
    assert message.error_status == 500
    assert len(message.error_message or "") < CLIP_LIMIT + 100
