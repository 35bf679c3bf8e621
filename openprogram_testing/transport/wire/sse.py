"""Server-sent events framing: split a body into frames, read a frame's fields, encode frames.

A frame is the text between blank lines.  OpenAI Responses and Anthropic name their events
(``event:`` + ``data:``), OpenAI Chat and Gemini send ``data:`` lines only (Gemini with CRLF line
endings).  The emulator encodes with :class:`SSE`; fault mutations and cassette tools split
recorded bodies with :func:`split_frames`: one splitter for every SSE wire format.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from .base import Frame, dumps, loads_or_none

__all__ = [
    "SSE",
    "frame_data",
    "frame_event",
    "frame_json",
    "is_done",
    "is_sse",
    "join_frames",
    "json_frames",
    "split_frames",
    "with_data",
]

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def split_frames(body: str) -> list[str]:
    """Split an SSE body into frames (the text between blank lines, without the separator).

    ``\\r\\n`` and lone ``\\r`` line endings are normalised to ``\\n`` (the SSE spec accepts all
    three); runs of blank lines separate like one, since an empty event dispatches nothing.
    ``join_frames(split_frames(b)) == b`` for every body in canonical form (``\\n`` endings, every
    frame followed by one blank line), which is how most providers send them.
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


def is_done(frame: str) -> bool:
    """Whether a frame is OpenAI Chat's ``data: [DONE]`` (terminal, but the SDKs swallow it)."""
    return (frame_data(frame) or "").strip() == "[DONE]"


def frame_json(frame: str) -> Any:
    """The frame's data parsed as JSON (``None`` when absent or not JSON)."""
    return loads_or_none(frame_data(frame))


def json_frames(frames: list[str]) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """The frames whose data is a JSON object, with their positions: what the garblers read
    and rewrite in place (``frames[pos] = with_data(frame, payload)``).  Lazy, so a frame the
    caller inserts at ``pos`` moves the rest along as plain ``enumerate`` would."""
    for pos, frame in enumerate(frames):
        payload = frame_json(frame)
        if isinstance(payload, dict):
            yield pos, frame, payload


def frame_type(frame: str) -> str | None:
    """The event name, or the ``type`` field of the JSON data for data-only frames."""
    kind = frame_event(frame)
    if kind is None:
        payload = frame_json(frame)
        kind = payload.get("type") if isinstance(payload, dict) else None
    return kind if isinstance(kind, str) else None


def with_data(frame: str, payload: Any) -> str:
    """The frame with its data lines replaced by one compact JSON ``data:`` line."""
    lines = [line for line in frame.split("\n") if line and not line.startswith("data:")]
    lines.append("data: " + dumps(payload))
    return "\n".join(lines)


def is_sse(body: str) -> bool:
    """Whether a body looks like a server-sent-events stream (first frame has a field line)."""
    frames = split_frames(body[:4096])
    if not frames:
        return False
    first = frames[0].split("\n")[0]
    return first.startswith(("data:", "event:", "id:", "retry:", ":"))


MALFORMED_DATA = '{"corrupted frame": tru'
"""The data a corrupted frame carries: the start of a JSON document that never finishes."""


def corrupt_frame(frame: str) -> str:
    """``frame`` with its ``event:`` line kept and its data replaced by invalid JSON."""
    lines = [line for line in frame.split("\n") if not line.startswith("data:")]
    lines.append("data: " + MALFORMED_DATA)
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class SSE:
    """How one API writes its frames: with ``event:`` names or data only, and which newline."""

    named: bool = True
    newline: str = "\n"
    content_type: str = "text/event-stream; charset=utf-8"

    def encode(self, frame: Frame, *, corrupt: bool = False) -> bytes:
        """One frame on the wire; ``corrupt`` sends its JSON cut in half (malformed frame)."""
        data = frame.data if isinstance(frame.data, str) else dumps(frame.data)
        if corrupt:
            data = data[: max(1, len(data) // 2)]
        nl = self.newline
        head = f"event: {frame.event}{nl}" if self.named and frame.event else ""
        return f"{head}data: {data}{nl}{nl}".encode()
