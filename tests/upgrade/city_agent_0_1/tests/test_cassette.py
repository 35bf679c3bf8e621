"""The agent over a real adapter (OpenAI Chat), replayed from a cassette that was recorded
against the loopback provider emulator (``pytest --openprogram-record-mode=once`` re-records it;
the emulator is then the model, scripted below)."""

from city_agent import TOOLS, build_runtime

from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing import ProviderEmulator, assert_terminated, call, turn

SCRIPT = [
    turn(call("lookup_weather", {"city": "Lima"})),
    "Lima is mild: 18 C.",
]


def test_replayed_from_the_cassette(cassette, exec_runner):
    with ProviderEmulator(SCRIPT) as emulator:
        provider = OpenAIChatProvider(api_key="test-key", base_url=emulator.openai_base_url)
        tree = exec_runner(build_runtime(provider), "Weather in Lima?", tools=TOOLS)
        reached = len(emulator.requests)
    assert tree.result == "Lima is mild: 18 C."
    assert_terminated(tree, "completed")
    if cassette.replay_only:
        assert reached == 0  # every answer came from the cassette file
