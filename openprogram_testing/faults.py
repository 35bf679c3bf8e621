"""Frame-addressed fault mutations for recorded (or emulated) provider responses.

A server-sent-events body is a sequence of *frames* separated by blank lines.  The mutations in
this module address frames by 0-based index, so a test can say "cut the stream after frame 7" or
"garble the arguments of tool call 1" against any recorded stream of the three wire formats we
speak (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) without editing the
recording.  They compose: body mutations apply first, in list order; :class:`HttpError` replaces
the whole response; :class:`Stall` and :class:`Rechunk` only shape how the final body is served
(timing and byte boundaries), never its content.

The frame helpers (:func:`split_frames`, :func:`join_frames`, :func:`detect_api`) are public so the
provider emulator can reuse them.
"""

from __future__ import annotations

import itertools
import json
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Literal

__all__ = [
    "GARBLE_PREFIX",
    "Api",
    "CorruptFrame",
    "DropTerminal",
    "FaultError",
    "GarbleToolArguments",
    "HttpError",
    "InjectError",
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

Api = Literal["openai_chat", "openai_responses", "anthropic"]

#: What :class:`GarbleToolArguments` puts in front of the first argument fragment.  Anything in
#: front of a JSON document makes it invalid, whatever the rest of the fragments say.
GARBLE_PREFIX = "<garbled>"

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


class FaultError(ValueError):
    """A mutation does not fit the response it is applied to (bad frame index, no such tool
    call, not an SSE body...).  The message names the mutation and what the body has."""


# --------------------------------------------------------------------------------------------
# frames


def split_frames(body: str) -> list[str]:
    """Split an SSE body into frames (the text between blank lines, without the separator).

    ``\\r\\n`` and lone ``\\r`` line endings are normalised to ``\\n`` (the SSE spec accepts all
    three); runs of blank lines separate like one, since an empty event dispatches nothing.
    ``join_frames(split_frames(b)) == b`` for every body in canonical form (``\\n`` endings, every
    frame followed by one blank line), which is how the providers send them.
    """
    text = body.replace("\r\n", "\n").replace("\r", "\n")
    return [frame.strip("\n") for frame in _BLANK_LINE.split(text) if frame.strip()]


def join_frames(frames: Iterable[str]) -> str:
    """Inverse of :func:`split_frames`: every frame followed by a blank line."""
    return "".join(f"{frame}\n\n" for frame in frames)


def frame_event(frame: str) -> str | None:
    """The ``event:`` name of a frame, if it has one."""
    for line in frame.split("\n"):
        if line.startswith("event:"):
            return line[6:].strip()
    return None


def frame_data(frame: str) -> str | None:
    """The joined ``data:`` payload of a frame (``None`` when it has no data line)."""
    parts = [line[5:].removeprefix(" ") for line in frame.split("\n") if line.startswith("data:")]
    return "\n".join(parts) if parts else None


def _frame_json(frame: str) -> Any:
    data = frame_data(frame)
    if data is None:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


def _with_data(frame: str, payload: Any) -> str:
    """The frame with its data lines replaced by one compact JSON ``data:`` line."""
    lines = [line for line in frame.split("\n") if not line.startswith("data:")]
    lines.append("data: " + json.dumps(payload, ensure_ascii=False, separators=(",", ":")))
    return "\n".join(lines)


def is_sse(body: str) -> bool:
    """Whether a body looks like a server-sent-events stream (first frame has a field line)."""
    frames = split_frames(body[:4096])
    if not frames:
        return False
    first = frames[0].split("\n")[0]
    return first.startswith(("data:", "event:", "id:", "retry:", ":"))


def detect_api(frames: Sequence[str], path: str | None = None) -> Api:
    """Which wire format a stream speaks: from the request path when known, else the frames."""
    if path:
        if path.rstrip("/").endswith("/chat/completions"):
            return "openai_chat"
        if path.rstrip("/").endswith("/responses"):
            return "openai_responses"
        if path.rstrip("/").endswith("/messages"):
            return "anthropic"
    for frame in frames:
        event = frame_event(frame) or ""
        if event.startswith("response."):
            return "openai_responses"
        if event in ("message_start", "content_block_start", "message_stop", "ping"):
            return "anthropic"
        payload = _frame_json(frame)
        if isinstance(payload, dict):
            kind = str(payload.get("type", ""))
            if kind.startswith("response."):
                return "openai_responses"
            if kind in ("message_start", "content_block_start", "content_block_delta"):
                return "anthropic"
            if payload.get("object") == "chat.completion.chunk":
                return "openai_chat"
    return "openai_chat"


def _is_terminal(frame: str, api: Api) -> bool:
    if api == "openai_chat":
        return (frame_data(frame) or "").strip() == "[DONE]"
    if api == "openai_responses":
        kind = frame_event(frame)
        if kind is None:
            payload = _frame_json(frame)
            kind = payload.get("type") if isinstance(payload, dict) else None
        return kind in ("response.completed", "response.incomplete", "response.failed")
    kind = frame_event(frame)
    if kind is None:
        payload = _frame_json(frame)
        kind = payload.get("type") if isinstance(payload, dict) else None
    return kind == "message_stop"


# --------------------------------------------------------------------------------------------
# the response being mutated


@dataclass
class MutableResponse:
    """A response on its way to the client.  ``body`` is decoded text for text bodies (bytes
    otherwise); ``pieces`` is the serving plan built from it: ``(delay_before_s, chunk)``."""

    status: int
    reason: str
    headers: dict[str, list[str]]
    body: str | bytes
    path: str | None = None
    stalls: list[tuple[int, float]] = field(default_factory=list)
    chunking: Rechunk | None = None
    disconnect: bool = False

    @property
    def text(self) -> str:
        if isinstance(self.body, bytes):
            raise FaultError("the response body is binary, not an SSE stream")
        return self.body

    def frames(self, mutation: object) -> list[str]:
        """The SSE frames of the body, or a clear error naming ``mutation`` if it has none."""
        if isinstance(self.body, bytes) or not is_sse(self.body):
            raise FaultError(
                f"{mutation!r} needs a streamed (SSE) body, but this response "
                f"(HTTP {self.status}, content-type {self.header('content-type')!r}) is not one"
            )
        return split_frames(self.body)

    def header(self, name: str) -> str | None:
        for key, values in self.headers.items():
            if key.lower() == name.lower() and values:
                return values[0]
        return None

    def set_header(self, name: str, value: str | None) -> None:
        for key in [k for k in self.headers if k.lower() == name.lower()]:
            del self.headers[key]
        if value is not None:
            self.headers[name] = [value]

    def body_bytes(self) -> bytes:
        return self.body.encode("utf-8") if isinstance(self.body, str) else self.body

    def pieces(self) -> list[tuple[float, bytes]]:
        """Split the final body into the chunks to serve, each with the delay before it."""
        data = self.body_bytes()
        cuts: dict[int, float] = {}
        if self.stalls:
            offsets = _frame_offsets(self.text) if any(a for a, _ in self.stalls) else [0]
            for after, seconds in self.stalls:
                if after > len(offsets) - 1:
                    raise FaultError(
                        f"Stall(after_frame={after}): the body has only {len(offsets) - 1} frames"
                    )
                cut = len(self.text[: offsets[after]].encode("utf-8")) if after else 0
                cuts[cut] = cuts.get(cut, 0.0) + seconds
        boundaries = set(cuts) | {0, len(data)}
        if self.chunking is not None:
            boundaries |= set(self.chunking.boundaries(len(data)))
        points = sorted(b for b in boundaries if 0 <= b <= len(data))
        out: list[tuple[float, bytes]] = []
        for start, end in itertools.pairwise(points):
            out.append((cuts.get(start, 0.0), data[start:end]))
        if not out or len(data) in cuts:
            out.append((cuts.get(len(data), 0.0), b""))
        return [(delay, chunk) for delay, chunk in out if chunk or delay]


def _frame_offsets(body: str) -> list[int]:
    """Offsets of the frame boundaries of a canonical body: ``[0, end of frame 0, ...]``."""
    offsets = [0]
    for frame in split_frames(body):
        offsets.append(offsets[-1] + len(frame) + 2)
    return offsets


# --------------------------------------------------------------------------------------------
# mutations


class Mutation:
    """Base class: ``apply`` edits a :class:`MutableResponse` in place."""

    def apply(self, response: MutableResponse) -> None:  # pragma: no cover - abstract
        raise NotImplementedError


def _check_frame(mutation: object, n: int, frames: Sequence[str], *, allow_end: bool) -> None:
    top = len(frames) if allow_end else len(frames) - 1
    if not isinstance(n, int) or n < 0 or n > top:
        raise FaultError(
            f"{mutation!r}: frame index must be 0..{top}; the body has {len(frames)} frames"
        )


@dataclass(frozen=True)
class TruncateAfter(Mutation):
    """The stream ends after its first ``n`` frames (``n=0``: an empty body).

    By default the body simply ends (a proxy closing the connection cleanly); with
    ``disconnect=True`` reading past it raises the transport error httpx raises for a connection
    dropped mid-body."""

    n: int
    disconnect: bool = False

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        _check_frame(self, self.n, frames, allow_end=True)
        response.body = join_frames(frames[: self.n])
        response.disconnect = response.disconnect or self.disconnect


@dataclass(frozen=True)
class DropTerminal(Mutation):
    """Remove the terminal frame: OpenAI ``data: [DONE]``, Responses ``response.completed``
    (or ``.incomplete``/``.failed``), Anthropic ``message_stop``."""

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        api = detect_api(frames, response.path)
        kept = [f for f in frames if not _is_terminal(f, api)]
        if len(kept) == len(frames):
            raise FaultError(f"{self!r}: the {api} stream has no terminal frame to drop")
        response.body = join_frames(kept)


@dataclass(frozen=True)
class CorruptFrame(Mutation):
    """Frame ``n`` keeps its ``event:`` line but its data becomes invalid JSON."""

    n: int

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        _check_frame(self, self.n, frames, allow_end=False)
        frame = frames[self.n]
        lines = [line for line in frame.split("\n") if not line.startswith("data:")]
        lines.append('data: {"corrupted frame": tru')
        frames[self.n] = "\n".join(lines)
        response.body = join_frames(frames)


@dataclass(frozen=True)
class GarbleToolArguments(Mutation):
    """The argument fragments of tool call ``i`` (0-based, in stream order) no longer form valid
    JSON: the first fragment gets :data:`GARBLE_PREFIX` in front, and the frames that repeat the
    full arguments (Responses ``.done``/``output_item.done``/``response.completed``) agree."""

    i: int

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        api = detect_api(frames, response.path)
        garble = {
            "openai_chat": _garble_chat,
            "openai_responses": _garble_responses,
            "anthropic": _garble_anthropic,
        }[api]
        found = garble(frames, self.i)
        if found <= self.i:
            raise FaultError(f"{self!r}: the {api} stream has only {found} tool call(s)")
        response.body = join_frames(frames)


def _garble_chat(frames: list[str], i: int) -> int:
    """OpenAI chat: tool calls are keyed by ``(choice index, tool_calls[].index)``."""
    order: list[tuple[int, int]] = []
    garbled = False
    for pos, frame in enumerate(frames):
        payload = _frame_json(frame)
        if not isinstance(payload, dict):
            continue
        changed = False
        for choice in payload.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                key = (choice.get("index", 0), call.get("index", 0))
                if key not in order:
                    order.append(key)
                if order.index(key) != i or garbled:
                    continue
                function = call.setdefault("function", {})
                fragment = function.get("arguments") or ""
                if fragment or _last_fragment(frames, pos, key):
                    function["arguments"] = GARBLE_PREFIX + fragment
                    garbled = changed = True
        if changed:
            frames[pos] = _with_data(frame, payload)
    return len(order)


def _last_fragment(frames: list[str], pos: int, key: tuple[int, int]) -> bool:
    """Whether frame ``pos`` holds the last argument fragment of chat tool call ``key`` (so a call
    whose fragments are all empty still gets garbled)."""
    for frame in frames[pos + 1 :]:
        payload = _frame_json(frame)
        if not isinstance(payload, dict):
            continue
        for choice in payload.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                if (choice.get("index", 0), call.get("index", 0)) == key:
                    return False
    return True


def _garble_responses(frames: list[str], i: int) -> int:
    """Responses: function_call output items, keyed by ``item_id``/``output_index``."""
    calls: list[str] = []  # item ids in order of appearance
    target: str | None = None
    target_index: int | None = None
    delta_done = False
    for pos, frame in enumerate(frames):
        payload = _frame_json(frame)
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        changed = False
        if kind == "response.output_item.added":
            item = payload.get("item") or {}
            if item.get("type") == "function_call":
                calls.append(str(item.get("id")))
                if len(calls) - 1 == i:
                    target, target_index = str(item.get("id")), payload.get("output_index")
        elif target is not None and _same_item(payload, target, target_index):
            if kind == "response.function_call_arguments.delta" and not delta_done:
                payload["delta"] = GARBLE_PREFIX + str(payload.get("delta") or "")
                delta_done = changed = True
            elif kind == "response.function_call_arguments.done":
                payload["arguments"] = GARBLE_PREFIX + str(payload.get("arguments") or "")
                changed = True
            elif kind == "response.output_item.done":
                item = payload.get("item") or {}
                item["arguments"] = GARBLE_PREFIX + str(item.get("arguments") or "")
                changed = True
        if kind in ("response.completed", "response.incomplete", "response.failed") and target:
            for item in (payload.get("response") or {}).get("output") or []:
                if item.get("id") == target and item.get("type") == "function_call":
                    item["arguments"] = GARBLE_PREFIX + str(item.get("arguments") or "")
                    changed = True
        if changed:
            frames[pos] = _with_data(frame, payload)
    return len(calls)


def _same_item(payload: dict[str, Any], item_id: str, output_index: Any) -> bool:
    if "item_id" in payload:
        return str(payload["item_id"]) == item_id
    item = payload.get("item")
    if isinstance(item, dict) and "id" in item:
        return str(item["id"]) == item_id
    return payload.get("output_index") == output_index


def _garble_anthropic(frames: list[str], i: int) -> int:
    """Anthropic: tool_use content blocks, keyed by block ``index``."""
    seen = 0
    target: Any = None
    done = False
    for pos, frame in enumerate(frames):
        payload = _frame_json(frame)
        if not isinstance(payload, dict):
            continue
        kind = payload.get("type")
        if kind == "content_block_start":
            block = payload.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use"):
                if seen == i:
                    target = payload.get("index")
                seen += 1
        elif kind == "content_block_delta" and target is not None and not done:
            delta = payload.get("delta") or {}
            if payload.get("index") == target and delta.get("type") == "input_json_delta":
                delta["partial_json"] = GARBLE_PREFIX + str(delta.get("partial_json") or "")
                frames[pos] = _with_data(frame, payload)
                done = True
        elif kind == "content_block_stop" and payload.get("index") == target and not done:
            # A call with no input fragments: add one before its stop frame.
            extra = {
                "type": "content_block_delta",
                "index": target,
                "delta": {"type": "input_json_delta", "partial_json": GARBLE_PREFIX},
            }
            frames.insert(pos, "event: content_block_delta\n" + _with_data("", extra).lstrip("\n"))
            done = True
    return seen


@dataclass(frozen=True)
class InjectError(Mutation):
    """After the first ``after_frame`` frames the stream carries an error event in the API's own
    format (OpenAI chat ``data: {"error": ...}``, Responses ``event: error``, Anthropic
    ``event: error`` with ``overloaded_error``) and ends there, as the providers do."""

    after_frame: int
    message: str = "injected mid-stream error"

    def apply(self, response: MutableResponse) -> None:
        frames = response.frames(self)
        _check_frame(self, self.after_frame, frames, allow_end=True)
        api = detect_api(frames, response.path)
        if api == "openai_chat":
            payload: dict[str, Any] = {
                "error": {
                    "message": self.message,
                    "type": "server_error",
                    "param": None,
                    "code": None,
                }
            }
            frame = _with_data("", payload).lstrip("\n")
        elif api == "openai_responses":
            payload = {
                "type": "error",
                "code": "server_error",
                "message": self.message,
                "param": None,
                "sequence_number": self.after_frame,
            }
            frame = "event: error\n" + _with_data("", payload).lstrip("\n")
        else:
            payload = {
                "type": "error",
                "error": {"type": "overloaded_error", "message": self.message},
            }
            frame = "event: error\n" + _with_data("", payload).lstrip("\n")
        response.body = join_frames([*frames[: self.after_frame], frame])


@dataclass(frozen=True)
class HttpError(Mutation):
    """Replace the whole response with an HTTP error: ``status``, extra ``headers`` (e.g.
    ``{"retry-after": "2"}``) and ``body`` (default: the API's own JSON error shape)."""

    status: int
    headers: dict[str, str] | None = None
    body: str | dict[str, Any] | None = None

    def apply(self, response: MutableResponse) -> None:
        if not 400 <= self.status <= 599:
            raise FaultError(f"{self!r}: status must be an HTTP error code (400..599)")
        api = _api_of(response)
        message = _reason(self.status) or "error"
        body = self.body
        if body is None:
            if api == "anthropic":
                kind = {
                    400: "invalid_request_error",
                    401: "authentication_error",
                    403: "permission_error",
                    404: "not_found_error",
                    413: "request_too_large",
                    429: "rate_limit_error",
                    529: "overloaded_error",
                }.get(self.status, "api_error")
                body = {"type": "error", "error": {"type": kind, "message": message}}
            else:
                kind, code = {
                    401: ("invalid_request_error", "invalid_api_key"),
                    404: ("invalid_request_error", "model_not_found"),
                    429: ("requests", "rate_limit_exceeded"),
                }.get(
                    self.status,
                    ("server_error" if self.status >= 500 else "invalid_request_error", None),
                )
                body = {"error": {"message": message, "type": kind, "param": None, "code": code}}
        response.status = self.status
        response.reason = _reason(self.status)
        response.headers = {"content-type": ["application/json"]}
        for name, value in (self.headers or {}).items():
            response.set_header(name, str(value))
        response.body = body if isinstance(body, str) else json.dumps(body)
        response.stalls.clear()
        response.disconnect = False


def _api_of(response: MutableResponse) -> Api:
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
            _check_frame(self, self.after_frame, response.frames(self), allow_end=True)
        response.stalls.append((self.after_frame, float(self.seconds)))


@dataclass(frozen=True)
class Rechunk(Mutation):
    """Serve the body in arbitrary byte pieces: ``sizes`` (cycled, e.g. ``[1, 7, 3]``) or
    random sizes 1..``max_size`` from ``seed``.  Pieces may split lines, frames and multi-byte
    UTF-8 characters: a correct SSE parser assembles the same messages for any chunking."""

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


def apply_mutations(response: MutableResponse, mutations: Iterable[Mutation]) -> MutableResponse:
    """Apply ``mutations`` in order: body edits and HTTP errors in list order, serving shape
    (:class:`Stall`, :class:`Rechunk`) last, so stall positions refer to the final frames."""
    mutations = list(mutations)
    for mutation in mutations:
        if not isinstance(mutation, Mutation):
            raise FaultError(
                f"{mutation!r} is not a fault mutation (see openprogram_testing.faults)"
            )
    body_first = [m for m in mutations if not isinstance(m, Stall | Rechunk)]
    shaping = [m for m in mutations if isinstance(m, Stall | Rechunk)]
    for mutation in body_first:
        mutation.apply(response)
    errored = any(isinstance(m, HttpError) for m in body_first)
    for mutation in shaping:
        if errored and isinstance(mutation, Stall):
            continue
        mutation.apply(response)
    if isinstance(response.body, str) and response.header("content-length") is not None:
        response.set_header("content-length", str(len(response.body_bytes())))
    return response
