"""What each API really sends, read back by the official SDKs: broken tool-call arguments
(never a JSON string where the API types an object; Gemini's ``MALFORMED_FUNCTION_CALL``,
Converse's ``malformed_tool_use``), Gemini requests in snake_case, InvokeModel's usage headers,
and the CLI's ``--no-echo`` that stops at the end of the script."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.types import Usage
from openprogram_testing.cassettes import use_cassette
from openprogram_testing.emulator import ProviderEmulator, main_emulator
from openprogram_testing.transport.scripted import call, turn
from tests.providers._helper import ADD

genai = pytest.importorskip("google.genai")
boto3 = pytest.importorskip("boto3")
anthropic = pytest.importorskip("anthropic")
openai = pytest.importorskip("openai")

BROKEN = '{"a": 2, "b": '
"""Arguments cut off mid-object: the keys before the cut survive a partial parse."""


@pytest.fixture
def emu() -> Any:
    emulator = ProviderEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


def gemini_client(emu: ProviderEmulator) -> Any:
    from google.genai import types

    return genai.Client(api_key="test", http_options=types.HttpOptions(base_url=emu.base_url))


def bedrock_client(emu: ProviderEmulator) -> Any:
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=emu.base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": 0}, read_timeout=10),
    )


def broken_turn() -> Any:
    return turn("Adding.", call("add", raw=BROKEN), usage=Usage(input_tokens=7, output_tokens=3))


USER = [{"role": "user", "content": "add"}]


# -- malformed arguments ----------------------------------------------------------------------


def test_anthropic_json_body_sends_broken_arguments_as_an_object(emu):
    emu.add(broken_turn(), broken_turn())
    client = anthropic.Anthropic(base_url=emu.anthropic_base_url, api_key="t", max_retries=0)
    message = client.messages.create(model="claude", max_tokens=9, messages=USER)
    use = message.content[1]
    assert use.type == "tool_use" and use.input == {"a": 2}
    with client.messages.stream(model="claude", max_tokens=9, messages=USER) as stream:
        streamed = stream.get_final_message()
    assert streamed.content[1].input == {"a": 2}  # the SDK's partial parse of the fragments


def test_invoke_model_json_body_sends_an_object_and_usage_headers(emu):
    emu.add(broken_turn())
    response = bedrock_client(emu).invoke_model(
        modelId="anthropic.claude-3-haiku:0",
        body=json.dumps(
            {"anthropic_version": "bedrock-2023-05-31", "max_tokens": 9, "messages": USER}
        ),
    )
    body = json.loads(response["body"].read())
    assert body["content"][1]["input"] == {"a": 2}
    headers = response["ResponseMetadata"]["HTTPHeaders"]
    assert headers["x-amzn-bedrock-input-token-count"] == "7"
    assert headers["x-amzn-bedrock-output-token-count"] == "3"


def test_invoke_model_usage_headers_read_by_the_anthropic_bedrock_client(emu):
    emu.add(turn("hi", usage=Usage(input_tokens=11, output_tokens=4)))
    client = anthropic.AnthropicBedrock(
        aws_access_key="t", aws_secret_key="t", aws_region="us-east-1", base_url=emu.base_url
    )
    raw = client.messages.with_raw_response.create(
        model="anthropic.claude:0", max_tokens=9, messages=USER
    )
    assert raw.headers["x-amzn-bedrock-input-token-count"] == "11"
    assert raw.headers["x-amzn-bedrock-output-token-count"] == "4"


@pytest.mark.parametrize("stream", [False, True])
def test_gemini_answers_a_broken_call_with_malformed_function_call(emu, stream):
    """google-genai types ``functionCall.args`` as a dict: a JSON string there failed its
    validation.  Gemini's own signal is the finish reason with no parts."""
    emu.add(broken_turn())
    client = gemini_client(emu)
    if stream:
        chunks = list(
            client.models.generate_content_stream(model="gemini-2.5-flash", contents="add")
        )
        response = chunks[-1]
        assert len(chunks) == 1
    else:
        response = client.models.generate_content(model="gemini-2.5-flash", contents="add")
    candidate = response.candidates[0]
    assert candidate.finish_reason.name == "MALFORMED_FUNCTION_CALL"
    assert not (candidate.content and candidate.content.parts)
    assert response.usage_metadata.prompt_token_count == 7


@pytest.mark.parametrize("stream", [False, True])
def test_converse_ends_a_broken_call_with_malformed_tool_use(emu, stream):
    emu.add(broken_turn())
    client = bedrock_client(emu)
    messages = [{"role": "user", "content": [{"text": "add"}]}]
    if stream:
        events = list(
            client.converse_stream(modelId="amazon.nova-micro-v1:0", messages=messages)["stream"]
        )
        (stop,) = [e["messageStop"]["stopReason"] for e in events if "messageStop" in e]
        fragments = [
            e["contentBlockDelta"]["delta"]["toolUse"]["input"]
            for e in events
            if "toolUse" in e.get("contentBlockDelta", {}).get("delta", {})
        ]
        assert "".join(fragments) == BROKEN  # streamed as the model wrote it
    else:
        response = client.converse(modelId="amazon.nova-micro-v1:0", messages=messages)
        stop = response["stopReason"]
        (use,) = [b["toolUse"] for b in response["output"]["message"]["content"] if "toolUse" in b]
        assert use["input"] == {"a": 2}
    assert stop == "malformed_tool_use"


def test_well_formed_calls_keep_their_stop_reasons(emu):
    """The malformed signals answer broken arguments only (a pin against false alarms)."""
    emu.add(turn(call("add", raw='{"a": 1}')), turn(call("add", {"a": 1})))
    client = bedrock_client(emu)
    messages = [{"role": "user", "content": [{"text": "add"}]}]
    assert client.converse(modelId="m", messages=messages)["stopReason"] == "tool_use"
    gemini = gemini_client(emu)
    response = gemini.models.generate_content(model="gemini-2.5-flash", contents="x")
    assert response.candidates[0].finish_reason.name == "STOP"
    assert response.function_calls[0].args == {"a": 1}


async def _loop_error(provider: Any) -> Any:
    context = AgentContext(system_prompt="Be exact.", tools=[ADD])
    stream = agent_loop("add", context, LoopConfig(provider=provider, model="m-1"))
    async for _ in stream:
        pass
    return stream, await stream.result()


@pytest.mark.parametrize("api", ["gemini", "bedrock"])
async def test_our_adapters_report_the_malformed_signal_as_a_retryable_error(emu, api):
    """The adapters map the APIs' broken-call signals: an error naming the reason, marked
    retryable (the model may well produce a good call next time)."""
    from openprogram.providers.bedrock import BedrockProvider
    from openprogram.providers.gemini import GeminiProvider

    emu.add(broken_turn())
    if api == "gemini":
        provider: Any = GeminiProvider(api_key="t", base_url=emu.base_url)
        reason = "MALFORMED_FUNCTION_CALL"
    else:
        provider = BedrockProvider(bedrock_client(emu))
        reason = "malformed_tool_use"
    stream, messages = await _loop_error(provider)
    assert stream.termination == "error"
    last = messages[-1]
    assert last.stop_reason == "error" and reason in (last.error_message or "")
    assert last.error_retryable is True
    assert not any(m.role == "toolResult" for m in messages)


# -- Gemini requests in snake_case ------------------------------------------------------------

SNAKE_BODY = {
    "system_instruction": {"parts": [{"text": "Be exact."}]},
    "contents": [
        {"role": "user", "parts": [{"text": "add 2+3"}]},
        {"role": "model", "parts": [{"function_call": {"name": "add", "args": {"a": 2, "b": 3}}}]},
        {
            "role": "user",
            "parts": [{"function_response": {"name": "add", "response": {"result": 5}}}],
        },
    ],
    "tools": [
        {
            "function_declarations": [
                {"name": "add", "description": "Add.", "parameters": {"type": "object"}}
            ]
        }
    ],
    "tool_config": {"function_calling_config": {"mode": "ANY"}},
    "generation_config": {"max_output_tokens": 64, "temperature": 0.5},
}
"""A request as litellm sends it (proto3 JSON accepts snake_case field names)."""


def _camel(body: dict[str, Any]) -> dict[str, Any]:
    from openprogram_testing.transport.wire.gemini import camel_keys

    return camel_keys(body)  # type: ignore[no-any-return]


@pytest.mark.parametrize("spelling", ["snake", "camel"])
def test_gemini_requests_parse_in_both_spellings(emu, spelling):
    emu.add("5")
    body = SNAKE_BODY if spelling == "snake" else _camel(SNAKE_BODY)
    path = "/v1beta/models/gemini-2.5-flash:generateContent"
    assert httpx.post(emu.base_url + path, json=body, timeout=10).status_code == 200
    request = emu.requests[0].model_request
    assert request.system_prompt == "Be exact."
    assert [t.name for t in request.tools] == ["add"]
    assert request.tool_choice == "required" and request.max_tokens == 64
    assert request.temperature == 0.5
    roles = [m.role for m in request.messages]
    assert roles == ["user", "assistant", "toolResult"]
    assert request.messages[1].tool_calls[0].arguments == {"a": 2, "b": 3}
    assert request.messages[2].tool_name == "add" and "5" in request.messages[2].text


def test_camel_keys_keeps_user_data_and_prefers_camel_case():
    from openprogram_testing.transport.wire.gemini import camel_keys

    body = {
        "contents": [{"parts": [{"function_call": {"name": "f", "args": {"first_name": "A"}}}]}],
        "tools": [
            {
                "function_declarations": [
                    {"name": "f", "parameters": {"properties": {"first_name": {}}}}
                ]
            }
        ],
        "tool_config": {"x": 1},
        "toolConfig": {"y": 2},
    }
    out = camel_keys(body)
    assert out["contents"][0]["parts"][0]["functionCall"]["args"] == {"first_name": "A"}
    assert out["tools"][0]["functionDeclarations"][0]["parameters"]["properties"] == {
        "first_name": {}
    }
    assert out["toolConfig"] == {"y": 2}
    assert body["tool_config"] == {"x": 1}  # the input is not changed


def test_cassette_body_matching_reads_both_gemini_spellings(tmp_path):
    """A cassette recorded from the SDK (camelCase) answers litellm's snake_case request."""
    from google.genai import types

    path = tmp_path / "gemini.yaml"
    with ProviderEmulator(["5"]) as emu:
        with use_cassette(path, record_mode="once", match_body=True):
            client = genai.Client(
                api_key="t", http_options=types.HttpOptions(base_url=emu.base_url)
            )
            client.models.generate_content(
                model="gemini-2.5-flash",
                contents=[types.Content(role="user", parts=[types.Part(text="add 2+3")])],
                config=types.GenerateContentConfig(
                    system_instruction="Be exact.", max_output_tokens=64
                ),
            )
        recorded = emu.base_url
    snake = {
        "contents": [{"role": "user", "parts": [{"text": "add 2+3"}]}],
        "system_instruction": {"parts": [{"text": "Be exact."}], "role": "user"},
        "generation_config": {"max_output_tokens": 64},
    }
    stored = json.loads(
        __import__("yaml").safe_load(path.read_text())["interactions"][0]["request"]["body"]
    )
    assert _camel(snake) == _camel(stored), stored  # the same request in the other spelling
    url = recorded + "/v1/models/gemini-2.5-flash:generateContent"
    with use_cassette(path, match_body=True):
        response = httpx.post(url, json=snake, timeout=10)
    assert response.status_code == 200 and "5" in response.text


# -- the CLI without echo ---------------------------------------------------------------------


def test_cli_no_echo_answers_nothing_past_the_script():
    lines: list[str] = []
    ready = threading.Event()
    stop = threading.Event()
    result: list[int] = []

    def write(line: str) -> None:
        lines.append(line)
        if "listening on" in line:
            ready.set()

    thread = threading.Thread(
        target=lambda: result.append(
            main_emulator(["one"], echo=False, stop_event=stop, write=write)
        )
    )
    thread.start()
    try:
        assert ready.wait(10)
        base = lines[0].rsplit(" ", 1)[-1]
        client = openai.OpenAI(base_url=base + "/v1", api_key="t", max_retries=0)
        first = client.chat.completions.create(model="m", messages=USER)
        assert first.choices[0].message.content == "one"
        with pytest.raises(openai.InternalServerError, match="unexpected model call"):
            client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "more?"}]
            )
    finally:
        stop.set()
        thread.join(10)
    assert result == [0]


def test_show_describes_gemini_requests_in_either_spelling():
    """``openprogram-testing show`` reads a recorded Gemini request as the emulator does."""
    from pathlib import Path

    from openprogram_testing.transport.cassettes.show import render_cassette

    uri = "http://127.0.0.1:9/v1beta/models/gemini-2.5-flash:generateContent"
    shown = []
    for body in (SNAKE_BODY, _camel(SNAKE_BODY)):
        request = {"method": "POST", "uri": uri, "body": json.dumps(body)}
        response = {"status": {"code": 200, "message": "OK"}, "body": {"string": "{}"}}
        data = {"interactions": [{"request": request, "response": response}]}
        shown.append(render_cassette(Path("c.yaml"), data))
    assert shown[0] == shown[1]
    assert "history (3): user, assistant, toolResult" in shown[0]
    assert "tools: add" in shown[0] and "model 'gemini-2.5-flash', stream=False" in shown[0]
