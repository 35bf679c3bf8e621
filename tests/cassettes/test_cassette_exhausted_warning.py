"""Recording an answer the emulator made up after its script ran out warns: the cassette would
otherwise hold a fallback (or a "script exhausted" error) as if a provider had said it."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.cassettes import ScriptExhaustedWarning, load_interactions, use_cassette
from openprogram_testing.core.trace import run_loop
from openprogram_testing.emulator import ProviderEmulator


@pytest.mark.parametrize("strict", [True, False])
async def test_new_episodes_warns_when_it_records_past_the_script(
    tmp_path: Path, strict: bool
) -> None:
    path = tmp_path / "episodes.yaml"
    with ProviderEmulator(["one"], strict=strict) as emulator:
        provider = OpenAIChatProvider(
            api_key="dummy-key", base_url=emulator.openai_base_url, max_retries=0
        )
        with warnings.catch_warnings():
            warnings.simplefilter("error", ScriptExhaustedWarning)  # within the script: none
            with use_cassette(path, record_mode="new_episodes"):
                assert (await run_loop(provider, "hi")).final_text == "one"
        with pytest.warns(ScriptExhaustedWarning) as caught:
            with use_cassette(path, record_mode="new_episodes"):
                await run_loop(provider, "hi")  # replayed: "one"
                second = await run_loop(provider, "again")  # recorded: past the script
    (exhausted,) = [w for w in caught if issubclass(w.category, ScriptExhaustedWarning)]
    message = str(exhausted.message)
    assert f"cassette {path} recorded 1 answer(s)" in message
    assert "x-emulator-script-exhausted: true" in message
    assert "#1 (status 500)" in message if strict else "#1 (status 200)" in message
    assert second.termination == ("error" if strict else "completed")
    recorded = load_interactions(path)
    assert len(recorded) == 2
    assert recorded[1]["response"]["headers"]["x-emulator-script-exhausted"] == ["true"]


async def test_replaying_such_an_answer_does_not_warn_again(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    with ProviderEmulator([], strict=False) as emulator:
        provider = OpenAIChatProvider(api_key="dummy-key", base_url=emulator.openai_base_url)
        with pytest.warns(ScriptExhaustedWarning):
            with use_cassette(path, record_mode="once"):
                await run_loop(provider, "echo me")
    with warnings.catch_warnings():
        warnings.simplefilter("error", ScriptExhaustedWarning)
        with use_cassette(path) as replay:
            await run_loop(provider, "echo me")
    assert replay.played == [0]
