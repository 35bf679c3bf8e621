"""Body matching is the default for model calls: a test whose prompt or system prompt changed no
longer replays the old answers.  The opt-outs (``match_body=False``, ``ignore_paths=``, the
``op_cassette`` marker, the scenario keys and the ini option) and the normalisations each have a
test; each failing case also shows that the same replay passed with matching relaxed (the old
default)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.cassettes import NORMALISATIONS, CassetteError, use_cassette
from openprogram_testing.core.trace import run_loop
from openprogram_testing.scenarios import run_scenario
from openprogram_testing.transport.cassettes.matching import BodyMatch, model_call_api
from tests.scenarios._scenarios import load_error

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
CHAT_LOOP = ROOT / "cassettes" / "emulator" / "chat_tool_loop.yaml"
ANTHROPIC_TEXT = ROOT / "scenarios" / "cassettes" / "anthropic_text.yaml"

ADD = {
    "spec": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
    "execute": lambda args: str(args["a"] + args["b"]),
}
WEATHER = {
    "spec": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "execute": lambda args: "sunny",
}


def chat() -> OpenAIChatProvider:
    return OpenAIChatProvider(api_key="unused", base_url="http://127.0.0.1:9/v1")


async def _chat_loop(prompt: str, **options: Any) -> Any:
    with use_cassette(CHAT_LOOP, **options):
        return await run_loop(chat(), prompt, tools=[ADD])


async def test_the_recorded_prompt_replays() -> None:
    trace = await _chat_loop("What is 2 + 3?")
    assert trace.termination == "completed" and trace.final_text == "2 + 3 = 5."


async def test_a_changed_prompt_fails_replay_by_default() -> None:
    with pytest.raises(CassetteError) as caught:
        await _chat_loop("What is 2 + 4?")
    message = str(caught.value)
    assert 'at $.messages[0].content: recorded "What is 2 + 3?", got "What is 2 + 4?"' in message
    assert "ignore_paths=['$.messages[0].content']" in message and "match_body=False" in message
    # what the default was before: the old answers replay for the new prompt
    relaxed = await _chat_loop("What is 2 + 4?", match_body=False)
    assert relaxed.termination == "completed" and relaxed.final_text == "2 + 3 = 5."


async def test_a_changed_system_prompt_fails_replay_by_default() -> None:
    provider = AnthropicProvider(api_key="sk-ant-unused", base_url="http://127.0.0.1:9")

    async def replay(system: str | None, **options: Any) -> Any:
        with use_cassette(ANTHROPIC_TEXT, **options):
            return await run_loop(
                provider,
                "Say hello.",
                tools=[WEATHER],
                system_prompt=system,
                model="emulated-model",
                tool_choice="auto",  # a scenario's recording: scenarios send exec's "auto"
            )

    assert (await replay(None)).termination == "completed"
    with pytest.raises(CassetteError, match=r"at \$\.system: recorded <missing>, got "):
        await replay("Always answer in French.")
    assert (await replay("Always answer in French.", match_body=False)).termination == "completed"


async def test_ignore_paths_leave_named_places_out() -> None:
    trace = await _chat_loop("What is 2 + 4?", ignore_paths=["$.messages[0].content"])
    assert trace.final_text == "2 + 3 = 5."
    # the second request carries the prompt too: a wildcard covers every message
    trace = await _chat_loop("What is 2 + 4?", ignore_paths=["$.messages[*].content"])
    assert trace.final_text == "2 + 3 = 5."
    with pytest.raises(CassetteError, match=r"at \$\.messages\[0\]\.content"):
        await _chat_loop("What is 2 + 4?", ignore_paths=['$.messages[1]["content"]'])


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("messages[0]", "is not a JSON path"),
        ("$.messages[", "cannot read '['"),
        ("$", "would ignore the whole body"),
    ],
)
def test_a_bad_json_path_is_a_clear_error(path: str, problem: str) -> None:
    with pytest.raises(CassetteError, match=problem.replace("[", r"\[")):
        use_cassette(CHAT_LOOP, ignore_paths=[path])
    with pytest.raises(CassetteError, match="a list of JSON paths"):
        use_cassette(CHAT_LOOP, ignore_paths="$.model")  # type: ignore[arg-type]


def test_only_model_calls_compare_bodies(tmp_path: Path) -> None:
    uri = "https://auth.example.com/oauth/token"
    interaction = {
        "request": {"method": "POST", "uri": uri, "body": '{"nonce": "1"}', "headers": {}},
        "response": {
            "status": {"code": 200, "message": "OK"},
            "headers": {"content-type": ["application/json"]},
            "body": {"string": '{"ok": true}'},
        },
    }
    path = tmp_path / "token.yaml"
    path.write_text(yaml.safe_dump({"version": 1, "interactions": [interaction]}))
    with use_cassette(path), httpx2.Client() as client:
        assert client.post(uri, json={"nonce": "2"}).json() == {"ok": True}
    assert model_call_api("/v1/chat/completions") == "openai_chat"
    assert model_call_api("/openai/deployments/gpt/chat/completions") == "openai_chat"
    assert model_call_api("/model/amazon.nova-micro-v1%3A0/converse-stream") == "bedrock"
    assert model_call_api("/oauth/token") is None


def test_gemini_call_ids_the_client_made_up_are_not_compared() -> None:
    def body(call_id: str, city: str) -> str:
        import json

        call = {"functionCall": {"id": call_id, "name": "w", "args": {"city": city}}}
        result = {"functionResponse": {"id": call_id, "name": "w", "response": {"output": "x"}}}
        contents = [{"role": "model", "parts": [call]}, {"role": "user", "parts": [result]}]
        return json.dumps({"contents": contents})

    path = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    match = BodyMatch()
    assert match.difference(path, body("call_a1_0", "Paris"), body("call_b2_0", "Paris")) is None
    found = match.difference(path, body("call_a1_0", "Paris"), body("call_b2_0", "Rome"))
    assert found == ("$.contents[0].parts[0].functionCall.args.city", "Paris", "Rome")
    # elsewhere ids are answers the model gave, replayed from the file: they are compared
    assert set(NORMALISATIONS) == {"gemini"}


# -- scenarios ---------------------------------------------------------------------------------

SCENARIO = """
prompt: {prompt}
tools:
  - name: get_weather
    description: Current weather for a city.
    parameters: {{type: object, properties: {{city: {{type: string}}}}, required: [city]}}
    returns: sunny, 21 C in Paris
cassette:
  path: weather.yaml
  api: openai_chat
{extra}expect: {{termination: completed, final_text: It is sunny and 21 C in Paris.}}
"""


def _scenario(folder: Path, prompt: str, extra: str = "") -> Path:
    shutil.copy(
        ROOT / "scenarios" / "cassettes" / "openai_chat_weather.yaml", folder / "weather.yaml"
    )
    path = folder / "scenario_weather.yaml"
    path.write_text(SCENARIO.format(prompt=prompt, extra=extra))
    return path


def test_a_scenario_whose_prompt_changed_fails(tmp_path: Path) -> None:
    assert run_scenario(_scenario(tmp_path, "What is the weather in Paris?")).passed
    result = run_scenario(_scenario(tmp_path, "What is the weather in Rome?"))
    assert not result.passed
    assert 'at $.messages[0].content: recorded "What is the weather in Paris?"' in (
        result.failure_text
    )
    relaxed = _scenario(tmp_path, "What is the weather in Rome?", "  match_body: false\n")
    assert run_scenario(relaxed).passed
    ignored = "  ignore_paths: ['$.messages[0].content']\n"
    assert run_scenario(_scenario(tmp_path, "What is the weather in Rome?", ignored)).passed


def test_a_scenario_with_a_bad_ignore_path_does_not_load(tmp_path: Path) -> None:
    path = _scenario(tmp_path, "hi", "  ignore_paths: [messages]\n")
    assert "is not a JSON path" in load_error(path)


# -- pytest: the marker and the ini option ---------------------------------------------------

TESTS = f"""
import pytest
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.core.trace import run_loop

ADD = {{"spec": {ADD["spec"]!r}, "execute": lambda args: str(args["a"] + args["b"])}}

async def _loop(prompt):
    provider = OpenAIChatProvider(api_key="unused", base_url="http://127.0.0.1:9/v1")
    return await run_loop(provider, prompt, tools=[ADD])

@pytest.mark.op_cassette({str(CHAT_LOOP)!r})
async def test_default(cassette):
    await _loop("What is 2 + 4?")

@pytest.mark.op_cassette({str(CHAT_LOOP)!r}, match_body=False)
async def test_relaxed(cassette):
    assert (await _loop("What is 2 + 4?")).final_text == "2 + 3 = 5."

@pytest.mark.op_cassette({str(CHAT_LOOP)!r}, ignore_paths=["$.messages[*].content"])
async def test_ignored(cassette):
    assert (await _loop("What is 2 + 4?")).final_text == "2 + 3 = 5."

@pytest.mark.op_cassette({str(CHAT_LOOP)!r}, match_body=True)
async def test_explicit(cassette):
    await _loop("What is 2 + 4?")
"""


INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"


def test_the_marker_and_the_ini_option_relax_matching(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(test_bodies=TESTS)
    _scenario(pytester.path, "What is the weather in Rome?")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    # test_default and test_explicit fail at teardown (the cassette raises the mismatch the
    # adapter turned into an error turn); the scenario fails
    result.assert_outcomes(passed=4, errors=2, failed=1)
    assert (
        "the body differs from interaction 0 (the next unplayed one for this route) at $.messages[0].content"
        in result.stdout.str()
    )
    pytester.makeini(INI + "openprogram_cassette_match_body = false\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    # the ini relaxes what says nothing; a marker that asks for matching keeps it
    result.assert_outcomes(passed=5, errors=1)
    result.stdout.fnmatch_lines(["*test_explicit*"])
