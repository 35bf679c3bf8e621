"""AWS event-stream binary framing (``application/vnd.amazon.eventstream``), used by Bedrock.

A message is a 12-byte prelude (total length, headers length, CRC32 of those 8 bytes), typed
headers (``:message-type``, ``:event-type`` or ``:exception-type``, ``:content-type``), the
payload, and a CRC32 of everything before it.  :func:`encode_message` writes one;
:func:`split_messages` cuts a body into messages by their prelude lengths (the one splitter for
this framing: emulator, fault mutations and cassette tools share it); :func:`decode_message`
checks both CRCs and reads the headers.
"""

from __future__ import annotations

import base64
import struct
import uuid
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .base import Frame, dumps

__all__ = [
    "CONTENT_TYPE",
    "EventStream",
    "EventStreamError",
    "Message",
    "corrupt_crc",
    "corrupt_payload",
    "decode_message",
    "encode_message",
    "is_eventstream",
    "join_messages",
    "split_messages",
]

CONTENT_TYPE = "application/vnd.amazon.eventstream"
_PRELUDE = struct.Struct(">II")
_STRING = 7
PADDING = "abcdefghijklmnopqrstuvwxyzABCDEF"
"""Bedrock pads every event payload with a meaningless ``p`` field (to hide lengths); so do we,
so clients are tested against it."""


class EventStreamError(ValueError):
    """A body that is not a well-formed event stream (short prelude, bad CRC, cut message)."""


@dataclass(slots=True)
class Message:
    """One decoded event-stream message."""

    headers: dict[str, Any] = field(default_factory=dict)
    payload: bytes = b""

    @property
    def event_type(self) -> str | None:
        """``:event-type`` of an event, ``:exception-type`` of an exception."""
        value = self.headers.get(":event-type", self.headers.get(":exception-type"))
        return value if isinstance(value, str) else None


def _header_bytes(headers: Mapping[str, str]) -> bytes:
    out = bytearray()
    for name, value in headers.items():
        key, data = name.encode(), value.encode()
        out += struct.pack(">B", len(key)) + key + struct.pack(">BH", _STRING, len(data)) + data
    return bytes(out)


def encode_message(headers: Mapping[str, str], payload: bytes, *, bad_crc: bool = False) -> bytes:
    """One message with correct lengths and CRCs (``bad_crc``: the message CRC is wrong)."""
    head = _header_bytes(headers)
    total = 12 + len(head) + len(payload) + 4
    prelude = _PRELUDE.pack(total, len(head))
    body = prelude + struct.pack(">I", zlib.crc32(prelude)) + head + payload
    crc = zlib.crc32(body) ^ (0xFFFFFFFF if bad_crc else 0)
    return body + struct.pack(">I", crc)


def split_messages(body: bytes) -> list[bytes]:
    """The raw messages of a body, by their prelude lengths (CRCs not checked here, so a
    corrupted message stays addressable).  A cut or nonsensical prelude is an
    :class:`EventStreamError`."""
    out: list[bytes] = []
    pos = 0
    while pos < len(body):
        if len(body) - pos < 16:
            raise EventStreamError(f"truncated event-stream message at byte {pos}")
        total, head_len = _PRELUDE.unpack_from(body, pos)
        if total < 16 or head_len > total - 16 or pos + total > len(body):
            raise EventStreamError(
                f"bad event-stream prelude at byte {pos} (length {total}, headers {head_len})"
            )
        out.append(body[pos : pos + total])
        pos += total
    return out


def join_messages(messages: Iterable[bytes]) -> bytes:
    return b"".join(messages)


def decode_message(raw: bytes) -> Message:
    """Decode one message, checking its length and both CRCs."""
    if len(raw) < 16:
        raise EventStreamError("event-stream message shorter than its prelude")
    total, head_len = _PRELUDE.unpack_from(raw, 0)
    if total != len(raw) or head_len > total - 16:
        raise EventStreamError(f"event-stream message length {len(raw)} != prelude {total}")
    (prelude_crc,) = struct.unpack_from(">I", raw, 8)
    if zlib.crc32(raw[:8]) != prelude_crc:
        raise EventStreamError("event-stream prelude CRC mismatch")
    (message_crc,) = struct.unpack_from(">I", raw, total - 4)
    if zlib.crc32(raw[:-4]) != message_crc:
        raise EventStreamError("event-stream message CRC mismatch")
    return Message(_decode_headers(raw[12 : 12 + head_len]), raw[12 + head_len : -4])


def _decode_headers(data: bytes) -> dict[str, Any]:
    headers: dict[str, Any] = {}
    pos = 0
    fixed = {2: ">b", 3: ">h", 4: ">i", 5: ">q", 8: ">q"}
    try:
        while pos < len(data):
            n = data[pos]
            name = data[pos + 1 : pos + 1 + n].decode()
            pos += 1 + n
            kind = data[pos]
            pos += 1
            value: Any
            if kind in (0, 1):
                value = kind == 0
            elif kind in fixed:
                fmt = fixed[kind]
                (value,) = struct.unpack_from(fmt, data, pos)
                pos += struct.calcsize(fmt)
            elif kind in (6, 7):
                (length,) = struct.unpack_from(">H", data, pos)
                chunk = data[pos + 2 : pos + 2 + length]
                value = chunk.decode() if kind == 7 else chunk
                pos += 2 + length
            elif kind == 9:
                value = str(uuid.UUID(bytes=data[pos : pos + 16]))
                pos += 16
            else:
                raise EventStreamError(f"unknown event-stream header type {kind}")
            headers[name] = value
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise EventStreamError(f"malformed event-stream headers: {exc}") from None
    return headers


def is_eventstream(body: bytes) -> bool:
    """Whether ``body`` starts with a well-formed event-stream message."""
    try:
        first = split_messages(body)[0] if body else None
        return first is not None and decode_message(first) is not None
    except EventStreamError:
        return False


def corrupt_payload(raw: bytes) -> bytes:
    """The message with its payload replaced by invalid JSON, CRCs recomputed (a well-framed
    message a client cannot parse)."""
    message = decode_message(raw)
    headers = {k: v for k, v in message.headers.items() if isinstance(v, str)}
    return encode_message(headers, b'{"corrupted frame": tru')


def corrupt_crc(raw: bytes) -> bytes:
    """The message with its message CRC flipped (the bytes are intact, the checksum lies)."""
    (crc,) = struct.unpack_from(">I", raw, len(raw) - 4)
    return raw[:-4] + struct.pack(">I", crc ^ 0xFFFFFFFF)


@dataclass(frozen=True, slots=True)
class EventStream:
    """How Bedrock frames a stream: each :class:`Frame` one message (an ``exception`` message for
    error frames; ``payload`` wraps the frame data, e.g. InvokeModel's base64 ``chunk``)."""

    content_type: str = CONTENT_TYPE
    chunked: bool = False
    """InvokeModel: every event goes out as a ``chunk`` whose ``bytes`` are the base64 JSON."""

    def payload(self, frame: Frame) -> tuple[str, bytes]:
        """The ``:event-type`` and payload bytes of ``frame``."""
        if frame.exception:
            return str(frame.event or ""), dumps(frame.data).encode()
        if self.chunked:
            data = base64.b64encode(dumps(frame.data).encode()).decode()
            return "chunk", dumps({"bytes": data, "p": PADDING}).encode()
        return str(frame.event or ""), dumps({**frame.data, "p": PADDING}).encode()

    def encode(self, frame: Frame, *, corrupt: bool = False, bad_crc: bool = False) -> bytes:
        event, payload = self.payload(frame)
        if corrupt:
            payload = payload[: max(1, len(payload) // 2)]
        kind = ":exception-type" if frame.exception else ":event-type"
        headers = {
            kind: event,
            ":content-type": "application/json",
            ":message-type": "exception" if frame.exception else "event",
        }
        return encode_message(headers, payload, bad_crc=bad_crc)
