"""GeminiProvider against hostile 200 streams on a real loopback socket: whatever a chunk
holds, the turn ends in one terminal event, the adapter lets go of the connection it opened,
and nothing is left for the event loop's shutdown."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.providers.base import Context, StreamOptions
from openprogram.types import AssistantMessage, UserMessage
from tests.providers._loopback import LoopbackServer, chunked, http_head

CTX = Context(messages=[UserMessage(content="hi")])
SSE = {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"}


def good_chunk() -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": "par"}]}, "index": 0}],
        "responseId": "r1",
    }


class Session:
    """One loopback server and one google-genai client for a whole test (building a client
    costs ~0.1 s); each run gets its own event loop, as ``asyncio.run`` gives it."""

    def __init__(self) -> None:
        from google import genai

        self.body: list[bytes] = []
        self.server = LoopbackServer(self._answer)
        from openprogram.providers import metered_transport

        options = {"async_client_args": {"transport": metered_transport()}}
        self.client = genai.Client(
            api_key="test-key",
            http_options={"base_url": self.server.url, "timeout": 5000, **options},
        )

    def _answer(self, _request: bytes) -> Iterator[bytes]:
        yield http_head(200, SSE)
        for piece in self.body:
            yield chunked(piece)  # and never the last chunk: the body stays open

    def run(self, *chunks: Any) -> tuple[str, AssistantMessage, bool, list[dict[str, Any]]]:
        """Stream one turn over ``chunks`` (dicts as JSON, bytes as they are); returns the
        terminal event's type, its message, whether the server saw the connection closed, and
        what the loop's exception handler received, shutdown included."""
        from openprogram.providers.gemini import GeminiProvider

        self.body = [
            c if isinstance(c, bytes) else f"data: {json.dumps(c)}\r\n\r\n".encode() for c in chunks
        ]
        reported: list[dict[str, Any]] = []

        async def turn() -> tuple[str, AssistantMessage, bool]:
            loop = asyncio.get_running_loop()
            loop.set_exception_handler(lambda _loop, context: reported.append(context))
            provider = GeminiProvider(self.client)
            events = [e async for e in provider.stream("gemini-2.5-flash", CTX, StreamOptions())]
            closed = await asyncio.to_thread(self.server.wait_closed)
            terminal = events[-1]
            assert terminal.message is not None
            return terminal.type, terminal.message, closed

        kind, message, closed = asyncio.run(turn())
        return kind, message, closed, reported


@pytest.fixture(scope="module")
def session() -> Iterator[Session]:
    s = Session()
    yield s
    s.server.__exit__()


def with_part(part: dict[str, Any]) -> dict[str, Any]:
    chunk = good_chunk()
    chunk["candidates"][0]["content"]["parts"] = [part]
    return chunk


def with_field(**fields: Any) -> dict[str, Any]:
    return {**good_chunk(), **fields}


ERROR_DOCUMENT = {"error": {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}}
SHAPES = {
    "error document": [good_chunk(), ERROR_DOCUMENT],
    "parts not a list": [{"candidates": [{"content": {"role": "model", "parts": "nope"}}]}],
    "call args not an object": [with_part({"functionCall": {"name": "add", "args": [1]}})],
    "call name not a string": [with_part({"functionCall": {"name": 5, "args": {}}})],
    "text not a string": [with_part({"text": 5})],
    "bad thought signature": [with_part({"text": "x", "thoughtSignature": "!!!"})],
    "usage not numbers": [with_field(usageMetadata={"promptTokenCount": "many"})],
    "usage not an object": [with_field(usageMetadata=[1])],
    "finish reason not a string": [
        {"candidates": [{"content": {"role": "model", "parts": []}, "finishReason": 5}]}
    ],
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_an_error_inside_a_200_stream_closes_the_connection(session: Session, shape: str) -> None:
    kind, message, closed, reported = session.run(*SHAPES[shape])
    assert kind == "error" and message.stop_reason == "error"
    assert closed, "the connection stayed open after the error event"
    assert reported == []  # e.g. "an error occurred during closing of asynchronous generator"


def _wrong(kind: str) -> st.SearchStrategy[Any]:
    """Values no field of kind ``kind`` accepts (nor coerces)."""
    letters = st.text(alphabet="abcxyz", min_size=1, max_size=8)
    containers = st.one_of(st.lists(st.integers(), max_size=2), st.just({"k": 1}))
    if kind == "str":
        return st.one_of(st.integers(), containers)
    if kind == "int":
        return st.one_of(letters, containers)
    if kind == "object":
        return st.one_of(letters, st.integers(), st.lists(st.integers(), max_size=2))
    if kind == "list":
        return st.one_of(letters, st.integers(), st.just({"k": 1}))
    if kind == "base64":
        return st.one_of(letters.map(lambda t: t + "!"), st.integers(), containers)
    return st.one_of(containers)  # bool


def _mutated(path: str, value: Any) -> dict[str, Any]:
    chunk = good_chunk()
    candidate = chunk["candidates"][0]
    part = candidate["content"]["parts"][0]
    where = {
        "parts": (candidate["content"], "parts"),
        "content": (candidate, "content"),
        "role": (candidate["content"], "role"),
        "index": (candidate, "index"),
        "finishReason": (candidate, "finishReason"),
        "text": (part, "text"),
        "thought": (part, "thought"),
        "thoughtSignature": (part, "thoughtSignature"),
        "usageMetadata": (chunk, "usageMetadata"),
        "responseId": (chunk, "responseId"),
    }
    if path in where:
        holder, key = where[path]
        holder[key] = value
    elif path in ("args", "name"):
        call = {"name": "add", "args": {}, path: value}
        candidate["content"]["parts"] = [{"functionCall": call}]
    else:  # a usage count
        chunk["usageMetadata"] = {path: value}
    return chunk


FIELDS = {
    "parts": "list",
    "content": "object",
    "role": "str",
    "index": "int",
    "finishReason": "str",
    "text": "str",
    "thought": "bool",
    "thoughtSignature": "base64",
    "usageMetadata": "object",
    "responseId": "str",
    "args": "object",
    "name": "str",
    "promptTokenCount": "int",
    "candidatesTokenCount": "int",
    "thoughtsTokenCount": "int",
}
wrong_chunks = st.sampled_from(sorted(FIELDS)).flatmap(
    lambda path: _wrong(FIELDS[path]).map(lambda value: _mutated(path, value))
)
error_documents = st.builds(
    lambda code, text: {"error": {"code": code, "message": text, "status": "X"}},
    st.integers(400, 599),
    st.text(max_size=20),
)


@settings(max_examples=30, deadline=None)
@given(lead=st.booleans(), bad=st.one_of(wrong_chunks, error_documents))
def test_any_rejected_chunk_ends_the_turn_and_frees_the_socket(
    session: Session, lead: bool, bad: dict[str, Any]
) -> None:
    chunks = [good_chunk(), bad] if lead else [bad]
    kind, message, closed, reported = session.run(*chunks)
    assert kind == "error" and "timed out" not in (message.error_message or "")
    assert closed and reported == []
