"""Every adapter, streaming or not: an HTTP error keeps its status and retry hints whatever its
body holds (Latin-1, UTF-16, a byte-order mark, bytes that are no text at all), and its message
is read from the body whatever the encoding."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram.types import AssistantMessage
from tests.providers._adapters_http import (
    Recorder,
    anthropic_provider,
    chat_provider,
    collect,
    responses_provider,
)
from tests.providers._google_aws import BedrockStub, Reply, bedrock_provider, gemini_provider
from tests.providers._helper import CTX

ADAPTERS = ["openai-chat", "openai-responses", "anthropic", "gemini", "bedrock"]
HTTP_MAKERS: dict[str, Callable[[Recorder, bool], Any]] = {
    "openai-chat": chat_provider,
    "openai-responses": responses_provider,
    "anthropic": anthropic_provider,
    "gemini": gemini_provider,
}


class Endpoint:
    """One adapter on a queue of answers (its client is built once: building costs more than
    a call)."""

    def __init__(self, adapter: str, stream: bool) -> None:
        self.adapter = adapter
        if adapter == "bedrock":
            self.stub = BedrockStub()
            self.provider = bedrock_provider(self.stub, stream)
        else:
            self.rec = Recorder()
            self.provider = HTTP_MAKERS[adapter](self.rec, stream)

    def error(self, status: int, body: bytes, headers: dict[str, str]) -> AssistantMessage:
        if self.adapter == "bedrock":
            self.stub.replies.append(Reply(status, body, headers, stream=False))
        else:
            self.rec.responses.append(httpx2.Response(status, headers=headers, content=body))
        _, message = asyncio.run(collect(self.provider, CTX))
        return message


_ENDPOINTS: dict[tuple[str, bool], Endpoint] = {}


def endpoint(adapter: str, stream: bool) -> Endpoint:
    key = (adapter, stream)
    if key not in _ENDPOINTS:
        _ENDPOINTS[key] = Endpoint(adapter, stream)
    return _ENDPOINTS[key]


def error_document(text: str) -> dict[str, Any]:
    """An error body each API reads its message from (Google's and Anthropic's ``error``
    object, OpenAI's and Bedrock's top-level ``message``)."""
    return {
        "message": text,
        "error": {
            "code": 429,
            "message": text,
            "status": "RESOURCE_EXHAUSTED",
            "type": "rate_limit_error",
        },
    }


ENCODINGS = ["utf-8", "utf-8-sig", "latin-1", "cp1252", "utf-16", "utf-32", "shift_jis"]
words = st.sampled_from(["Quota épuisée", "Überlastet – später", "レート制限", "limit"])
texts = st.one_of(words, st.text(max_size=30))
bodies = st.one_of(
    st.builds(
        lambda text, as_json, encoding: (
            json.dumps(error_document(text), ensure_ascii=False) if as_json else text
        ).encode(encoding, "replace"),
        texts,
        st.booleans(),
        st.sampled_from(ENCODINGS),
    ),
    st.binary(max_size=64),
)
LIMITED = {"content-type": "application/json", "retry-after": "7"}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "once"])
@pytest.mark.parametrize("adapter", ADAPTERS)
@settings(max_examples=12, deadline=None)
@given(body=bodies)
def test_an_http_error_keeps_its_status_and_retry_hints_whatever_its_body(
    adapter: str, stream: bool, body: bytes
) -> None:
    message = endpoint(adapter, stream).error(429, body, LIMITED)
    assert message.stop_reason == "error"
    assert (message.error_status, message.error_retryable, message.error_retry_after_s) == (
        429,
        True,
        7.0,
    ), message.error_message
    assert (message.error_message or "").startswith("HTTP 429")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "once"])
@pytest.mark.parametrize("adapter", ["gemini", "bedrock"])
def test_a_latin1_error_body_keeps_its_message(adapter: str, stream: bool) -> None:
    body = json.dumps(error_document("Quota épuisée"), ensure_ascii=False).encode("latin-1")
    message = endpoint(adapter, stream).error(429, body, LIMITED)
    assert "Quota épuisée" in (message.error_message or "")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "once"])
@pytest.mark.parametrize("adapter", ADAPTERS)
def test_a_byte_order_mark_does_not_hide_the_error_document(adapter: str, stream: bool) -> None:
    body = b"\xef\xbb\xbf" + json.dumps(error_document("Quota épuisée")).encode()
    message = endpoint(adapter, stream).error(429, body, LIMITED)
    assert (message.error_message or "").endswith(": Quota épuisée"), message.error_message


@pytest.mark.parametrize("encoding", ["latin-1", "utf-16"])
def test_gemini_reads_the_retry_delay_of_a_body_in_any_encoding(encoding: str) -> None:
    document = error_document("Quota épuisée")
    document["error"]["details"] = [
        {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "12s"}
    ]
    body = json.dumps(document, ensure_ascii=False).encode(encoding)
    message = endpoint("gemini", True).error(429, body, {"content-type": "application/json"})
    assert (message.error_status, message.error_retry_after_s) == (429, 12.0)
