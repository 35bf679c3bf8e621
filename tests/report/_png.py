"""Read the pixels of a browser screenshot (8-bit RGB or RGBA PNG, as Chromium writes them)
with the standard library, so a test can assert what colour a person sees."""

from __future__ import annotations

import struct
import zlib
from collections import Counter


def pixels(png: bytes) -> list[tuple[int, int, int]]:
    """Every pixel of ``png`` as ``(r, g, b)``, row by row."""
    assert png[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, data = 8, b""
    width = height = channels = 0
    while pos < len(png):
        (length,) = struct.unpack(">I", png[pos : pos + 4])
        kind = png[pos + 4 : pos + 8]
        body = png[pos + 8 : pos + 8 + length]
        pos += 12 + length
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and not interlace, "unexpected PNG format"
            channels = 3 if colour == 2 else 4
        elif kind == b"IDAT":
            data += body
    raw = zlib.decompress(data)
    stride = width * channels
    out: list[tuple[int, int, int]] = []
    previous = bytearray(stride)
    for y in range(height):
        start = y * (stride + 1)
        kind = raw[start]
        line = bytearray(raw[start + 1 : start + 1 + stride])
        for i in range(stride):
            left = line[i - channels] if i >= channels else 0
            up = previous[i]
            corner = previous[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                pred = left if pa <= pb and pa <= pc else up if pb <= pc else corner
                line[i] = (line[i] + pred) & 255
        out.extend((line[x], line[x + 1], line[x + 2]) for x in range(0, stride, channels))
        previous = line
    return out


def dominant(png: bytes) -> tuple[int, int, int]:
    """The colour most pixels of the picture have (a row's background)."""
    return Counter(pixels(png)).most_common(1)[0][0]


def share(png: bytes, colour: tuple[int, int, int], tolerance: int = 12) -> float:
    """The fraction of pixels within ``tolerance`` of ``colour`` on every channel."""
    every = pixels(png)
    near = sum(
        1 for p in every if all(abs(a - b) <= tolerance for a, b in zip(p, colour, strict=True))
    )
    return near / len(every)
