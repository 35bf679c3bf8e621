"""Conformance: every shared Gemini / Vertex AI and Bedrock recording replays through the new
adapters on the real SDKs.

Gemini recordings are served by an ``httpx2.MockTransport`` to ``google-genai``; Bedrock Converse
recordings by botocore's ``before-send`` hook (so botocore parses the event stream, CRCs and
errors itself); the InvokeModel recording (Anthropic events inside AWS event-stream ``chunk``
frames) by a MockTransport to the ``anthropic`` SDK's ``AsyncAnthropicBedrock``, through the
Anthropic adapter.  Expected values were read from the recordings by hand: texts, tool calls
(Gemini ids the API did not send are ``call_<responseId>_<n>``), finish/stop reason, usage
(Gemini output = candidates + thoughts tokens), errors.  Streaming bodies replay a second time cut
into 7-byte pieces and must give the same message.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from openprogram.providers import guard
from openprogram.providers.base import Context
from openprogram.types import AssistantMessage, ToolResultMessage, UserMessage
from tests.providers._adapters_http import Recorder, collect
from tests.providers._google_aws import BedrockStub, RawBody, Reply, gemini_provider
from tests.providers._helper import (
    answer_round,
    check_message,
    recorded_body,
    recorded_interactions,
    recorded_response,
    recorded_rounds,
    recording_header,
    secrets_round,
)

MORIA = 'The secrets associated with the passwords "mellon" and "radiance" are "Welcome to Moria!" and "Life before Death" respectively.'
NOT_FOUND = "models/this-model-does-not-exist-12345 is not found for API version v1beta"

GEMINI: dict[str, list[tuple[Any, ...]]] = {
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml": [
        secrets_round(
            "call_G5nyaJuGE-yrqtsPmJHUoAs_0", "call_G5nyaJuGE-yrqtsPmJHUoAs_1", (70, 40 + 61)
        ),
        answer_round(MORIA, (211, 30)),
    ],
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/sync.yaml": [
        secrets_round(
            "call_AJnyaJv6GPulqtsP5Z6fgAs_0", "call_AJnyaJv6GPulqtsP5Z6fgAs_1", (70, 40 + 76)
        ),
        answer_round(
            'The secrets have been retrieved. For the password "mellon", the secret is "Welcome to Moria!". For the password "radiance", the secret is "Life before Death".',
            (152, 37),
        ),
    ],
    "mirascope/test_model_not_found_stream/google_gemini_2_5_flash.yaml": [
        ("error", 404, False, NOT_FOUND),
        ("error", 404, False, NOT_FOUND),
    ],
    "chatlas/test_provider_google/test_tools_parallel.yaml": [
        (
            "toolUse",
            "",
            [
                ("0b3pdf3o", "favorite_color", {"_person": "Joe"}),
                ("brynwdxm", "favorite_color", {"_person": "Hadley"}),
            ],
            (85, 35 + 127),
        ),
        answer_round("Joe sage green Hadley red", (274, 5 + 360)),
    ],
    "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml": [
        ("toolUse", "", [("call_QUVVadTSNJ6_qtsPvN7J8Q0_0", "get_country", {})], (29, 10 + 202)),
        answer_round("The capital of Mexico is Mexico City.", (257, 8)),
    ],
    "crewai/TestAgentMultimodalGemini.test_video_file[gemini-gemini-2.0-flash].yaml": [
        ("error", 429, True, "Resource exhausted. Please try again later."),
    ],
    "opentelemetry-python-contrib/google_genai/test_streaming[logcontent-gemini-2.5-flash-vertexaiapi-sync-default].yaml": [
        answer_round(
            ("When systems hum, a silent, complex art,\nWith hidden errors", 1564), (8, 388 + 2193)
        ),
    ],
}

NOVA_WEATHER = (
    "<thinking> The User has asked for the current weather in two different cities: Seattle and San Francisco. "
    "To provide this information, I will use the `get_current_weather` tool for each city. I need to call the "
    "tool twice, once for each city.</thinking>\n"
)
CREW_ANSWER = "The three parallel searches were executed simultaneously across all tools"

BEDROCK: dict[str, list[tuple[Any, ...]]] = {
    "dd-trace-py/bedrock/bedrock_converse_stream.yaml": [
        (
            "toolUse",
            "Okay, let me use the tool to fetch an expert explanation for the concept of distributed tracing.",
            [
                (
                    "tooluse_HA9wsJ32RhOvn8XgIUDpGA",
                    "fetch_concept",
                    {"concept": "distributed tracing"},
                )
            ],
            (259, 64),
        ),
    ],
    "dd-trace-py/bedrock/bedrock_converse_error.yaml": [
        ("error", 403, False, "The security token included in the request is expired"),
    ],
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_invalid_model.yaml": [
        ("error", 400, False, "The provided model identifier is invalid."),
    ],
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml": [
        (
            "toolUse",
            NOVA_WEATHER,
            [
                ("tooluse_JZ11QcxSQ3m3xacMQKVIKw", "get_current_weather", {"location": "Seattle"}),
                (
                    "tooluse_-hxBEEwGRc-VQqC2i7SFqg",
                    "get_current_weather",
                    {"location": "San Francisco"},
                ),
            ],
            (415, 202),
        ),
        answer_round(
            "<thinking> I have received the weather information for both cities. Now I will provide the details to "
            "the User.</thinking>\n\nThe current weather in Seattle is 50 degrees and raining. In San Francisco, the "
            "weather is 70 degrees and sunny.",
            (565, 52),
        ),
    ],
    "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml": [
        (
            "toolUse",
            "<thinking> To determine the capital of France, I can use the provided tool that returns the capital "
            "of a given country. Since the country in question is France, I will use the tool with the country "
            'parameter set to "France". </thinking>\n',
            [("tooluse_Ze_bgl9CSqu8aJv7XD-_Dw", "get_capital", {"country": "France"})],
            (426, 66),
        ),
        answer_round(
            (
                "<thinking> It appears that there was an error in retrieving the capital of France",
                370,
            ),
            (531, 76),
        ),
    ],
    "crewai/TestBedrockNativeToolCalling.test_bedrock_parallel_native_tool_calling_test_agent_kickoff.yaml": [
        (
            "toolUse",
            "I'll execute all 3 parallel searches simultaneously right now!",
            [
                (
                    "tooluse_kooGjILXmVRg8edl3YuEf4",
                    "parallel_local_search_one",
                    {"query": "latest OpenAI model release notes"},
                ),
                (
                    "tooluse_qa71o2cLA65qg5TyweI63c",
                    "parallel_local_search_two",
                    {"query": "latest Anthropic model release notes"},
                ),
                (
                    "tooluse_gPf5hAC0sogbIJEjDBTIvO",
                    "parallel_local_search_three",
                    {"query": "latest Gemini model release notes"},
                ),
            ],
            (914, 169),
        ),
        answer_round((CREW_ANSWER, 819), (1197, 173)),
    ],
}

ANTHROPIC_ON_BEDROCK: dict[str, list[tuple[Any, ...]]] = {
    "chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml": [
        (
            "toolUse",
            "",
            [("toolu_bdrk_01PNjP1XJ26WJB3WZa7LyfBp", "get_current_date", {})],
            (568, 38),
        ),
        answer_round("2024-01-01", (625, 9)),
        (
            "toolUse",
            "",
            [("toolu_bdrk_01LvkLsi1CKfwjSdABAY5LiB", "get_current_date2", {})],
            (569, 39),
        ),
        answer_round("2024-01-01", (627, 9)),
    ],
}


async def _replay(provider: Any, model: str) -> AssistantMessage:
    with guard.allow_model_requests(False), guard.replaying():
        _, message = await collect(
            provider, Context(messages=[UserMessage(content="x")]), model=model
        )
    return message


@pytest.mark.parametrize("name", list(GEMINI))
async def test_gemini_recording(conformance_cassettes: Path, name: str) -> None:
    for interaction, want, uri in recorded_rounds(conformance_cassettes, name, GEMINI[name]):
        stream = uri.path.endswith(":streamGenerateContent")
        vertex = "/projects/" in uri.path
        model = re.search(r"/models/([^:/]+):", uri.path).group(1)  # type: ignore[union-attr]
        for chunk in (None, 7) if stream else (None,):
            rec = Recorder(recorded_response(interaction["response"], chunk))
            provider = gemini_provider(
                rec, stream, vertex=vertex, api_version=uri.path.split("/")[1]
            )
            check_message(await _replay(provider, model), want)
            assert (
                rec.requests[0].url.path == uri.path
            )  # the endpoint the recording was made against


@pytest.mark.parametrize(
    "name",
    [
        "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml",
        "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml",
    ],
)
async def test_gemini_signature_goes_back_as_the_sdk_sends_it(
    conformance_cassettes: Path, name: str
) -> None:
    """The follow-up request carries each call's thoughtSignature exactly as the recording's own
    client sent it (URL-safe base64), with the call it belongs to."""
    first, second = recorded_interactions(conformance_cassettes / name)
    rec = Recorder(
        recorded_response(first["response"], None), recorded_response(second["response"], None)
    )
    provider = gemini_provider(rec, True)
    message = await _replay(provider, "m")
    results = [ToolResultMessage(tool_call_id=c.id, tool_name=c.name) for c in message.tool_calls]
    with guard.replaying():
        _, answer = await collect(
            provider, Context(messages=[UserMessage(content="x"), message, *results])
        )
    assert answer.stop_reason == "stop"

    def signed(body: dict[str, Any]) -> list[tuple[str, str]]:
        return [
            (p["functionCall"]["name"], p["thoughtSignature"])
            for c in body["contents"]
            for p in c["parts"]
            if "functionCall" in p and "thoughtSignature" in p
        ]

    request = second["request"]
    recorded = signed(
        request["parsed_body"] if "parsed_body" in request else json.loads(request["body"])
    )
    assert recorded and signed(rec.bodies[1]) == recorded


def _reply(response: dict[str, Any], stream: bool, chunk: int | None) -> Reply:
    data = recorded_body(response)
    status = response["status"]["code"]
    headers = {
        k: v
        for k in ("x-amzn-ErrorType", "content-type")
        if (v := recording_header(response["headers"], k.lower()))
    }
    body = RawBody([data[i : i + chunk] for i in range(0, len(data), chunk)]) if chunk else data
    return Reply(status, body, headers, stream=stream)


@pytest.mark.parametrize("name", list(BEDROCK))
async def test_bedrock_recording(conformance_cassettes: Path, name: str) -> None:
    from openprogram.providers.bedrock import BedrockProvider

    for interaction, want, uri in recorded_rounds(conformance_cassettes, name, BEDROCK[name]):
        stream = uri.path.endswith("/converse-stream")
        model = unquote(uri.path.split("/")[2])
        for chunk in (None, 7) if stream else (None,):
            stub = BedrockStub(_reply(interaction["response"], stream, chunk))
            check_message(await _replay(BedrockProvider(stub.client(), stream=stream), model), want)
            assert urlsplit(stub.requests[0].url).path == uri.path


@pytest.mark.parametrize("name", list(ANTHROPIC_ON_BEDROCK))
async def test_anthropic_on_bedrock_recording(conformance_cassettes: Path, name: str) -> None:
    from anthropic import AsyncAnthropicBedrock

    from openprogram.providers.anthropic import AnthropicProvider

    for interaction, want, uri in recorded_rounds(
        conformance_cassettes, name, ANTHROPIC_ON_BEDROCK[name]
    ):
        model = unquote(uri.path.split("/")[2])
        for chunk in (None, 7):
            rec = Recorder(recorded_response(interaction["response"], chunk))
            client = AsyncAnthropicBedrock(
                aws_region="us-east-1",
                aws_access_key="AKIDTEST",
                aws_secret_key="test",
                **rec.sdk_options(),
            )
            check_message(await _replay(AnthropicProvider(client), model), want)
            assert unquote(rec.requests[0].url.path) == unquote(uri.path)
            assert rec.requests[0].headers["authorization"].startswith("AWS4-HMAC-SHA256")


def test_every_google_and_aws_recording_is_covered(conformance_cassettes: Path) -> None:
    names = {
        str(p.relative_to(conformance_cassettes)) for p in conformance_cassettes.rglob("*.yaml")
    }
    ours = set(GEMINI) | set(BEDROCK) | set(ANTHROPIC_ON_BEDROCK)
    assert ours <= names
    assert {
        n for n in names if any(k in n for k in ("gemini", "google", "bedrock", "botocore"))
    } == ours
