"""The provider emulator: a loopback HTTP server speaking the providers' wire formats.

:mod:`.plan` turns a scripted turn (or a recorded response) and its faults into what to send;
:mod:`.server` is the HTTP server and the script; :mod:`.retries` asserts a client's retries
from what the server received; :mod:`.cli` serves one outside tests.

    with ProviderEmulator([turn(call("add", {"a": 1, "b": 2})), "3"]) as emu:
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="test", max_retries=0)
        ...
        emu.assert_complete()
"""

from __future__ import annotations

from .frontends.cli.emulator import announce, main_emulator, serve
from .transport.emulator.retries import (
    RetryTiming,
    RetryTimingError,
    assert_retries,
    retry_timing,
)
from .transport.emulator.server import (
    LISTEN_BACKLOG,
    EmulatorProtocolError,
    EmulatorRequest,
    ProviderEmulator,
    echo_responder,
    model_request,
)
from .transport.faults import Fault
from .transport.wire import ENDPOINTS, EXHAUSTED_HEADER

__all__ = [
    "ENDPOINTS",
    "EXHAUSTED_HEADER",
    "LISTEN_BACKLOG",
    "EmulatorProtocolError",
    "EmulatorRequest",
    "Fault",
    "ProviderEmulator",
    "RetryTiming",
    "RetryTimingError",
    "announce",
    "assert_retries",
    "echo_responder",
    "main_emulator",
    "model_request",
    "retry_timing",
    "serve",
]
