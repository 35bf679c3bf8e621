"""The agent with its forecast service, an MCP server, tested three ways: a fake service built
from the real one's recorded ``tools/list`` (strict: a call it was not scripted for fails the
test), the real server in-process, and its recorded traffic replayed (an MCP cassette, beside a
provider cassette).  ``tests/forecast_tools.json`` is the recorded listing; a test fails when
the real server's tools drift from it, so the fake cannot go stale."""

import asyncio
import json
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason='the forecast service needs the mcp extra: pip install -e "."')

from city_agent import TOOLS, build_runtime, forecast_service

from openprogram_testing import assert_terminated, call, turn
from openprogram_testing.mcp import tool_error

RECORDED = json.loads(Path(__file__).with_name("forecast_tools.json").read_text())

SCRIPT = [
    turn(call("forecast__tomorrow", {"city": "Oslo"})),
    "Snow in Oslo tomorrow: take boots.",
]


def _results(tree):
    return [(r.text, r.is_error) for r in tree.trace.tool_results]


def test_with_a_fake_service(scripted_provider, exec_runner, fake_mcp_server):
    fake = fake_mcp_server("forecast", RECORDED["tools"])
    fake.script("tomorrow", "Oslo tomorrow: snow, -2 C", arguments={"city": "Oslo"})
    scripted_provider.add(*SCRIPT)
    with forecast_service(fake) as forecast:
        tree = exec_runner(
            build_runtime(scripted_provider), "Oslo tomorrow?", tools=[*TOOLS, forecast]
        )
    assert tree.result == "Snow in Oslo tomorrow: take boots."
    assert _results(tree) == [("Oslo tomorrow: snow, -2 C", False)]
    offered = [t.name for t in scripted_provider.requests[0].tools]
    assert offered[-2:] == ["forecast__tomorrow", "forecast__alerts"]
    assert_terminated(tree, "completed")


def test_when_the_service_fails(scripted_provider, exec_runner, fake_mcp_server):
    fake = fake_mcp_server("forecast", RECORDED["tools"])
    fake.script("tomorrow", tool_error("forecast backend unavailable"))
    scripted_provider.add(SCRIPT[0], "No forecast today, sorry.")
    with forecast_service(fake) as forecast:
        tree = exec_runner(
            build_runtime(scripted_provider), "Oslo tomorrow?", tools=[*TOOLS, forecast]
        )
    assert _results(tree) == [("forecast backend unavailable", True)]
    assert tree.result == "No forecast today, sorry."


def test_with_the_real_server_in_process(scripted_provider, exec_runner):
    scripted_provider.add(
        turn(
            call("forecast__tomorrow", {"city": "Oslo"}),
            call("forecast__tomorrow", {"city": "Paris"}),
        ),
        "Snow in Oslo tomorrow; no forecast for Paris.",
    )
    with forecast_service() as forecast:
        tree = exec_runner(
            build_runtime(scripted_provider), "Oslo and Paris?", tools=[*TOOLS, forecast]
        )
    (oslo, paris) = _results(tree)
    assert oslo == ("Oslo tomorrow: snow, -2 C", False)
    assert paris == ("Error executing tool tomorrow: no forecast for Paris", True)


def test_the_recorded_tool_list_is_the_real_servers():
    from city_agent.forecast_server import server
    from mcp import Client

    async def listing():
        async with Client(server) as client:
            tools = (await client.list_tools()).tools
        return [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in tools]

    assert asyncio.run(listing()) == RECORDED["tools"], (
        "the forecast server's tools changed: re-record tests/forecast_tools.json"
    )


def test_replayed_from_a_provider_and_an_mcp_cassette(cassette, mcp_cassette, exec_runner):
    """The third way: the model over the OpenAI Chat adapter and the forecast service, both
    replayed from cassettes recorded once against the provider emulator and the real server
    (``pytest --openprogram-record-mode=once`` records both files again)."""
    from city_agent.forecast_server import server

    from openprogram.providers.openai_chat import OpenAIChatProvider
    from openprogram_testing import ProviderEmulator

    recorded = mcp_cassette("forecast", server=server)
    with ProviderEmulator(SCRIPT) as emulator:
        provider = OpenAIChatProvider(api_key="test-key", base_url=emulator.openai_base_url)
        with forecast_service(recorded) as forecast:
            tree = exec_runner(build_runtime(provider), "Oslo tomorrow?", tools=[*TOOLS, forecast])
        reached = len(emulator.requests)
    assert tree.result == "Snow in Oslo tomorrow: take boots."
    assert _results(tree) == [("Oslo tomorrow: snow, -2 C", False)]
    if cassette.replay_only:
        assert reached == 0  # every model answer came from the provider cassette
        assert not recorded.recording  # and every MCP answer from the MCP cassette
