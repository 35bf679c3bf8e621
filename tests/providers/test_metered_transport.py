"""The stream bound through the HTTP libraries' own transport API: a response made inside a
pump is metered and closed with the pump, one made outside passes through untouched, both
``httpx2`` and ``httpx`` transports are metered, a given SDK client that cannot be metered is
said to be so (once), and no module of either package installs an interpreter-wide hook."""

from __future__ import annotations

import ast
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from openprogram.providers import UnmeteredStreamWarning, metered_transport
from openprogram.providers._http import EventTooLarge, pump_scope
from tests.providers._adapters_http import Recorder, chat_provider, collect, sse_response
from tests.providers._helper import CTX
from tests.providers._loopback import LoopbackServer, chunked, http_head

ROOT = Path(__file__).resolve().parents[2]


def endless(library: Any, piece: bytes, count: int) -> Any:
    class Body(library.AsyncByteStream):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self.sent = 0
            self.closed = False

        async def __aiter__(self) -> AsyncIterator[bytes]:
            for _ in range(count):
                self.sent += len(piece)
                yield piece

        async def aclose(self) -> None:
            self.closed = True

    return Body()


@pytest.mark.parametrize("name", ["httpx2", "httpx"])
async def test_each_http_library_is_metered_and_closed_with_the_pump(name: str) -> None:
    library = pytest.importorskip(name)
    body = endless(library, b"x" * 1000, 1000)
    transport = metered_transport(
        library.MockTransport(lambda r: library.Response(200, stream=body))
    )
    async with library.AsyncClient(transport=transport) as client:
        with pytest.raises(EventTooLarge):
            async with pump_scope(10_000):
                response = await client.send(
                    client.build_request("GET", "http://127.0.0.1:9/"), stream=True
                )
                async for _ in response.aiter_raw():
                    pass
    assert 10_000 < body.sent <= 12_000  # stopped within one read of the limit
    assert body.closed  # the pump closed what it opened


async def test_outside_a_pump_a_response_passes_through_untouched() -> None:
    """A request no pump made gets the inner transport's own response; inside a pump the same
    transport answers with a metered one (so the first assertion can tell the two apart)."""
    inner = httpx2.MockTransport(lambda r: httpx2.Response(200, stream=endless(httpx2, b"y", 3)))
    answered: list[httpx2.Response] = []

    async def handle(request: httpx2.Request) -> httpx2.Response:
        answered.append(await inner.handle_async_request(request))
        return answered[-1]

    wrapped = metered_transport(inner)
    wrapped.inner = type("Spy", (), {"handle_async_request": staticmethod(handle)})()
    request = httpx2.Request("GET", "http://127.0.0.1:9/")
    assert await wrapped.handle_async_request(request) is answered[-1]
    async with pump_scope(10) as scope:
        metered = await wrapped.handle_async_request(request)
        assert metered is not answered[-1] and scope.opened == [metered]


def test_a_transport_of_no_known_library_is_refused_with_its_type() -> None:
    with pytest.raises(TypeError, match="httpx2 or httpx async transport, got object"):
        metered_transport(object())


async def test_a_given_client_that_cannot_be_metered_is_said_once() -> None:
    def frames() -> bytes:
        chunk = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        done = {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        return b"".join(f"data: {__import__('json').dumps(f)}\n\n".encode() for f in (done,))

    rec = Recorder(sse_response(frames()), sse_response(frames()))
    provider = chat_provider(rec)
    provider._client = __import__("openai").AsyncOpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", http_client=rec.client(metered=False)
    )
    with pytest.warns(
        UnmeteredStreamWarning, match=r"OpenAIChatProvider: max_event_bytes cannot bound"
    ):
        await collect(provider, CTX)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await collect(provider, CTX)  # said once per provider, not per call


async def test_no_bound_asked_nothing_said() -> None:
    rec = Recorder(sse_response(b"data: [DONE]\n\n"))
    provider = chat_provider(rec)
    provider.max_event_bytes = None
    provider._client = __import__("openai").AsyncOpenAI(
        api_key="sk-test", base_url="http://127.0.0.1:9/v1", http_client=rec.client(metered=False)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        await collect(provider, CTX)


def never_completing(_request: bytes) -> Iterator[bytes]:
    yield http_head(200, {"Content-Type": "text/event-stream", "Transfer-Encoding": "chunked"})
    for _ in range(400):  # 400 KiB of one data line that never ends
        yield chunked(b"x" * 1024)
    yield chunked(b"")


ADAPTER_URLS = {
    "OpenAIChatProvider": "{url}/v1",
    "OpenAIResponsesProvider": "{url}/v1",
    "AnthropicProvider": "{url}",
    "GeminiProvider": "{url}",
}


@pytest.mark.parametrize("adapter", list(ADAPTER_URLS))
async def test_a_client_the_adapter_builds_is_metered(adapter: str) -> None:
    """An adapter that builds its own SDK client puts it on a metered transport: the bound holds
    on a real socket with no work by the user, and the connection is let go."""
    import openprogram.providers as providers

    with LoopbackServer(never_completing) as server:
        provider = getattr(providers, adapter)(
            api_key="k",
            base_url=ADAPTER_URLS[adapter].format(url=server.url),
            max_event_bytes=65536,
        )
        async with provider:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                _, message = await collect(provider, CTX)
        assert (
            message.error_message
            == "stream event over 65536 bytes: no complete event in 65536 bytes"
        )
        assert server.wait_closed()


INTERPRETER_HOOKS = {
    "set_asyncgen_hooks",
    "settrace",
    "setprofile",
    "addaudithook",
    "set_coroutine_origin_tracking_depth",
    "excepthook",
    "unraisablehook",
    "displayhook",
}


def test_no_module_installs_an_interpreter_wide_hook() -> None:
    """The byte bound and the closing of a call's responses go through transports the adapters
    build; nothing in either package sets a hook for the whole interpreter."""
    found = []
    for package in ("openprogram", "openprogram_testing"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Attribute) and node.attr in INTERPRETER_HOOKS:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.attr}")
    assert found == []
