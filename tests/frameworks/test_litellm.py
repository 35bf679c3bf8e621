"""litellm (a client, not a loop: the loop here is the few lines a user writes around
``acompletion``) against the emulator and a cassette, on every API it speaks that the emulator
serves: OpenAI Chat, Gemini (in snake_case), Anthropic, Bedrock Converse and Anthropic through
Bedrock's InvokeModel.  A tool round with usage (JSON and streamed), parallel calls, a 429
retried, a cut stream, a malformed call, garbled streamed arguments, and recorded runs replayed
with redaction, body matching and a fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import (
    Fault,
    ProviderEmulator,
    assert_retries,
    call,
    turn,
    use_cassette,
)
from openprogram_testing.transport.faults import GarbleToolArguments, HttpError
from tests.frameworks._frameworks import BROKEN, SECRET, need, results, roles, tool_round

litellm = need("litellm")

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
    }
]
APIS = ["openai_chat", "gemini", "anthropic", "bedrock", "bedrock_invoke"]
MODELS = {
    "openai_chat": "openai/m",
    "gemini": "gemini/gemini-2.5-flash",
    "anthropic": "anthropic/claude-sonnet-4-5",
    "bedrock": "bedrock/converse/amazon.nova-micro-v1:0",
    "bedrock_invoke": "bedrock/invoke/anthropic.claude-3-haiku-20240307-v1:0",
}
WIRE = {**{api: api for api in APIS}, "bedrock_invoke": "anthropic"}
AWS = {"aws_access_key_id": "t", "aws_secret_access_key": "t", "aws_region_name": "us-east-1"}


def _where(emu: ProviderEmulator, api: str, api_key: str = "test") -> dict[str, Any]:
    """litellm's options that point ``api`` at the emulator."""
    if api.startswith("bedrock"):
        return {"aws_bedrock_runtime_endpoint": emu.base_url, **AWS}
    base = {"openai_chat": emu.openai_base_url, "anthropic": emu.anthropic_base_url}
    return {"api_base": base.get(api, emu.base_url), "api_key": api_key}


async def _loop(
    where: dict[str, Any], api: str, prompt: str, *, stream: bool = False, **kw: Any
) -> tuple[str, list[tuple[int, int]], list[Any]]:
    """The user's loop: ask, run the tools asked for, send their results, until text.
    ``where``: the options that point litellm at the emulator (:func:`_where`)."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    ran: list[tuple[int, int]] = []
    usages: list[Any] = []
    options = {"model": MODELS[api], "tools": TOOLS, **where}
    if stream:  # usage arrives in a stream only when asked for
        options |= {"stream": True, "stream_options": {"include_usage": True}}
    for _ in range(4):
        response = await litellm.acompletion(messages=messages, **options, **kw)
        if stream:
            chunks = [c async for c in response]
            response = litellm.stream_chunk_builder(chunks, messages=messages)
        usages.append(response.usage)
        message = response.choices[0].message
        if not message.tool_calls:
            return message.content, ran, usages
        messages.append(message.model_dump())
        for tc in message.tool_calls:
            try:
                args = json.loads(tc.function.arguments)
                ran.append((args["a"], args["b"]))
                content = str(args["a"] + args["b"])
            except (ValueError, KeyError) as exc:
                content = f"invalid arguments: {exc}"
            messages.append({"role": "tool", "tool_call_id": tc.id, "content": content})
    raise AssertionError("the loop did not end")


def _values(texts: list[str]) -> list[str]:
    """Tool results as sent: the text on OpenAI, ``{"content": text}`` in Gemini's
    ``function_response.response`` (litellm's wrapping)."""
    out = []
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            value = text
        out.append(str(value["content"]) if isinstance(value, dict) else str(value))
    return out


@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_tool_round_with_usage(provider_emulator, api, stream):
    provider_emulator.add(*tool_round())
    text, ran, usages = await _loop(_where(provider_emulator, api), api, "add 2+3", stream=stream)
    assert text == "The sum is 5." and ran == [(2, 3)]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usages] == [(10, 5), (20, 3)]
    # Gemini bodies come in snake_case from litellm: the tool result is parsed all the same
    assert roles(provider_emulator) == [["user"], ["user", "assistant", "toolResult"]]
    assert _values(results(provider_emulator, 1)) == ["5"]
    assert [t.name for t in provider_emulator.requests[0].model_request.tools] == ["add"]
    assert [(r.api, r.stream) for r in provider_emulator.requests] == [(WIRE[api], stream)] * 2
    if api == "bedrock_invoke" and not stream:  # InvokeModel's JSON answer: usage headers too
        assert provider_emulator.requests[0].path.endswith("/invoke")
        headers = provider_emulator.requests[0].response_headers
        assert headers["x-amzn-bedrock-input-token-count"] == "10"
        assert headers["x-amzn-bedrock-output-token-count"] == "5"


@pytest.mark.parametrize("api", APIS)
async def test_parallel_calls(provider_emulator, api):
    provider_emulator.add(*tool_round(parallel=True))
    text, ran, _ = await _loop(_where(provider_emulator, api), api, "add 2+3 and 4+5")
    assert text == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert _values(results(provider_emulator, 1)) == ["5", "9"]


@pytest.mark.parametrize("api", APIS)
async def test_429_is_retried(provider_emulator, api):
    """On OpenAI Chat the OpenAI client retries (``max_retries``) and waits the retry-after;
    elsewhere litellm's own ``num_retries`` retries without reading it."""
    provider_emulator.add(Fault.http_error(429, headers={"retry-after": "0.2"}), *tool_round())
    retry = {"max_retries": 1} if api == "openai_chat" else {"num_retries": 1}
    text, _, _ = await _loop(_where(provider_emulator, api), api, "add", **retry)
    assert text == "The sum is 5."
    openai_client = api == "openai_chat"
    timing = assert_retries(
        provider_emulator.requests[:2],
        attempts=2,
        min_gap_s=0.2 if openai_client else None,
        honours_retry_after=openai_client,
    )
    assert timing.statuses == (429, 200)


@pytest.mark.parametrize("api", APIS)
async def test_cut_stream_fails_and_runs_no_tool(provider_emulator, api):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.truncate_after(3, disconnect=True)],
    )
    with pytest.raises(Exception) as err:
        await _loop(_where(provider_emulator, api), api, "add 2+3", stream=True)
    assert not isinstance(err.value, AssertionError), err.value
    assert len(provider_emulator.requests) == 1 and provider_emulator.requests[0].stream


ANTHROPIC_STREAMS = ("anthropic", "bedrock_invoke")
"""Streams where litellm hands the loop the broken text and then refuses to send it back to
Anthropic's Messages API: the loop's next ``acompletion`` raises before any request."""


@pytest.mark.parametrize("api", [a for a in APIS if a != "gemini"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_malformed_call_goes_back_and_runs_no_tool(provider_emulator, api, stream):
    """The broken text (OpenAI; Anthropic and Converse streams) or the salvaged ``{"a": 2}``
    (Anthropic and Converse JSON bodies) reaches the loop, which answers the model with an
    error instead of running the tool; on Anthropic streams litellm refuses to send the broken
    arguments back (the request never leaves)."""
    provider_emulator.add(turn(call("add", raw=BROKEN)))
    where = _where(provider_emulator, api)
    if stream and api in ANTHROPIC_STREAMS:
        with pytest.raises(litellm.exceptions.BadRequestError, match="Failed to parse tool"):
            await _loop(where, api, "add", stream=stream)
        assert len(provider_emulator.requests) == 1
        return
    provider_emulator.add("recovered")
    text, ran, _ = await _loop(where, api, "add", stream=stream)
    assert text == "recovered" and ran == []
    assert _values(results(provider_emulator, 1))[0].startswith("invalid arguments")


async def test_malformed_call_gemini_is_malformed_function_call(provider_emulator):
    """Gemini's own signal: no call at all, ``finishReason: MALFORMED_FUNCTION_CALL``."""
    provider_emulator.add(turn(call("add", raw=BROKEN)))
    response = await litellm.acompletion(
        model=MODELS["gemini"],
        messages=[{"role": "user", "content": "add"}],
        tools=TOOLS,
        **_where(provider_emulator, "gemini"),
    )
    choice = response.choices[0]
    assert not choice.message.tool_calls and choice.finish_reason != "tool_calls"


@pytest.mark.parametrize("api", [a for a in APIS if a != "gemini"])
async def test_garbled_streamed_arguments_go_back_and_run_no_tool(provider_emulator, api):
    """``GarbleToolArguments(0)`` on every stream whose arguments arrive as text, Bedrock's
    ``invoke-with-response-stream`` included."""
    provider_emulator.add(
        turn(call("add", {"a": 2, "b": 3}), chunk_size=3), faults=[GarbleToolArguments(0)]
    )
    where = _where(provider_emulator, api)
    if api in ANTHROPIC_STREAMS:
        with pytest.raises(litellm.exceptions.BadRequestError, match="<garbled>"):
            await _loop(where, api, "add", stream=True)
        assert len(provider_emulator.requests) == 1
    else:
        provider_emulator.add("recovered")
        text, ran, _ = await _loop(where, api, "add", stream=True)
        assert text == "recovered" and ran == []
        assert _values(results(provider_emulator, 1))[0].startswith("invalid arguments")
    if api == "bedrock_invoke":
        assert provider_emulator.requests[0].path.endswith("/invoke-with-response-stream")


async def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "litellm_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        where = _where(emu, "openai_chat")
        with use_cassette(path, record_mode="once"):
            text, _, _ = await _loop({**where, "api_key": SECRET}, "openai_chat", "add 2+3")
    assert text == "The sum is 5." and SECRET not in path.read_text()
    with use_cassette(path):  # the emulator is gone: only the cassette can answer
        text, ran, _ = await _loop(where, "openai_chat", "add 2+3")
    assert text == "The sum is 5." and ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        with pytest.raises(litellm.exceptions.InternalServerError):
            await _loop(where, "openai_chat", "add 2+3", max_retries=0)


async def test_gemini_snake_case_requests_match_a_cassette_by_body(tmp_path: Path):
    """litellm's Gemini bodies are snake_case (``function_declarations``, ``function_call``,
    ``function_response``): recorded so, they replay by body matching, and a different
    request is refused rather than answered."""
    path = tmp_path / "litellm_gemini.yaml"
    with ProviderEmulator(tool_round()) as emu:
        where = _where(emu, "gemini")
        with use_cassette(path, record_mode="once"):
            text, _, _ = await _loop({**where, "api_key": SECRET}, "gemini", "add 2+3")
    recorded = path.read_text()
    assert text == "The sum is 5." and SECRET not in recorded
    assert all(key in recorded for key in ("function_declarations", "function_response"))
    with use_cassette(path):  # matched by body, in litellm's spelling
        text, ran, _ = await _loop(where, "gemini", "add 2+3")
    assert text == "The sum is 5." and ran == [(2, 3)]
    # litellm wraps the refusal in its own error: the message still says what differs
    with pytest.raises(Exception, match=r"body differs from interaction 0 \(.*\) at \$\.contents"):
        with use_cassette(path):
            await _loop(where, "gemini", "add 4+5")
