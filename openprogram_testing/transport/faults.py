"""The one fault vocabulary: frame-addressed mutations of provider responses.

A stream is a sequence of *frames*: server-sent events (OpenAI Chat, OpenAI Responses,
Anthropic, Gemini) or AWS event-stream messages (Bedrock).  Mutations address frames by 0-based
index, so a test can say "cut the stream after frame 7", "corrupt frame 3's CRC" or "garble the
arguments of tool call 1" against any recorded stream without editing the recording, and the
provider emulator takes the same objects for its scripted responses (:class:`Fault` holds the
emulator's short constructors over them).

They compose: body mutations apply first, in list order; :class:`HttpError` replaces the whole
response; :class:`Stall`, :class:`Latency` and :class:`Rechunk` only shape how the final body is
served (timing and byte boundaries), never its content.  Frame splitting and terminal-frame
detection belong to the wire formats (:mod:`transport.wire`); the SSE helpers are
re-exported here for the cassette tools.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any, Literal

from openprogram.providers.wire import WireAPI
from openprogram_testing.base import deprecated
from openprogram_testing.transport.wire.bedrock import bedrock_error
from openprogram_testing.transport.wire.gemini import gemini_error
from openprogram_testing.transport.wire.openai_chat import GARBLE_PREFIX
from openprogram_testing.transport.wire.sse import (
    corrupt_frame,
    frame_data,
    frame_event,
    is_sse,
    join_frames,
    split_frames,
)

from .fault_response import FaultError, MutableResponse, detect_api
from .wire import FORMATS, eventstream, sse
from .wire import anthropic as _anthropic
from .wire import bedrock as _bedrock
from .wire import gemini as _gemini
from .wire import openai_chat as _chat
from .wire import openai_responses as _responses

__all__ = [
    "FAULT_KINDS",
    "GARBLE_PREFIX",
    "CrcMismatch",
    "DropTerminal",
    "Fault",
    "FaultError",
    "FaultKind",
    "GarbleToolArguments",
    "HttpError",
    "InjectError",
    "Latency",
    "MalformedFrame",
    "MutableResponse",
    "Mutation",
    "Rechunk",
    "Stall",
    "TruncateAfter",
    "apply_mutations",
    "detect_api",
    "frame_data",
    "frame_event",
    "is_sse",
    "join_frames",
    "split_frames",
]


def _terminal_flags(response: MutableResponse, frames: Sequence[Any]) -> list[bool]:
    """Which of ``frames`` end the stream, in its wire format."""
    wire = response.wire(frames)
    return [response.is_terminal(wire, frame) for frame in frames]


def _swallowed(frames: Sequence[Any]) -> list[int]:
    """The frames no client reads: OpenAI Chat's ``data: [DONE]`` (the SDK swallows it)."""
    return [i for i, f in enumerate(frames) if isinstance(f, str) and sse.is_done(f)]


def _where(response: MutableResponse, frames: Sequence[Any]) -> str:
    """The stream named for an error: its API and, when known, its endpoint."""
    api = response.wire(frames).api
    return f"the {api} stream of {response.path}" if response.path else f"the {api} stream"


# --------------------------------------------------------------------------------------------
# mutations


class Mutation:
    """Base class: ``apply`` edits a :class:`MutableResponse` in place."""

    def apply(self, response: MutableResponse) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _check_frame(mutation: object, n: int, frames: Sequence[Any], *, allow_end: bool) -> None:
    top = len(frames) if allow_end else len(frames) - 1
    if isinstance(n, bool) or not isinstance(n, int) or n < 0 or n > top:
        raise FaultError(
            f"{mutation!r}: frame index must be 0..{top}; the body has {len(frames)} frames"
        )


@dataclass(frozen=True)
class TruncateAfter(Mutation):
    """The stream ends after its first ``n`` frames (``n=0``: an empty body).

    By default the body simply ends (a proxy closing the connection cleanly); with
    ``disconnect=True`` reading past it raises the transport error a client gets for a
    connection dropped mid-body."""

    n: int
    disconnect: bool = False

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        _check_frame(self, self.n, frames, allow_end=True)
        terminal = _terminal_flags(response, frames)
        self.check_position(terminal, _where(response, frames), _swallowed(frames))
        response.set_frames(frames[: self.n])
        response.disconnect = response.disconnect or self.disconnect

    def check_position(
        self, terminal: Sequence[bool], where: str, swallowed: Collection[int] = ()
    ) -> None:
        """Refuse a cut the client cannot see.  ``terminal``: which frames end the stream;
        ``swallowed``: those of them no client reads (Chat's ``[DONE]``).

        A clean end must come at or before the last terminal frame a client reads: after it
        the client holds a whole answer (dropping Chat's ``[DONE]`` alone changes nothing).  A
        dropped connection must come at or before the last terminal frame, which clients read
        up to.  A stream with no terminal frame is cut anywhere it loses a frame, or dropped
        after its last one."""
        ends = [i for i, flag in enumerate(terminal) if flag]
        read = [i for i in ends if i not in swallowed]
        count = len(terminal)
        top = (ends if self.disconnect else read or ends)[-1] if ends else None
        if top is not None and self.n > top:
            kind = "a dropped connection" if self.disconnect else "a clean end"
            raise FaultError(
                f"{self!r}: {where} ends at frame {top} of {count} (a terminal frame); {kind} "
                f"after it leaves the client a whole answer, so the fault would check nothing: "
                f"cut after 0..{top} frames"
            )
        if top is None and self.n >= count and not self.disconnect:
            raise FaultError(
                f"{self!r}: {where} has {count} frames; keeping them all changes nothing the "
                f"client sees: cut after 0..{count - 1} frames"
            )


@dataclass(frozen=True)
class DropTerminal(Mutation):
    """Remove the terminal frame(s): OpenAI Chat ``data: [DONE]`` and the chunk with
    ``finish_reason`` (the SDK swallows ``[DONE]``: the finish is what ends a message), Responses
    ``response.completed`` (or ``.incomplete``/``.failed``), Anthropic ``message_stop``, Gemini
    the chunk with ``finishReason``, Bedrock ``messageStop`` and the ``metadata`` after it."""

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        wire = response.wire(frames)
        kept = [f for f in frames if not response.is_terminal(wire, f)]
        if len(kept) == len(frames):
            raise FaultError(f"{self!r}: the {wire.api} stream has no terminal frame to drop")
        response.set_frames(kept)


@dataclass(frozen=True)
class MalformedFrame(Mutation):
    """Frame ``n`` keeps its event name but its data becomes invalid JSON (an event-stream
    message stays well framed, with correct CRCs)."""

    n: int

    def apply(self, response: MutableResponse) -> None:

        frames = response.frames(self)
        _check_frame(self, self.n, frames, allow_end=False)
        frame = frames[self.n]
        if isinstance(frame, bytes):
            try:
                frames[self.n] = eventstream.corrupt_payload(frame)
            except eventstream.EventStreamError as exc:
                raise FaultError(f"{self!r}: {exc}") from None
        else:
            frames[self.n] = corrupt_frame(frame)
        response.set_frames(frames)


@dataclass(frozen=True)
class CrcMismatch(Mutation):
    """Event-stream message ``n`` keeps its bytes but its message CRC no longer matches them
    (the client's checksum check must reject it)."""

    n: int

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        if not frames or not isinstance(frames[0], bytes):
            raise FaultError(f"{self!r}: only event-stream bodies have CRCs; this one is SSE")
        _check_frame(self, self.n, frames, allow_end=False)
        frames[self.n] = eventstream.corrupt_crc(frames[self.n])
        response.set_frames(frames)


_GARBLERS = {
    "openai_chat": _chat.garble,
    "openai_responses": _responses.garble,
    "anthropic": _anthropic.garble,
}
_INJECTORS = {
    "openai_chat": _chat.inject_error,
    "openai_responses": _responses.inject_error,
    "anthropic": _anthropic.inject_error,
    "gemini": _gemini.inject_error,
}


@dataclass(frozen=True)
class GarbleToolArguments(Mutation):
    """The argument fragments of tool call ``i`` (0-based, in stream order) no longer form valid
    JSON: the first fragment gets :data:`GARBLE_PREFIX` in front, and the frames that repeat the
    full arguments (Responses ``.done``/``output_item.done``/``response.completed``) agree.
    Streams whose arguments arrive as text fragments: OpenAI, Anthropic (also through Bedrock's
    InvokeModel stream), Bedrock Converse; refused on Gemini, whose calls arrive whole as
    objects."""

    i: int

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        wire = response.wire(frames)
        api = wire.api
        if frames and isinstance(frames[0], bytes):
            garble: Any = _bedrock.garble if wire is FORMATS["bedrock"] else _bedrock.garble_invoke
        else:
            garble = _GARBLERS.get(api)
        if garble is None:
            raise FaultError(
                f"{self!r}: not available for {api} streams ({response.path or 'this endpoint'}):"
                " their tool calls arrive whole, with no argument text to garble"
            )
        found = garble(frames, self.i)
        if found <= self.i:
            raise FaultError(f"{self!r}: the {api} stream has only {found} tool call(s)")
        response.set_frames(frames)


@dataclass(frozen=True)
class InjectError(Mutation):
    """After the first ``after_frame`` frames the stream carries an error event in the API's own
    format (OpenAI chat ``data: {"error": ...}``, Responses ``event: error``, Anthropic
    ``event: error`` with ``overloaded_error``, Gemini ``data: {"error": ... UNAVAILABLE}``,
    Bedrock an event-stream ``serviceUnavailableException`` message) and ends there, as the
    providers do."""

    after_frame: int
    message: str = "injected mid-stream error"

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        _check_frame(self, self.after_frame, frames, allow_end=True)
        self.check_position(_terminal_flags(response, frames), _where(response, frames))
        api = response.wire(frames).api
        if frames and isinstance(frames[0], bytes):
            error: Any = _bedrock.inject_error(self.message, self.after_frame)
        else:
            error = _INJECTORS[api](self.message, self.after_frame)
        response.set_frames([*frames[: self.after_frame], error])

    def check_position(self, terminal: Sequence[bool], where: str) -> None:
        """Refuse an error placed after the stream's last terminal frame (``terminal``: which
        frames end it): clients stop reading there and would never see it."""
        _check_before_the_end(self, self.after_frame, terminal, where, "an error")


def _check_before_the_end(
    fault: Mutation, after: int, terminal: Sequence[bool], where: str, what: str
) -> None:
    """Refuse ``what`` placed after ``after`` frames when that is past the stream's last
    terminal frame: clients stop reading there."""
    ends = [i for i, flag in enumerate(terminal) if flag]
    if ends and after > ends[-1]:
        raise FaultError(
            f"{fault!r}: {where} ends at frame {ends[-1]} of {len(terminal)} (its last "
            f"terminal frame); clients stop reading there, so {what} after it would check "
            f"nothing: put it after 0..{ends[-1]} frames"
        )


@dataclass(frozen=True)
class HttpError(Mutation):
    """Replace the whole response with an HTTP error: ``status``, extra ``headers`` (e.g.
    ``{"retry-after": "2"}``) and ``body`` (default: the API's own JSON error shape)."""

    status: int
    headers: Mapping[str, str] | None = None
    body: Any = None

    def apply(self, response: MutableResponse) -> None:
        if not 400 <= self.status <= 599:
            raise FaultError(f"{self!r}: status must be an HTTP error code (400..599)")
        message = _reason(self.status) or "error"
        body = self.body
        extra: dict[str, str] = {}
        if body is None:
            api = _api_of(response)
            if api == "anthropic":
                body = _anthropic.anthropic_error(self.status, message, "", "")
                del body["request_id"]
            elif api == "gemini":
                body = gemini_error(self.status, message, "")
            elif api == "bedrock":
                answer = bedrock_error(self.status, message, "")
                body, extra = answer.body, answer.headers
            else:
                body = _chat.openai_error(self.status, message, "")
        response.status = self.status
        response.reason = _reason(self.status)
        response.headers = {"content-type": ["application/json"]}
        for name, value in {**extra, **(self.headers or {})}.items():
            response.set_header(name, str(value))
        response.body = body if isinstance(body, str | bytes) else json.dumps(body)
        response.stalls.clear()
        response.disconnect = False


def _api_of(response: MutableResponse) -> WireAPI:
    if response.is_eventstream():
        return response.wire(response.frames("HttpError")).api
    if isinstance(response.body, str) and is_sse(response.body):
        return detect_api(split_frames(response.body), response.path)
    return detect_api([], response.path or "")


def _reason(status: int) -> str:
    if status == 529:
        return "Overloaded"
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return ""


@dataclass(frozen=True)
class Stall(Mutation):
    """Pause ``seconds`` after the first ``after_frame`` frames have been served
    (``after_frame=0``: before the first byte, for any body, streamed or not)."""

    seconds: float
    after_frame: int = 0

    def apply(self, response: MutableResponse) -> None:
        if self.seconds < 0:
            raise FaultError(f"{self!r}: seconds must be >= 0")
        if self.after_frame:  # after_frame=0 (before the first byte) fits any body
            frames = response.frames(self)
            _check_frame(self, self.after_frame, frames, allow_end=True)
            self.check_position(_terminal_flags(response, frames), _where(response, frames))
        response.stalls.append((self.after_frame, float(self.seconds)))

    def check_position(self, terminal: Sequence[bool], where: str) -> None:
        """Refuse a pause after the stream's last terminal frame (``terminal``: which frames
        end it): clients have stopped reading and would not wait for it."""
        _check_before_the_end(self, self.after_frame, terminal, where, "a pause")


@dataclass(frozen=True)
class Latency(Mutation):
    """Wait ``seconds`` before every frame (before the body, for a non-streamed response)."""

    seconds: float

    def apply(self, response: MutableResponse) -> None:
        if self.seconds < 0:
            raise FaultError(f"{self!r}: seconds must be >= 0")
        response.latency += float(self.seconds)


@dataclass(frozen=True)
class Rechunk(Mutation):
    """Serve the body in arbitrary byte pieces: ``sizes`` (cycled, e.g. ``[1, 7, 3]``) or
    random sizes 1..``max_size`` from ``seed``.  Pieces may split lines, frames and multi-byte
    UTF-8 characters: a correct stream parser assembles the same messages for any chunking."""

    sizes: Sequence[int] | None = None
    seed: int | None = None
    max_size: int = 64

    def __post_init__(self) -> None:
        if (self.sizes is None) == (self.seed is None):
            raise FaultError("Rechunk needs exactly one of sizes=[...] or seed=N")
        if self.sizes is not None and (not self.sizes or any(s < 1 for s in self.sizes)):
            raise FaultError(f"Rechunk(sizes={list(self.sizes)}): sizes must be positive")
        if self.max_size < 1:
            raise FaultError("Rechunk(max_size) must be positive")

    def apply(self, response: MutableResponse) -> None:
        response.chunking = self

    def boundaries(self, length: int) -> list[int]:
        """Byte offsets where the body is cut."""
        out: list[int] = []
        pos = 0
        rng = random.Random(self.seed)
        step = 0
        while pos < length:
            if self.sizes is not None:
                size = self.sizes[step % len(self.sizes)]
            else:
                size = rng.randint(1, self.max_size)
            step += 1
            pos += size
            out.append(min(pos, length))
        return out


_SHAPING = (Stall, Latency, Rechunk)


def apply_mutations(response: MutableResponse, mutations: Iterable[Mutation]) -> MutableResponse:
    """Apply ``mutations`` in order: body edits and HTTP errors in list order, serving shape
    (:class:`Stall`, :class:`Latency`, :class:`Rechunk`) last, so stall positions refer to the
    final frames."""
    mutations = list(mutations)
    for mutation in mutations:
        if not isinstance(mutation, Mutation):
            raise FaultError(
                f"{mutation!r} is not a fault mutation (see openprogram_testing.transport.faults)"
            )
    body_first = [m for m in mutations if not isinstance(m, _SHAPING)]
    shaping = [m for m in mutations if isinstance(m, _SHAPING)]
    for mutation in body_first:
        mutation.apply(response)
    errored = any(isinstance(m, HttpError) for m in body_first)
    for mutation in shaping:
        if errored and isinstance(mutation, Stall | Latency):
            continue
        mutation.apply(response)
    if isinstance(response.body, str) and response.header("content-length") is not None:
        response.set_header("content-length", str(len(response.body_bytes())))
    return response


# --------------------------------------------------------------------------------------------
# the constructors: one per kind, named as the kind


def _frame_count(name: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"Fault.{name}: expected a frame count >= 0, got {value!r}")
    return value


def _seconds(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"Fault.{name}: expected seconds >= 0, got {value!r}")
    return float(value)


class Fault:
    """One constructor per fault kind, named as the kind (and as its YAML key in a scenario's
    ``cassette.faults``), checked when built: ``emulator.add("hi",
    faults=[Fault.truncate_after(3, disconnect=True)])``.

    Frames are counted from 0 (``ping`` and ``[DONE]`` included).  On a non-streamed response
    the body is frame 0: ``truncate_after(0, disconnect=True)`` sends the headers and half the
    body, ``malformed_frame(0)`` sends invalid JSON; a fault that has nothing to act on there
    (``drop_terminal``, a later frame) is refused, as on a stream without what it addresses.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # 0.1's Fault(kind=...) too
        raise TypeError(
            "Fault is a namespace of constructors since 0.2.0 (the Fault(kind=...) record is "
            f"gone): build faults with one of {', '.join(f'Fault.{k}(...)' for k in FAULT_KINDS)}"
        )

    @staticmethod
    def truncate_after(n_frames: int, *, disconnect: bool = False) -> TruncateAfter:
        """End the body after ``n_frames`` frames; ``disconnect=True`` drops the connection
        there instead (the client's read fails as on a connection lost mid-body)."""
        return TruncateAfter(_frame_count("truncate_after", n_frames), disconnect=bool(disconnect))

    @staticmethod
    def drop_terminal() -> DropTerminal:
        """Omit the terminal frame (``[DONE]``, ``response.completed``, ``message_stop``, the
        Gemini ``finishReason`` chunk, Bedrock ``messageStop``/``metadata``); the body itself
        ends cleanly."""
        return DropTerminal()

    @staticmethod
    def malformed_frame(n: int) -> MalformedFrame:
        """Frame ``n`` carries invalid JSON."""
        return MalformedFrame(_frame_count("malformed_frame", n))

    @staticmethod
    def crc_mismatch(n: int) -> CrcMismatch:
        """Event-stream message ``n`` carries a wrong message CRC (Bedrock streams only)."""
        return CrcMismatch(_frame_count("crc_mismatch", n))

    @staticmethod
    def garble_tool_arguments(i: int) -> GarbleToolArguments:
        """The arguments of tool call ``i`` (0-based, in stream order) are no longer JSON."""
        return GarbleToolArguments(_frame_count("garble_tool_arguments", i))

    @staticmethod
    def inject_error(after_frame: int, message: str = "injected mid-stream error") -> InjectError:
        """After ``after_frame`` frames the stream carries the API's own error event and ends."""
        return InjectError(_frame_count("inject_error", after_frame), str(message))

    @staticmethod
    def http_error(
        code: int, headers: Mapping[str, str] | None = None, body: Any = None
    ) -> HttpError:
        """Answer with HTTP ``code`` (400-599) and the API's JSON error body (``body``: a dict
        sent as JSON, a str sent verbatim) plus ``headers`` (e.g. ``{"retry-after": "2"}``).
        The turn it is attached to is consumed but its content is not sent."""
        if isinstance(code, bool) or not isinstance(code, int) or not 400 <= code <= 599:
            raise ValueError(
                f"Fault.http_error: code must be an HTTP error status 400-599, got {code!r}"
            )
        return HttpError(code, dict(headers or {}), body)

    @staticmethod
    def stall(seconds: float, after_frame: int = 0) -> Stall:
        """Send nothing for ``seconds`` after ``after_frame`` frames (headers already sent on a
        stream).  The emulator's ``stop()`` interrupts a stall."""
        return Stall(_seconds("stall", seconds), _frame_count("stall", after_frame))

    @staticmethod
    def latency(seconds_per_frame: float) -> Latency:
        """Sleep before every frame."""
        return Latency(_seconds("latency", seconds_per_frame))

    @staticmethod
    def rechunk(
        sizes: Sequence[int] | None = None, *, seed: int | None = None, max_size: int = 64
    ) -> Rechunk:
        """Serve a recorded body in other byte pieces (cassettes only: the emulator writes one
        frame per flush): ``sizes`` cycled, or random sizes 1..``max_size`` from ``seed``."""
        return Rechunk(None if sizes is None else list(sizes), seed, max_size)

    # -- 0.1 spellings, kept until 0.3 (see CHANGELOG.md) ------------------------------------

    @staticmethod
    def status(code: int, headers: Mapping[str, str] | None = None, body: Any = None) -> HttpError:
        """Deprecated: :meth:`http_error`."""
        deprecated.warn("Fault.status(...)", "Fault.http_error(...)")
        return Fault.http_error(code, headers, body)

    @staticmethod
    def disconnect_after(n_frames: int) -> TruncateAfter:
        """Deprecated: :meth:`truncate_after` with ``disconnect=True``."""
        deprecated.warn("Fault.disconnect_after(n)", "Fault.truncate_after(n, disconnect=True)")
        return Fault.truncate_after(n_frames, disconnect=True)

    @staticmethod
    def no_terminal() -> DropTerminal:
        """Deprecated: :meth:`drop_terminal`."""
        deprecated.warn("Fault.no_terminal()", "Fault.drop_terminal()")
        return Fault.drop_terminal()


# --------------------------------------------------------------------------------------------
# the kinds, listed once


@dataclass(frozen=True)
class FaultKind:
    """One fault kind.  ``name`` is its ``Fault.*`` constructor and its YAML key in a scenario's
    ``cassette.faults``; ``value`` says what that key takes; ``frames`` how the value addresses
    frames (``"count"``: after that many, 0..n; ``"index"``: that frame, 0..n-1), read by the
    scenario checks; ``options`` the keys that may sit beside it; ``old_key`` the YAML key of
    0.1, read until 0.3."""

    name: str
    cls: type[Mutation]
    value: str
    frames: Literal["count", "index"] | None = None
    options: tuple[str, ...] = ()
    old_key: str | None = None

    def build(self, value: Any, options: Mapping[str, Any]) -> Mutation:
        """The mutation a YAML entry ``{name: value, **options}`` describes."""
        return _FROM_YAML[self.name](value, options)


FAULT_KINDS: dict[str, FaultKind] = {
    k.name: k
    for k in (
        FaultKind("truncate_after", TruncateAfter, "a frame count", "count", ("disconnect",)),
        FaultKind("drop_terminal", DropTerminal, "true"),
        FaultKind("malformed_frame", MalformedFrame, "a frame index", "index", (), "corrupt_frame"),
        FaultKind("crc_mismatch", CrcMismatch, "a frame index", "index"),
        FaultKind("garble_tool_arguments", GarbleToolArguments, "a tool-call index"),
        FaultKind("inject_error", InjectError, "a frame count", "count"),
        FaultKind("http_error", HttpError, "an HTTP status 400-599", None, ("headers",)),
        FaultKind("stall", Stall, "seconds", None, ("after_frame",)),
        FaultKind("latency", Latency, "seconds per frame"),
        FaultKind("rechunk", Rechunk, "a list of piece sizes, or a seed"),
    )
}
"""Every fault kind, by name: the YAML model, the replay, the scenario checks, the docs' fault
table and the faults-bite meta-test all read this table."""

_FROM_YAML: dict[str, Callable[[Any, Mapping[str, Any]], Mutation]] = {
    "truncate_after": lambda v, o: Fault.truncate_after(v, disconnect=bool(o.get("disconnect"))),
    "drop_terminal": lambda v, o: Fault.drop_terminal(),
    "malformed_frame": lambda v, o: Fault.malformed_frame(v),
    "crc_mismatch": lambda v, o: Fault.crc_mismatch(v),
    "garble_tool_arguments": lambda v, o: Fault.garble_tool_arguments(v),
    "inject_error": lambda v, o: Fault.inject_error(v),
    "http_error": lambda v, o: Fault.http_error(v, headers=o.get("headers")),
    "stall": lambda v, o: Fault.stall(v, after_frame=o.get("after_frame") or 0),
    "latency": lambda v, o: Fault.latency(v),
    "rechunk": lambda v, o: Fault.rechunk(v) if isinstance(v, list) else Fault.rechunk(seed=v),
}
"""How a YAML entry calls its kind's constructor (the value and options it passes)."""

_OLD_NAMES = {"CorruptFrame": "MalformedFrame", "CorruptCrc": "CrcMismatch", "Api": "WireAPI"}
"""Class names of 0.1 (``Api``: ``openprogram.providers.wire.WireAPI``), kept until 0.3."""


def __getattr__(name: str) -> Any:
    new = _OLD_NAMES.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    deprecated.warn(name, new, stacklevel=deprecated.caller_stacklevel())
    return WireAPI if new == "WireAPI" else globals()[new]
