"""Planning one answer: a scripted turn (or a recorded response) and its faults become a
:class:`Plan` (status, headers, a JSON body or encoded frames, and how to serve them).

Mapping of scripted turns onto the wire (decisions where the APIs have no exact analogue):

- ``error_turn(...)`` without parts, or on a non-streaming request: an HTTP error (``status``,
  default 500) with the API's JSON error body and ``retry-after`` when ``retry_after_s`` is set.
  With parts on a streaming request: the parts, then the API's in-stream error frame.
- ``aborted_turn`` is served like an error turn (an abort is a client-side event).
- ``cut_turn``: the content frames, then the stream simply ends (no finish/terminal frames);
  ``raising_turn``: the content frames, then the connection drops.  On a non-streaming request
  both drop the connection before the body.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from openprogram.providers.apis import PROVIDER_APIS
from openprogram.types import TextContent, ThinkingContent, Usage
from openprogram_testing.transport.faults import (
    CrcMismatch,
    DropTerminal,
    FaultError,
    GarbleToolArguments,
    HttpError,
    InjectError,
    Latency,
    MalformedFrame,
    MutableResponse,
    Mutation,
    Stall,
    TruncateAfter,
    apply_mutations,
)
from openprogram_testing.transport.scripted import (
    ModelRequest,
    ScriptedCall,
    ScriptedThinking,
    ScriptedTurn,
    TurnLike,
    resolve_turn,
)
from openprogram_testing.transport.wire import (
    FORMATS,
    CallPart,
    ErrorAnswer,
    Frame,
    Part,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    detect_format,
    dumps,
    eventstream,
    sse,
)
from openprogram_testing.transport.wire.base import Framing
from openprogram_testing.transport.wire.eventstream import EventStream

__all__ = ["CassetteResponse", "Plan", "Slot", "error_plan", "recorded_plan", "render_plan"]


@dataclass(slots=True)
class Slot:
    """One place in the script: a turn (``None``: a fault alone answers) and its faults."""

    turn: TurnLike | None
    faults: tuple[Mutation, ...] = ()


@dataclass(slots=True)
class Plan:
    """What the handler sends for one request."""

    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    kind: Literal["json", "stream", "drop"] = "json"
    body: bytes = b""
    frames: list[bytes] = field(default_factory=list)
    content_type: str = "application/json"
    end_after: int | None = None
    """End the body cleanly after this many frames."""
    disconnect_after: int | None = None
    """Drop the connection after this many frames."""
    stall: tuple[int, float] | None = None
    latency: float = 0.0


@dataclass(slots=True)
class _Unit:
    """A frame before serving: how to encode it (plain, corrupt JSON, bad CRC) and whether it
    ends the stream."""

    encode: Callable[[bool, bool], bytes]
    terminal: bool
    done: bool = False
    """Chat's ``data: [DONE]``: terminal, but swallowed by the SDKs (a cut before it alone
    changes nothing a client sees)."""


class CassetteResponse:
    """A script entry holding one recorded response (status, headers, body), served verbatim.
    A callable so it passes where responders do; the emulator serves it without calling it."""

    def __init__(self, status: int, headers: dict[str, str], raw: bytes) -> None:
        self.status = status
        self.headers = headers
        self.raw = raw
        self.__name__ = f"cassette response {status}"

    def __call__(self, request: ModelRequest) -> ScriptedTurn:  # pragma: no cover - unused
        raise TypeError("a cassette response is served verbatim")


_HOP_HEADERS = {
    "content-length",
    "transfer-encoding",
    "connection",
    "content-encoding",
    "date",
    "server",
    "keep-alive",
}


def cassette_responses(interactions: Sequence[dict[str, Any]]) -> list[CassetteResponse]:
    """The responses of loaded cassette interactions (gzip undone, hop headers dropped)."""
    out: list[CassetteResponse] = []
    for it in interactions:
        resp = it["response"]
        status = resp["status"]["code"] if isinstance(resp["status"], dict) else resp["status"]
        body = resp["body"]["string"] if isinstance(resp.get("body"), dict) else resp.get("body")
        headers: dict[str, str] = {}
        for k, v in (resp.get("headers") or {}).items():
            value = v[0] if isinstance(v, list) and v else v
            if isinstance(value, bytes):
                value = value.decode("latin-1")
            headers[str(k).lower()] = str(value)
        raw = body.encode() if isinstance(body, str) else bytes(body or b"")
        if raw[:2] == b"\x1f\x8b":
            raw = gzip.decompress(raw)
        kept = {k: v for k, v in headers.items() if k not in _HOP_HEADERS}
        out.append(CassetteResponse(int(status), kept, raw))
    return out


def resolve(
    spec: TurnLike, request: ModelRequest, chunk_size: int | None, new_id: Callable[[], str]
) -> WireTurn:
    """A scripted turn (or a responder's answer) for ``request``, in wire terms."""
    scripted = asyncio.run(resolve_turn(spec, request))
    parts: list[Part] = []
    for part in scripted.parts:
        if isinstance(part, str | TextContent):
            parts.append(TextPart(part if isinstance(part, str) else part.text))
        elif isinstance(part, ScriptedThinking):
            parts.append(ThinkingPart(part.text, part.signature, part.redacted))
        elif isinstance(part, ThinkingContent):
            parts.append(ThinkingPart(part.thinking, part.signature, part.redacted))
        elif isinstance(part, ScriptedCall):
            given = part.id is not None
            call_id = part.id if part.id is not None else new_id()
            empty = part.raw is None and not part.arguments
            parts.append(CallPart(call_id, part.name, part.argument_text, empty, given))
        else:
            raise TypeError(f"unsupported scripted part {part!r}")
    stop = scripted.stop or ("toolUse" if any(isinstance(p, CallPart) for p in parts) else "stop")
    turn = WireTurn(
        parts=parts,
        stop=stop,
        usage=scripted.usage or Usage(),
        chunk=scripted.chunk_size if scripted.chunk_size is not None else chunk_size,
        delay=scripted.delay_s or 0.0,
    )
    if scripted.error is not None:
        turn.ending = "error"
        turn.error = scripted.error
        turn.error_status = scripted.error_status or 500
        turn.retry_after_s = scripted.error_retry_after_s
    elif scripted.raises is not None:
        turn.ending = "drop"
    elif scripted.cut:
        turn.ending = "cut"
    return turn


def _seconds(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def error_plan(
    wire: WireFormat,
    status: int,
    message: str | None,
    request_id: str,
    *,
    model: str = "",
    retry_after_s: float | None = None,
    faults: tuple[Mutation, ...] = (),
) -> Plan:
    """An HTTP error in the API's shape (timing faults still apply)."""
    answer: ErrorAnswer = wire.error(status, message, request_id, model)
    headers = {wire.request_id_header: request_id, **answer.headers}
    if retry_after_s is not None:
        headers["retry-after"] = _seconds(retry_after_s)
    plan = Plan(status=status, headers=headers, body=dumps(answer.body).encode())
    return _timing(plan, faults)


def status_plan(
    wire: WireFormat, fault: HttpError, request_id: str, model: str, faults: tuple[Mutation, ...]
) -> Plan:
    """The answer of a status fault: the API's error body, or the fault's own."""
    plan = error_plan(wire, fault.status, None, request_id, model=model, faults=faults)
    if fault.body is not None:
        body = fault.body
        plan.body = (
            body
            if isinstance(body, bytes)
            else body.encode()
            if isinstance(body, str)
            else dumps(body).encode()
        )
    plan.headers.update(fault.headers or {})
    return plan


def _timing(plan: Plan, faults: tuple[Mutation, ...]) -> Plan:
    for f in faults:
        if isinstance(f, Stall) and plan.stall is None:
            plan.stall = (f.after_frame, f.seconds)
        elif isinstance(f, Latency):
            plan.latency += f.seconds
    return plan


def render_plan(
    wire: WireFormat,
    turn: WireTurn,
    ctx: RenderContext,
    *,
    stream: bool,
    json_array: bool,
    faults: tuple[Mutation, ...],
) -> Plan:
    """The answer of a scripted turn: an error, a dropped connection, a JSON body or frames."""
    faults = (*faults, *((Latency(turn.delay),) if turn.delay else ()))
    if turn.ending == "error" and (not stream or not turn.parts):
        return error_plan(
            wire,
            turn.error_status,
            turn.error,
            ctx.request_id,
            model=ctx.model,
            retry_after_s=turn.retry_after_s,
            faults=faults,
        )
    if not stream and turn.ending in ("cut", "drop"):
        return _timing(Plan(kind="drop"), faults)
    headers = {wire.request_id_header: ctx.request_id}
    if not stream:
        headers.update(wire.body_headers(turn))
        body = wire.body(turn, ctx)
        data = dumps([body] if json_array else body).encode()
        return _json_faults(Plan(headers=headers, body=data), faults)
    frames = list(wire.frames(turn, ctx))
    framing = wire.framing
    units = [_rendered(framing, f) for f in frames]
    plan = stream_plan(wire, units, framing.content_type, headers, faults)
    if turn.ending == "drop":  # the content frames, then the connection drops
        cut = plan.disconnect_after
        plan.disconnect_after = len(frames) if cut is None else min(cut, len(frames))
    return plan


def _rendered(framing: Framing, frame: Frame) -> _Unit:
    if isinstance(framing, EventStream):
        stream = framing
        return _Unit(lambda c, b: stream.encode(frame, corrupt=c, bad_crc=b), frame.terminal)
    done = frame.data == "[DONE]"
    return _Unit(lambda c, b: framing.encode(frame, corrupt=c), frame.terminal, done)


def _json_faults(plan: Plan, faults: tuple[Mutation, ...]) -> Plan:
    """Frame faults on a JSON body (frame 0): a cut or corrupt body.  A fault with nothing to
    act on in a JSON body (no terminal frame, no later frame, no argument fragments, no CRC) is
    refused: served, it would change nothing the client sees."""
    for f in faults:
        if isinstance(f, TruncateAfter) and f.n == 0 and f.disconnect:
            plan.disconnect_after = 0
        elif isinstance(f, TruncateAfter) and f.n == 0:
            plan.body = plan.body[: len(plan.body) // 2]
        elif isinstance(f, MalformedFrame) and f.n == 0:
            plan.body = plan.body[: max(1, len(plan.body) // 2)]
        elif isinstance(f, Stall | Latency):  # served before the body: it bites in time
            continue
        elif not isinstance(f, HttpError):
            raise FaultError(
                f"{f!r} does not fit a non-streamed JSON response (one body, frame 0): it would "
                "change nothing; use it on a streaming request"
            )
    return _timing(plan, faults)


def stream_plan(
    wire: WireFormat,
    units: list[_Unit],
    content_type: str,
    headers: dict[str, str],
    faults: tuple[Mutation, ...],
) -> Plan:
    """Frames with their faults applied: content edits first, then the frame-addressed cuts."""
    content = [f for f in faults if isinstance(f, GarbleToolArguments | InjectError)]
    if content:
        units = _edited(wire, units, content)
    if any(isinstance(f, DropTerminal) for f in faults):
        kept = [u for u in units if not u.terminal]
        if len(kept) == len(units):
            raise FaultError(f"DropTerminal(): the {wire.api} stream has no terminal frame to drop")
        units = kept
    corrupt = {f.n for f in faults if isinstance(f, MalformedFrame)}
    bad_crc = {f.n for f in faults if isinstance(f, CrcMismatch)}
    if bad_crc and not isinstance(wire.framing, EventStream):
        crc = next(f for f in faults if isinstance(f, CrcMismatch))
        raise FaultError(f"{crc!r}: {wire.api} streams are SSE: only event-stream frames have CRCs")
    for f in faults:  # a frame that is not there: the fault would change nothing
        top = len(units) if isinstance(f, TruncateAfter | InjectError | Stall) else len(units) - 1
        index = getattr(f, "after_frame", getattr(f, "n", 0))
        if isinstance(f, TruncateAfter | MalformedFrame | CrcMismatch | InjectError | Stall) and (
            index > top
        ):
            raise FaultError(
                f"{f!r}: frame index must be 0..{top}; the stream has {len(units)} frames"
            )
        terminal = [u.terminal for u in units]
        if isinstance(f, TruncateAfter):  # a cut past the end: the client would see none
            swallowed = [i for i, u in enumerate(units) if u.done]
            f.check_position(terminal, f"the {wire.api} stream", swallowed)
        elif isinstance(f, Stall):  # a pause after the end: the client has stopped reading
            f.check_position(terminal, f"the {wire.api} stream")
    plan = Plan(headers=headers, kind="stream", content_type=content_type)
    plan.frames = [u.encode(i in corrupt, i in bad_crc) for i, u in enumerate(units)]
    for f in faults:
        if isinstance(f, TruncateAfter):
            if f.disconnect:
                cut = plan.disconnect_after
                plan.disconnect_after = f.n if cut is None else min(f.n, cut)
            else:
                plan.end_after = f.n if plan.end_after is None else min(f.n, plan.end_after)
    return _timing(plan, faults)


_PATHS = {api.name: api.streaming_path for api in PROVIDER_APIS}
"""A streamed request's path per API (the fault mutations read the path to know the framing)."""


def _edited(wire: WireFormat, units: list[_Unit], content: Sequence[Mutation]) -> list[_Unit]:
    """Frames after garbling/injection, done by the fault mutations on the encoded body."""
    body = b"".join(u.encode(False, False) for u in units)
    if isinstance(wire.framing, EventStream):
        path = (
            "/model/m/invoke-with-response-stream" if wire.api == "anthropic" else _PATHS["bedrock"]
        )
        ctype = eventstream.CONTENT_TYPE
        response = MutableResponse(200, "OK", {"content-type": [ctype]}, body, path=path)
        apply_mutations(response, content)
        return [_message_unit(wire, m) for m in eventstream.split_messages(response.body_bytes())]
    text = body.decode()
    ctype = "text/event-stream"
    response = MutableResponse(200, "OK", {"content-type": [ctype]}, text, path=_PATHS[wire.api])
    apply_mutations(response, content)
    newline = "\r\n" if "\r\n" in text[:4096] else "\n"
    return [_sse_unit(wire, f, newline) for f in sse.split_frames(response.text)]


def _sse_unit(wire: WireFormat, frame: str, newline: str) -> _Unit:
    def encode(corrupt: bool, bad_crc: bool) -> bytes:
        text = sse.corrupt_frame(frame) if corrupt else frame
        return (text + "\n\n").replace("\n", newline).encode()

    return _Unit(encode, wire.is_terminal(frame), sse.is_done(frame))


def _message_unit(wire: WireFormat, raw: bytes) -> _Unit:
    def encode(corrupt: bool, bad_crc: bool) -> bytes:
        data = eventstream.corrupt_payload(raw) if corrupt else raw
        return eventstream.corrupt_crc(data) if bad_crc else data

    try:
        terminal = wire.is_terminal_message(eventstream.decode_message(raw))
    except eventstream.EventStreamError:
        terminal = False
    return _Unit(encode, terminal)


def recorded_plan(
    wire: WireFormat, response: CassetteResponse, faults: tuple[Mutation, ...]
) -> Plan:
    """A recorded response: a stream frame by frame (so frame faults apply), anything else
    verbatim with its recorded status."""
    ctype = response.headers.get("content-type", "")
    headers = {
        k: v for k, v in response.headers.items() if k not in ("content-type", "cache-control")
    }
    if response.status == 200 and eventstream.CONTENT_TYPE in ctype:
        messages = eventstream.split_messages(response.raw)
        chunked = any(_event(m) == "chunk" for m in messages)
        es_wire = (
            wire
            if wire.api in ("bedrock", "anthropic") and isinstance(wire.framing, EventStream)
            else FORMATS["bedrock_invoke" if chunked else "bedrock"]
        )
        units = [_message_unit(es_wire, m) for m in messages]
        return stream_plan(es_wire, units, eventstream.CONTENT_TYPE, headers, faults)
    if response.status == 200 and "text/event-stream" in ctype:
        text = response.raw.decode("utf-8", errors="replace")
        frames = sse.split_frames(text)
        sse_wire = detect_format(frames, None)
        newline = "\r\n" if "\r\n" in text[:4096] else "\n"
        units = [_sse_unit(sse_wire, f, newline) for f in frames]
        return stream_plan(sse_wire, units, "text/event-stream; charset=utf-8", headers, faults)
    plan = Plan(status=response.status, headers=headers, body=response.raw)
    plan.content_type = ctype or "application/json"
    return _json_faults(plan, faults)


def _event(raw: bytes) -> str | None:
    try:
        return eventstream.decode_message(raw).event_type
    except eventstream.EventStreamError:
        return None
