"""Playback semantics: in-order serving of identical requests (429 → 529 → 200), matching and
its error messages, unplayed interactions, loading quirks of real-world files, and fault
mutations applied at playback through the real adapters and the full loop."""

from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Any

import openai
import pytest
import yaml

from openprogram.providers import guard
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.cassettes import (
    CassetteError,
    CassetteMismatch,
    CassetteSession,
    first_json_difference,
    use_cassette,
)
from openprogram_testing.core.trace import run_loop
from openprogram_testing.transport.faults import (
    DropTerminal,
    GarbleToolArguments,
    HttpError,
    InjectError,
    MalformedFrame,
    Rechunk,
    Stall,
    TruncateAfter,
)
from tests.providers._adapters_http import anthropic_end, anthropic_start, anthropic_text, sse
from tests.providers._helper import ADD_TEXT

CHAT_URI = "https://api.openai.com/v1/chat/completions"


def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
    payload = {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1,
        "model": "gpt-x",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    return "data: " + json.dumps(payload, separators=(",", ":")) + "\n\n"


def chat_stream(text: str) -> str:
    return (
        chunk({"role": "assistant", "content": text[:3]})
        + chunk({"content": text[3:]})
        + chunk({}, "stop")
        + "data: [DONE]\n\n"
    )


def tool_stream(args: str) -> str:
    first = {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"name": "add", "arguments": ""},
    }
    return (
        chunk({"role": "assistant", "tool_calls": [first]})
        + chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[:4]}}]})
        + chunk({"tool_calls": [{"index": 0, "function": {"arguments": args[4:]}}]})
        + chunk({}, "tool_calls")
        + "data: [DONE]\n\n"
    )


def interaction(
    body: str | bytes,
    *,
    status: int = 200,
    message: str = "OK",
    headers: dict[str, Any] | None = None,
    uri: str = CHAT_URI,
    request: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "request": {
            "body": json.dumps(request or {"model": "gpt-x", "stream": True}),
            "headers": {"content-type": ["application/json"]},
            "method": "POST",
            "uri": uri,
        },
        "response": {
            "status": {"code": status, "message": message},
            "headers": headers or {"content-type": ["text/event-stream"]},
            "body": {"string": body},
        },
    }


def replay(path: Path, **options: Any) -> CassetteSession:
    """``use_cassette`` with body matching off: the recordings here are written by hand with a
    placeholder request body (these tests are about playback; body matching has its own)."""
    return use_cassette(path, **{"match_body": False, **options})


def write(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"version": 1, "interactions": list(interactions)}))
    return path


def chat(max_retries: int = 0) -> OpenAIChatProvider:
    return OpenAIChatProvider(api_key="dummy-key", max_retries=max_retries)


ERROR_JSON = '{"error": {"message": "slow down", "type": "requests", "code": null}}'


@pytest.fixture
def retried(tmp_path: Path) -> Path:
    """Three identical requests answered 429 → 529 → 200, as a retrying client saw them."""
    json_headers = {"content-type": ["application/json"], "retry-after-ms": ["1"]}
    return write(
        tmp_path / "retried.yaml",
        interaction(ERROR_JSON, status=429, message="Too Many Requests", headers=json_headers),
        interaction(ERROR_JSON, status=529, message="", headers=json_headers),
        interaction(chat_stream("Hello there")),
    )


async def test_identical_requests_get_the_recorded_sequence_in_order(retried: Path) -> None:
    with replay(retried) as cassette:
        first = await run_loop(chat(), "hi")
        second = await run_loop(chat(), "hi")
        third = await run_loop(chat(), "hi")
    assert [first.termination, second.termination, third.termination] == [
        "error",
        "error",
        "completed",
    ]
    assert first.assistant_messages[-1].error_status == 429
    assert first.assistant_messages[-1].error_retryable is True
    assert second.assistant_messages[-1].error_status == 529  # empty status message loads
    assert third.final_text == "Hello there"
    assert cassette.played == [0, 1, 2]


async def test_a_retrying_sdk_walks_through_the_sequence_in_one_call(retried: Path) -> None:
    with replay(retried) as cassette:
        trace = await run_loop(chat(max_retries=2), "hi")
    assert trace.termination == "completed" and trace.final_text == "Hello there"
    assert cassette.played == [0, 1, 2]


async def test_playback_lets_real_adapters_through_the_guard(retried: Path) -> None:
    with guard.allow_model_requests(False):
        with pytest.raises(guard.ModelRequestsBlocked):
            await run_loop(chat(), "hi")
        with replay(retried, allow_unplayed=True):
            assert (await run_loop(chat(), "hi")).assistant_messages[-1].error_status == 429


# ---------------------------------------------------------------------------------------------
# matching and its messages


async def test_a_request_for_an_unrecorded_route_fails_fast_with_the_recorded_list(
    retried: Path,
) -> None:
    client = openai.AsyncOpenAI(api_key="dummy-key", max_retries=0)
    with pytest.raises(CassetteError) as caught:
        with replay(retried, allow_unplayed=True):
            # raised in the transport; the SDK lets it through (it is not a network error)
            with pytest.raises(CassetteMismatch) as raised:
                await client.embeddings.create(model="e", input="x")
        # caught above, yet the cassette raises it again when it closes
    assert str(caught.value).endswith(str(raised.value))
    message = str(caught.value)
    assert (
        f"cassette {retried} (record_mode='none') has no unplayed interaction for POST "
        "https://api.openai.com/v1/embeddings" in message
    )
    assert "nothing in it has this method + host + path" in message
    assert f"#0 POST {CHAT_URI} -> 429" in message and f"#2 POST {CHAT_URI} -> 200" in message
    assert "No request reaches the network while replaying." in message


async def test_more_requests_than_recorded_names_the_played_interactions(retried: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        with replay(retried):
            for _ in range(4):
                trace = await run_loop(chat(), "hi")
            assert trace.termination == "error"  # the 4th call: the adapter saw the failure
            assert "all 3 recorded interaction(s)" in (trace.error or "")
    assert "all 3 recorded interaction(s) for this route were already played (#0, #1, #2)" in str(
        caught.value
    )


async def test_a_body_mismatch_names_the_interaction_and_the_json_path(tmp_path: Path) -> None:
    recorded_request = {
        "model": "gpt-x",
        "messages": [{"role": "user", "content": "What is 2 + 2?"}],
        "stream": True,
    }
    path = write(tmp_path / "body.yaml", interaction(chat_stream("4"), request=recorded_request))
    client = openai.AsyncOpenAI(api_key="dummy-key", max_retries=0)
    with pytest.raises(CassetteError) as caught:
        with use_cassette(path, allow_unplayed=True):
            with pytest.raises(CassetteMismatch):
                await client.chat.completions.create(
                    model="gpt-x",
                    messages=[{"role": "user", "content": "What is 3 + 3?"}],
                    stream=True,
                )
    assert (
        "the body differs from interaction 0 (the next unplayed one for this route) at "
        '$.messages[0].content: recorded "What is 2 + 2?", got "What is 3 + 3?"'
    ) in str(caught.value)
    # key order and whitespace do not matter: bodies are compared as parsed JSON
    with use_cassette(path) as cassette:
        stream = await client.chat.completions.create(
            stream=True, messages=[{"content": "What is 2 + 2?", "role": "user"}], model="gpt-x"
        )
        assert "".join([c.choices[0].delta.content or "" async for c in stream]) == "4"
    assert cassette.played == [0]


def test_first_json_difference_reports_paths_and_missing_sides() -> None:
    assert first_json_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 2}]}) is None
    assert first_json_difference({"a": [1, {"b": 2}]}, {"a": [1, {"b": 3}]}) == ("$.a[1].b", 2, 3)
    path, old, new = first_json_difference({"a": 1}, {"a": 1, "my key": True})  # type: ignore[misc]
    assert path == '$["my key"]' and new is True
    assert first_json_difference([1, 2], [1])[0] == "$"  # the list, whose length differs  # type: ignore[index]
    assert first_json_difference({"n": 1}, {"n": True}) == ("$.n", 1, True)
    assert first_json_difference({"n": 1}, {"n": 1.0}) is None


async def test_unplayed_interactions_fail_at_exit_unless_allowed(retried: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        with replay(retried):
            await run_loop(chat(), "hi")
    assert str(caught.value) == (
        f"cassette {retried}: 2 of 3 recorded interaction(s) were never played:\n"
        f"  #1 POST {CHAT_URI} -> 529\n"
        f"  #2 POST {CHAT_URI} -> 200\n"
        "The code made fewer requests than were recorded. Pass allow_unplayed=True (pytest: "
        "@pytest.mark.op_cassette(..., allow_unplayed=True)) if that is expected."
    )
    with replay(retried, allow_unplayed=True) as cassette:
        await run_loop(chat(), "hi")
    assert cassette.unplayed == [1, 2]


def test_bad_input_gets_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match=r"not found and record_mode='none' never records"):
        use_cassette(tmp_path / "missing").__enter__()
    (tmp_path / "bad.yaml").write_text("interactions: [\n")
    with pytest.raises(CassetteError, match="is not valid YAML"):
        with use_cassette(tmp_path / "bad.yaml"):
            pass
    (tmp_path / "odd.yaml").write_text("just: a mapping\n")
    with pytest.raises(
        CassetteError, match="not a known cassette shape: expected a vcrpy cassette"
    ):
        with use_cassette(tmp_path / "odd.yaml"):
            pass
    with pytest.raises(CassetteError, match="record_mode must be one of none, once"):
        use_cassette(tmp_path / "x.yaml", record_mode="sometimes")
    with pytest.raises(CassetteError, match="is not a fault mutation"):
        use_cassette(tmp_path / "x.yaml", mutations=["truncate"])  # type: ignore[list-item]


# ---------------------------------------------------------------------------------------------
# loading real-world shapes


async def test_gzip_sse_bodies_replay_and_take_mutations(tmp_path: Path) -> None:
    body = gzip.compress(chat_stream("Compressed hello").encode())
    headers = {"Content-Type": "text/event-stream", "Content-Encoding": "gzip"}  # scalar headers
    path = write(tmp_path / "gz.yaml", interaction(body, headers=headers))  # !!binary in YAML
    assert "!!binary" in path.read_text()
    with replay(path):
        assert (await run_loop(chat(), "hi")).final_text == "Compressed hello"
    with replay(path, mutations=[TruncateAfter(1)]):
        trace = await run_loop(chat(), "hi")
    assert trace.termination == "error"
    assert trace.assistant_messages[-1].error_message == "stream ended without a final event"


async def test_query_strings_in_recorded_uris_match_by_path(tmp_path: Path) -> None:
    path = write(
        tmp_path / "q.yaml", interaction(chat_stream("queried"), uri=CHAT_URI + "?beta=true")
    )
    with replay(path):
        assert (await run_loop(chat(), "hi")).final_text == "queried"


# ---------------------------------------------------------------------------------------------
# mutations through the real adapter and the full loop


@pytest.fixture
def tool_loop(tmp_path: Path) -> Path:
    return write(
        tmp_path / "tools.yaml",
        interaction(tool_stream('{"a": 2, "b": 3}')),
        interaction(chat_stream("The sum is 5.")),
    )


async def test_unmutated_tool_loop(tool_loop: Path) -> None:
    with replay(tool_loop):
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
    assert trace.final_text == "The sum is 5."
    assert [r.content[0].text for r in trace.tool_results] == ["5"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("mutation", "message"),
    [
        (TruncateAfter(2), "stream ended without a final event"),
        (TruncateAfter(4, disconnect=True), "connection error"),
        (MalformedFrame(1), "malformed stream frame"),
        (InjectError(2, "model overloaded, try later"), "model overloaded, try later"),
        (HttpError(500), "HTTP 500"),
    ],
)
async def test_faults_on_the_first_turn_end_the_loop_in_error_without_running_tools(
    tool_loop: Path, mutation: Any, message: str
) -> None:
    with replay(tool_loop, mutations={0: [mutation]}, allow_unplayed=True) as cassette:
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
    assert trace.termination == "error"
    assert message in (trace.error or "")
    assert trace.tool_results == []
    assert cassette.played == [0]


async def test_http_error_with_retry_after(tool_loop: Path) -> None:
    with replay(
        tool_loop, mutations={0: [HttpError(429, {"retry-after": "7"})]}, allow_unplayed=True
    ):
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
    failed = trace.assistant_messages[-1]
    assert (failed.error_status, failed.error_retryable, failed.error_retry_after_s) == (
        429,
        True,
        7.0,
    )


async def test_garbled_arguments_reach_the_tool_as_a_validation_error(tool_loop: Path) -> None:
    with replay(tool_loop, mutations={0: [GarbleToolArguments(0)]}):
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
    [result] = trace.tool_results
    assert result.is_error and "not valid JSON" in result.content[0].text  # type: ignore[union-attr]
    assert trace.termination == "completed"  # the model got the error and answered


async def test_drop_terminal_on_anthropic(tmp_path: Path) -> None:
    body = sse([anthropic_start(1), *anthropic_text(0, "Bonjour"), *anthropic_end(out=2)]).decode()
    path = write(
        tmp_path / "anthropic.yaml",
        interaction(body, uri="https://api.anthropic.com/v1/messages"),
    )
    provider = AnthropicProvider(api_key="dummy-key")
    with replay(path):
        assert (await run_loop(provider, "hi")).final_text == "Bonjour"
    with replay(path, mutations=[DropTerminal()]):
        trace = await run_loop(provider, "hi")
    assert trace.termination == "error"
    assert trace.assistant_messages[-1].error_message == "stream ended without a final event"


async def test_stall_delays_the_rest_of_the_stream(tool_loop: Path) -> None:
    with replay(tool_loop, mutations={1: [Stall(0.3, after_frame=1)]}):
        started = time.monotonic()
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
        elapsed = time.monotonic() - started
    assert trace.final_text == "The sum is 5."
    assert elapsed >= 0.3  # a lower bound only: the stall happened


async def test_rechunking_to_single_bytes_changes_nothing(tool_loop: Path) -> None:
    with replay(tool_loop, mutations=[Rechunk(sizes=[1])]):
        trace = await run_loop(chat(), "add", tools=[ADD_TEXT])
    assert trace.final_text == "The sum is 5."


async def test_a_mutation_that_does_not_fit_names_the_interaction(tool_loop: Path) -> None:
    with pytest.raises(CassetteError) as caught:
        with replay(tool_loop, mutations={1: [GarbleToolArguments(0)]}):
            await run_loop(chat(), "add", tools=[ADD_TEXT])
    assert (
        f"cassette {tool_loop}, interaction 1: GarbleToolArguments(i=0): the openai_chat "
        "stream has only 0 tool call(s)" in str(caught.value)
    )
