"""What the framework tests share: importing a framework (a failure in CI, a skip elsewhere), the
scripts every framework plays, and the checks on what the emulator received."""

from __future__ import annotations

import importlib
import os
from types import ModuleType
from typing import Any

import pytest

from openprogram.types import Usage
from openprogram_testing import ProviderEmulator, call, turn

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # litellm fetches it at import

BROKEN = '{"a": 2, "b": '
"""Tool-call arguments cut off mid-object."""

SECRET = "sk-live-0123456789abcdef0123"
"""The API key the clients send while a cassette records: it must never reach the file."""


def need(module: str) -> ModuleType:
    """Import a framework of the ``frameworks`` extra: in CI it must be installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        reason = f"{module} is not installed ({exc}); pip install -e '.[frameworks]'"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: in CI the framework tests must run")
        pytest.skip(reason)


def tool_round(*, parallel: bool = False) -> list[Any]:
    """One tool round (one call, or two in parallel) with usage, then the answer."""
    calls = [call("add", {"a": 2, "b": 3})]
    if parallel:
        calls.append(call("add", {"a": 4, "b": 5}))
    return [
        turn("Adding.", *calls, usage=Usage(input_tokens=10, output_tokens=5), chunk_size=3),
        turn("The sum is 5.", usage=Usage(input_tokens=20, output_tokens=3), chunk_size=3),
    ]


def roles(emu: ProviderEmulator) -> list[list[str]]:
    """The history roles of every model request the emulator parsed."""
    return [
        [m.role for m in r.model_request.messages]
        for r in emu.requests
        if r.model_request is not None
    ]


def results(emu: ProviderEmulator, index: int) -> list[str]:
    """The tool-result texts request ``index`` sent back."""
    request = emu.requests[index].model_request
    assert request is not None
    return [m.text for m in request.messages if m.role == "toolResult"]
