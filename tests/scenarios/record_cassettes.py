"""Re-record the cassettes of the bundled cassette scenarios (``scenarios/cassettes/``).

They are recorded through the real adapters and SDKs against the loopback provider emulator, so
this needs no API key and no network:

    .venv/bin/python tests/scenarios/record_cassettes.py

The scenario files that replay them (``scenarios/scenario_4*_cassette_*.yaml``) state what each
recording contains; re-recording must keep that true (the bundled-suite test checks it).
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from openprogram_testing.cassettes import use_cassette
from openprogram_testing.core.trace import run_loop
from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.transport.scripted import call, turn

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "scenarios" / "cassettes"

WEATHER_TOOL: dict[str, Any] = {
    "spec": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "execute": lambda args: f"sunny, 21 C in {args['city']}",
}

CONVERSATIONS: dict[str, tuple[str, list[Any]]] = {
    # name: (prompt, emulator turns)
    "weather": (
        "What is the weather in Paris?",
        [
            turn("Let me check.", call("get_weather", {"city": "Paris"})),
            turn("It is sunny and 21 C in Paris."),
        ],
    ),
    "text": ("Say hello.", [turn("Hello from the emulator!")]),
}


def _adapter(api: str, emulator: ProviderEmulator) -> Any:
    if api == "openai_chat":
        from openprogram.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(api_key="sk-test", base_url=emulator.openai_base_url)
    if api == "openai_responses":
        from openprogram.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(api_key="sk-test", base_url=emulator.openai_base_url)
    from openprogram.providers.anthropic import AnthropicProvider

    return AnthropicProvider(api_key="sk-ant-test", base_url=emulator.anthropic_base_url)


async def record(api: str, name: str) -> Path:
    prompt, turns = CONVERSATIONS[name]
    target = OUT / f"{api}_{name}.yaml"
    target.unlink(missing_ok=True)
    with ProviderEmulator(turns) as emulator:
        adapter = _adapter(api, emulator)
        with use_cassette(target, record_mode="all"):
            trace = await run_loop(adapter, prompt, tools=[WEATHER_TOOL], model="emulated-model")
        emulator.assert_complete()
    assert trace.termination == "completed", trace.timeline()
    return target


async def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for api in ("openai_chat", "openai_responses", "anthropic"):
        for name in CONVERSATIONS:
            print("recorded", (await record(api, name)).relative_to(ROOT))


if __name__ == "__main__":
    asyncio.run(main())
