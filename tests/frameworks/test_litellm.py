"""litellm (a client, not a loop: the loop here is the few lines a user writes around
``acompletion``) against the emulator and a cassette, on OpenAI Chat and Gemini: a tool round
with usage, parallel calls, a 429 retried after its retry-after, a cut stream, a malformed
call, and a recorded run replayed with redaction and a fault."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import Fault, ProviderEmulator, assert_retries, call, turn, use_cassette
from openprogram_testing.faults import HttpError
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
MODELS = {"openai_chat": "openai/m", "gemini": "gemini/gemini-2.5-flash"}


def _base(emu: ProviderEmulator, api: str) -> str:
    return emu.openai_base_url if api == "openai_chat" else emu.base_url


async def _loop(
    emu_url: str, api: str, prompt: str, *, stream: bool = False, api_key: str = "test", **kw: Any
) -> tuple[str, list[tuple[int, int]], list[Any]]:
    """The user's loop: ask, run the tools asked for, send their results, until text."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": prompt}]
    ran: list[tuple[int, int]] = []
    usages: list[Any] = []
    options = {"model": MODELS[api], "api_base": emu_url, "api_key": api_key, "tools": TOOLS}
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


@pytest.mark.parametrize("api", ["openai_chat", "gemini"])
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_tool_round_with_usage(provider_emulator, api, stream):
    provider_emulator.add(*tool_round())
    text, ran, usages = await _loop(_base(provider_emulator, api), api, "add 2+3", stream=stream)
    assert text == "The sum is 5." and ran == [(2, 3)]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usages] == [(10, 5), (20, 3)]
    # Gemini bodies come in snake_case from litellm: the tool result is parsed all the same
    assert roles(provider_emulator) == [["user"], ["user", "assistant", "toolResult"]]
    assert _values(results(provider_emulator, 1)) == ["5"]
    assert [t.name for t in provider_emulator.requests[0].model_request.tools] == ["add"]


@pytest.mark.parametrize("api", ["openai_chat", "gemini"])
async def test_parallel_calls(provider_emulator, api):
    provider_emulator.add(*tool_round(parallel=True))
    text, ran, _ = await _loop(_base(provider_emulator, api), api, "add 2+3 and 4+5")
    assert text == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert _values(results(provider_emulator, 1)) == ["5", "9"]


async def test_429_retried_after_retry_after(provider_emulator):
    provider_emulator.add(Fault.status(429, headers={"retry-after": "0.2"}), *tool_round())
    text, _, _ = await _loop(
        _base(provider_emulator, "openai_chat"), "openai_chat", "add", max_retries=1
    )
    assert text == "The sum is 5."
    assert_retries(provider_emulator.requests[:2], attempts=2, min_gap_s=0.2)


@pytest.mark.parametrize("api", ["openai_chat", "gemini"])
async def test_cut_stream_fails_and_runs_no_tool(provider_emulator, api):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.disconnect_after(3)],
    )
    with pytest.raises(Exception) as err:
        await _loop(_base(provider_emulator, api), api, "add 2+3", stream=True)
    assert not isinstance(err.value, AssertionError), err.value


async def test_malformed_call_openai_sends_the_text(provider_emulator):
    provider_emulator.add(turn(call("add", raw=BROKEN)), "recovered")
    text, ran, _ = await _loop(_base(provider_emulator, "openai_chat"), "openai_chat", "add")
    assert text == "recovered" and ran == []
    assert results(provider_emulator, 1)[0].startswith("invalid arguments")


async def test_malformed_call_gemini_is_malformed_function_call(provider_emulator):
    """Gemini's own signal: no call at all, ``finishReason: MALFORMED_FUNCTION_CALL``."""
    provider_emulator.add(turn(call("add", raw=BROKEN)))
    response = await litellm.acompletion(
        model=MODELS["gemini"],
        api_base=provider_emulator.base_url,
        api_key="test",
        messages=[{"role": "user", "content": "add"}],
        tools=TOOLS,
    )
    choice = response.choices[0]
    assert not choice.message.tool_calls and choice.finish_reason != "tool_calls"


async def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "litellm_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        base = emu.openai_base_url
        with use_cassette(path, record_mode="once"):
            text, _, _ = await _loop(base, "openai_chat", "add 2+3", api_key=SECRET)
    assert text == "The sum is 5." and SECRET not in path.read_text()
    with use_cassette(path):  # the emulator is gone: only the cassette can answer
        text, ran, _ = await _loop(base, "openai_chat", "add 2+3")
    assert text == "The sum is 5." and ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        with pytest.raises(litellm.exceptions.InternalServerError):
            await _loop(base, "openai_chat", "add 2+3", max_retries=0)
