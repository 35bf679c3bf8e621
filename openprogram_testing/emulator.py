"""``ProviderEmulator``: a loopback HTTP server that speaks the provider wire formats (SPEC §9.2).

It serves ``POST /v1/chat/completions`` (OpenAI Chat Completions), ``POST /v1/responses`` (OpenAI
Responses) and ``POST /v1/messages`` (Anthropic Messages) on ``127.0.0.1`` (a free port, its own
thread), so the official SDKs and the real adapters run end to end without the internet.  A
request with ``"stream": true`` gets Server-Sent Events, frame by frame (chunked transfer
encoding, one flush per frame); any other request gets the API's plain JSON body.

It is driven by the *same* turn objects as ``ScriptedProvider`` (``ScriptedTurn``, a plain string,
or a responder ``fn(ModelRequest) -> turn``; the emulator parses the HTTP body back into a
``ModelRequest`` so responders work unchanged).  Tool-call ids follow the scripted provider's
scheme (``call_0``, ``call_1``, … per emulator), every other id is deterministic too, so a run
through an adapter and the emulator can be compared with a scripted run.

Faults are attached per turn (``add(turn, faults=[...])``): HTTP status errors, a disconnect after
frame n, a missing terminal frame, a malformed frame, a stall and per-frame latency.

    with ProviderEmulator([turn(call("add", {"a": 1, "b": 2})), "3"]) as emu:
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)
        ...
        emu.assert_complete()

Mapping of scripted turns onto the wire (decisions where the APIs have no exact analogue):

- ``error_turn(...)`` without parts, or on a non-streaming request: an HTTP error (``status``,
  default 500) with the API's JSON error body and ``retry-after`` when ``retry_after_s`` is set.
  With parts on a streaming request: the parts, then the API's in-stream error frame.
- ``aborted_turn`` is served like an error turn (an abort is a client-side event).
- ``cut_turn``: the content frames, then the stream simply ends (no finish/terminal frames);
  ``raising_turn``: the content frames, then the connection drops.  On a non-streaming request
  both drop the connection before the body.
- Thinking: Anthropic ``thinking`` blocks (``signature_delta`` when a signature is scripted;
  ``redacted_thinking`` blocks), Responses ``reasoning`` items with a summary (the signature
  becomes ``encrypted_content``), and Chat Completions ``reasoning_content`` deltas (the de-facto
  extension of OpenAI-compatible servers; the official API has no thinking on this endpoint).
- Usage: OpenAI ``prompt_tokens``/``input_tokens`` include the cached tokens (reported in
  ``cached_tokens``) like the real API, so ``input_tokens = prompt_tokens - cached_tokens``.
  The Chat Completions usage chunk is sent only when the request asks for it
  (``stream_options.include_usage``), as the real API does.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import socket
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Literal, TypeAlias

from openprogram.providers.base import ToolChoice, parse_arguments
from openprogram.types import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserContent,
    UserMessage,
)

from .scripted import (
    ModelRequest,
    ScriptedCall,
    ScriptedThinking,
    ScriptedTurn,
    ScriptError,
    TurnLike,
    UnconsumedTurns,
    UnexpectedModelCall,
    chunk_text,
    describe_turn,
    resolve_turn,
    summarize_message,
)

log = logging.getLogger("openprogram_testing.emulator")

Api: TypeAlias = Literal["openai_chat", "openai_responses", "anthropic"]

ENDPOINTS: dict[str, Api] = {
    "/v1/chat/completions": "openai_chat",
    "/v1/responses": "openai_responses",
    "/v1/messages": "anthropic",
}
"""Path → API served there."""

CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of every response (deterministic output)."""

_JOIN_TIMEOUT_S = 5.0


class EmulatorProtocolError(ScriptError):
    """A request the emulator cannot serve: unknown endpoint, a body that is not a JSON object."""


# -- faults -----------------------------------------------------------------------------------


FaultKind: TypeAlias = Literal[
    "status", "disconnect_after", "no_terminal", "malformed_frame", "stall", "latency"
]


@dataclass(frozen=True, slots=True)
class Fault:
    """A transport fault applied to the response of one turn.  Build with the class methods.

    Frames are SSE events, counted from 0 (``ping`` and ``[DONE]`` included).  A non-streaming
    response is a single frame 0 (its JSON body): ``disconnect_after(0)`` sends the headers and
    half the body, ``malformed_frame(0)`` sends invalid JSON, ``no_terminal`` has no effect.
    """

    kind: FaultKind
    status_code: int | None = None
    headers: Mapping[str, str] | None = None
    body: Any = None
    frame: int = 0
    seconds: float = 0.0

    @classmethod
    def status(
        cls, code: int, headers: Mapping[str, str] | None = None, body: Any = None
    ) -> Fault:
        """Answer with HTTP ``code`` (400-599) and the API's JSON error body (``body``: a dict
        sent as JSON, a str sent verbatim) plus ``headers`` (e.g. ``{"retry-after": "2"}``).
        The turn it is attached to is consumed but its content is not sent."""
        if not isinstance(code, int) or not 400 <= code <= 599:
            raise ValueError(
                f"Fault.status: code must be an HTTP error status 400-599, got {code!r}"
            )
        return cls("status", status_code=code, headers=dict(headers or {}), body=body)

    @classmethod
    def disconnect_after(cls, n_frames: int) -> Fault:
        """Close the connection after ``n_frames`` frames (the body stays incomplete)."""
        return cls("disconnect_after", frame=_non_negative_int("disconnect_after", n_frames))

    @classmethod
    def no_terminal(cls) -> Fault:
        """Omit the terminal frame: ``[DONE]`` / ``response.completed`` / ``message_stop``; the
        body itself ends cleanly."""
        return cls("no_terminal")

    @classmethod
    def malformed_frame(cls, n: int) -> Fault:
        """Frame ``n`` carries truncated, invalid JSON."""
        return cls("malformed_frame", frame=_non_negative_int("malformed_frame", n))

    @classmethod
    def stall(cls, seconds: float, after_frame: int = 0) -> Fault:
        """Send nothing for ``seconds`` after ``after_frame`` frames (headers already sent on a
        stream).  ``stop()`` interrupts a stall."""
        return cls(
            "stall",
            seconds=_non_negative_float("stall", seconds),
            frame=_non_negative_int("stall", after_frame),
        )

    @classmethod
    def latency(cls, seconds_per_frame: float) -> Fault:
        """Sleep before every frame."""
        return cls("latency", seconds=_non_negative_float("latency", seconds_per_frame))


def _non_negative_int(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"Fault.{name}: expected a frame count >= 0, got {value!r}")
    return value


def _non_negative_float(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"Fault.{name}: expected seconds >= 0, got {value!r}")
    return float(value)


# -- recorded requests ------------------------------------------------------------------------


@dataclass(slots=True)
class EmulatorRequest:
    """One HTTP request the emulator received.  ``api`` is ``None`` for an unknown endpoint;
    ``model_request`` is the body parsed back into the harness's ``ModelRequest`` (API requests
    only); ``turn`` is the 0-based index of the scripted turn that answered it."""

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    api: Api | None
    stream: bool = False
    model_request: ModelRequest | None = None
    turn: int | None = None

    @property
    def json(self) -> Any:
        """The parsed JSON body (alias of ``body``)."""
        return self.body


# -- the script -------------------------------------------------------------------------------


@dataclass(slots=True)
class _Slot:
    turn: TurnLike | None
    faults: tuple[Fault, ...] = ()


@dataclass(slots=True)
class _Text:
    text: str


@dataclass(slots=True)
class _Think:
    text: str
    signature: str | None
    redacted: bool


@dataclass(slots=True)
class _Call:
    id: str
    name: str
    arguments: str
    empty: bool


_Part: TypeAlias = _Text | _Think | _Call


@dataclass(slots=True)
class _Resolved:
    """A turn resolved against one request: the content and how the response ends."""

    parts: list[_Part]
    stop: Literal["stop", "length", "toolUse"]
    usage: Usage
    chunk: int | None
    delay: float
    ending: Literal["done", "error", "cut", "drop"] = "done"
    error: str | None = None
    error_status: int = 500
    retry_after_s: float | None = None


@dataclass(slots=True)
class _Frame:
    event: str | None
    data: Any  # a JSON-able dict, or the literal "[DONE]"
    terminal: bool = False


@dataclass(slots=True)
class _Plan:
    """What the handler sends for one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    kind: Literal["json", "sse", "drop"] = "json"
    body: bytes = b""
    frames: list[_Frame] = field(default_factory=list)
    named_events: bool = True
    faults: tuple[Fault, ...] = ()


# -- the emulator -----------------------------------------------------------------------------


class ProviderEmulator:
    """A real HTTP server on ``127.0.0.1`` playing ``turns`` in order, one per model request.

    ``strict`` (default): a request beyond the script gets HTTP 500 with a JSON error naming it
    and is recorded as an ``UnexpectedModelCall``; ``assert_complete()`` raises it, or
    ``UnconsumedTurns`` when turns were never played.  ``fallback`` (a turn or responder) answers
    requests beyond the script instead (``serve``/the CLI use an echo responder).
    ``chunk_size`` is the default delta size of text and argument JSON (a turn's own wins).
    """

    def __init__(
        self,
        turns: Iterable[TurnLike] = (),
        *,
        strict: bool = True,
        chunk_size: int | None = None,
        fallback: TurnLike | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
    ) -> None:
        self.strict = strict
        self.chunk_size = chunk_size
        self.fallback = fallback
        self.requests: list[EmulatorRequest] = []
        self.violations: list[ScriptError] = []
        self._slots: list[_Slot] = []
        self._played = 0
        self._model_calls = 0
        self._next_call_id = 0
        self._host = host
        self._port = port
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        for t in turns:
            self._append(t, ())

    # -- script management ----------------------------------------------------------------
    def add(self, *turns: TurnLike | Fault, faults: Sequence[Fault] = ()) -> ProviderEmulator:
        """Append turns; ``faults`` apply to each of them.  A ``Fault`` given as a turn is a
        request slot answered by that fault alone (``add(Fault.status(429), "hi")``)."""
        faults = tuple(faults)
        for f in faults:
            if not isinstance(f, Fault):
                raise TypeError(f"faults must be Fault objects, got {f!r}")
        with self._lock:
            for t in turns:
                if isinstance(t, Fault):
                    self._append(None, (t, *faults))
                else:
                    self._append(t, faults)
        return self

    def _append(self, t: TurnLike | None, faults: tuple[Fault, ...]) -> None:
        if t is not None and not isinstance(t, ScriptedTurn | str) and not callable(t):
            raise TypeError(
                f"a turn must be a ScriptedTurn, a str or a responder function, got {t!r}"
            )
        if t is None and not any(f.kind in ("status", "disconnect_after") for f in faults):
            raise ValueError(
                "a Fault alone can answer a request only if it is a status or disconnect fault"
            )
        self._slots.append(_Slot(t, faults))

    @property
    def played(self) -> int:
        return self._played

    @property
    def remaining(self) -> int:
        return len(self._slots) - self._played

    def assert_complete(self) -> None:
        """Raise the first violation (unexpected request, bad request), or ``UnconsumedTurns``."""
        if self.violations:
            raise self.violations[0]
        if self.strict and self.remaining > 0:
            left = ", ".join(
                describe_turn(s.turn) if s.turn is not None else "[fault]"
                for s in self._slots[self._played :]
            )
            raise UnconsumedTurns(
                f"{self.remaining} emulator turn(s) were never requested "
                f"(played {self._played} of {len(self._slots)}): {left}"
            )

    # -- lifecycle --------------------------------------------------------------------------
    def start(self) -> ProviderEmulator:
        """Bind the port and serve in a background thread."""
        if self._httpd is not None:
            raise RuntimeError("the emulator is already started")
        self._stopping.clear()
        httpd = _Server((self._host, self._port), _Handler, self)
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"provider-emulator:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving: interrupt stalls, close open connections, join every thread, free the
        port.  Idempotent."""
        httpd, thread = self._httpd, self._thread
        if httpd is None or thread is None:
            return
        self._stopping.set()
        httpd.shutdown()
        thread.join(_JOIN_TIMEOUT_S)
        httpd.close_connections()
        httpd.join_handlers(_JOIN_TIMEOUT_S)
        httpd.server_close()
        self._httpd = None
        self._thread = None

    @property
    def running(self) -> bool:
        return self._httpd is not None

    def __enter__(self) -> ProviderEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- addresses --------------------------------------------------------------------------
    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("the emulator is not started: call start() or use it as a context")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        host = self._host if self._host not in ("", "0.0.0.0") else "127.0.0.1"
        return f"http://{host}:{self.port}"

    @property
    def openai_base_url(self) -> str:
        """The OpenAI SDK ``base_url``."""
        return self.base_url + "/v1"

    @property
    def anthropic_base_url(self) -> str:
        """The Anthropic SDK ``base_url``."""
        return self.base_url

    # -- serving (called from handler threads) ----------------------------------------------
    def _plan(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> _Plan:
        path, _, query = target.partition("?")
        api = ENDPOINTS.get(path.rstrip("/") or "/")
        with self._lock:
            record = EmulatorRequest(
                index=len(self.requests),
                method=method,
                path=path,
                query=query,
                headers=headers,
                body=None,
                api=api if method == "POST" else None,
            )
            self.requests.append(record)
            request_id = f"req_emu_{record.index}"
            if api is None or method != "POST":
                known = ", ".join(f"POST {p}" for p in ENDPOINTS)
                msg = f"the provider emulator does not serve {method} {path} (it serves {known})"
                code = 404 if api is None else 405
                self.violations.append(EmulatorProtocolError(msg))
                return _error_plan(api or _guess_api(path), code, msg, request_id)
            try:
                body = json.loads(raw.decode("utf-8")) if raw else None
            except (UnicodeDecodeError, ValueError) as exc:
                body = None
                problem = f"the request body is not valid JSON ({exc})"
            else:
                problem = "" if isinstance(body, dict) else "the request body must be a JSON object"
            record.body = body
            if problem:
                self.violations.append(EmulatorProtocolError(f"{method} {path}: {problem}"))
                return _error_plan(api, 400, problem, request_id)
            assert isinstance(body, dict)
            record.stream = body.get("stream") is True
            model_request = _model_request(api, body, self._model_calls, path)
            self._model_calls += 1
            record.model_request = model_request

            if self._played < len(self._slots):
                slot = self._slots[self._played]
                record.turn = self._played
                self._played += 1
            elif self.fallback is not None:
                slot = _Slot(self.fallback)
            else:
                msg = (
                    f"unexpected model call #{model_request.index} (0-based) to {path}: the "
                    f"emulator script has {len(self._slots)} turn(s), all played; "
                    f"last message: {summarize_message(model_request.last_message)}"
                )
                if self.strict:
                    self.violations.append(UnexpectedModelCall(msg))
                return _error_plan(api, 500, msg, request_id)

            status_fault = next((f for f in slot.faults if f.kind == "status"), None)
            if status_fault is not None:
                plan = _error_plan(api, status_fault.status_code or 500, None, request_id,
                                   model=model_request.model)
                if status_fault.body is not None:
                    plan.body = _body_bytes(status_fault.body)
                plan.headers.update(status_fault.headers or {})
                plan.faults = tuple(f for f in slot.faults if f.kind in ("stall", "latency"))
                return plan
            if slot.turn is None:  # a bare disconnect fault
                return _Plan(kind="drop", faults=slot.faults)
            try:
                resolved = self._resolve(slot.turn, model_request)
            except Exception as exc:  # a responder bug: make it loud on both sides
                msg = f"the responder for turn #{record.turn} raised {type(exc).__name__}: {exc}"
                self.violations.append(ScriptError(msg))
                return _error_plan(api, 500, msg, request_id)

        return _render(api, resolved, body, model_request, request_id, record.stream,
                       slot.faults)

    def _resolve(self, spec: TurnLike, request: ModelRequest) -> _Resolved:
        if isinstance(spec, _CassetteTurn):
            r = spec.response
            return _CassetteResolved(parts=[], stop="stop", usage=Usage(), chunk=None,
                                     delay=0.0, status=r["status"], headers=dict(r["headers"]),
                                     raw=r["raw"])
        scripted = asyncio.run(resolve_turn(spec, request))
        chunk = scripted.chunk_size if scripted.chunk_size is not None else self.chunk_size
        parts: list[_Part] = []
        for part in scripted.parts:
            if isinstance(part, str | TextContent):
                parts.append(_Text(part if isinstance(part, str) else part.text))
            elif isinstance(part, ScriptedThinking):
                parts.append(_Think(part.text, part.signature, part.redacted))
            elif isinstance(part, ThinkingContent):
                parts.append(_Think(part.thinking, part.signature, part.redacted))
            elif isinstance(part, ScriptedCall):
                call_id = part.id
                if call_id is None:
                    call_id = f"call_{self._next_call_id}"
                    self._next_call_id += 1
                parts.append(
                    _Call(call_id, part.name, part.argument_text,
                          empty=part.raw is None and not part.arguments)
                )
            else:
                raise TypeError(f"unsupported scripted part {part!r}")
        stop = scripted.stop or (
            "toolUse" if any(isinstance(p, _Call) for p in parts) else "stop"
        )
        resolved = _Resolved(
            parts=parts, stop=stop, usage=scripted.usage or Usage(), chunk=chunk,
            delay=scripted.delay_s or 0.0,
        )
        if scripted.error is not None:
            resolved.ending = "error"
            resolved.error = scripted.error
            resolved.error_status = scripted.error_status or 500
            resolved.retry_after_s = scripted.error_retry_after_s
        elif scripted.raises is not None:
            resolved.ending = "drop"
        elif scripted.cut:
            resolved.ending = "cut"
        return resolved

    @classmethod
    def from_cassette(
        cls,
        path: str | Any,
        *,
        faults: Mapping[int, Sequence[Fault]] | None = None,
        **kwargs: Any,
    ) -> ProviderEmulator:
        """An emulator that serves the responses of a vcrpy cassette, in recorded order (one
        per request, whatever the request; status, headers and body as recorded, gzip undone;
        SSE bodies frame by frame).  ``faults`` maps an interaction index to the faults of its
        response; ``kwargs`` go to the constructor."""
        responses = _load_cassette(path)
        for index in faults or {}:
            if not isinstance(index, int) or not 0 <= index < len(responses):
                raise ValueError(
                    f"from_cassette: no interaction {index!r} to attach faults to "
                    f"(the cassette has {len(responses)})"
                )
        emulator = cls(**kwargs)
        for i, response in enumerate(responses):
            emulator.add(_CassetteTurn(response), faults=tuple((faults or {}).get(i, ())))
        return emulator


# -- HTTP plumbing ----------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """Tracks its handler threads and connections so ``stop()`` can close and join them all."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], handler: type, emulator: ProviderEmulator) -> None:
        self.emulator = emulator
        self._conn_lock = threading.Lock()
        self._connections: set[socket.socket] = set()
        self._handlers: set[threading.Thread] = set()
        super().__init__(address, handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        thread = threading.Thread(
            target=self.process_request_thread,
            args=(request, client_address),
            name=f"provider-emulator-conn:{self.server_address[1]}",
            daemon=True,
        )
        with self._conn_lock:
            self._handlers = {t for t in self._handlers if t.is_alive()}
            self._handlers.add(thread)
            self._connections.add(request)
        thread.start()

    def shutdown_request(self, request: Any) -> None:
        with self._conn_lock:
            self._connections.discard(request)
        super().shutdown_request(request)

    def close_connections(self) -> None:
        with self._conn_lock:
            conns = list(self._connections)
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)

    def join_handlers(self, timeout: float) -> None:
        with self._conn_lock:
            threads = list(self._handlers)
        for t in threads:
            t.join(timeout)
            if t.is_alive():  # a responder that never returns: report, do not hang
                log.warning("provider emulator: handler thread %s did not finish", t.name)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("provider emulator: error serving %s", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    server_version = "openprogram-provider-emulator"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("provider emulator: " + format, *args)

    def do_POST(self) -> None:
        self._serve("POST")

    def do_GET(self) -> None:
        self._serve("GET")

    def do_PUT(self) -> None:
        self._serve("PUT")

    def do_DELETE(self) -> None:
        self._serve("DELETE")

    def _read_body(self) -> bytes:
        if "chunked" in (self.headers.get("transfer-encoding") or "").lower():
            out = bytearray()
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return bytes(out)
                out += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _serve(self, method: str) -> None:
        emulator = self.server.emulator
        try:
            raw = self._read_body()
            headers = {k.lower(): v for k, v in self.headers.items()}
            try:
                plan = emulator._plan(method, self.path, headers, raw)
            except Exception as exc:  # an emulator bug: answer and record it, never hang
                log.exception("provider emulator: internal error")
                msg = f"provider emulator internal error: {type(exc).__name__}: {exc}"
                emulator.violations.append(EmulatorProtocolError(msg))
                plan = _error_plan(_guess_api(self.path), 500, msg, "req_emu_internal")
            self._send(plan, emulator._stopping)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True  # the client went away: nothing to answer

    # -- sending ----------------------------------------------------------------------------
    def _send(self, plan: _Plan, stopping: threading.Event) -> None:
        faults = plan.faults
        stall = next((f for f in faults if f.kind == "stall"), None)
        latency = sum(f.seconds for f in faults if f.kind == "latency")
        cut_at = next((f.frame for f in faults if f.kind == "disconnect_after"), None)
        bad = {f.frame for f in faults if f.kind == "malformed_frame"}

        if plan.kind == "drop":
            self._abort()
            return
        if plan.kind == "json":
            if (stall and stall.seconds and stopping.wait(stall.seconds)) or (
                latency and stopping.wait(latency)
            ):
                self._abort()
                return
            body = plan.body
            if 0 in bad:
                body = _corrupt(body)
            self.send_response(plan.status)
            for k, v in plan.headers.items():
                self.send_header(k, v)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            if cut_at == 0:
                self.wfile.write(body[: len(body) // 2])
                self._abort()
                return
            self.wfile.write(body)
            return

        frames = plan.frames
        if any(f.kind == "no_terminal" for f in faults):
            frames = [f for f in frames if not f.terminal]
        self.send_response(200)
        for k, v in plan.headers.items():
            self.send_header(k, v)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for i, frame in enumerate([*frames, None]):
            if stall is not None and i == min(stall.frame, len(frames)) and stall.seconds:
                if stopping.wait(stall.seconds):
                    self._abort()
                    return
            if cut_at is not None and i >= cut_at:
                self._abort()
                return
            if frame is None:
                break
            if latency and stopping.wait(latency):
                self._abort()
                return
            data = _encode_frame(frame, plan.named_events, corrupt=i in bad)
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def _abort(self) -> None:
        """Drop the connection now (an incomplete body for the client)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)


def _encode_frame(frame: _Frame, named: bool, *, corrupt: bool = False) -> bytes:
    data = frame.data if isinstance(frame.data, str) else _dumps(frame.data)
    if corrupt:
        data = data[: max(1, len(data) // 2)]
    head = f"event: {frame.event}\n" if named and frame.event else ""
    return f"{head}data: {data}\n\n".encode()


def _corrupt(body: bytes) -> bytes:
    return body[: max(1, len(body) // 2)]


def _dumps(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _body_bytes(body: Any) -> bytes:
    if isinstance(body, bytes):
        return body
    if isinstance(body, str):
        return body.encode()
    return _dumps(body).encode()


# -- errors -----------------------------------------------------------------------------------

_OPENAI_ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: ("invalid_request_error", "model_not_found",
          "The model `{model}` does not exist or you do not have access to it."),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    529: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
_ANTHROPIC_ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}


def _guess_api(path: str) -> Api:
    return "anthropic" if "messages" in path and "chat" not in path else "openai_chat"


def _error_json(api: Api, status: int, message: str | None, request_id: str, model: str) -> Any:
    if api == "anthropic":
        etype, default = _ANTHROPIC_ERRORS.get(
            status, ("api_error" if status >= 500 else "invalid_request_error", "Error")
        )
        text = message if message is not None else default.format(model=model)
        return {"type": "error", "error": {"type": etype, "message": text},
                "request_id": request_id}
    otype, code, default = _OPENAI_ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Error")
    )
    text = message if message is not None else default.format(model=model)
    return {"error": {"message": text, "type": otype, "param": None, "code": code}}


def _request_id_header(api: Api, request_id: str) -> dict[str, str]:
    return {"request-id" if api == "anthropic" else "x-request-id": request_id}


def _error_plan(
    api: Api, status: int, message: str | None, request_id: str, *,
    model: str = "", retry_after_s: float | None = None,
) -> _Plan:
    headers = _request_id_header(api, request_id)
    if retry_after_s is not None:
        headers["retry-after"] = _seconds(retry_after_s)
    body = _dumps(_error_json(api, status, message, request_id, model)).encode()
    return _Plan(status=status, headers=headers, kind="json", body=body)


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


# -- rendering turns --------------------------------------------------------------------------


def _render(
    api: Api, turn: _Resolved, body: dict[str, Any], request: ModelRequest, request_id: str,
    stream: bool, faults: tuple[Fault, ...],
) -> _Plan:
    latency = (Fault.latency(turn.delay),) if turn.delay else ()
    faults = (*faults, *latency)
    if isinstance(turn, _CassetteResolved):
        return turn.plan(faults)
    if turn.ending == "error" and (not stream or not turn.parts):
        plan = _error_plan(api, turn.error_status, turn.error, request_id,
                           model=request.model, retry_after_s=turn.retry_after_s)
        plan.faults = faults
        return plan
    if not stream and turn.ending in ("cut", "drop"):
        return _Plan(kind="drop", faults=faults)
    renderer = _RENDERERS[api](turn, body, request, request_id)
    headers = _request_id_header(api, request_id)
    if stream:
        frames = list(renderer.frames())
        if turn.ending == "drop":
            faults = (*faults, Fault.disconnect_after(len(frames)))
        return _Plan(headers=headers, kind="sse", frames=frames,
                     named_events=api != "openai_chat", faults=faults)
    return _Plan(headers=headers, kind="json", body=_dumps(renderer.json()).encode(),
                 faults=faults)


class _Renderer:
    """Turns one resolved turn into an API's frames (stream) or JSON body."""

    def __init__(
        self, turn: _Resolved, body: dict[str, Any], request: ModelRequest, request_id: str
    ) -> None:
        self.turn = turn
        self.body = body
        self.model = request.model or "emulated-model"
        self.n = request.index
        self.request_id = request_id

    def pieces(self, text: str) -> Sequence[str]:
        return chunk_text(text, self.turn.chunk)

    def frames(self) -> Iterator[_Frame]:
        raise NotImplementedError

    def json(self) -> dict[str, Any]:
        raise NotImplementedError


class _ChatRenderer(_Renderer):
    FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}

    def chunk(self, choices: list[Any], **extra: Any) -> dict[str, Any]:
        out: dict[str, Any] = {
            "id": f"chatcmpl-emu{self.n}",
            "object": "chat.completion.chunk",
            "created": CREATED,
            "model": self.model,
            "system_fingerprint": "fp_emulator",
            "choices": choices,
        }
        if self.include_usage:
            out["usage"] = None
        out.update(extra)
        return out

    @property
    def include_usage(self) -> bool:
        opts = self.body.get("stream_options")
        return isinstance(opts, dict) and opts.get("include_usage") is True

    def delta(self, delta: dict[str, Any], finish: str | None = None) -> _Frame:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return _Frame(None, self.chunk([choice]))

    def frames(self) -> Iterator[_Frame]:
        turn = self.turn
        first_text = bool(turn.parts) and isinstance(turn.parts[0], _Text)
        yield self.delta({"role": "assistant", "content": "" if first_text else None,
                          "refusal": None})
        tool_index = 0
        for part in turn.parts:
            if isinstance(part, _Text):
                for piece in self.pieces(part.text):
                    yield self.delta({"content": piece})
            elif isinstance(part, _Think):
                for piece in self.pieces(part.text):
                    yield self.delta({"reasoning_content": piece})
            else:
                pieces = list(self.pieces(part.arguments)) or [""]
                head = {"index": tool_index, "id": part.id, "type": "function",
                        "function": {"name": part.name, "arguments": ""}}
                yield self.delta({"tool_calls": [head]})
                for piece in pieces:
                    if piece:
                        fragment = {"index": tool_index, "function": {"arguments": piece}}
                        yield self.delta({"tool_calls": [fragment]})
                tool_index += 1
        if turn.ending == "error":
            yield _Frame(None, _error_json("openai_chat", turn.error_status, turn.error,
                                           self.request_id, self.model), terminal=True)
            return
        if turn.ending in ("cut", "drop"):
            return
        yield self.delta({}, self.FINISH[turn.stop])
        if self.include_usage:
            yield _Frame(None, self.chunk([], usage=_openai_chat_usage(turn.usage)))
        yield _Frame(None, "[DONE]", terminal=True)

    def json(self) -> dict[str, Any]:
        turn = self.turn
        text = "".join(p.text for p in turn.parts if isinstance(p, _Text))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text if any(isinstance(p, _Text) for p in turn.parts) else None,
            "refusal": None,
            "annotations": [],
        }
        thinking = "".join(p.text for p in turn.parts if isinstance(p, _Think))
        if thinking:
            message["reasoning_content"] = thinking
        calls = [p for p in turn.parts if isinstance(p, _Call)]
        if calls:
            message["tool_calls"] = [
                {"id": c.id, "type": "function",
                 "function": {"name": c.name, "arguments": c.arguments}}
                for c in calls
            ]
        return {
            "id": f"chatcmpl-emu{self.n}",
            "object": "chat.completion",
            "created": CREATED,
            "model": self.model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": self.FINISH[turn.stop]}],
            "usage": _openai_chat_usage(turn.usage),
            "system_fingerprint": "fp_emulator",
        }


def _openai_chat_usage(u: Usage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                      "accepted_prediction_tokens": 0,
                                      "rejected_prediction_tokens": 0},
    }


class _ResponsesRenderer(_Renderer):
    def __init__(self, *args: Any) -> None:
        super().__init__(*args)
        self.seq = 0
        self.rid = f"resp_emu{self.n}"

    def ev(self, type_: str, terminal: bool = False, **data: Any) -> _Frame:
        frame = _Frame(type_, {"type": type_, "sequence_number": self.seq, **data}, terminal)
        self.seq += 1
        return frame

    def response(self, status: str, output: list[Any], usage: Usage | None) -> dict[str, Any]:
        b = self.body
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": self.rid, "object": "response", "created_at": CREATED, "status": status,
            "background": False, "error": None, "incomplete_details": incomplete,
            "instructions": b.get("instructions"),
            "max_output_tokens": b.get("max_output_tokens"), "max_tool_calls": None,
            "model": self.model, "output": output,
            "parallel_tool_calls": b.get("parallel_tool_calls", True),
            "previous_response_id": b.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None}, "service_tier": "default",
            "store": b.get("store", True), "temperature": b.get("temperature", 1.0),
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": b.get("tool_choice", "auto"), "tools": b.get("tools") or [],
            "top_p": b.get("top_p", 1.0), "truncation": "disabled",
            "usage": _responses_usage(usage) if usage is not None else None,
            "user": None, "metadata": {},
        }

    def item(self, i: int, part: _Part) -> dict[str, Any]:
        if isinstance(part, _Text):
            return {"id": f"msg_emu{self.n}_{i}", "type": "message", "status": "completed",
                    "content": [{"type": "output_text", "annotations": [], "logprobs": [],
                                 "text": part.text}], "role": "assistant"}
        if isinstance(part, _Think):
            item: dict[str, Any] = {
                "id": f"rs_emu{self.n}_{i}", "type": "reasoning",
                "summary": [] if part.redacted else [{"type": "summary_text", "text": part.text}],
            }
            secret = part.text if part.redacted else part.signature
            if secret is not None:
                item["encrypted_content"] = secret
            return item
        return {"id": f"fc_emu{self.n}_{i}", "type": "function_call", "status": "completed",
                "arguments": part.arguments, "call_id": part.id, "name": part.name}

    def frames(self) -> Iterator[_Frame]:
        turn = self.turn
        yield self.ev("response.created", response=self.response("in_progress", [], None))
        yield self.ev("response.in_progress", response=self.response("in_progress", [], None))
        output: list[Any] = []
        for i, part in enumerate(turn.parts):
            done = self.item(i, part)
            item_id = done["id"]
            if isinstance(part, _Text):
                yield self.ev("response.output_item.added", output_index=i, item={
                    **done, "status": "in_progress", "content": []})
                empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
                yield self.ev("response.content_part.added", item_id=item_id, output_index=i,
                              content_index=0, part=empty)
                for piece in self.pieces(part.text):
                    yield self.ev("response.output_text.delta", item_id=item_id,
                                  output_index=i, content_index=0, delta=piece, logprobs=[])
                yield self.ev("response.output_text.done", item_id=item_id, output_index=i,
                              content_index=0, text=part.text, logprobs=[])
                yield self.ev("response.content_part.done", item_id=item_id, output_index=i,
                              content_index=0, part=done["content"][0])
            elif isinstance(part, _Think):
                yield self.ev("response.output_item.added", output_index=i,
                              item={"id": item_id, "type": "reasoning", "summary": []})
                if not part.redacted:
                    yield self.ev("response.reasoning_summary_part.added", item_id=item_id,
                                  output_index=i, summary_index=0,
                                  part={"type": "summary_text", "text": ""})
                    for piece in self.pieces(part.text):
                        yield self.ev("response.reasoning_summary_text.delta", item_id=item_id,
                                      output_index=i, summary_index=0, delta=piece)
                    yield self.ev("response.reasoning_summary_text.done", item_id=item_id,
                                  output_index=i, summary_index=0, text=part.text)
                    yield self.ev("response.reasoning_summary_part.done", item_id=item_id,
                                  output_index=i, summary_index=0,
                                  part={"type": "summary_text", "text": part.text})
            else:
                yield self.ev("response.output_item.added", output_index=i, item={
                    **done, "status": "in_progress", "arguments": ""})
                for piece in self.pieces(part.arguments):
                    yield self.ev("response.function_call_arguments.delta", item_id=item_id,
                                  output_index=i, delta=piece)
                yield self.ev("response.function_call_arguments.done", item_id=item_id,
                              output_index=i, arguments=part.arguments)
            yield self.ev("response.output_item.done", output_index=i, item=done)
            output.append(done)
        if turn.ending == "error":
            code = "rate_limit_exceeded" if turn.error_status == 429 else "server_error"
            yield self.ev("error", terminal=True, code=code, message=turn.error, param=None)
            return
        if turn.ending in ("cut", "drop"):
            return
        status = "incomplete" if turn.stop == "length" else "completed"
        yield self.ev(f"response.{status}", terminal=True,
                      response=self.response(status, output, turn.usage))

    def json(self) -> dict[str, Any]:
        turn = self.turn
        output = [self.item(i, p) for i, p in enumerate(turn.parts)]
        status = "incomplete" if turn.stop == "length" else "completed"
        return self.response(status, output, turn.usage)


def _responses_usage(u: Usage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + u.output_tokens,
    }


class _AnthropicRenderer(_Renderer):
    STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}

    def ev(self, type_: str, terminal: bool = False, **data: Any) -> _Frame:
        return _Frame(type_, {"type": type_, **data}, terminal)

    def usage(self, output_tokens: int) -> dict[str, Any]:
        u = self.turn.usage
        return {"input_tokens": u.input_tokens,
                "cache_creation_input_tokens": u.cache_write_tokens,
                "cache_read_input_tokens": u.cache_read_tokens, "output_tokens": output_tokens}

    def message(self, content: list[Any], stop: str | None, output_tokens: int) -> dict[str, Any]:
        return {"id": f"msg_emu{self.n}", "type": "message", "role": "assistant",
                "model": self.model, "content": content, "stop_reason": stop,
                "stop_sequence": None, "usage": self.usage(output_tokens)}

    def frames(self) -> Iterator[_Frame]:
        turn = self.turn
        yield self.ev("message_start",
                      message=self.message([], None, min(1, turn.usage.output_tokens)))
        ping = self.ev("ping")
        for i, part in enumerate(turn.parts):
            if isinstance(part, _Text):
                yield self.ev("content_block_start", index=i,
                              content_block={"type": "text", "text": ""})
                delta = [{"type": "text_delta", "text": p} for p in self.pieces(part.text)]
            elif isinstance(part, _Think) and part.redacted:
                yield self.ev("content_block_start", index=i,
                              content_block={"type": "redacted_thinking", "data": part.text})
                delta = []
            elif isinstance(part, _Think):
                yield self.ev("content_block_start", index=i, content_block={
                    "type": "thinking", "thinking": "", "signature": ""})
                delta = [{"type": "thinking_delta", "thinking": p} for p in self.pieces(part.text)]
                if part.signature is not None:
                    delta.append({"type": "signature_delta", "signature": part.signature})
            else:
                yield self.ev("content_block_start", index=i, content_block={
                    "type": "tool_use", "id": part.id, "name": part.name, "input": {}})
                pieces = [] if part.empty else list(self.pieces(part.arguments))
                delta = [{"type": "input_json_delta", "partial_json": p} for p in ["", *pieces]]
            if i == 0:
                yield ping
            for d in delta:
                yield self.ev("content_block_delta", index=i, delta=d)
            yield self.ev("content_block_stop", index=i)
        if not turn.parts:
            yield ping
        if turn.ending == "error":
            etype = _ANTHROPIC_ERRORS.get(turn.error_status, ("api_error", ""))[0]
            yield self.ev("error", terminal=True,
                          error={"type": etype, "message": turn.error})
            return
        if turn.ending in ("cut", "drop"):
            return
        yield self.ev("message_delta",
                      delta={"stop_reason": self.STOP[turn.stop], "stop_sequence": None},
                      usage=self.usage(turn.usage.output_tokens))
        yield self.ev("message_stop", terminal=True)

    def json(self) -> dict[str, Any]:
        content: list[Any] = []
        for part in self.turn.parts:
            if isinstance(part, _Text):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, _Think) and part.redacted:
                content.append({"type": "redacted_thinking", "data": part.text})
            elif isinstance(part, _Think):
                content.append({"type": "thinking", "thinking": part.text,
                                "signature": part.signature or ""})
            else:
                parsed, ok = parse_arguments(part.arguments)
                content.append({"type": "tool_use", "id": part.id, "name": part.name,
                                "input": parsed if ok else part.arguments})
        return self.message(content, self.STOP[self.turn.stop], self.turn.usage.output_tokens)


_RENDERERS: dict[Api, type[_Renderer]] = {
    "openai_chat": _ChatRenderer,
    "openai_responses": _ResponsesRenderer,
    "anthropic": _AnthropicRenderer,
}


# -- HTTP body → ModelRequest -----------------------------------------------------------------


def _model_request(api: Api, body: dict[str, Any], index: int, path: str) -> ModelRequest:
    """Parse a request body back into the wire-neutral ``ModelRequest`` (leniently: unknown or
    malformed entries are skipped, never fatal)."""
    parser = {"openai_chat": _parse_chat, "openai_responses": _parse_responses,
              "anthropic": _parse_anthropic}[api]
    system, messages, tools, tool_choice, parallel = parser(body)
    max_tokens = next(
        (body[k] for k in ("max_tokens", "max_completion_tokens", "max_output_tokens")
         if isinstance(body.get(k), int)),
        None,
    )
    temperature = body.get("temperature")
    return ModelRequest(
        index=index,
        model=str(body.get("model") or ""),
        system_prompt="\n\n".join(system) if system else None,
        messages=messages,
        tools=tools,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel,
        max_tokens=max_tokens,
        temperature=float(temperature) if isinstance(temperature, int | float) else None,
        extras={"api": api, "path": path, "stream": body.get("stream") is True},
    )


_Parsed: TypeAlias = tuple[
    list[str], list[Message], list[ToolSpec], ToolChoice | None, bool | None
]


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", "")) for b in _dicts(content)
        if b.get("type") in ("text", "input_text", "output_text", None)
    )


_DATA_URL = re.compile(r"^data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)$", re.DOTALL)


def _user_content(content: Any) -> str | list[UserContent]:
    if isinstance(content, str):
        return content
    out: list[UserContent] = []
    for b in _dicts(content):
        kind = b.get("type")
        if kind in ("text", "input_text"):
            out.append(TextContent(text=str(b.get("text", ""))))
        elif kind in ("image_url", "input_image"):
            url = b.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            m = _DATA_URL.match(url) if isinstance(url, str) else None
            if m:
                out.append(ImageContent(data_b64=m["data"], mime_type=m["mime"]))
        elif kind == "image":
            src = _dict(b.get("source"))
            if src.get("type") == "base64":
                out.append(ImageContent(data_b64=str(src.get("data", "")),
                                        mime_type=str(src.get("media_type", ""))))
    return out


def _call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    if isinstance(arguments, dict):
        return ToolCall(id=str(call_id or ""), name=str(name or ""), arguments=arguments)
    text = arguments if isinstance(arguments, str) else ""
    parsed, ok = parse_arguments(text)
    return ToolCall(id=str(call_id or ""), name=str(name or ""), arguments=parsed,
                    raw_arguments=None if ok else text)


def _openai_tool_choice(value: Any) -> ToolChoice | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        fn = value.get("function")
        name = fn.get("name") if isinstance(fn, dict) else value.get("name")
        if name:
            return {"type": "function", "name": str(name)}
        return dict(value)
    return None


def _spec(name: Any, description: Any, parameters: Any) -> ToolSpec | None:
    if not isinstance(name, str) or not name:
        return None
    spec = ToolSpec(name=name, description=description if isinstance(description, str) else "")
    if isinstance(parameters, dict):
        spec.parameters = parameters
    return spec


def _parse_chat(body: dict[str, Any]) -> _Parsed:
    system: list[str] = []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for m in _dicts(body.get("messages")):
        role, content = m.get("role"), m.get("content")
        if role in ("system", "developer"):
            system.append(_text_of(content))
        elif role == "user":
            messages.append(UserMessage(content=_user_content(content)))
        elif role == "assistant":
            blocks: list[Any] = []
            reasoning = m.get("reasoning_content") or m.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                blocks.append(ThinkingContent(thinking=reasoning))
            text = _text_of(content)
            if text:
                blocks.append(TextContent(text=text))
            for tc in _dicts(m.get("tool_calls")):
                fn = _dict(tc.get("function"))
                call = _call(tc.get("id"), fn.get("name"), fn.get("arguments"))
                names[call.id] = call.name
                blocks.append(call)
            messages.append(AssistantMessage(content=blocks))
        elif role == "tool":
            cid = str(m.get("tool_call_id") or "")
            messages.append(ToolResultMessage(
                tool_call_id=cid, tool_name=names.get(cid, ""),
                content=[TextContent(text=_text_of(content))],
            ))
    tools = [
        s for t in _dicts(body.get("tools"))
        if isinstance(t.get("function"), dict)
        and (s := _spec(t["function"].get("name"), t["function"].get("description"),
                        t["function"].get("parameters"))) is not None
    ]
    parallel = body.get("parallel_tool_calls")
    return (system, messages, tools, _openai_tool_choice(body.get("tool_choice")),
            parallel if isinstance(parallel, bool) else None)


def _parse_responses(body: dict[str, Any]) -> _Parsed:
    system: list[str] = []
    if isinstance(body.get("instructions"), str):
        system.append(body["instructions"])
    messages: list[Message] = []
    names: dict[str, str] = {}
    current: AssistantMessage | None = None

    def assistant() -> AssistantMessage:
        nonlocal current
        if current is None:
            current = AssistantMessage()
            messages.append(current)
        return current

    items: Any = body.get("input")
    if isinstance(items, str):
        items = [{"role": "user", "content": items}]
    for item in _dicts(items):
        kind, role = item.get("type"), item.get("role")
        if kind == "function_call":
            call = _call(item.get("call_id"), item.get("name"), item.get("arguments"))
            names[call.id] = call.name
            assistant().content.append(call)
        elif kind == "reasoning":
            summary = "".join(str(s.get("text", "")) for s in _dicts(item.get("summary")))
            secret = item.get("encrypted_content")
            assistant().content.append(ThinkingContent(
                thinking=summary, signature=secret if isinstance(secret, str) else None,
                redacted=not summary and isinstance(secret, str),
            ))
        elif role == "assistant":
            text = _text_of(item.get("content"))
            if text:
                assistant().content.append(TextContent(text=text))
        else:
            current = None
            if kind == "function_call_output":
                cid = str(item.get("call_id") or "")
                output = item.get("output")
                messages.append(ToolResultMessage(
                    tool_call_id=cid, tool_name=names.get(cid, ""),
                    content=[TextContent(text=_text_of(output))],
                ))
            elif role in ("system", "developer"):
                system.append(_text_of(item.get("content")))
            elif role == "user":
                messages.append(UserMessage(content=_user_content(item.get("content"))))
    tools = [
        s for t in _dicts(body.get("tools"))
        if t.get("type", "function") == "function"
        and (s := _spec(t.get("name"), t.get("description"), t.get("parameters"))) is not None
    ]
    parallel = body.get("parallel_tool_calls")
    return (system, messages, tools, _openai_tool_choice(body.get("tool_choice")),
            parallel if isinstance(parallel, bool) else None)


def _parse_anthropic(body: dict[str, Any]) -> _Parsed:
    raw_system = body.get("system")
    system = [_text_of(raw_system)] if raw_system else []
    messages: list[Message] = []
    names: dict[str, str] = {}
    for m in _dicts(body.get("messages")):
        role, content = m.get("role"), m.get("content")
        if role == "assistant":
            blocks: list[Any] = []
            if isinstance(content, str):
                blocks.append(TextContent(text=content))
            for b in _dicts(content):
                kind = b.get("type")
                if kind == "text":
                    blocks.append(TextContent(text=str(b.get("text", ""))))
                elif kind == "thinking":
                    sig = b.get("signature")
                    blocks.append(ThinkingContent(thinking=str(b.get("thinking", "")),
                                                  signature=sig if isinstance(sig, str) else None))
                elif kind == "redacted_thinking":
                    blocks.append(ThinkingContent(thinking=str(b.get("data", "")), redacted=True))
                elif kind == "tool_use":
                    call = _call(b.get("id"), b.get("name"), b.get("input"))
                    names[call.id] = call.name
                    blocks.append(call)
            messages.append(AssistantMessage(content=blocks))
        elif role == "user":
            if isinstance(content, str):
                messages.append(UserMessage(content=content))
                continue
            rest: list[dict[str, Any]] = []
            for b in _dicts(content):
                if b.get("type") == "tool_result":
                    cid = str(b.get("tool_use_id") or "")
                    messages.append(ToolResultMessage(
                        tool_call_id=cid, tool_name=names.get(cid, ""),
                        content=[TextContent(text=_text_of(b.get("content")))],
                        is_error=b.get("is_error") is True,
                    ))
                else:
                    rest.append(b)
            if rest:
                messages.append(UserMessage(content=_user_content(rest)))
    tools = [
        s for t in _dicts(body.get("tools"))
        if (s := _spec(t.get("name"), t.get("description"), t.get("input_schema"))) is not None
    ]
    choice: ToolChoice | None = None
    parallel: bool | None = None
    tc = body.get("tool_choice")
    if isinstance(tc, dict):
        kind = tc.get("type")
        choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
        if kind == "tool":
            choice = {"type": "function", "name": str(tc.get("name") or "")}
        if isinstance(tc.get("disable_parallel_tool_use"), bool):
            parallel = not tc["disable_parallel_tool_use"]
    return system, messages, tools, choice, parallel


# -- cassettes --------------------------------------------------------------------------------


@dataclass(slots=True)
class _CassetteResolved(_Resolved):
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    raw: bytes = b""

    def plan(self, faults: tuple[Fault, ...]) -> _Plan:
        """A recorded SSE body is served frame by frame (so frame faults apply); anything else
        verbatim with its recorded status."""
        ctype = self.headers.get("content-type", "")
        if self.status == 200 and "text/event-stream" in ctype:
            frames = _split_sse(self.raw.decode("utf-8", errors="replace"))
            return _Plan(kind="sse", frames=frames, named_events=True, faults=faults,
                         headers={k: v for k, v in self.headers.items()
                                  if k not in ("content-type", "cache-control")})
        headers = {k: v for k, v in self.headers.items() if k != "content-type"}
        plan = _Plan(status=self.status, headers=headers, kind="json", body=self.raw,
                     faults=faults)
        return plan


class _CassetteTurn:
    """A scripted turn slot holding one recorded response (a callable so it passes as a
    responder; the emulator recognises it and skips turn resolution)."""

    def __init__(self, response: dict[str, Any]) -> None:
        self.response = response
        self.__name__ = f"cassette response {response['status']}"

    def __call__(self, request: ModelRequest) -> ScriptedTurn:  # pragma: no cover - unused
        raise TypeError("a cassette response is served verbatim")


_HOP_HEADERS = {"content-length", "transfer-encoding", "connection", "content-encoding",
                "date", "server", "keep-alive"}


def _load_cassette(path: str | Any) -> list[dict[str, Any]]:
    import gzip
    from pathlib import Path

    import yaml  # type: ignore[import-untyped,unused-ignore]

    file = Path(path)
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise ValueError(f"cannot load cassette {file}: {exc}") from exc
    interactions = data.get("interactions") if isinstance(data, dict) else None
    if not isinstance(interactions, list):
        raise ValueError(f"{file}: not a vcrpy cassette (no 'interactions' list)")
    out: list[dict[str, Any]] = []
    for i, it in enumerate(interactions):
        try:
            resp = it["response"]
            status = resp["status"]["code"] if isinstance(resp["status"], dict) else resp["status"]
            body = resp["body"]["string"] if isinstance(resp.get("body"), dict) else resp["body"]
        except (KeyError, TypeError) as exc:
            raise ValueError(f"{file}: interaction {i} has no response status/body") from exc
        headers: dict[str, str] = {}
        for k, v in (resp.get("headers") or {}).items():
            value = v[0] if isinstance(v, list) and v else v
            headers[str(k).lower()] = str(value)
        raw = body.encode() if isinstance(body, str) else bytes(body or b"")
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        out.append({
            "status": int(status),
            "headers": {k: v for k, v in headers.items() if k not in _HOP_HEADERS},
            "raw": raw,
        })
    return out


def _split_sse(text: str) -> list[_Frame]:
    frames: list[_Frame] = []
    for block in re.split(r"\r?\n\r?\n", text):
        if not block.strip():
            continue
        event: str | None = None
        data_lines: list[str] = []
        for line in block.splitlines():
            if line.startswith("event:"):
                event = line[6:].strip()
            elif line.startswith("data:"):
                data_lines.append(line[5:].lstrip(" "))
        data = "\n".join(data_lines)
        terminal = data.startswith("[DONE]") or event in (
            "message_stop", "response.completed", "response.incomplete", "response.failed")
        frames.append(_Frame(event, data, terminal))
    return frames


# -- serving outside tests (the CLI) ----------------------------------------------------------


def echo_responder(request: ModelRequest) -> str:
    """The CLI's default reply: echo the last user message."""
    last = next((m for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
    return f"echo: {last.text}" if last is not None else "echo: (no user message)"


def announce(emulator: ProviderEmulator, write: Callable[[str], None] = print) -> None:
    """Print where the emulator listens (``serve``'s default ``on_ready``)."""
    write(f"provider emulator listening on {emulator.base_url}")
    write(f"  OpenAI base_url:    {emulator.openai_base_url}")
    write(f"  Anthropic base_url: {emulator.anthropic_base_url}")
    write("  press Ctrl-C to stop")


def serve(
    turns: Iterable[TurnLike] = (),
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    on_ready: Callable[[ProviderEmulator], None] | None = announce,
    stop_event: threading.Event | None = None,
    strict: bool = False,
    fallback: TurnLike | None = echo_responder,
    cassette: str | None = None,
) -> ProviderEmulator:
    """Run an emulator in the foreground until ``stop_event`` is set or Ctrl-C; ``on_ready``
    gets the started emulator (its URLs).  Returns the stopped emulator (its ``requests``)."""
    options: dict[str, Any] = {"strict": strict, "fallback": fallback, "host": host, "port": port}
    emulator = (
        ProviderEmulator.from_cassette(cassette, **options) if cassette is not None
        else ProviderEmulator(turns, **options)
    )
    emulator.start()
    stop = stop_event or threading.Event()
    try:
        if on_ready is not None:
            on_ready(emulator)
        while not stop.wait(0.2):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        emulator.stop()
    return emulator


def main_emulator(
    replies: Sequence[str] = (),
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    cassette: str | None = None,
    echo: bool = True,
    stop_event: threading.Event | None = None,
    write: Callable[[str], None] = print,
) -> int:
    """The ``openprogram-testing emulator`` command: serve ``replies`` (text turns, in order) or a
    cassette, then echo replies; print the base URLs; stop on Ctrl-C.  Returns an exit code."""

    try:
        emu = serve(list(replies), host=host, port=port,
                    on_ready=lambda e: announce(e, write), stop_event=stop_event,
                    fallback=echo_responder if echo else None, cassette=cassette)
    except (OSError, ValueError) as exc:
        write(f"error: {exc}")
        return 2
    write(f"served {len(emu.requests)} request(s)")
    return 0


__all__ = [
    "ENDPOINTS",
    "EmulatorProtocolError",
    "EmulatorRequest",
    "Fault",
    "ProviderEmulator",
    "announce",
    "echo_responder",
    "main_emulator",
    "serve",
]
