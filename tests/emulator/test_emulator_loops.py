"""Full loops through the real adapters against the provider emulator: the official SDKs talk
HTTP to the emulator, the adapters turn the wire frames into events, the loop runs the tools.

The same script run through ``ScriptedProvider`` must give the same messages: that is the
contract that lets scripted tests stand in for real providers.
"""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram.types import AssistantMessage, Message, ToolResultMessage, Usage, UserMessage
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.transport.scripted import (
    ModelRequest,
    ScriptedProvider,
    call,
    cut_turn,
    think,
    turn,
)
from tests.providers._helper import ADD

ADAPTERS = {
    "openai_chat": lambda emu, stream: OpenAIChatProvider(
        base_url=emu.openai_base_url, api_key="test", stream=stream
    ),
    "openai_responses": lambda emu, stream: OpenAIResponsesProvider(
        base_url=emu.openai_base_url, api_key="test", stream=stream
    ),
    "anthropic": lambda emu, stream: AnthropicProvider(
        base_url=emu.anthropic_base_url, api_key="test", stream=stream
    ),
}


def script(api: str, seen: list[ModelRequest]) -> list[Any]:
    """A tool round (text + two parallel calls, thinking where the API has it), then text."""
    # (the Responses adapter does not keep a reasoning item's encrypted_content as the signature)
    signature = "sig-1" if api == "anthropic" else None
    first = [think("I should add.", signature=signature)] if api != "openai_chat" else []

    def answer(request: ModelRequest) -> Any:
        seen.append(request)
        return turn("The sums are 5 and 9.", usage=Usage(input_tokens=30, output_tokens=6))

    return [
        turn(
            *first,
            "Let me add.",
            call("add", {"a": 2, "b": 3}),
            call("add", {"a": 4, "b": 5}),
            usage=Usage(input_tokens=20, output_tokens=10),
            chunk_size=4,
        ),
        answer,
    ]


async def run(provider: Any, tools: Any = None, prompt: str = "add 2+3 and 4+5") -> Any:
    context = AgentContext(system_prompt="Be exact.", tools=tools or [ADD])
    stream = agent_loop(prompt, context, LoopConfig(provider=provider, model="m-1"))
    try:
        async for _ in stream:
            pass
    finally:
        client = getattr(provider, "_client", None)
        if client is not None:  # close it while the event loop still runs
            await client.close()
    return stream, await stream.result()


def comparable(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(exclude={"provider", "api", "model"}) for m in messages]


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", list(ADAPTERS))
async def test_tool_round_then_text_matches_the_scripted_provider(api, stream):
    emulated_requests: list[ModelRequest] = []
    scripted_requests: list[ModelRequest] = []
    with ProviderEmulator(script(api, emulated_requests)) as emu:
        run_, messages = await run(ADAPTERS[api](emu, stream))
        emu.assert_complete()
    assert run_.termination == "completed" and run_.model_calls == 2

    user, first, r1, r2, last = messages
    assert isinstance(user, UserMessage)
    assert isinstance(first, AssistantMessage) and first.stop_reason == "toolUse"
    assert [c.id for c in first.tool_calls] == ["call_0", "call_1"]
    assert isinstance(r1, ToolResultMessage) and (r1.text, r2.text) == ("5", "9")
    assert last.text == "The sums are 5 and 9." and last.stop_reason == "stop"
    assert (first.provider, first.model) != ("", "")

    scripted = ScriptedProvider(script(api, scripted_requests))
    _, expected = await run(scripted)
    scripted.assert_complete()
    assert comparable(messages) == comparable(expected)

    # what the adapter sent in round 2, parsed back, is the history the scripted provider got
    (got,), (want,) = emulated_requests, scripted_requests
    assert got.system_prompt == want.system_prompt == "Be exact."
    assert got.tool_names == want.tool_names == ["add"]
    assert [m.role for m in got.messages] == [m.role for m in want.messages]
    got_results = [
        (m.tool_call_id, m.tool_name, m.text)
        for m in got.messages
        if isinstance(m, ToolResultMessage)
    ]
    assert got_results == [("call_0", "add", "5"), ("call_1", "add", "9")]
    assert got.messages[1].tool_calls == want.messages[1].tool_calls


@pytest.mark.parametrize("api", list(ADAPTERS))
async def test_http_error_reaches_the_loop_as_a_provider_error(api):
    with ProviderEmulator() as emu:
        emu.add(Fault.http_error(429, headers={"retry-after": "3"}))
        run_, messages = await run(ADAPTERS[api](emu, True))
    assert run_.termination == "error"
    err = messages[-1]
    assert isinstance(err, AssistantMessage) and err.stop_reason == "error"
    assert err.error_status == 429 and err.error_retry_after_s == 3.0
    assert err.error_retryable is True


@pytest.mark.parametrize("api", list(ADAPTERS))
async def test_disconnect_mid_stream_never_runs_the_tools(api):
    ran: list[Any] = []
    tool = {**ADD, "execute": lambda args: ran.append(args) or 0}
    with ProviderEmulator() as emu:
        emu.add(
            turn(call("add", {"a": 1, "b": 2}), chunk_size=2),
            faults=[Fault.truncate_after(5, disconnect=True)],
        )
        stream, messages = await run(ADAPTERS[api](emu, True), [tool], "go")
    assert stream.termination == "error"
    assert ran == []
    assert messages[-1].stop_reason == "error"


@pytest.mark.parametrize("api", list(ADAPTERS))
async def test_missing_terminal_frame(api):
    with ProviderEmulator() as emu:
        emu.add(turn("hello"), faults=[Fault.drop_terminal()])
        run_, messages = await run(ADAPTERS[api](emu, True))
    # on Chat the fault drops the finish_reason chunk with [DONE] (the chunk ends a message)
    assert run_.termination == "error"
    assert messages[-1].stop_reason == "error"


@pytest.mark.parametrize("api", list(ADAPTERS))
async def test_cut_stream_is_an_error_and_its_calls_never_run(api):
    ran: list[Any] = []
    tool = {**ADD, "execute": lambda args: ran.append(args) or 0}
    with ProviderEmulator([cut_turn("partial", call("add", {"a": 1, "b": 2}))]) as emu:
        stream, messages = await run(ADAPTERS[api](emu, True), [tool], "go")
        emu.assert_complete()
    assert stream.termination == "error" and ran == []
    assert messages[-1].stop_reason == "error"
