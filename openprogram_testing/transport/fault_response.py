"""The response a fault mutates: a provider response on its way to the client, seen as frames.

Apart from the fault kinds (``faults``) so each stays one readable module: this one knows how a
body splits into frames (SSE or AWS event stream), which frames end a stream, and how the final
body is cut into the pieces served (stalls, latency, rechunking).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram.providers.wire import WireAPI
from openprogram_testing.transport.wire.sse import is_sse, join_frames, split_frames

from .wire import FORMATS, WireFormat, detect_format, eventstream, route

if TYPE_CHECKING:
    from .faults import Rechunk


class FaultError(ValueError):
    """A mutation does not fit the response it is applied to (bad frame index, no such tool
    call, not a stream...).  The message names the mutation and what the body has."""


def detect_api(frames: Sequence[str], path: str | None = None) -> WireAPI:
    """Which wire format an SSE stream speaks: from the request path when known, else the
    frames."""
    return detect_format(list(frames), path).api


# --------------------------------------------------------------------------------------------
# the response being mutated


_SEPARATOR = re.compile(r"(?:\r\n|\r|\n)(?:[ \t]*(?:\r\n|\r|\n))+")


@dataclass
class MutableResponse:
    """A response on its way to the client.  ``body`` is decoded text for text bodies (bytes
    otherwise); ``stalls`` and ``chunking`` shape how it is served (see :meth:`pieces`)."""

    status: int
    reason: str
    headers: dict[str, list[str]]
    body: str | bytes
    path: str | None = None
    stalls: list[tuple[int, float]] = field(default_factory=list)
    chunking: Rechunk | None = None
    disconnect: bool = False
    latency: float = 0.0

    @property
    def text(self) -> str:
        if isinstance(self.body, bytes):
            raise FaultError("the response body is binary, not an SSE stream")
        return self.body

    def is_eventstream(self) -> bool:
        ctype = (self.header("content-type") or "").lower()
        if eventstream.CONTENT_TYPE in ctype:
            return True
        data = self.body_bytes()
        return bool(data) and not ctype.startswith("text/") and eventstream.is_eventstream(data)

    def frames(self, mutation: object) -> list[Any]:
        """The frames of the body (SSE frame texts, or raw event-stream messages), or a clear
        error naming ``mutation`` if it is not a stream."""
        if self.is_eventstream():
            try:
                return list(eventstream.split_messages(self.body_bytes()))
            except eventstream.EventStreamError as exc:
                raise FaultError(f"{mutation!r}: {exc}") from None
        if isinstance(self.body, bytes) or not is_sse(self.body):
            raise FaultError(
                f"{mutation!r} needs a streamed (SSE) body or an AWS event stream, but this "
                f"response (HTTP {self.status}, content-type {self.header('content-type')!r}) "
                "is not one"
            )
        return split_frames(self.body)

    def set_frames(self, frames: Sequence[Any]) -> None:
        """Replace the body by ``frames`` in the body's own framing (and line endings)."""
        if (frames and isinstance(frames[0], bytes)) or self.is_eventstream():
            self.body = eventstream.join_messages(frames)
            return
        crlf = isinstance(self.body, str) and "\r\n" in self.body[:4096]
        text = join_frames(frames)
        self.body = text.replace("\n", "\r\n") if crlf else text

    def wire(self, frames: Sequence[Any]) -> WireFormat:
        """The wire format of the stream (path first, then the frames)."""
        if frames and isinstance(frames[0], bytes):
            found = route((self.path or "").split("?", 1)[0])
            if found is not None and found.wire.api in ("bedrock", "anthropic"):
                return found.wire
            chunked = any(_event_type(f) == "chunk" for f in frames)
            return FORMATS["bedrock_invoke" if chunked else "bedrock"]
        return detect_format(list(frames), self.path)

    def is_terminal(self, wire: WireFormat, frame: Any) -> bool:
        if isinstance(frame, bytes):
            try:
                message = eventstream.decode_message(frame)
            except eventstream.EventStreamError:
                return False
            return wire.is_terminal_message(message)
        return wire.is_terminal(frame)

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

    def frame_offsets(self) -> list[int]:
        """Byte offsets of the frame boundaries: ``[0, end of frame 0, end of frame 1, ...]``."""
        if self.is_eventstream():
            offsets = [0]
            for message in self.frames("frame offsets"):
                offsets.append(offsets[-1] + len(message))
            return offsets
        text = self.text
        offsets, start = [0], 0
        for m in _SEPARATOR.finditer(text):
            if text[start : m.start()].strip():
                offsets.append(len(text[: m.end()].encode("utf-8")))
            start = m.end()
        if text[start:].strip():
            offsets.append(len(text.encode("utf-8")))
        return offsets

    def pieces(self) -> list[tuple[float, bytes]]:
        """Split the final body into the chunks to serve, each with the delay before it."""
        data = self.body_bytes()
        cuts: dict[int, float] = {}
        if self.stalls:
            offsets = self.frame_offsets() if any(a for a, _ in self.stalls) else [0]
            for after, seconds in self.stalls:
                if after > len(offsets) - 1:
                    raise FaultError(
                        f"Stall(after_frame={after}): the body has only {len(offsets) - 1} frames"
                    )
                cut = offsets[after]
                cuts[cut] = cuts.get(cut, 0.0) + seconds
        boundaries = set(cuts) | {0, len(data)}
        if self.latency:
            streamed = self.is_eventstream() or (isinstance(self.body, str) and is_sse(self.body))
            for cut in self.frame_offsets()[:-1] if streamed else [0]:
                cuts[cut] = cuts.get(cut, 0.0) + self.latency
                boundaries.add(cut)
        if self.chunking is not None:
            boundaries |= set(self.chunking.boundaries(len(data)))
        points = sorted(b for b in boundaries if 0 <= b <= len(data))
        out: list[tuple[float, bytes]] = []
        for start, end in itertools.pairwise(points):
            out.append((cuts.get(start, 0.0), data[start:end]))
        if not out or len(data) in cuts:
            out.append((cuts.get(len(data), 0.0), b""))
        return [(delay, chunk) for delay, chunk in out if chunk or delay]


def _event_type(raw: bytes) -> str | None:
    try:
        return eventstream.decode_message(raw).event_type
    except eventstream.EventStreamError:
        return None


__all__ = ["FaultError", "MutableResponse", "detect_api"]
