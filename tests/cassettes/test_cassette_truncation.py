"""A truncation sweep over the shared Gemini SSE and Bedrock event-stream recordings, through
the cassette layer: interaction j of each file is cut after k frames for every j and every k up
to its terminal frame.  Through the official SDKs every cut is served, read without a hang or a
stray exception, and visibly incomplete (no ``finishReason`` / ``messageStop`` /
``message_stop``); through the adapters (Gemini Developer API, Bedrock Converse, Claude on
Bedrock via the anthropic SDK's client; the Vertex recording needs Google credentials to build an
adapter, so it is swept through httpx2 only) and the full loop every cut ends the run in one
clean ``error``.  (The OpenAI and Anthropic recordings are swept the same
way in ``test_cassette_conformance.py``.)"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx2
import pytest

from openprogram_testing.cassettes import load_interactions
from openprogram_testing.transport.faults import TruncateAfter
from openprogram_testing.transport.wire import FORMATS, eventstream
from openprogram_testing.transport.wire.sse import split_frames
from tests.cassettes._cassette_catalog import WITHOUT_ADAPTER, replay_shared


def _body(interaction: dict[str, Any]) -> str | bytes:
    body: str | bytes = interaction["response"]["body"]["string"]
    return body


def _streamed(name: str, folder: Path) -> list[int]:
    """Indices of the interactions of ``name`` that are 200 streams."""
    out = []
    for index, item in enumerate(load_interactions(folder / name)):
        body = _body(item)
        kind = " ".join(item["response"]["headers"].get("Content-Type", [])) + " ".join(
            item["response"]["headers"].get("content-type", [])
        )
        if item["response"]["status"]["code"] != 200:
            continue
        if isinstance(body, bytes) and eventstream.is_eventstream(body):
            out.append(index)
        elif isinstance(body, str) and "event-stream" in kind and body.startswith("data:"):
            out.append(index)
    return out


GEMINI = sorted(n for n, api in WITHOUT_ADAPTER.items() if api == "gemini")
BEDROCK = sorted(n for n, api in WITHOUT_ADAPTER.items() if api.startswith("bedrock"))
# Every shared Gemini and Bedrock file with a 200 stream in it (the test below checks the list).
SWEPT = (
    "chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml",
    "chatlas/test_provider_google/test_tools_parallel.yaml",
    "dd-trace-py/bedrock/bedrock_converse_stream.yaml",
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml",
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml",
    "opentelemetry-python-contrib/google_genai/test_streaming[logcontent-gemini-2.5-flash-vertexaiapi-sync-default].yaml",
    "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml",
)


def _frames(body: str | bytes) -> list[Any]:
    if isinstance(body, bytes):
        return eventstream.split_messages(body)
    return split_frames(body)


def _terminal_index(api: str, frames: list[Any]) -> int:
    wire = FORMATS["gemini" if api == "gemini" else api if api != "bedrock_converse" else "bedrock"]
    for index, frame in enumerate(frames):
        if isinstance(frame, bytes):
            if wire.is_terminal_message(eventstream.decode_message(frame)):  # type: ignore[attr-defined]
                return index
        elif wire.is_terminal(frame):
            return index
    raise AssertionError("no terminal frame")


# ---- reading a served stream through the SDK the recording was made with


def _gemini_reader(uri: str) -> Callable[[], list[dict[str, Any]]]:
    """The chunks google-genai yields (Developer API), or the SSE payloads httpx2 reads (Vertex
    needs Google credentials to build a client)."""
    model = re.search(r"/models/([^/:]+):", uri)
    assert model
    if "aiplatform" in uri:

        def raw() -> list[dict[str, Any]]:
            with httpx2.Client() as client, client.stream("POST", uri, json={}) as reply:
                text = "".join(reply.iter_text())
            return [json.loads(f.split(":", 1)[1]) for f in split_frames(text) if f.strip()]

        return raw
    from google import genai
    from google.genai import types

    client = genai.Client(
        api_key="dummy-key-123456", http_options=types.HttpOptions(api_version="v1beta")
    )

    def sdk() -> list[dict[str, Any]]:
        chunks = client.models.generate_content_stream(model=model.group(1), contents="x")
        return [c.model_dump(mode="json", exclude_none=True, by_alias=True) for c in chunks]

    return sdk


def _bedrock_reader(interaction: dict[str, Any]) -> Callable[[], list[dict[str, Any]]]:
    import boto3

    uri = interaction["request"]["uri"]
    found = re.search(
        r"https://bedrock-runtime\.([^.]+)\.amazonaws\.com/model/([^/]+)/([a-z-]+)", uri
    )
    assert found
    region, model, operation = found.groups()
    from urllib.parse import unquote

    client = boto3.client(
        "bedrock-runtime",
        region_name=region,
        aws_access_key_id="AKIAEXAMPLEKEY000000",
        aws_secret_access_key="example-secret-key-value",
    )
    body = interaction["request"]["body"]
    if operation == "invoke-with-response-stream":

        def invoke() -> list[dict[str, Any]]:
            reply = client.invoke_model_with_response_stream(modelId=unquote(model), body=body)
            return [json.loads(e["chunk"]["bytes"]) for e in reply["body"]]

        return invoke
    request = json.loads(body)

    def converse() -> list[dict[str, Any]]:
        return list(client.converse_stream(modelId=unquote(model), **request)["stream"])

    return converse


def _finished(api: str, items: list[dict[str, Any]]) -> bool:
    if api == "gemini":
        return any(c.get("finishReason") for item in items for c in item.get("candidates") or [])
    if api == "bedrock_invoke":
        return any(item.get("type") == "message_stop" for item in items)
    return any("messageStop" in item for item in items)


@pytest.mark.parametrize("name", SWEPT)
def test_every_cut_of_every_shared_stream_is_served_and_visibly_incomplete(
    conformance_cassettes: Path, name: str
) -> None:
    api = WITHOUT_ADAPTER[name]
    recorded = load_interactions(conformance_cassettes / name)
    streamed = _streamed(name, conformance_cassettes)
    readers = [
        _gemini_reader(i["request"]["uri"]) if api == "gemini" else _bedrock_reader(i)
        for i in recorded
    ]
    checked = 0
    with replay_shared(conformance_cassettes / name, allow_unplayed=True) as cassette:
        full = [readers[j]() for j in range(len(recorded))]
        for j in streamed:
            assert _finished(api, full[j]), f"{name} #{j} is complete as recorded"
            frames = _frames(_body(recorded[j]))
            terminal = _terminal_index(api, frames)
            for k in range(terminal + 1):
                cassette.rewind(mutations={j: [TruncateAfter(k)]})
                for earlier in range(j):
                    readers[earlier]()
                items = readers[j]()
                where = f"{name} #{j} cut after {k} of {len(frames)} frames"
                assert cassette.played == list(range(j + 1)), where
                assert not _finished(api, items), where
                assert items == full[j][: len(items)], where  # a prefix of the real stream
                checked += 1
    assert checked == sum(_terminal_index(api, _frames(_body(recorded[j]))) + 1 for j in streamed)


def test_the_sweep_covers_every_shared_gemini_and_bedrock_stream(
    conformance_cassettes: Path,
) -> None:
    swept = {n for n in [*GEMINI, *BEDROCK] if _streamed(n, conformance_cassettes)}
    assert swept == set(SWEPT)


def test_frame_faults_on_both_framings_reach_the_sdks(conformance_cassettes: Path) -> None:
    """Corrupting an event-stream message's CRC makes botocore raise while reading (a corrupt
    payload arrives as an empty event);
    dropping the terminal frames leaves a stream without ``messageStop``/``finishReason``;
    corrupting a Gemini SSE frame makes google-genai raise: replayed from the recordings."""
    from openprogram_testing.transport.faults import CrcMismatch, DropTerminal, MalformedFrame

    name = "dd-trace-py/bedrock/bedrock_converse_stream.yaml"
    (recorded,) = load_interactions(conformance_cassettes / name)
    read = _bedrock_reader(recorded)
    with replay_shared(conformance_cassettes / name) as cassette:
        full = read()
        cassette.rewind(mutations=[CrcMismatch(3)])
        with pytest.raises(Exception, match="Checksum mismatch") as raised:
            read()
        assert type(raised.value).__name__ == "ChecksumMismatch"
        # botocore swallows a payload that is not JSON: the event arrives empty, which is what
        # an adapter has to treat as a malformed stream
        cassette.rewind(mutations=[MalformedFrame(3)])
        events = read()
        assert events[3] == {next(iter(full[3])): {}} != full[3]
        assert events[:3] + events[4:] == full[:3] + full[4:]
        cassette.rewind(mutations=[DropTerminal()])
        events = read()
        assert events and not _finished("bedrock_converse", events)
        assert not any("metadata" in e for e in events)

    name = "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml"
    recorded_gemini = load_interactions(conformance_cassettes / name)
    read = _gemini_reader(recorded_gemini[1]["request"]["uri"])
    with replay_shared(conformance_cassettes / name, allow_unplayed=True) as cassette:
        cassette.rewind(mutations={0: [DropTerminal()]})
        assert not _finished("gemini", read())
        cassette.rewind(mutations={0: [MalformedFrame(0)]})
        with pytest.raises(Exception) as failed:
            read()
        assert (
            "json" in type(failed.value).__name__.lower()
            or "JSON" in str(failed.value)
            or ("Expecting" in str(failed.value))
        )


def test_stalls_and_dropped_connections_reach_botocore(conformance_cassettes: Path) -> None:
    """On urllib3 clients too, a stall delays the rest of the stream and a dropped connection
    raises while reading (not a clean end of the body)."""
    import time

    from openprogram_testing.transport.faults import Stall

    name = "dd-trace-py/bedrock/bedrock_converse_stream.yaml"
    (recorded,) = load_interactions(conformance_cassettes / name)
    read = _bedrock_reader(recorded)
    with replay_shared(conformance_cassettes / name) as cassette:
        full = read()
        cassette.rewind(mutations=[Stall(0.4, after_frame=2)])
        started = time.monotonic()
        assert read() == full
        assert time.monotonic() - started >= 0.4
        cassette.rewind(mutations=[TruncateAfter(5, disconnect=True)])
        with pytest.raises(Exception, match="Connection broken") as raised:
            read()
        assert type(raised.value).__name__ == "ProtocolError"


# ---- through the adapters and the full loop (the adapters exist for these two APIs)

ADAPTER_SWEPT = tuple(
    n
    for n in SWEPT
    if WITHOUT_ADAPTER[n] in ("gemini", "bedrock_converse", "bedrock_invoke")
    and "vertexai" not in n
)


def _adapter(api: str, uri: str) -> Any:
    if api == "gemini":
        from google.genai import types

        from openprogram.providers.gemini import GeminiProvider

        options = types.HttpOptions(api_version="v1beta")
        return GeminiProvider(api_key="dummy-key-123456", http_options=options)
    found = re.search(r"bedrock-runtime\.([^.]+)\.", uri)
    assert found
    if api == "bedrock_invoke":  # Claude on Bedrock through the anthropic SDK's own client
        from anthropic import AsyncAnthropicBedrock

        from openprogram.providers.anthropic import AnthropicProvider

        client = AsyncAnthropicBedrock(
            aws_region=found.group(1),
            aws_access_key="AKIAEXAMPLEKEY000000",
            aws_secret_key="example-secret-key-value",
            max_retries=0,
        )
        return AnthropicProvider(client)
    from openprogram.providers.bedrock import BedrockProvider

    return BedrockProvider(
        region_name=found.group(1),
        aws_access_key_id="AKIAEXAMPLEKEY000000",
        aws_secret_access_key="example-secret-key-value",
    )


def _model(api: str, uri: str) -> str:
    from urllib.parse import unquote

    pattern = r"/models/([^/:]+):" if api == "gemini" else r"/model/([^/]+)/"
    found = re.search(pattern, uri)
    assert found
    return unquote(found.group(1))


@pytest.mark.parametrize("name", ADAPTER_SWEPT)
async def test_every_cut_ends_the_loop_in_one_clean_error_through_the_adapter(
    conformance_cassettes: Path, name: str
) -> None:
    """The loop offers no tools, so recorded tool calls get "unknown tool" results and the loop
    goes on to the next recorded interaction: interaction j cut after k frames ends the run in
    ``error`` at model call j + 1, for every j and every k before the terminal frame."""
    import asyncio

    from openprogram_testing.core.trace import run_loop

    api = WITHOUT_ADAPTER[name]
    recorded = load_interactions(conformance_cassettes / name)
    uri = recorded[0]["request"]["uri"]
    provider, model = _adapter(api, uri), _model(api, uri)
    limit = len(recorded)
    with replay_shared(conformance_cassettes / name, allow_unplayed=True) as cassette:
        starts: list[int] = []  # the first interaction of each loop run the file holds
        while len(cassette.played) < len(recorded):
            starts.append(len(cassette.played))
            full = await run_loop(provider, "hi", model=model, max_iterations=limit)
            assert full.termination in ("completed", "max_iterations"), full.error
            assert len(cassette.played) > starts[-1], "a run that plays nothing"
        assert cassette.played == list(range(len(recorded)))  # every interaction reached
        checked = 0
        for j in _streamed(name, conformance_cassettes):
            run = max(s for s in starts if s <= j)
            frames = _frames(_body(recorded[j]))
            for k in range(_terminal_index(api, frames) + 1):
                cassette.rewind(mutations={j: [TruncateAfter(k)]})
                for _ in [s for s in starts if s < run]:  # earlier runs, uncut
                    await run_loop(provider, "hi", model=model, max_iterations=limit)
                trace = await asyncio.wait_for(
                    run_loop(provider, "hi", model=model, max_iterations=limit), 30
                )
                where = f"{name} #{j} cut after {k} of {len(frames)} frames"
                assert trace.termination == "error", where
                assert trace.model_calls == j - run + 1, where
                assert trace.assistant_messages[-1].stop_reason == "error", where
                assert trace.assistant_messages[-1].error_message, where
                checked += 1
    assert checked == sum(
        _terminal_index(api, _frames(_body(recorded[j]))) + 1
        for j in _streamed(name, conformance_cassettes)
    )
