"""BedrockProvider on a real loopback socket: cancelling a stalled stream frees the worker thread
and the socket at once whatever the connection kind, and a non-streaming 200 whose body is no
Converse reply is an error, not an empty success."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator

import pytest

from openprogram.cancel import CancelToken
from openprogram.providers.base import StreamOptions
from tests.providers._adapters_http import collect
from tests.providers._google_aws import (
    BedrockStub,
    Reply,
    bedrock_at,
    bedrock_provider,
    event_frame,
    json_reply,
)
from tests.providers._helper import CTX
from tests.providers._loopback import LoopbackServer, chunked, http_head

EVENTS = "application/vnd.amazon.eventstream"
# More than botocore's 64 KiB read, so frames reach the adapter before the stall on every kind
# of answer (a read of a body without chunks waits for its whole 64 KiB).
FIRST = event_frame("messageStart", {"role": "assistant"}) + b"".join(
    event_frame("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"text": "hi " * 4000}})
    for _ in range(8)
)
# How each kind of answer leaves the body open after the first frames (then the server stalls).
STALLS = {
    "keep-alive, chunked": http_head(200, {"Content-Type": EVENTS, "Transfer-Encoding": "chunked"})
    + chunked(FIRST),
    "keep-alive, content-length": http_head(
        200, {"Content-Type": EVENTS, "Content-Length": str(len(FIRST) + 100_000)}
    )
    + FIRST,
    "connection: close": http_head(200, {"Content-Type": EVENTS, "Connection": "close"}) + FIRST,
}


def bedrock_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("openprogram-bedrock")]


def gone_within(seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while bedrock_threads():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.mark.parametrize("kind", list(STALLS))
async def test_cancelling_a_stalled_stream_frees_the_thread_and_the_socket(kind: str) -> None:
    def answer(_request: bytes) -> Iterator[bytes]:
        yield STALLS[kind]

    with LoopbackServer(answer) as server:
        provider = bedrock_at(server.url)  # botocore's read timeout: 60 s
        cancel = CancelToken()
        events = []
        async for event in provider.stream("m", CTX, StreamOptions(cancel=cancel)):
            events.append(event)
            if event.type == "text_delta" and not cancel.is_set():  # reading: now it stalls
                cancel.cancel()
                started = time.monotonic()
        assert events[-1].message is not None
        assert events[-1].message.stop_reason == "aborted", events[-1].message.error_message
        assert time.monotonic() - started < 1
        assert await asyncio.to_thread(server.wait_closed, None, 3.0), "the socket stayed open"
        assert await asyncio.to_thread(gone_within, 3.0), bedrock_threads()


NOT_A_REPLY = {
    "html": (b"<html><body>Service Unavailable</body></html>", "text/html"),
    "empty object": (b"{}", "application/json"),
    "empty body": (b"", "application/json"),
    "not json": (b"not json at all", "application/json"),
    "no stop reason": (json.dumps({"output": {"message": {"content": []}}}).encode(), None),
    "no output": (json.dumps({"stopReason": "end_turn"}).encode(), None),
}


@pytest.mark.parametrize("shape", list(NOT_A_REPLY))
async def test_a_200_that_is_no_converse_reply_is_an_error(shape: str) -> None:
    body, ctype = NOT_A_REPLY[shape]
    headers = {"content-type": ctype or "application/json"}
    stub = BedrockStub(Reply(200, body, headers, stream=False))
    _, message = await collect(bedrock_provider(stub, stream=False), CTX)
    assert (message.stop_reason, message.error_retryable) == ("error", True)
    assert (message.error_message or "").startswith("malformed response: a Converse reply")


async def test_a_converse_reply_is_still_a_reply() -> None:
    reply = {
        "output": {"message": {"role": "assistant", "content": [{"text": "ok"}]}},
        "stopReason": "end_turn",
        "usage": {"inputTokens": 1, "outputTokens": 1, "totalTokens": 2},
    }
    stub = BedrockStub(json_reply(reply))
    _, message = await collect(bedrock_provider(stub, stream=False), CTX)
    assert (message.stop_reason, message.text) == ("stop", "ok")


@pytest.mark.parametrize(
    ("env", "given", "expected"),
    [
        ({"AWS_REGION": "eu-west-3"}, None, "eu-west-3"),
        ({"AWS_DEFAULT_REGION": "ap-south-1"}, None, "ap-south-1"),
        ({"AWS_REGION": "eu-west-3", "AWS_DEFAULT_REGION": "ap-south-1"}, None, "eu-west-3"),
        ({"AWS_REGION": "eu-west-3"}, "us-west-2", "us-west-2"),
    ],
)
def test_the_region_comes_from_aws_region_as_documented(
    monkeypatch: pytest.MonkeyPatch, env: dict[str, str], given: str | None, expected: str
) -> None:
    from openprogram.providers.bedrock import BedrockProvider

    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CONFIG_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    kwargs = {"region_name": given} if given else {}
    provider = BedrockProvider(
        base_url="http://127.0.0.1:9", aws_access_key_id="a", aws_secret_access_key="b", **kwargs
    )
    assert provider.client.meta.region_name == expected


def _reply(index: object = 0) -> bytes:
    """A whole Converse stream whose text block has ``contentBlockIndex`` ``index``."""
    return (
        event_frame("messageStart", {"role": "assistant"})
        + event_frame("contentBlockDelta", {"contentBlockIndex": index, "delta": {"text": "hi"}})
        + event_frame("contentBlockStop", {"contentBlockIndex": index})
        + event_frame("messageStop", {"stopReason": "end_turn"})
        + event_frame("metadata", {"usage": {"inputTokens": 1, "outputTokens": 1}})
    )


def _declares_16_mb() -> bytes:
    """A first event, then a message whose prelude declares 16 MB, then the body ends."""
    import struct
    import zlib

    prelude = struct.pack(">II", 16 * 1024 * 1024, 0)
    cut = prelude + struct.pack(">I", zlib.crc32(prelude)) + b"{}" * 10
    return event_frame("messageStart", {"role": "assistant"}) + cut


def _framed(body: bytes, chunks: bool) -> bytes:
    if chunks:
        head = http_head(200, {"Content-Type": EVENTS, "Transfer-Encoding": "chunked"})
        return head + chunked(body) + chunked(b"")
    return http_head(200, {"Content-Type": EVENTS, "Content-Length": str(len(body))}) + body


UNREADABLE = {
    "declares 16 MB, then ends": (_declares_16_mb(), "stream ended"),
    "contentBlockIndex 'x'": (_reply("x"), "contentBlockIndex is 'x', not an index"),
    "contentBlockIndex true": (_reply(True), "contentBlockIndex is True"),
    "contentBlockIndex -1": (_reply(-1), "contentBlockIndex is -1"),
    "contentBlockIndex 1.5": (_reply(1.5), "contentBlockIndex is 1.5"),
    "contentBlockIndex null": (_reply(None), "without contentBlockIndex"),  # botocore drops it
}


@pytest.mark.parametrize("chunks", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("case", list(UNREADABLE))
async def test_an_unreadable_stream_ends_in_an_error_and_its_connection_is_closed(
    case: str, chunks: bool
) -> None:
    """The connection of a stream that ended without its terminal events, or with a frame the
    parser refuses, is closed, not pooled (the server would hold it open for a next request
    that inherits whatever the last one left), after the terminal event and ``aclose()``."""
    body, expected = UNREADABLE[case]
    with LoopbackServer(lambda _request: [_framed(body, chunks)]) as server:
        provider = bedrock_at(server.url)  # (kept: a collected client closes its pool anyway)
        stream = provider.stream("m", CTX, StreamOptions())
        events = [event async for event in stream]
        await stream.aclose()  # type: ignore[attr-defined]
        final = events[-1].message
        assert final is not None and final.stop_reason == "error"
        assert expected in (final.error_message or ""), final.error_message
        assert await asyncio.to_thread(server.wait_closed, None, 3.0), "the socket stayed open"
        assert await asyncio.to_thread(gone_within, 3.0), bedrock_threads()


async def test_a_whole_stream_keeps_its_connection_for_the_next_call() -> None:
    with LoopbackServer(lambda _request: [_framed(_reply(), False)]) as server:
        provider = bedrock_at(server.url)  # (kept: its client owns the pool)
        stream = provider.stream("m", CTX, StreamOptions())
        events = [event async for event in stream]
        await stream.aclose()  # type: ignore[attr-defined]
        assert events[-1].type == "done"
        # pooled for the next call: only a stream that did not end whole is dropped
        assert not await asyncio.to_thread(server.wait_closed, None, 0.5)
