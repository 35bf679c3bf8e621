"""What the adapters do around an SDK's HTTP responses, whatever the SDK: close everything a
call opened, bound what an SDK may buffer while an event is incomplete, and read an error
body whatever its bytes.

None of this reaches into an SDK's internals.  A pump task runs inside a :func:`pump_scope`,
which records the async generators the task starts (the thread's ``firstiter`` hook, chained to
the event loop's own) — an SDK's stream is a stack of them — and, for a streaming call, meters
the raw bytes of every ``httpx``/``httpx2`` response the task starts reading.
"""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import contextvars
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from typing import Any

__all__ = [
    "MAX_EVENT_BYTES",
    "EventTooLarge",
    "PumpScope",
    "failed_response",
    "pump_scope",
    "readable_text",
]

MAX_EVENT_BYTES = 16 * 1024 * 1024
"""Bytes a stream may send without completing an event (16 MiB) before the turn ends in an
error: an SDK holds an incomplete event in memory, so a server that never completes one (``data:``
lines without the blank line, an unbalanced ``{``) would otherwise grow it without bound.  Far
above any real event (Gemini's largest, an inline image, is a few MiB)."""


class EventTooLarge(Exception):
    """A stream sent more than ``limit`` bytes without completing an event."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"stream event over {limit} bytes: no complete event in {limit} bytes")
        self.limit = limit


class PumpScope:
    """What one pump task opened (``started``: async generators, oldest first) and how many raw
    bytes it read since the SDK last delivered an item (``pending``, bounded by ``limit``)."""

    __slots__ = ("limit", "pending", "started", "task")

    def __init__(self, task: asyncio.Task[Any] | None, limit: int | None) -> None:
        self.task = task
        self.limit = limit
        self.pending = 0
        self.started: list[AsyncGenerator[Any, Any]] = []

    def delivered(self) -> None:
        """The SDK handed out an item: whatever it buffered is now an event."""
        self.pending = 0

    def read(self, size: int) -> None:
        self.pending += size
        if self.limit is not None and self.pending > self.limit:
            raise EventTooLarge(self.limit)


_SCOPE: contextvars.ContextVar[PumpScope | None] = contextvars.ContextVar(
    "openprogram_pump_scope", default=None
)


def _recording(chained: Callable[[AsyncGenerator[Any, Any]], object] | None) -> Any:
    """A ``firstiter`` async-generator hook that records the generators a pump task starts (and
    meters a response it starts reading), then hands every generator to the hook it replaces."""

    def firstiter(agen: AsyncGenerator[Any, Any]) -> None:
        scope = _SCOPE.get()
        if scope is not None and scope.task is asyncio.current_task():
            scope.started.append(agen)
            if scope.limit is not None and _code_name(agen) == "aiter_raw":
                frame = getattr(agen, "ag_frame", None)
                _meter(frame.f_locals.get("self") if frame is not None else None, scope)
        if chained is not None:
            chained(agen)

    firstiter.openprogram_recording = True  # type: ignore[attr-defined]
    return firstiter


def _code_name(agen: AsyncGenerator[Any, Any]) -> str:
    return str(getattr(getattr(agen, "ag_code", None), "co_name", ""))


@contextlib.asynccontextmanager
async def pump_scope(limit: int | None = None) -> AsyncIterator[PumpScope]:
    """Run a pump's SDK call: on the way out, close (outermost first) every async generator the
    current task started inside the block; with ``limit``, end the call with
    :class:`EventTooLarge` once more than ``limit`` raw bytes arrive between two
    ``scope.delivered()``.

    Closing: when a generator in the middle of an SDK's stack raises (an error document, a chunk
    its own types reject), those beneath it stay suspended with the HTTP response open; the
    connection lives until the client is closed, and the event loop's shutdown later closes the
    generators all at once, out of order (``aclose(): asynchronous generator is already
    running``).  Closed here one by one from the outside in, each runs its own cleanup in order,
    and the innermost closes the response.  Generators other tasks start are not touched.

    Metering: the raw stream of each ``httpx``/``httpx2`` response the task starts reading
    (``Response.aiter_raw``) is wrapped in one that counts.  Raw bytes, before any content
    decoding: never more than the decoded bytes an SDK buffers, so the limit cannot fire early."""
    hooks = sys.get_asyncgen_hooks()
    if not getattr(hooks.firstiter, "openprogram_recording", False):
        sys.set_asyncgen_hooks(firstiter=_recording(hooks.firstiter), finalizer=hooks.finalizer)
    scope = PumpScope(asyncio.current_task(), limit)
    token = _SCOPE.set(scope)
    try:
        yield scope
    finally:
        _SCOPE.reset(token)
        for agen in scope.started:
            with contextlib.suppress(Exception):
                await agen.aclose()
        scope.started.clear()


_METERED: dict[type, type] = {}


def _meter(response: Any, scope: PumpScope) -> None:
    """Put a counting wrapper around ``response.stream`` (before ``aiter_raw`` reads it)."""
    if not _is_http_response(response):
        return
    library = sys.modules.get(type(response).__module__.split(".")[0])
    base = getattr(library, "AsyncByteStream", None)
    inner = getattr(response, "stream", None)
    if not isinstance(base, type) or not isinstance(inner, base):
        return
    if base not in _METERED:
        _METERED[base] = _metered_class(base)
    if not isinstance(inner, _METERED[base]):
        response.stream = _METERED[base](inner, scope)


def _metered_class(base: type) -> type:
    class Metered(base):  # type: ignore[misc]
        """``inner``'s bytes, each piece counted against the pump's limit."""

        def __init__(self, inner: Any, scope: PumpScope) -> None:
            self.inner = inner
            self.scope = scope

        async def __aiter__(self) -> AsyncIterator[bytes]:
            pieces = self.inner.__aiter__()
            try:
                async for piece in pieces:
                    self.scope.read(len(piece))
                    yield piece
            finally:
                close = getattr(pieces, "aclose", None)
                if close is not None:
                    await close()

        async def aclose(self) -> None:
            await self.inner.aclose()

    return Metered


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


def failed_response(exc: BaseException) -> Any | None:
    """The HTTP error response (an ``httpx``/``httpx2`` ``Response`` with a 4xx/5xx status) an SDK
    was handling when it raised ``exc`` — an SDK that trips over an error body (google-genai on
    one that is not UTF-8) raises something that has lost the status; the response is still
    among the locals of the frames the exception went through.  Innermost first; ``None`` when
    there is none."""
    frames = []
    tb = exc.__traceback__
    while tb is not None:
        frames.append(tb.tb_frame)
        tb = tb.tb_next
    for frame in reversed(frames):
        for value in list(frame.f_locals.values()):
            status = getattr(value, "status_code", None)
            if isinstance(status, int) and status >= 400 and _is_http_response(value):
                return value
    return None


def _is_http_response(value: object) -> bool:
    return any(
        cls.__name__ == "Response" and cls.__module__.split(".")[0] in ("httpx", "httpx2")
        for cls in type(value).__mro__
    )
