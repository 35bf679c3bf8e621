"""The emulator under load: 1,000 streams open at the same time are all served in full."""

from __future__ import annotations

import asyncio
import json
import time

from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.transport.scripted import ModelRequest

CLIENTS = 1_000


def _numbered(request: ModelRequest) -> str:
    return f"reply to {request.messages[-1].text}" if request.messages else "reply"


async def _stream(port: int, n: int, gate: asyncio.Event) -> str:
    """One raw HTTP/1.1 streaming request; the reply text assembled from its SSE frames."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    body = json.dumps(
        {"model": "m", "stream": True, "messages": [{"role": "user", "content": f"#{n}"}]}
    ).encode()
    head = (
        "POST /v1/chat/completions HTTP/1.1\r\nhost: emu\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    ).encode()
    await gate.wait()  # every client connected before any request is sent
    writer.write(head + body)
    await writer.drain()
    raw = await reader.read(-1)
    writer.close()
    text = ""
    for line in raw.decode().splitlines():
        if line.startswith("data: {"):
            for choice in json.loads(line[6:])["choices"]:
                text += choice["delta"].get("content") or ""
    assert "data: [DONE]" in raw.decode(), f"client {n}: the stream did not finish"
    return text


async def test_a_thousand_concurrent_streams_are_all_served() -> None:
    emulator = ProviderEmulator(strict=False, fallback=_numbered, chunk_size=3).start()
    try:
        gate = asyncio.Event()
        started = time.monotonic()
        tasks = [asyncio.ensure_future(_stream(emulator.port, n, gate)) for n in range(CLIENTS)]
        await asyncio.sleep(0.5)  # let the connects pile up in the listen queue
        gate.set()
        texts = await asyncio.wait_for(asyncio.gather(*tasks), timeout=120)
        assert sorted(texts) == sorted(f"reply to #{n}" for n in range(CLIENTS))
        assert len(emulator.requests) == CLIENTS
        assert time.monotonic() - started < 120
    finally:
        emulator.stop()
