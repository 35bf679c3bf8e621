"""Serving an emulator outside tests: the ``openprogram-testing emulator`` command."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from openprogram_testing.transport.emulator.server import ProviderEmulator, echo_responder
from openprogram_testing.transport.faults import Mutation
from openprogram_testing.transport.scripted import TurnLike

__all__ = ["announce", "main_emulator", "serve"]


def announce(emulator: ProviderEmulator, write: Callable[[str], None] = print) -> None:
    """Print where the emulator listens (``serve``'s default ``on_ready``)."""
    write(f"provider emulator listening on {emulator.base_url}")
    write(f"  OpenAI base_url:    {emulator.openai_base_url}")
    write(f"  Anthropic base_url: {emulator.anthropic_base_url}")
    write(f"  Gemini base_url:    {emulator.base_url}  (http_options=HttpOptions(base_url=...))")
    write(f"  Bedrock endpoint:   {emulator.base_url}  (endpoint_url=...)")
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
    faults: Mapping[int, Sequence[Mutation]] | None = None,
) -> ProviderEmulator:
    """Run an emulator in the foreground until ``stop_event`` is set or Ctrl-C; ``on_ready``
        gets the started emulator (its URLs).  ``faults`` maps a cassette's interaction index to the
    faults of its response.  ``fallback`` answers requests past the script;
        ``None`` means none does (each gets the strict emulator's HTTP 500 naming it, not an
        echo).  Returns the stopped emulator (its ``requests``)."""
    strict = strict or fallback is None
    options: dict[str, Any] = {"strict": strict, "fallback": fallback, "host": host, "port": port}
    emulator = (
        ProviderEmulator.from_cassette(cassette, faults=faults, **options)
        if cassette is not None
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
        emu = serve(
            list(replies),
            host=host,
            port=port,
            on_ready=lambda e: announce(e, write),
            stop_event=stop_event,
            fallback=echo_responder if echo else None,
            cassette=cassette,
        )
    except (OSError, ValueError) as exc:
        write(f"error: {exc}")
        return 2
    write(f"served {len(emu.requests)} request(s)")
    return 0
