"""Test helpers: drive the real SDK clients through an ``httpx2.MockTransport``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from typing import Any

import httpx2

from openprogram.events import AssistantMessageEvent
from openprogram.providers import metered_transport
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import AssistantMessage
from tests.providers._helper import CTX

BASE = "http://127.0.0.1:9"  # loopback: the guard lets it through; MockTransport never connects


def sse(frames: Iterable[Any], *, done: bool = False, events: bool = False) -> bytes:
    """SSE body: each frame a dict (``data:`` JSON) or an (event, dict) pair."""
    parts: list[str] = []
    for frame in frames:
        if isinstance(frame, tuple):
            name, data = frame
            parts.append(f"event: {name}\ndata: {json.dumps(data)}\n\n")
        elif isinstance(frame, str):
            parts.append(frame)
        else:
            parts.append(f"data: {json.dumps(frame)}\n\n")
    if done:
        parts.append("data: [DONE]\n\n")
    return "".join(parts).encode()


class Recorder:
    """A MockTransport handler that answers with queued responses and keeps every request."""

    def __init__(
        self, *responses: httpx2.Response | Callable[[httpx2.Request], httpx2.Response]
    ) -> None:
        self.responses = list(responses)
        self.requests: list[httpx2.Request] = []

    @property
    def bodies(self) -> list[dict[str, Any]]:
        return [json.loads(r.content) for r in self.requests]

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        if not self.responses:
            raise AssertionError(f"unexpected extra request {request.method} {request.url}")
        response = self.responses.pop(0)
        return response(request) if callable(response) else response

    def client(self, *, metered: bool = True) -> httpx2.AsyncClient:
        """An HTTP client answered by this recorder; ``metered`` (as a user who gives an adapter
        their own SDK client and wants ``max_event_bytes`` to hold builds it) unless told not."""
        transport = httpx2.MockTransport(self)
        return httpx2.AsyncClient(transport=metered_transport(transport) if metered else transport)

    def sdk_options(self) -> dict[str, Any]:
        """Keyword options that send an official SDK client's requests to this recorder, with
        the SDK's own retries off (each queued response answers exactly one request)."""
        return {"base_url": BASE, "http_client": self.client(), "max_retries": 0}


def sse_response(
    body: bytes, status: int = 200, headers: dict[str, str] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        status, headers={"content-type": "text/event-stream", **(headers or {})}, content=body
    )


def json_response(
    data: Any, status: int = 200, headers: dict[str, str] | None = None
) -> httpx2.Response:
    return httpx2.Response(
        status,
        headers={"content-type": "application/json", **(headers or {})},
        content=json.dumps(data).encode(),
    )


async def collect(
    provider: Any,
    context: Context | None = None,
    options: StreamOptions | None = None,
    model: str = "m",
) -> tuple[list[AssistantMessageEvent], AssistantMessage]:
    events = [
        e async for e in provider.stream(model, context or Context(), options or StreamOptions())
    ]
    assert events[-1].is_terminal, [e.type for e in events]
    assert sum(e.is_terminal for e in events) == 1
    assert events[-1].message is not None
    return events, events[-1].message


async def stream_frames(
    factory: Callable[[Recorder, bool], Any],
    *frames: Any,
    done: bool = False,
    stream: bool = True,
    ctx: Context = CTX,
    opts: StreamOptions | None = None,
) -> tuple[Recorder, list[AssistantMessageEvent], AssistantMessage]:
    """Serve ``frames`` (see ``sse``; ``done`` ends the body with ``[DONE]``) as the one response
    to the adapter ``factory(recorder, stream)`` builds, and collect what it streams for ``ctx``."""
    rec = Recorder(sse_response(sse(frames, done=done)))
    events, message = await collect(factory(rec, stream), ctx, opts)
    return rec, events, message


def types(events: list[AssistantMessageEvent]) -> list[str]:
    return [e.type for e in events]


def block_types(kind: str, deltas: int = 1) -> list[str]:
    """The event types of one streamed ``kind`` block (``text``, ``thinking``, ``toolcall``):
    its start, ``deltas`` deltas, its end."""
    return [f"{kind}_start", *[f"{kind}_delta"] * deltas, f"{kind}_end"]


def chat_tool_call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    """A tool call as a Chat Completions assistant message carries it (arguments as JSON text)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def chat_provider(rec: Recorder, stream: bool = True) -> Any:
    import openai

    from openprogram.providers.openai_chat import OpenAIChatProvider

    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=BASE + "/v1", http_client=rec.client(), max_retries=0
    )
    return OpenAIChatProvider(client, stream=stream)


def responses_provider(rec: Recorder, stream: bool = True) -> Any:
    import openai

    from openprogram.providers.openai_responses import OpenAIResponsesProvider

    client = openai.AsyncOpenAI(
        api_key="sk-test", base_url=BASE + "/v1", http_client=rec.client(), max_retries=0
    )
    return OpenAIResponsesProvider(client, stream=stream)


def anthropic_provider(rec: Recorder, stream: bool = True) -> Any:
    import anthropic

    from openprogram.providers.anthropic import AnthropicProvider

    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-test", base_url=BASE, http_client=rec.client(), max_retries=0
    )
    return AnthropicProvider(client, stream=stream)


# The three adapters on their SDK clients over a MockTransport, by short name: the tables the
# error and header tests run every adapter through.
FACTORIES = {
    "chat": chat_provider,
    "responses": responses_provider,
    "anthropic": anthropic_provider,
}


class StallingStream(httpx2.AsyncByteStream):
    """A response body that sends ``first`` and then hangs until closed."""

    def __init__(self, first: bytes) -> None:
        self.first = first
        self.closed = False

    async def __aiter__(self):  # type: ignore[override]
        import asyncio

        yield self.first
        await asyncio.Event().wait()

    async def aclose(self) -> None:
        self.closed = True


# -- typed stream events (frames for ``sse``) ------------------------------------------------


def sse_event(kind: str, **fields: Any) -> tuple[str, dict[str, Any]]:
    """An (event, data) frame for ``sse`` whose data names its own type, as every event of
    Anthropic's Messages stream and of OpenAI's Responses stream does."""
    return kind, {"type": kind, **fields}


def anthropic_start(
    inp: int = 12, cache_read: int = 0, cache_write: int = 0
) -> tuple[str, dict[str, Any]]:
    """``message_start`` of an empty assistant message with this input usage."""
    return sse_event(
        "message_start",
        message={
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {
                "input_tokens": inp,
                "output_tokens": 1,
                "cache_read_input_tokens": cache_read,
                "cache_creation_input_tokens": cache_write,
            },
        },
    )


def anthropic_block(
    i: int, content_block: dict[str, Any], *deltas: dict[str, Any]
) -> list[tuple[str, dict[str, Any]]]:
    """Content block ``i``: its start, its ``deltas``, its stop."""
    return [
        sse_event("content_block_start", index=i, content_block=content_block),
        *[sse_event("content_block_delta", index=i, delta=d) for d in deltas],
        sse_event("content_block_stop", index=i),
    ]


def anthropic_text(i: int, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    return anthropic_block(
        i, {"type": "text", "text": ""}, *[{"type": "text_delta", "text": p} for p in pieces]
    )


def anthropic_tool(i: int, id: str, name: str, *pieces: str) -> list[tuple[str, dict[str, Any]]]:
    return anthropic_block(
        i,
        {"type": "tool_use", "id": id, "name": name, "input": {}},
        *[{"type": "input_json_delta", "partial_json": p} for p in pieces],
    )


def anthropic_end(stop_reason: str = "end_turn", out: int = 7) -> list[tuple[str, dict[str, Any]]]:
    """``message_delta`` with the stop reason and output usage, then ``message_stop``."""
    return [
        sse_event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": out},
        ),
        sse_event("message_stop"),
    ]
