"""A scenario sends the request ``Runtime.exec`` sends for the same agent: ``tool_choice`` is
``"auto"`` unless the file says otherwise, so a cassette that exec's requests match replays in
a scenario with body matching on."""

from __future__ import annotations

from pathlib import Path

from openprogram import Runtime, run_sync
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.scenarios import load_scenario, parse_scenario, run_scenario

SUITE = Path(__file__).resolve().parents[2] / "scenarios"

STUBS = """
prompt: What is the weather in Paris?
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters: {type: object, properties: {city: {type: string}}, required: [city]}
    returns: sunny
script:
  - calls: [{name: get_weather, args: {city: Paris}}]
  - Sunny.
"""

TOOL = {
    "spec": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "execute": lambda arguments: "sunny",
}


def test_a_scenario_of_stubs_asks_with_the_tool_choice_exec_sends() -> None:
    result = run_scenario(parse_scenario(STUBS, "s.yaml"))
    assert result.passed, result.failure_text
    scenario_choices = [r.tool_choice for r in result.trace.requests or []]

    provider = ScriptedProvider([turn(call("get_weather", {"city": "Paris"})), "Sunny."])
    run_sync(Runtime(provider, "test-model").aexec("What is the weather in Paris?", tools=[TOOL]))
    assert scenario_choices == [r.tool_choice for r in provider.requests] == ["auto", "auto"]


def test_a_scenario_replays_with_body_matching_what_exec_replays() -> None:
    from openprogram_testing.cassettes import use_cassette
    from openprogram_testing.frontends.scenarios.replay import cassette_adapter

    cassette = SUITE / "cassettes" / "openai_chat_weather.yaml"
    adapter, model, _ = cassette_adapter("openai_chat", cassette, "m")
    with use_cassette(cassette, match_body=True):  # exec's requests are the recorded ones
        recorded = {**TOOL, "execute": lambda arguments: "sunny, 21 C in Paris"}
        run_sync(Runtime(adapter, model).aexec("What is the weather in Paris?", tools=[recorded]))
    scenario = load_scenario(SUITE / "scenario_40_cassette_openai_chat_weather.yaml")
    assert scenario.cassette is not None
    scenario.cassette.match_body = True  # whatever the default: the bodies are compared
    result = run_scenario(scenario)
    assert result.passed, result.failure_text
