"""``ProviderEmulator``: a loopback HTTP server that speaks the provider wire formats.

It serves the OpenAI Chat Completions, OpenAI Responses, Anthropic Messages, Gemini
``generateContent`` and Bedrock Converse / InvokeModel endpoints (see
:data:`transport.wire.ENDPOINTS`) on ``127.0.0.1`` (a free port, its own threads), so
the official SDKs and the real adapters run end to end without the internet.  A streaming request
gets its API's stream (SSE or AWS event stream) frame by frame (chunked transfer encoding, one
flush per frame); any other request gets the API's plain JSON body.

It is driven by the *same* turn objects as ``ScriptedProvider`` (``ScriptedTurn``, a plain
string, or a responder ``fn(ModelRequest) -> turn``; the emulator parses the HTTP body back into
a ``ModelRequest`` so responders work unchanged).  Tool-call ids follow the scripted provider's
scheme (``call_0``, ``call_1``, … per emulator), every other id is deterministic too.  Faults
are the mutations of :mod:`transport.faults` (``Fault.*`` builds them), attached per
turn: ``add(turn, faults=[...])``.
"""

from __future__ import annotations

import contextlib
import json
import logging
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from openprogram.providers.wire import WireAPI
from openprogram.types import UserMessage
from openprogram_testing.base.recording import (
    FAULT,
    HttpExchange,
    annotate_in_flight,
    announce_exchange,
    exchanges_wanted,
)
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.files import load_interactions
from openprogram_testing.transport.faults import (
    Fault,
    FaultError,
    HttpError,
    Mutation,
    Rechunk,
    TruncateAfter,
)
from openprogram_testing.transport.scripted import (
    ModelRequest,
    ScriptedTurn,
    ScriptError,
    TurnLike,
    UnconsumedTurns,
    UnexpectedModelCall,
    describe_turn,
    summarize_message,
)
from openprogram_testing.transport.wire import (
    ENDPOINTS,
    EXHAUSTED_HEADER,
    FORMATS,
    RenderContext,
    Route,
    WireFormat,
    route,
)

from .plan import (
    CassetteResponse,
    Plan,
    Slot,
    cassette_responses,
    error_plan,
    recorded_plan,
    render_plan,
    resolve,
    status_plan,
)

log = logging.getLogger("openprogram_testing.emulator")

_JOIN_TIMEOUT_S = 5.0
LISTEN_BACKLOG = 2048
"""Pending connections the listening socket queues: 1,000 clients may connect at once (the
socketserver default of 5 refuses connections under load)."""


class EmulatorProtocolError(ScriptError):
    """A request the emulator cannot serve: unknown endpoint, a body that is not a JSON object."""


def echo_responder(request: ModelRequest) -> str:
    """Echo the last user message: the answer past the end of a non-strict script (and the
    CLI's default)."""
    last = next((m for m in reversed(request.messages) if isinstance(m, UserMessage)), None)
    return f"echo: {last.text}" if last is not None else "echo: (no user message)"


@dataclass(slots=True)
class EmulatorRequest:
    """One HTTP request the emulator received.  ``api`` is ``None`` for an unknown endpoint;
    ``model_request`` is the body parsed back into the harness's ``ModelRequest`` (API requests
    only); ``turn`` is the 0-based index of the scripted turn that answered it (``None`` past the
    end of the script)."""

    index: int
    method: str
    path: str
    query: str
    headers: dict[str, str]
    body: Any
    api: WireAPI | None
    stream: bool = False
    model_request: ModelRequest | None = None
    turn: int | None = None
    received_at: float = 0.0
    """When the request arrived (``time.monotonic()``): the spacing of retries."""
    status: int | None = None
    """The HTTP status answered (``None``: the connection was dropped before one)."""
    response_headers: dict[str, str] = field(default_factory=dict)
    """The headers answered beside the body's own (``retry-after``, request ids, …)."""

    @property
    def json(self) -> Any:
        """The parsed JSON body (alias of ``body``)."""
        return self.body


def model_request(
    wire: WireFormat, body: dict[str, Any], index: int, path: str, model: str, stream: bool
) -> ModelRequest:
    """Parse a request body back into the wire-neutral ``ModelRequest`` (leniently: unknown or
    malformed entries are skipped, never fatal)."""
    parsed = wire.parse(body)
    return ModelRequest(
        index=index,
        model=model,
        system_prompt="\n\n".join(parsed.system) if parsed.system else None,
        messages=parsed.messages,
        tools=parsed.tools,
        tool_choice=parsed.tool_choice,
        parallel_tool_calls=parsed.parallel_tool_calls,
        max_tokens=parsed.max_tokens,
        temperature=parsed.temperature,
        extras={"api": wire.api, "path": path, "stream": stream},
    )


def _guess(path: str) -> WireFormat:
    found = route(path)
    if found is not None:
        return found.wire
    return FORMATS["anthropic" if "messages" in path and "chat" not in path else "openai_chat"]


class ProviderEmulator:
    """A real HTTP server on ``127.0.0.1`` playing ``turns`` in order, one per model request.

    ``strict`` (default): a request beyond the script gets HTTP 500 with a JSON error naming it
    and is recorded as an ``UnexpectedModelCall``; ``assert_complete()`` raises it, or
    ``UnconsumedTurns`` when turns were never played.  ``strict=False``: requests beyond the
    script are answered by ``fallback`` (a turn or responder; default: echo the last user
    message) and leftover turns are not an error.  With ``strict=True`` a ``fallback`` answers
    beyond the script too, without a violation.  Every answer past the end carries the header
    ``x-emulator-script-exhausted: true``.  ``chunk_size`` is the default delta size of text and
    argument JSON (a turn's own wins).
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
        self._slots: list[Slot] = []
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
    def add(self, *turns: TurnLike | Mutation, faults: Sequence[Mutation] = ()) -> ProviderEmulator:
        """Append turns; ``faults`` apply to each of them.  A fault given as a turn is a
        request slot answered by that fault alone (``add(Fault.http_error(429), "hi")``)."""
        faults = tuple(faults)
        for f in faults:
            _check_fault(f)
        with self._lock:
            for t in turns:
                if isinstance(t, Mutation):
                    _check_fault(t)
                    self._append(None, (t, *faults))
                else:
                    self._append(t, faults)
        return self

    def _append(self, t: TurnLike | None, faults: tuple[Mutation, ...]) -> None:
        if t is not None and not isinstance(t, ScriptedTurn | str) and not callable(t):
            raise TypeError(
                f"a turn must be a ScriptedTurn, a str or a responder function, got {t!r}"
            )
        alone = any(
            isinstance(f, HttpError) or (isinstance(f, TruncateAfter) and f.disconnect)
            for f in faults
        )
        if t is None and not alone:
            raise ValueError(
                "a Fault alone can answer a request only if it is Fault.http_error(...) or "
                "Fault.truncate_after(..., disconnect=True)"
            )
        self._slots.append(Slot(t, faults))

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
        """``http://host:port``: the Anthropic, Gemini (``http_options.base_url``) and Bedrock
        (``endpoint_url``) base URL."""
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
    def plan(self, method: str, target: str, headers: dict[str, str], raw: bytes) -> Plan:
        """Record one request and decide its answer.  An emulator serving on its socket
        announces the exchange to the traffic observers; one that never listens (a cassette's
        fallback plans its turns with one) announces nothing, and its caller, which sends the
        answer, announces it: planning needs no server, and an observer of the traffic can
        never make it fail."""
        record, plan = self._recorded_plan(method, target, headers, raw)
        httpd = self._httpd  # read once: a concurrent stop() clears it
        if httpd is not None and exchanges_wanted():
            self._announce(record, int(httpd.server_address[1]), target, raw, plan)
        return plan

    def _recorded_plan(
        self, method: str, target: str, headers: dict[str, str], raw: bytes
    ) -> tuple[EmulatorRequest, Plan]:
        received_at = time.monotonic()
        path, _, query = target.partition("?")
        found = route(path)
        with self._lock:
            record = EmulatorRequest(
                index=len(self.requests),
                method=method,
                path=path,
                query=query,
                headers=headers,
                body=None,
                api=found.api if found is not None and method == "POST" else None,
                received_at=received_at,
            )
            self.requests.append(record)
            plan = self._plan_record(record, found, method, query, raw)
            record.status = None if plan.kind == "drop" else plan.status
            record.response_headers = dict(plan.headers)
        return record, plan

    def _announce(
        self, record: EmulatorRequest, port: int, target: str, raw: bytes, plan: Plan
    ) -> None:
        """The exchange this emulator's socket served, for the traffic observers (the HTML
        report shows the traffic of any client)."""
        host = self._host if self._host not in ("", "0.0.0.0") else "127.0.0.1"
        announce_exchange(
            HttpExchange(
                "emulator",
                record.index,
                record.method,
                f"http://{host}:{port}{target}",
                record.received_at,
                dict(record.headers),
                record.body if record.body is not None else raw,
                record.status,
                {"content-type": plan.content_type, **plan.headers},
                plan.body if plan.kind != "stream" else b"".join(plan.frames),
            )
        )

    def _plan_record(
        self, record: EmulatorRequest, found: Route | None, method: str, query: str, raw: bytes
    ) -> Plan:
        """The answer to a recorded request (under the lock)."""
        path = record.path
        request_id = f"req_emu_{record.index}"
        if found is None or method != "POST":
            known = ", ".join(f"POST {p}" for p in ENDPOINTS)
            msg = f"the provider emulator does not serve {method} {path} (it serves {known})"
            self.violations.append(EmulatorProtocolError(msg))
            wire = found.wire if found is not None else _guess(path)
            return error_plan(wire, 404 if found is None else 405, msg, request_id)
        return self._plan_api(record, found, query, raw, request_id)

    def _plan_api(
        self, record: EmulatorRequest, found: Route, query: str, raw: bytes, request_id: str
    ) -> Plan:
        wire = found.wire
        try:
            body = json.loads(raw.decode("utf-8")) if raw else None
        except (UnicodeDecodeError, ValueError) as exc:
            body = None
            problem = f"the request body is not valid JSON ({exc})"
        else:
            problem = "" if isinstance(body, dict) else "the request body must be a JSON object"
        record.body = body
        if problem or not isinstance(body, dict):
            self.violations.append(EmulatorProtocolError(f"POST {record.path}: {problem}"))
            return error_plan(wire, 400, problem, request_id)
        stream = found.stream if found.stream is not None else body.get("stream") is True
        record.stream = stream
        model = found.model or str(body.get("model") or "")
        request = model_request(wire, body, self._model_calls, record.path, model, stream)
        self._model_calls += 1
        record.model_request = request

        exhausted = self._played >= len(self._slots)
        if not exhausted:
            slot = self._slots[self._played]
            record.turn = self._played
            self._played += 1
        elif self.fallback is not None or not self.strict:
            slot = Slot(self.fallback if self.fallback is not None else echo_responder)
        else:
            msg = (
                f"unexpected model call #{request.index} (0-based) to {record.path}: the "
                f"emulator script has {len(self._slots)} turn(s), all played; "
                f"last message: {summarize_message(request.last_message)}"
            )
            self.violations.append(UnexpectedModelCall(msg))
            return _exhausted(error_plan(wire, 500, msg, request_id))
        for fault in slot.faults:  # marked on the run being recorded, as a cassette's are
            annotate_in_flight(FAULT, f"{fault!r} on emulated request {record.index}")
        plan = self._answer(wire, slot, request, body, request_id, stream, query, record.turn)
        return _exhausted(plan) if exhausted else plan

    def _answer(
        self,
        wire: WireFormat,
        slot: Slot,
        request: ModelRequest,
        body: dict[str, Any],
        request_id: str,
        stream: bool,
        query: str,
        index: int | None,
    ) -> Plan:
        status = next((f for f in slot.faults if isinstance(f, HttpError)), None)
        if status is not None:
            return status_plan(wire, status, request_id, request.model, slot.faults)
        if slot.turn is None:  # a bare disconnect fault
            return Plan(kind="drop")
        try:
            if isinstance(slot.turn, CassetteResponse):
                return recorded_plan(wire, slot.turn, slot.faults)
            turn = resolve(slot.turn, request, self.chunk_size, self._new_call_id)
            ctx = RenderContext(body, request.model or "emulated-model", request.index, request_id)
            json_array = wire.api == "gemini" and stream and "alt=sse" not in query
            return render_plan(
                wire,
                turn,
                ctx,
                stream=stream and not json_array,
                json_array=json_array,
                faults=slot.faults,
            )
        except FaultError as exc:
            where = request.extras.get("path") or wire.api
            msg = (
                f"turn #{index}: a fault does not fit the {wire.api} response of POST {where}: "
                f"{exc}"
            )
            self.violations.append(ScriptError(msg))
            refused = error_plan(wire, 500, msg, request_id)
            refused.headers["x-should-retry"] = "false"  # a script bug: asking again cannot help
            return refused
        except Exception as exc:  # a responder bug: make it loud on both sides
            msg = f"the responder for turn #{index} raised {type(exc).__name__}: {exc}"
            self.violations.append(ScriptError(msg))
            return error_plan(wire, 500, msg, request_id)

    def _new_call_id(self) -> str:
        value = f"call_{self._next_call_id}"
        self._next_call_id += 1
        return value

    @classmethod
    def from_cassette(
        cls,
        path: str | Path,
        *,
        faults: Mapping[int, Sequence[Mutation]] | None = None,
        **kwargs: Any,
    ) -> ProviderEmulator:
        """An emulator that serves the responses of a cassette, in recorded order (one per
        request, whatever the request; status, headers and body as recorded, gzip undone;
        streams frame by frame).  ``faults`` maps an interaction index to the faults of its
        response; ``kwargs`` go to the constructor."""

        try:
            responses = cassette_responses(load_interactions(path))
        except (CassetteError, OSError) as exc:
            raise ValueError(f"cannot load cassette {path}: {exc}") from None
        for index in faults or {}:
            if not isinstance(index, int) or not 0 <= index < len(responses):
                raise ValueError(
                    f"from_cassette: no interaction {index!r} to attach faults to "
                    f"(the cassette has {len(responses)})"
                )
        emulator = cls(**kwargs)
        for i, response in enumerate(responses):
            emulator.add(response, faults=tuple((faults or {}).get(i, ())))
        return emulator


def _check_fault(fault: object) -> None:
    if not isinstance(fault, Mutation):
        raise TypeError(
            f"faults must be Fault mutations (openprogram_testing.transport.faults), got {fault!r}"
        )
    if isinstance(fault, Rechunk):
        raise TypeError("Rechunk shapes recorded bodies; the emulator writes one frame per flush")
    if isinstance(fault, HttpError):
        Fault.http_error(fault.status)
    for name in ("n", "after_frame", "i"):
        value = getattr(fault, name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{fault!r}: {name} must be a frame index >= 0")
    seconds = getattr(fault, "seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise ValueError(f"{fault!r}: seconds must be >= 0")


def _exhausted(plan: Plan) -> Plan:
    plan.headers[EXHAUSTED_HEADER] = "true"
    return plan


# -- HTTP plumbing ----------------------------------------------------------------------------


class _Server(ThreadingHTTPServer):
    """Tracks its handler threads and connections so ``stop()`` can close and join them all."""

    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(
        self,
        address: tuple[str, int],
        handler: type[BaseHTTPRequestHandler],
        emulator: ProviderEmulator,
    ) -> None:
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
                plan = emulator.plan(method, self.path, headers, raw)
            except Exception as exc:  # an emulator bug: answer and record it, never hang
                log.exception("provider emulator: internal error")
                msg = f"provider emulator internal error: {type(exc).__name__}: {exc}"
                emulator.violations.append(EmulatorProtocolError(msg))
                plan = error_plan(_guess(self.path.partition("?")[0]), 500, msg, "req_emu_internal")
            self._send(plan, emulator._stopping)
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            self.close_connection = True  # the client went away: nothing to answer

    def _send(self, plan: Plan, stopping: threading.Event) -> None:
        stall = plan.stall
        if plan.kind == "drop":
            self._abort()
            return
        if plan.kind == "json":
            if (stall and stall[1] and stopping.wait(stall[1])) or (
                plan.latency and stopping.wait(plan.latency)
            ):
                self._abort()
                return
            self.send_response(plan.status)
            for k, v in plan.headers.items():
                self.send_header(k, v)
            self.send_header("content-type", plan.content_type)
            self.send_header("content-length", str(len(plan.body)))
            self.end_headers()
            if plan.disconnect_after == 0:
                self.wfile.write(plan.body[: len(plan.body) // 2])
                self._abort()
                return
            self.wfile.write(plan.body)
            return
        frames = plan.frames
        self.send_response(plan.status)
        for k, v in plan.headers.items():
            self.send_header(k, v)
        self.send_header("content-type", plan.content_type)
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        for i in range(len(frames) + 1):
            if stall is not None and i == min(stall[0], len(frames)) and stall[1]:
                if stopping.wait(stall[1]):
                    self._abort()
                    return
            if plan.disconnect_after is not None and i >= plan.disconnect_after:
                self._abort()
                return
            if i == len(frames) or (plan.end_after is not None and i >= plan.end_after):
                break
            if plan.latency and stopping.wait(plan.latency):
                self._abort()
                return
            data = frames[i]
            self.wfile.write(b"%X\r\n%s\r\n" % (len(data), data))
        self.wfile.write(b"0\r\n\r\n")

    def _abort(self) -> None:
        """Drop the connection now (an incomplete body for the client)."""
        self.close_connection = True
        with contextlib.suppress(OSError):
            self.wfile.flush()
        with contextlib.suppress(OSError):
            self.connection.shutdown(socket.SHUT_RDWR)
