"""Every shared real-world recording replays through ``use_cassette``: through the official SDK
clients (giving the recorded content, for any chunking of the body) and through the full loop
on the real adapters (recorded tool calls executed, recorded final text, error recordings ending
in termination ``error`` with their status; truncation at every frame boundary is an error)."""

from __future__ import annotations

import asyncio
import functools
import json
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram.types import AssistantMessage, ToolCall
from openprogram_testing.core.trace import LoopTrace, run_loop
from openprogram_testing.transport.faults import Rechunk, TruncateAfter, split_frames
from tests.cassettes._cassette_catalog import (
    RECORDINGS,
    STREAMING,
    WITHOUT_ADAPTER,
    Recording,
    Turn,
    body_text,
    expected_turn,
    first_prompt,
    ids,
    interactions,
    replay_shared,
    request_json,
    tool_schemas,
)
from tests.conftest import conformance_dir


def _folder() -> Path | None:
    path = conformance_dir()
    return path if path.is_dir() else None


def test_the_catalog_covers_every_shared_recording(conformance_cassettes: Path) -> None:
    on_disk = {
        str(p.relative_to(conformance_cassettes)) for p in conformance_cassettes.rglob("*.yaml")
    }
    catalogued = {r.name for r in RECORDINGS}
    assert not catalogued & set(WITHOUT_ADAPTER)
    assert on_disk == catalogued | set(WITHOUT_ADAPTER)
    for recording in RECORDINGS:
        assert len(interactions(conformance_cassettes, recording)) == recording.count


# ---------------------------------------------------------------------------------------------
# through the official SDK clients


@functools.cache
def sdk_client(api: str) -> Any:
    """One SDK client per API for the whole module (dummy key, no retries): building a client
    loads the CA bundle, which costs more than a replayed call."""
    if api == "anthropic":
        return anthropic.AsyncAnthropic(api_key="dummy-key", max_retries=0)
    return openai.AsyncOpenAI(api_key="dummy-key", max_retries=0)


async def sdk_turn(api: str, stream: bool) -> Turn:
    """One SDK call assembled into text + tool calls."""
    client = sdk_client(api)
    if api == "anthropic":
        kwargs: dict[str, Any] = {
            "model": "claude-x",
            "max_tokens": 64,
            "messages": [{"role": "user", "content": "hi"}],
        }
        if not stream:
            message = await client.messages.create(**kwargs)
            text = "".join(b.text for b in message.content if b.type == "text")
            return Turn(text, [(b.name, b.input) for b in message.content if b.type == "tool_use"])
        text, blocks = "", {}
        async for event in await client.messages.create(**kwargs, stream=True):
            if event.type == "content_block_start" and event.content_block.type == "tool_use":
                blocks[event.index] = [event.content_block.name, ""]
            elif event.type == "content_block_delta":
                if event.delta.type == "text_delta":
                    text += event.delta.text
                elif event.delta.type == "input_json_delta":
                    blocks[event.index][1] += event.delta.partial_json
        return Turn(text, [(n, json.loads(a or "{}")) for n, a in blocks.values()])
    if api == "openai_chat":
        kwargs = {"model": "gpt-x", "messages": [{"role": "user", "content": "hi"}]}
        if not stream:
            message = (await client.chat.completions.create(**kwargs)).choices[0].message
            calls = [
                (c.function.name, json.loads(c.function.arguments or "{}"))
                for c in message.tool_calls or []
            ]
            return Turn(message.content or "", calls)
        text, calls = "", {}
        async for chunk in await client.chat.completions.create(**kwargs, stream=True):
            for choice in chunk.choices:
                text += choice.delta.content or ""
                for frag in choice.delta.tool_calls or []:
                    entry = calls.setdefault(frag.index, ["", ""])
                    if frag.function is not None:
                        entry[0] = entry[0] or frag.function.name or ""
                        entry[1] += frag.function.arguments or ""
        return Turn(text, [(n, json.loads(a or "{}")) for n, a in calls.values()])
    kwargs = {"model": "gpt-x", "input": "hi"}
    if not stream:
        response = await client.responses.create(**kwargs)
        calls = [
            (item.name, json.loads(item.arguments or "{}"))
            for item in response.output
            if item.type == "function_call"
        ]
        return Turn(response.output_text, calls)
    text, items = "", {}
    async for event in await client.responses.create(**kwargs, stream=True):
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.output_item.added" and event.item.type == "function_call":
            items[event.item.id] = [event.item.name, ""]
        elif event.type == "response.function_call_arguments.delta":
            items[event.item_id][1] += event.delta
    return Turn(text, [(n, json.loads(a or "{}")) for n, a in items.values()])


@pytest.mark.parametrize("recording", RECORDINGS, ids=ids(RECORDINGS))
async def test_every_recording_replays_through_the_official_sdk(
    conformance_cassettes: Path, recording: Recording
) -> None:
    recorded = interactions(conformance_cassettes, recording)
    with replay_shared(conformance_cassettes / recording.name) as cassette:
        for interaction in recorded:
            status = interaction["response"]["status"]["code"]
            if status >= 400:
                error_cls = (
                    anthropic.APIStatusError
                    if recording.api == "anthropic"
                    else openai.APIStatusError
                )
                with pytest.raises(error_cls) as caught:
                    await sdk_turn(recording.api, recording.stream)
                assert caught.value.status_code == status
                assert json.loads(body_text(interaction["response"])) == caught.value.body or (
                    json.loads(body_text(interaction["response"])).get("error") == caught.value.body
                )
            else:
                got = await sdk_turn(recording.api, recording.stream)
                assert got == expected_turn(recording.api, interaction["response"])
    assert cassette.played == list(range(len(recorded)))


_STREAMED_BODIES = [(r, i) for r in STREAMING for i in range(r.count)]


@pytest.mark.skipif(_folder() is None, reason="conformance recordings not found")
@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.sampled_from(_STREAMED_BODIES or [None]),
    sizes=st.lists(st.integers(min_value=1, max_value=48), min_size=1, max_size=6),
)
def test_any_chunking_of_a_recorded_stream_gives_the_same_messages(
    which: tuple[Recording, int], sizes: list[int]
) -> None:
    recording, index = which
    folder = _folder()
    assert folder is not None
    expected = expected_turn(recording.api, interactions(folder, recording)[index]["response"])

    async def replay() -> Turn:
        with replay_shared(
            folder / recording.name,
            mutations={index: [Rechunk(sizes=sizes)]},
            allow_unplayed=True,
        ):
            for _ in range(index):
                await sdk_turn(recording.api, True)
            return await sdk_turn(recording.api, True)

    assert asyncio.run(replay()) == expected


# ---------------------------------------------------------------------------------------------
# through the full loop on the real adapters

_ADAPTERS = {
    "openai_chat": OpenAIChatProvider,
    "openai_responses": OpenAIResponsesProvider,
    "anthropic": AnthropicProvider,
}


class StubTools:
    """Tools with the recorded names and schemas; every call is logged."""

    def __init__(self, interaction: dict[str, Any]) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.tools = [
            {
                "spec": {"name": name, "description": description, "parameters": parameters},
                "execute": self._executor(name),
            }
            for name, description, parameters in tool_schemas(interaction)
        ]

    def _executor(self, name: str) -> Any:
        def execute(arguments: dict[str, Any]) -> str:
            self.calls.append((name, dict(arguments)))
            return f"stub result of {name}"

        return execute


def _turn_of(message: AssistantMessage) -> Turn:
    calls = [(c.name, c.arguments) for c in message.content if isinstance(c, ToolCall)]
    return Turn(message.text, calls)


async def _run(
    recording: Recording, recorded: list[dict[str, Any]], first: int, **loop: Any
) -> tuple[LoopTrace, StubTools]:
    interaction = recorded[first]
    stubs = StubTools(interaction)
    provider = _ADAPTERS[recording.api](client=sdk_client(recording.api), stream=recording.stream)
    trace = await run_loop(
        provider,
        first_prompt(interaction),
        tools=stubs.tools,
        model=str(request_json(interaction).get("model", "m")),
        max_iterations=loop.pop("max_iterations", recording.max_iterations),
        **loop,
    )
    return trace, stubs


@pytest.mark.parametrize("recording", RECORDINGS, ids=ids(RECORDINGS))
async def test_the_full_loop_replays_every_recording(
    conformance_cassettes: Path, recording: Recording
) -> None:
    recorded = interactions(conformance_cassettes, recording)
    per_run = len(recorded) // recording.runs
    with replay_shared(conformance_cassettes / recording.name) as cassette:
        for run in range(recording.runs):
            first = run * per_run
            trace, stubs = await _run(recording, recorded, first)
            assert trace.termination == recording.termination, trace.error
            assert trace.model_calls == per_run
            if recording.status is not None:
                failed = trace.assistant_messages[-1]
                assert failed.stop_reason == "error"
                assert failed.error_status == recording.status
                assert stubs.calls == []
                continue
            expected = [
                expected_turn(recording.api, recorded[i]["response"])
                for i in range(first, first + per_run)
            ]
            assert [_turn_of(m) for m in trace.assistant_messages] == expected
            executed = [call for turn in expected for call in turn.calls]
            assert stubs.calls == executed
            assert [r.tool_name for r in trace.tool_results] == [name for name, _ in executed]
            if recording.termination == "completed":
                assert trace.final_text == expected[-1].text != ""
    assert cassette.played == list(range(len(recorded)))


def _finish_frame(recording: Recording, body: str) -> int:
    """Index of the frame after which the SDK-visible stream is complete: for OpenAI chat the
    chunk carrying ``finish_reason`` (the SDK swallows ``[DONE]``, so its absence is invisible),
    for the others the terminal event."""
    frames = split_frames(body)
    for index, frame in enumerate(frames):
        if recording.api == "openai_chat" and '"finish_reason":"' in frame.replace(" ", ""):
            return index
        if recording.api != "openai_chat" and (
            "event: response.completed" in frame or "event: message_stop" in frame
        ):
            return index
    raise AssertionError(f"no terminal frame in {recording.name}")


@pytest.mark.parametrize("recording", STREAMING, ids=ids(STREAMING))
async def test_truncation_at_every_frame_boundary_ends_the_loop_in_error(
    conformance_cassettes: Path, recording: Recording
) -> None:
    """Cut interaction j of the first run after k frames, for every j and every k: the loop ends
    with termination ``error`` and runs none of that turn's tool calls; no exception escapes and
    nothing hangs.  Up to the stream's final frame the body just ends (clean EOF); after it (the
    OpenAI chat usage chunk and ``[DONE]``, which the SDK swallows) the connection drops."""
    recorded = interactions(conformance_cassettes, recording)
    per_run = len(recorded) // recording.runs
    full = [expected_turn(recording.api, recorded[i]["response"]) for i in range(per_run)]
    checked = 0
    with replay_shared(conformance_cassettes / recording.name, allow_unplayed=True) as cassette:
        for j in range(per_run):
            body = body_text(recorded[j]["response"])
            frames = split_frames(body)
            last_complete = _finish_frame(recording, body)
            executed_before = [call for turn in full[:j] for call in turn.calls]
            for k in range(len(frames)):
                cut = TruncateAfter(k, disconnect=k > last_complete)
                cassette.rewind(mutations={j: [cut]})
                trace, stubs = await asyncio.wait_for(_run(recording, recorded, 0), 10)
                where = f"interaction {j}: {cut}"
                assert trace.termination == "error", where
                assert trace.model_calls == j + 1, where
                assert trace.assistant_messages[-1].stop_reason == "error", where
                assert trace.assistant_messages[-1].error_message, where
                assert stubs.calls == executed_before, where
                assert cassette.played == list(range(j + 1)), where
                checked += 1
    assert checked == sum(
        len(split_frames(body_text(recorded[j]["response"]))) for j in range(per_run)
    )


@pytest.mark.parametrize("recording", STREAMING, ids=ids(STREAMING))
async def test_the_loop_gives_identical_messages_for_any_chunking(
    conformance_cassettes: Path, recording: Recording
) -> None:
    """The adapters' SSE handling (through the SDKs) is chunking-invariant: single bytes, odd
    sizes and random pieces all give the messages of the unchunked replay."""
    recorded = interactions(conformance_cassettes, recording)
    per_run = len(recorded) // recording.runs
    with replay_shared(conformance_cassettes / recording.name, allow_unplayed=True) as cassette:
        plain, _ = await _run(recording, recorded, 0)
        for chunking in (Rechunk(sizes=[1]), Rechunk(sizes=[7, 2, 13]), Rechunk(seed=11)):
            cassette.rewind(mutations=[chunking])
            chunked, _ = await _run(recording, recorded, 0)
            assert chunked.messages == plain.messages, chunking
            assert cassette.played == list(range(per_run))
