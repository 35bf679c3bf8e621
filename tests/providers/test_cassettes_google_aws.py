"""Gemini and Bedrock through cassettes: the bundled recordings ``cassettes/emulator/
gemini_tool_loop.yaml`` and ``bedrock_tool_loop.yaml`` (recorded against the loopback emulator
with ``--openprogram-record-mode=once``) replay a two-request tool loop through the real SDKs
and adapters with no emulator reachable, and a recording cut at any frame ends the run in one
clean ``error``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram.providers import guard
from openprogram_testing.cassettes import CassetteSession, use_cassette
from openprogram_testing.core.trace import run_loop
from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.transport.faults import DropTerminal, TruncateAfter
from openprogram_testing.transport.scripted import call, turn
from tests.providers._google_aws import bedrock_at, gemini_at
from tests.providers._helper import ADD_TEXT

ROOT = Path(__file__).resolve().parents[2]
DEAD = "http://127.0.0.1:9"  # nothing listens: replay must not need the network


PROVIDERS = {"gemini": gemini_at, "bedrock": bedrock_at}


async def _tool_loop(api: str, cassette: CassetteSession) -> Any:
    script = [turn(call("add", {"a": 2, "b": 3}), "Let me add."), "2 + 3 = 5."]
    with ProviderEmulator(script) as emulator:
        url = emulator.base_url if not cassette.replay_only else DEAD
        return await run_loop(PROVIDERS[api](url), "What is 2 + 3?", tools=[ADD_TEXT], model="m")


@pytest.mark.parametrize(
    "api",
    [
        pytest.param(api, marks=pytest.mark.op_cassette(f"emulator/{api}_tool_loop"), id=api)
        for api in PROVIDERS
    ],
)
async def test_tool_loop_replays(api: str, cassette: CassetteSession) -> None:
    trace = await _tool_loop(api, cassette)
    assert trace.termination == "completed" and trace.final_text == "2 + 3 = 5."
    assert [r.content[0].text for r in trace.tool_results] == ["5"]


def _frames(api: str) -> int:
    from openprogram_testing.cassettes import load_interactions

    first = load_interactions(ROOT / "cassettes" / "emulator" / f"{api}_tool_loop.yaml")[0]
    body = first["response"]["body"]["string"]
    if api == "gemini":
        return str(body).count("data:")
    from openprogram_testing.transport.wire.eventstream import split_messages

    return len(split_messages(body if isinstance(body, bytes) else str(body).encode("latin-1")))


@pytest.mark.parametrize("api", PROVIDERS)
async def test_every_cut_of_the_recording_ends_in_one_clean_error(api: str) -> None:
    path = ROOT / "cassettes" / "emulator" / f"{api}_tool_loop.yaml"
    count = _frames(api)
    assert count >= 2
    mutations: list[Any] = [[TruncateAfter(n)] for n in range(count)] + [[DropTerminal()]]
    for mutation in mutations:
        with (
            guard.allow_model_requests(False),
            use_cassette(path, mutations={0: mutation}, allow_unplayed=True),
        ):
            trace = await run_loop(
                PROVIDERS[api](DEAD), "What is 2 + 3?", tools=[ADD_TEXT], model="m"
            )
        assert trace.termination == "error", mutation
        assert trace.tool_results == []  # the calls of a cut message never ran
