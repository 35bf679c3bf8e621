"""Every use of vcrpy's private parts, in one place and pinned by a test.

vcrpy's public API records and replays, but three things we need are only reachable through its
internals: in-order playback that says *which* interaction answered (``Cassette.play_response``
walks ``_responses``/``play_counts``), loading without running the recording hooks
(``Cassette._load``), and serving a replayed response our way (fault mutations, stalls,
re-chunking: ``vcr.stubs.httpx_stubs._play_responses`` builds the httpx response).  Clients on
``http.client``/urllib3 (botocore, requests) get the served body through ``play_response``, which
``vcr.stubs.VCRConnection.getresponse`` calls and wraps in ``vcr.stubs.VCRHTTPResponse`` (looked
up at call time: we put a subclass there that honours stalls and a dropped connection).
:data:`REQUIRED` lists each of these; :func:`missing_internals` says which a given vcrpy lacks,
and ``tests/cassettes`` fails when one changes.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import time
from collections.abc import Iterator
from typing import Any, Protocol

from .errors import CassetteError, CassetteMismatch

__all__ = [
    "REQUIRED",
    "SessionHooks",
    "install_playback_hook",
    "loaded_count",
    "make_cassette_class",
    "missing_internals",
    "play_counts",
    "save",
    "served_stream_class",
]

#: ``(module, attribute path, parameters it must take)``; ``None``: any signature.
REQUIRED: tuple[tuple[str, str, tuple[str, ...] | None], ...] = (
    ("vcr.cassette", "Cassette._load", ("self",)),
    ("vcr.cassette", "Cassette._responses", ("self", "request")),
    ("vcr.cassette", "Cassette._save", ("self", "force")),
    ("vcr.cassette", "Cassette.can_play_response_for", ("self", "request")),
    ("vcr.cassette", "Cassette.play_response", ("self", "request")),
    ("vcr.cassette", "Cassette.rewind", ("self",)),
    ("vcr.stubs.httpx_stubs", "_play_responses", ("cassette", "vcr_request", "httpx")),
    ("vcr.stubs", "VCRConnection.getresponse", None),
    ("vcr.stubs", "VCRHTTPResponse.__init__", ("self", "recorded_response", "request_url")),
    ("vcr.stubs", "VCRHTTPResponse.read", ("self", "args", "decode_content", "kwargs")),
)

#: Attributes a ``vcr.cassette.Cassette`` instance must have after ``__init__``.
REQUIRED_STATE: tuple[str, ...] = (
    "data",
    "play_counts",
    "dirty",
    "_played_interactions",
    "_loaded_count",
    "write_protected",
)


def missing_internals() -> list[str]:
    """What this vcrpy lacks of :data:`REQUIRED` (empty when everything is in place)."""
    import importlib

    missing: list[str] = []
    for module_name, dotted, params in REQUIRED:
        try:
            target: Any = importlib.import_module(module_name)
            for part in dotted.split("."):
                target = getattr(target, part)
        except (ImportError, AttributeError):
            missing.append(f"{module_name}.{dotted}")
            continue
        if params is not None:
            names = tuple(inspect.signature(target).parameters)
            if names != params:
                missing.append(f"{module_name}.{dotted}{params} (found {names})")
    return missing


class SessionHooks(Protocol):
    """What the cassette subclass asks of the session that opened it."""

    loading: bool

    def explain_mismatch(self, request: Any) -> str: ...

    def note_mismatch(self, message: str) -> None: ...

    def serve(self, index: int, response: dict[str, Any], uri: str) -> dict[str, Any]: ...

    def can_fall_back(self) -> bool: ...

    def fall_back(self, request: Any) -> dict[str, Any] | None: ...


def make_cassette_class(session: SessionHooks) -> type[Any]:
    """A vcrpy ``Cassette`` subclass bound to ``session``: clear mismatch errors, in-order
    playback of the first unplayed match (served by ``session.serve``) and quiet loading."""
    from vcr.cassette import Cassette
    from vcr.errors import UnhandledHTTPRequestError

    class OpenProgramCassette(Cassette):  # type: ignore[misc]
        hooks: SessionHooks = session

        def _load(self) -> None:
            self.hooks.loading = True
            try:
                super()._load()
            finally:
                self.hooks.loading = False

        def can_play_response_for(self, request: Any) -> bool:
            if super().can_play_response_for(request) or self.hooks.can_fall_back():
                return True
            if self.write_protected:
                error = CassetteMismatch(self.hooks.explain_mismatch(request))
                self.hooks.note_mismatch(str(error))
                raise error
            return False

        def play_response(self, request: Any) -> Any:
            for index, response in self._responses(request):
                if self.play_counts[index] == 0:
                    if index < self._loaded_count:
                        self._played_interactions.append((self.data[index][0], response))
                    self.play_counts[index] += 1
                    return self.hooks.serve(index, response, str(request.uri))
            scripted = self.hooks.fall_back(request)  # the fallback script, when asked for
            if scripted is not None:
                return scripted
            raise UnhandledHTTPRequestError(self.hooks.explain_mismatch(request))

    return OpenProgramCassette


def loaded_count(cassette: Any) -> int:
    """How many interactions came from the file (the rest were recorded in this session)."""
    return int(cassette._loaded_count)


def play_counts(cassette: Any) -> Any:
    return cassette.play_counts


def save(cassette: Any) -> None:
    """Write the cassette now (recording modes).  On failure vcrpy would save again on exit
    and, failing again, leave its patches installed: mark it clean first."""
    try:
        cassette._save()
    except BaseException:
        cassette.dirty = False
        raise


_INSTALLED = False


def install_playback_hook() -> None:
    """Route httpx playback of our cassettes through the served dict's pieces (mutations,
    stalls, re-chunking, a dropped connection); other vcrpy cassettes are untouched.  vcrpy
    builds replayed httpx responses in ``vcr.stubs.httpx_stubs._play_responses``, looked up at
    call time."""
    global _INSTALLED
    if _INSTALLED:
        return
    missing = missing_internals()
    if missing:
        raise CassetteError(
            "this vcrpy lacks what openprogram_testing.cassettes relies on: "
            + ", ".join(missing)
            + ". Use the vcrpy version pinned in pyproject.toml."
        )
    from vcr.stubs import httpx_stubs

    original = httpx_stubs._play_responses

    def _play_responses(cassette: Any, vcr_request: Any, httpx: Any) -> Any:
        if getattr(cassette, "hooks", None) is None:
            return original(cassette, vcr_request, httpx)
        served = cassette.play_response(vcr_request)
        reason = str(served["status"].get("message") or "")
        return httpx.Response(
            int(served["status"]["code"]),
            headers=[(n, v) for n, values in served["headers"].items() for v in values],
            stream=served_stream_class(httpx)(served["_pieces"], served["_disconnect"]),
            extensions={"reason_phrase": reason.encode("ascii", "replace")} if reason else None,
        )

    httpx_stubs._play_responses = _play_responses
    import vcr.stubs

    vcr.stubs.VCRHTTPResponse = _served_http_response_class(vcr.stubs.VCRHTTPResponse)
    _INSTALLED = True


def _served_http_response_class(base: type[Any]) -> type[Any]:
    """vcrpy's replayed ``http.client`` response, plus the served dict's stalls (slept when
    reading reaches them) and dropped connection (urllib3's ``ProtocolError`` once the body is
    read), so botocore and requests see the same faults httpx clients do."""

    class ServedHTTPResponse(base):  # type: ignore[misc]
        def __init__(self, recorded_response: Any, request_url: Any = None) -> None:
            super().__init__(recorded_response, request_url)
            pieces = recorded_response.get("_pieces") or []
            self._op_stalls: list[tuple[int, float]] = []
            offset = 0
            for delay, chunk in pieces:
                if delay:
                    self._op_stalls.append((offset, delay))
                offset += len(chunk)
            self._op_disconnect = bool(recorded_response.get("_disconnect"))

        def read(self, *args: Any, decode_content: Any = None, **kwargs: Any) -> Any:
            start = self._content.tell()
            while self._op_stalls and self._op_stalls[0][0] <= start:
                time.sleep(self._op_stalls.pop(0)[1])
            if self._op_stalls and args and isinstance(args[0], int):
                args = (min(args[0], self._op_stalls[0][0] - start), *args[1:])
            data = super().read(*args, decode_content=decode_content, **kwargs)
            if self._op_disconnect and self._content.tell() >= len(self._content.getbuffer()):
                if not data or not args or args[0] is None:
                    from urllib3.exceptions import ProtocolError

                    self._op_disconnect = False
                    raise ProtocolError("Connection broken: peer closed connection mid-body")
            return data

    return ServedHTTPResponse


@functools.cache
def served_stream_class(httpx: Any) -> type[Any]:
    """An httpx byte stream (sync and async) serving planned pieces with their delays; it
    optionally drops the connection at the end the way httpx reports a cut chunked body."""

    class ServedStream(httpx.SyncByteStream, httpx.AsyncByteStream):  # type: ignore[misc]
        def __init__(self, pieces: list[tuple[float, bytes]], disconnect: bool) -> None:
            self._pieces = pieces
            self._disconnect = disconnect

        def _drop(self) -> None:
            if self._disconnect:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)"
                )

        def __iter__(self) -> Iterator[bytes]:
            for delay, chunk in self._pieces:
                if delay:
                    time.sleep(delay)
                if chunk:
                    yield chunk
            self._drop()

        async def __aiter__(self) -> Any:
            for delay, chunk in self._pieces:
                if delay:
                    await asyncio.sleep(delay)
                if chunk:
                    yield chunk
            self._drop()

    return ServedStream
