"""The shared real-world recordings, what each one contains, and independent ways to read it.

``RECORDINGS`` says, per file, which API it speaks, whether it streams, how many loop runs consume
it and how each run ends.  ``expected_turn`` reads a recorded response with nothing but ``json``
and the frame splitter, so the SDK and adapter results can be checked against it.
"""

from __future__ import annotations

import copy
import functools
import gzip
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from openprogram_testing.cassettes import load_interactions
from openprogram_testing.transport.faults import frame_data, frame_event, is_sse, split_frames


@dataclass(frozen=True)
class Recording:
    name: str  # relative to the conformance folder
    api: str  # openai_chat | openai_responses | anthropic
    stream: bool
    runs: int = 1  # loop runs that consume the cassette (each run = consecutive interactions)
    termination: str = "completed"  # of each run
    max_iterations: int | None = None
    status: int | None = None  # HTTP status of an error recording
    count: int = 1  # interactions in the file


RECORDINGS: tuple[Recording, ...] = (
    Recording(
        "dd-trace-py/anthropic_completion_error.yaml",
        "anthropic",
        False,
        termination="error",
        status=400,
    ),
    Recording("llm/test_responses_tool_use_streaming.yaml", "openai_responses", True, count=2),
    Recording("llm/test_tool_use_basic.yaml", "openai_chat", True, count=2),
    Recording("llm/test_tool_use_chain_of_two_calls.yaml", "openai_chat", False, count=3),
    Recording(
        "magentic/test_anthropic_chat_model_complete_streamed_response.yaml",
        "anthropic",
        True,
        termination="max_iterations",
        max_iterations=1,
    ),
    Recording(
        "magentic/test_openai_chat_model_complete_streamed_response.yaml",
        "openai_chat",
        True,
        termination="max_iterations",
        max_iterations=1,
    ),
    Recording(
        "mirascope/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml",
        "anthropic",
        True,
        termination="error",
        status=401,
    ),
    Recording(
        "mirascope/test_call_with_tools/anthropic_beta_claude_sonnet_4_0/async_stream.yaml",
        "anthropic",
        True,
        count=2,
    ),
    Recording(
        "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml",
        "anthropic",
        True,
        count=2,
    ),
    Recording(
        "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/sync.yaml",
        "anthropic",
        False,
        count=2,
    ),
    Recording(
        "mirascope/test_call_with_tools/openai_gpt_4o_completions/stream.yaml",
        "openai_chat",
        True,
        runs=3,
        count=6,
    ),
    Recording(
        "mirascope/test_call_with_tools/openai_gpt_4o_completions/sync.yaml",
        "openai_chat",
        False,
        runs=3,
        count=6,
    ),
    Recording(
        "mirascope/test_call_with_tools/openai_gpt_4o_responses/stream.yaml",
        "openai_responses",
        True,
        runs=3,
        count=6,
    ),
    Recording(
        "mirascope/test_call_with_tools/openai_gpt_4o_responses/sync.yaml",
        "openai_responses",
        False,
        runs=3,
        count=6,
    ),
    Recording(
        "mirascope/test_model_not_found/openai_gpt_4o_responses.yaml",
        "openai_responses",
        False,
        runs=2,
        termination="error",
        status=400,
        count=2,
    ),
    Recording(
        "mirascope/test_model_not_found_stream/openai_gpt_4o_completions.yaml",
        "openai_chat",
        True,
        runs=2,
        termination="error",
        status=404,
        count=2,
    ),
    Recording(
        "opentelemetry-python-contrib/test_chat_completion_404.yaml",
        "openai_chat",
        False,
        termination="error",
        status=404,
    ),
)

# Recordings of APIs this project has no adapter for yet (Gemini, Vertex AI, Bedrock): each shared
# file is accounted for either above or here, and the loader must still read every one of them.
WITHOUT_ADAPTER: dict[str, str] = {
    "chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml": "bedrock_invoke",
    "chatlas/test_provider_google/test_tools_parallel.yaml": "gemini",
    "crewai/TestAgentMultimodalGemini.test_video_file[gemini-gemini-2.0-flash].yaml": "gemini",
    "crewai/TestBedrockNativeToolCalling.test_bedrock_parallel_native_tool_calling_test_agent_kickoff.yaml": "bedrock_converse",
    "dd-trace-py/bedrock/bedrock_converse_error.yaml": "bedrock_converse",
    "dd-trace-py/bedrock/bedrock_converse_stream.yaml": "bedrock_converse",
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml": "gemini",
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/sync.yaml": "gemini",
    "mirascope/test_model_not_found_stream/google_gemini_2_5_flash.yaml": "gemini",
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml": "bedrock_converse",
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_invalid_model.yaml": "bedrock_converse",
    "opentelemetry-python-contrib/google_genai/test_streaming[logcontent-gemini-2.5-flash-vertexaiapi-sync-default].yaml": "gemini",
    "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml": "bedrock_converse",
    "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml": "gemini",
}

BY_NAME = {r.name: r for r in RECORDINGS}
STREAMING = tuple(r for r in RECORDINGS if r.stream and r.status is None)


def ids(recordings: tuple[Recording, ...]) -> list[str]:
    return [r.name.removesuffix(".yaml") for r in recordings]


def body_text(response: dict[str, Any]) -> str:
    body = response["body"]["string"]
    if isinstance(body, str):
        return body
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    return body.decode("utf-8")


@dataclass
class Turn:
    text: str
    calls: list[tuple[str, dict[str, Any]]]


def expected_turn(api: str, response: dict[str, Any]) -> Turn:
    """The text and tool calls a recorded 200 response carries, read straight from the body."""
    text = body_text(response)
    if is_sse(text):
        events = []
        for frame in split_frames(text):
            data = frame_data(frame)
            if data is None or data.strip() == "[DONE]":
                continue
            events.append((frame_event(frame), json.loads(data)))
        return _from_stream(api, events)
    return _from_json(api, json.loads(text))


def _from_stream(api: str, events: list[tuple[str | None, dict[str, Any]]]) -> Turn:
    if api == "openai_chat":
        text, calls = "", {}
        for _, chunk in events:
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                text += delta.get("content") or ""
                for frag in delta.get("tool_calls") or []:
                    entry = calls.setdefault(frag["index"], ["", ""])
                    fn = frag.get("function") or {}
                    entry[0] = entry[0] or fn.get("name") or ""
                    entry[1] += fn.get("arguments") or ""
        return Turn(text, [(n, json.loads(a or "{}")) for n, a in calls.values()])
    if api == "openai_responses":
        final = next(p for e, p in events if p.get("type") == "response.completed")
        return _from_json(api, final["response"])
    text, blocks = "", {}
    for _, payload in events:
        if payload.get("type") == "content_block_start":
            block = payload["content_block"]
            if block["type"] == "tool_use":
                blocks[payload["index"]] = [block["name"], ""]
        elif payload.get("type") == "content_block_delta":
            delta = payload["delta"]
            if delta["type"] == "text_delta":
                text += delta["text"]
            elif delta["type"] == "input_json_delta":
                blocks[payload["index"]][1] += delta["partial_json"]
    return Turn(text, [(n, json.loads(a or "{}")) for n, a in blocks.values()])


def _from_json(api: str, body: dict[str, Any]) -> Turn:
    if api == "openai_chat":
        message = body["choices"][0]["message"]
        calls = [
            (c["function"]["name"], json.loads(c["function"]["arguments"] or "{}"))
            for c in message.get("tool_calls") or []
        ]
        return Turn(message.get("content") or "", calls)
    if api == "openai_responses":
        text, calls = "", []
        for item in body["output"]:
            if item["type"] == "message":
                text += "".join(c.get("text", "") for c in item["content"])
            elif item["type"] == "function_call":
                calls.append((item["name"], json.loads(item["arguments"] or "{}")))
        return Turn(text, calls)
    text = "".join(b["text"] for b in body["content"] if b["type"] == "text")
    calls = [(b["name"], b["input"]) for b in body["content"] if b["type"] == "tool_use"]
    return Turn(text, calls)


def interactions(folder: Path, recording: Recording) -> list[dict[str, Any]]:
    return copy.deepcopy(_load(folder / recording.name))


@functools.cache
def _load(path: Path) -> list[dict[str, Any]]:
    return load_interactions(path)


def request_json(interaction: dict[str, Any]) -> dict[str, Any]:
    body = interaction["request"]["body"]
    return json.loads(body if isinstance(body, str) else body.decode("utf-8"))


def tool_schemas(interaction: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(name, description, parameters)`` of the tools a recorded request offered."""
    out = []
    for tool in request_json(interaction).get("tools") or []:
        if "function" in tool:  # chat completions
            fn = tool["function"]
            out.append((fn["name"], fn.get("description", ""), fn.get("parameters") or {}))
        elif "input_schema" in tool:  # anthropic
            out.append((tool["name"], tool.get("description", ""), tool["input_schema"]))
        else:  # responses
            out.append((tool["name"], tool.get("description", ""), tool.get("parameters") or {}))
    return out


def first_prompt(interaction: dict[str, Any]) -> str:
    """The text of the first user message of a recorded request (not used for matching)."""
    req = request_json(interaction)
    items = req.get("messages") or req.get("input") or []
    if isinstance(items, str):
        return items
    for item in items:
        if isinstance(item, dict) and item.get("role") == "user":
            content = item.get("content")
            if isinstance(content, str):
                return content
            for part in content or []:
                if part.get("text"):
                    return str(part["text"])
    return "hello"


def replay_shared(path: Path, **options: Any) -> Any:
    """``use_cassette`` for a shared real recording, with body matching **explicitly relaxed**:
    other clients (their own prompts, options and SDK defaults) made those requests, so their
    bodies are not the ones our adapters send.  What these tests check is how the recorded
    responses play back through the SDKs and adapters, not what was asked."""
    from openprogram_testing.cassettes import use_cassette

    return use_cassette(path, **{"match_body": False, **options})
