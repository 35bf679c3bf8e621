"""Test helpers: drive the real google-genai and botocore clients without a network.

google-genai takes an ``httpx2.AsyncClient`` (``http_options.httpx_async_client``): the
``Recorder`` of ``_adapters_http`` answers it.  botocore is fed through its own ``before-send``
hook, which may return the HTTP response instead of sending the request: ``BedrockStub`` answers
with queued responses whose raw body is a urllib3 response (what botocore reads event streams
from), so botocore's real parsing, event-stream decoding and error handling all run.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from tests.providers._adapters_http import BASE, Recorder

# -- Gemini ---------------------------------------------------------------------------------


def gemini_provider(
    rec: Recorder, stream: bool = True, *, vertex: bool = False, api_version: str | None = None
) -> Any:
    from google import genai

    from openprogram.providers.gemini import GeminiProvider

    version = api_version or ("v1beta1" if vertex else "v1beta")
    options = {"base_url": BASE, "api_version": version, "httpx_async_client": rec.client()}
    if vertex:
        from google.oauth2.credentials import Credentials

        client = genai.Client(
            vertexai=True,
            project="test-project",
            location="test-location",
            credentials=Credentials(token="test-token"),
            http_options=options,
        )
    else:
        client = genai.Client(api_key="test-key", http_options=options)
    return GeminiProvider(client, stream=stream)


def gemini_at(base_url: str, **kw: Any) -> Any:
    """A ``GeminiProvider`` that builds its own client against ``base_url`` (an emulator, or a
    dead address while a cassette answers) with a test key."""
    from openprogram.providers.gemini import GeminiProvider

    return GeminiProvider(api_key="test-key", base_url=base_url, **kw)


def gemini_sse(chunks: Iterable[dict[str, Any] | str]) -> bytes:
    """Gemini's SSE: ``data:`` lines with CRLF endings, no end sentinel."""
    return b"".join(
        (c if isinstance(c, str) else f"data: {json.dumps(c)}\r\n\r\n").encode() for c in chunks
    )


def gemini_chunk(
    parts: list[dict[str, Any]],
    finish: str | None = None,
    usage: tuple[int, int] | None = None,
    response_id: str = "resp1",
    **extra: Any,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    chunk: dict[str, Any] = {
        "candidates": [candidate],
        "responseId": response_id,
        "modelVersion": "m",
    }
    if usage:
        chunk["usageMetadata"] = {
            "promptTokenCount": usage[0],
            "candidatesTokenCount": usage[1],
            "totalTokenCount": sum(usage),
        }
    chunk.update(extra)
    return chunk


# -- AWS event stream ------------------------------------------------------------------------


def event_frame(
    event_type: str,
    payload: dict[str, Any],
    *,
    message_type: str = "event",
    corrupt_crc: bool = False,
) -> bytes:
    """One AWS event-stream message (the harness's framing: prelude, typed string headers, JSON
    payload with Bedrock's ``p`` padding, CRCs)."""
    from openprogram_testing.transport.wire.eventstream import encode_message

    type_header = ":exception-type" if message_type == "exception" else ":event-type"
    headers = {
        ":message-type": message_type,
        type_header: event_type,
        ":content-type": "application/json",
    }
    body = json.dumps({**payload, "p": "abcdefgh"}).encode()
    return encode_message(headers, body, bad_crc=corrupt_crc)


def event_stream(events: Iterable[tuple[str, dict[str, Any]]]) -> bytes:
    return b"".join(event_frame(name, payload) for name, payload in events)


def converse_events(
    blocks: list[tuple[str, Any]],
    stop: str = "end_turn",
    usage: tuple[int, int] = (10, 5),
    *,
    metadata: bool = True,
) -> list[tuple[str, dict[str, Any]]]:
    """Events of one converse-stream message.  ``blocks``: ("text", str), ("tool", (id, name,
    [fragments])), ("reasoning", (text, signature))."""
    out: list[tuple[str, dict[str, Any]]] = [("messageStart", {"role": "assistant"})]
    for i, (kind, value) in enumerate(blocks):
        if kind == "text":
            out.append(("contentBlockDelta", {"contentBlockIndex": i, "delta": {"text": value}}))
        elif kind == "reasoning":
            text, signature = value
            out.append(
                (
                    "contentBlockDelta",
                    {"contentBlockIndex": i, "delta": {"reasoningContent": {"text": text}}},
                )
            )
            out.append(
                (
                    "contentBlockDelta",
                    {
                        "contentBlockIndex": i,
                        "delta": {"reasoningContent": {"signature": signature}},
                    },
                )
            )
        else:
            call_id, name, fragments = value
            out.append(
                (
                    "contentBlockStart",
                    {
                        "contentBlockIndex": i,
                        "start": {"toolUse": {"toolUseId": call_id, "name": name}},
                    },
                )
            )
            for fragment in fragments:
                out.append(
                    (
                        "contentBlockDelta",
                        {"contentBlockIndex": i, "delta": {"toolUse": {"input": fragment}}},
                    )
                )
        out.append(("contentBlockStop", {"contentBlockIndex": i}))
    out.append(("messageStop", {"stopReason": stop}))
    if metadata:
        out.append(
            (
                "metadata",
                {
                    "usage": {
                        "inputTokens": usage[0],
                        "outputTokens": usage[1],
                        "totalTokens": sum(usage),
                    },
                    "metrics": {"latencyMs": 1},
                },
            )
        )
    return out


# -- botocore stub ---------------------------------------------------------------------------


class RawBody:
    """What botocore reads a response body from (``stream()``/``read()``/``close()``): the
    given pieces, then optionally an exception or a stall until closed."""

    def __init__(
        self, pieces: Iterable[bytes], *, then: BaseException | None = None, stall: bool = False
    ) -> None:
        self.pieces = list(pieces)
        self.then = then
        self.stall = stall
        self.closed = threading.Event()

    def stream(self, amt: int = 1024, decode_content: bool | None = None) -> Iterator[bytes]:
        for piece in self.pieces:
            if self.closed.is_set():
                return
            yield piece
        if self.then is not None:
            raise self.then
        if self.stall:
            self.closed.wait(30)
            if self.closed.is_set():
                import urllib3

                raise urllib3.exceptions.ProtocolError("connection closed")

    def read(self, amt: int | None = None) -> bytes:
        return b"".join(self.stream())

    def close(self) -> None:
        self.closed.set()


class Reply:
    def __init__(
        self,
        status: int = 200,
        body: bytes | RawBody = b"",
        headers: dict[str, str] | None = None,
        *,
        stream: bool = True,
    ) -> None:
        self.status = status
        self.raw = body if isinstance(body, RawBody) else RawBody([body])
        ctype = (
            "application/vnd.amazon.eventstream" if stream and status == 200 else "application/json"
        )
        self.headers = {"content-type": ctype, "x-amzn-requestid": "req-1", **(headers or {})}


def json_reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode(), headers, stream=False)


def aws_error(
    status: int, code: str | None, message: str, headers: dict[str, str] | None = None
) -> Reply:
    extra = dict(headers or {})
    if code:
        extra["x-amzn-ErrorType"] = f"{code}:http://internal.amazon.com/coral/com.amazon.bedrock/"
    return Reply(status, json.dumps({"message": message}).encode(), extra, stream=False)


_SESSION: Any = None


class BedrockStub:
    """Answers a botocore ``bedrock-runtime`` client's requests with queued replies (or a
    callable, or an exception to raise) and keeps every request sent."""

    def __init__(self, *replies: Reply | BaseException | Callable[[Any], Reply]) -> None:
        self.replies = list(replies)
        self.requests: list[Any] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.body) for r in self.requests]

    def __call__(self, request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        self.requests.append(request)
        if not self.replies:
            raise AssertionError(f"unexpected extra request {request.url}")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply) and not isinstance(reply, Reply):
            reply = reply(request)
        return AWSResponse(request.url, reply.status, reply.headers, reply.raw)

    def client(self, endpoint: str = BASE, **config: Any) -> Any:
        import boto3
        from botocore.config import Config

        global _SESSION
        if _SESSION is None:  # one session: its loader caches the service model (slow to load)
            _SESSION = boto3.session.Session()
        client = _SESSION.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=endpoint,
            aws_access_key_id="AKIDTESTTEST",
            aws_secret_access_key="test-secret",
            config=Config(retries={"total_max_attempts": 1}, **config),
        )
        client.meta.events.register("before-send.bedrock-runtime.*", self)
        return client


def bedrock_provider(stub: BedrockStub, stream: bool = True) -> Any:
    from openprogram.providers.bedrock import BedrockProvider

    return BedrockProvider(stub.client(), stream=stream)


def bedrock_at(base_url: str, **kw: Any) -> Any:
    """A ``BedrockProvider`` that builds its own botocore client against ``base_url`` with test
    credentials; ``timeout`` (seconds) becomes botocore's read and connect timeouts."""
    from botocore.config import Config

    from openprogram.providers.bedrock import BedrockProvider

    timeout = kw.pop("timeout", None)
    config = Config(read_timeout=timeout, connect_timeout=timeout) if timeout else None
    return BedrockProvider(
        base_url=base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="test-secret",
        config=config,
        **kw,
    )


def raw_pieces(data: bytes, size: int) -> RawBody:
    return RawBody([data[i : i + size] for i in range(0, len(data), size)])


__all__ = [
    "BASE",
    "BedrockStub",
    "RawBody",
    "Reply",
    "aws_error",
    "bedrock_provider",
    "converse_events",
    "event_frame",
    "event_stream",
    "gemini_chunk",
    "gemini_provider",
    "gemini_sse",
    "json_reply",
    "raw_pieces",
]
