"""What the adapters do around an SDK's HTTP responses, whatever the SDK: bound what an SDK may
buffer while an event is incomplete, close every response a call opened, and read an error
body whatever its bytes.

All of it goes through the HTTP libraries' documented transport API: the adapters build their SDK
clients on a transport from :func:`metered_transport`, which wraps each response's byte stream in
one that counts against the current pump's :class:`PumpScope` (a context variable set by
:func:`pump_scope` in the pump task).  Nothing here touches an SDK's or an HTTP library's
private attributes or installs an interpreter-wide hook.
"""

from __future__ import annotations

import codecs
import contextlib
import contextvars
import importlib
import warnings
from collections.abc import AsyncIterator
from typing import Any

__all__ = [
    "MAX_EVENT_BYTES",
    "EventTooLarge",
    "PumpScope",
    "UnmeteredStreamWarning",
    "http_library",
    "metered_transport",
    "pump_scope",
    "readable_text",
]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Bytes a stream may send without completing an event (16 MiB) before the turn ends in an
error: an SDK holds an incomplete event in memory, so a server that never completes one (``data:``
lines without the blank line, an unbalanced ``{``) would otherwise grow it without bound.  Far
above any real event (Gemini's largest, an inline image, is a few MiB)."""

_LIBRARIES = ("httpx2", "httpx")
"""The HTTP libraries the SDKs run on, newest first: their transport API is the same."""


class EventTooLarge(Exception):
    """A stream sent more than ``limit`` bytes without completing an event."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"stream event over {limit} bytes: no complete event in {limit} bytes")
        self.limit = limit


class UnmeteredStreamWarning(UserWarning):
    """A provider with ``max_event_bytes`` streamed through an HTTP client whose transport does
    not meter: the bound cannot hold for that client (build it on :func:`metered_transport`, or
    pass ``max_event_bytes=None`` to say no bound is wanted)."""


class PumpScope:
    """One pump's SDK call: the responses its requests opened (``opened``, oldest first, each
    closed when the scope ends), the last HTTP error response (``failed``), and how many raw
    bytes arrived since the SDK last delivered an item (``pending``, bounded by ``limit``)."""

    __slots__ = ("failed", "limit", "opened", "pending")

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.pending = 0
        self.opened: list[Any] = []
        self.failed: Any = None

    @property
    def metered(self) -> bool:
        """Whether a response of this call went through a metered transport."""
        return bool(self.opened)

    def delivered(self) -> None:
        """The SDK handed out an item: whatever it buffered is now an event."""
        self.pending = 0

    def read(self, size: int) -> None:
        """The SDK asks for ``size`` more bytes.  Refused once what it already holds without
        completing an event is over the limit: checked before the piece is added, so one network
        read holding many complete events is never cut, and a stream that never completes one
        stops within one read of the limit."""
        if self.limit is not None and self.pending > self.limit:
            raise EventTooLarge(self.limit)
        self.pending += size


_SCOPE: contextvars.ContextVar[PumpScope | None] = contextvars.ContextVar(
    "openprogram_pump_scope", default=None
)


@contextlib.asynccontextmanager
async def pump_scope(limit: int | None = None) -> AsyncIterator[PumpScope]:
    """Run a pump's SDK call: every response a metered transport opens inside the block counts
    its raw bytes against ``limit`` (past it, reading raises :class:`EventTooLarge`) and is closed
    when the block ends, newest first.

    Closing: when a layer in the middle of an SDK's stream stack raises (an error document, a
    chunk its own types reject), the layers beneath it stay suspended with the HTTP response open
    until the client is closed.  Closing the response here releases the connection at once,
    whatever the SDK left suspended; closing an already closed response does nothing."""
    scope = PumpScope(limit)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
        for response in reversed(scope.opened):
            with contextlib.suppress(Exception):
                await response.aclose()
        scope.opened.clear()


def warn_unmetered(provider: str) -> None:
    """Say once per call site that a bound was asked for and cannot hold (see
    :class:`UnmeteredStreamWarning`)."""
    warnings.warn(
        f"{provider}: max_event_bytes cannot bound this stream: the SDK client was given with an "
        "HTTP client whose transport does not meter; build that HTTP client with "
        "transport=openprogram.providers.metered_transport(...), or pass max_event_bytes=None",
        UnmeteredStreamWarning,
        stacklevel=2,
    )


def http_library(value: object) -> Any | None:
    """The HTTP library module (``httpx2`` or ``httpx``) that ``value`` (a client, a transport, a
    response, or a class of one) belongs to, else ``None``."""
    mro = value.__mro__ if isinstance(value, type) else type(value).__mro__
    roots = {cls.__module__.split(".")[0] for cls in mro}
    for name in _LIBRARIES:
        if name in roots:
            return importlib.import_module(name)
    return None


def metered_transport(inner: Any = None, *, library: str | None = None) -> Any:
    """A transport that sends through ``inner`` (an ``httpx2``/``httpx`` async transport; by
    default the library's own ``AsyncHTTPTransport()``) and meters each response's raw bytes
    against the pump that made the request.

    Outside a pump (a request no adapter made) it passes responses through untouched.  Build an
    HTTP client on it when you give an adapter your own SDK client and want ``max_event_bytes``
    to hold, e.g. ``openai.AsyncOpenAI(http_client=httpx2.AsyncClient(transport=
    metered_transport()))``.  ``library`` picks the HTTP library when ``inner`` is ``None``
    (default: ``httpx2`` if installed, else ``httpx``)."""
    module = http_library(inner) if inner is not None else _library(library)
    if module is None:
        kind = type(inner).__name__
        raise TypeError(f"metered_transport needs an httpx2 or httpx async transport, got {kind}")
    cls = _TRANSPORTS.get(module.__name__)
    if cls is None:
        cls = _TRANSPORTS[module.__name__] = _transport_class(module)
    return cls(inner if inner is not None else module.AsyncHTTPTransport())


def _library(name: str | None) -> Any:
    for candidate in (name,) if name else _LIBRARIES:
        try:
            return importlib.import_module(candidate)
        except ImportError:
            continue
    raise ModuleNotFoundError(f"no HTTP library: install {name or 'httpx2'}")


_TRANSPORTS: dict[str, type] = {}


def _transport_class(module: Any) -> type:
    """The metered transport and byte stream for one HTTP library (both subclass its documented
    base classes, as its custom-transport guide shows)."""

    class MeteredStream(module.AsyncByteStream):  # type: ignore[misc]
        """``inner``'s bytes, each piece counted against ``scope``'s limit."""

        def __init__(self, inner: Any, scope: PumpScope) -> None:
            self.inner = inner
            self.scope = scope

        async def __aiter__(self) -> AsyncIterator[bytes]:
            async for piece in self.inner:
                self.scope.read(len(piece))
                yield piece

        async def aclose(self) -> None:
            await self.inner.aclose()

    class MeteredTransport(module.AsyncBaseTransport):  # type: ignore[misc]
        """Sends through ``inner``; a response made inside a pump is metered and recorded."""

        def __init__(self, inner: Any) -> None:
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            response = await self.inner.handle_async_request(request)
            scope = _SCOPE.get()
            if scope is None:
                return response
            metered = module.Response(
                response.status_code,
                headers=response.headers,
                stream=MeteredStream(response.stream, scope),
                extensions=response.extensions,
                request=request,
            )
            scope.opened.append(metered)
            if metered.status_code >= 400:
                scope.failed = metered
            return metered

        async def aclose(self) -> None:
            await self.inner.aclose()

    MeteredTransport.__qualname__ = MeteredTransport.__name__ = (
        f"MeteredTransport[{module.__name__}]"
    )
    return MeteredTransport


_BOMS = (
    (codecs.BOM_UTF32_LE, "utf-32"),
    (codecs.BOM_UTF32_BE, "utf-32"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)


def readable_text(body: bytes, charset: str | None = None) -> str:
    """An HTTP body as text, whatever its bytes: UTF-8 (a byte-order mark dropped), else the
    charset the response declared, else Latin-1 (which reads any bytes); a UTF-16/32 byte-order
    mark names its encoding.  An error body is read for its message only; how it is encoded must
    never cost the error its status."""
    marked = next((name for bom, name in _BOMS if body.startswith(bom)), None)
    for encoding in (marked, "utf-8-sig", charset):
        if encoding:
            try:
                return body.decode(encoding)
            except (LookupError, UnicodeDecodeError):
                continue
    return body.decode("latin-1")
