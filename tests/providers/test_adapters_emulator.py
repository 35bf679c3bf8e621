"""The adapters against the loopback ``ProviderEmulator`` (real sockets, real SDK HTTP stack):
full loops, stream and JSON modes, faults the MockTransport cannot produce (stalls, dropped
connections), cancellation closing a live connection, timeouts and the SDK's own retries."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.cancel import CancelToken
from openprogram.providers import guard
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.base import Context, StreamOptions
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram.types import ToolResultMessage, UserMessage
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.scripted import call, turn

ADAPTERS = {
    "openai_chat": lambda emu, **kw: OpenAIChatProvider(
        base_url=emu.openai_base_url, api_key="t", **kw
    ),
    "openai_responses": lambda emu, **kw: OpenAIResponsesProvider(
        base_url=emu.openai_base_url, api_key="t", **kw
    ),
    "anthropic": lambda emu, **kw: AnthropicProvider(
        base_url=emu.anthropic_base_url, api_key="t", **kw
    ),
}
CTX = Context(messages=[UserMessage(content="hi")])
MUL = {
    "spec": {
        "name": "mul",
        "description": "Multiply.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
    "execute": lambda args: args["a"] * args["b"],
}


@pytest.fixture(autouse=True)
def _no_real_calls() -> Any:
    # Everything here is loopback: the guard must let it through even when disallowed.
    with guard.allow_model_requests(False):
        yield


async def _final(provider: Any, options: StreamOptions | None = None) -> Any:
    async with provider:
        events = [e async for e in provider.stream("m", CTX, options or StreamOptions())]
    assert sum(e.is_terminal for e in events) == 1 and events[-1].is_terminal
    return events[-1].message


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", ADAPTERS)
async def test_full_loop(api: str, stream: bool) -> None:
    with ProviderEmulator(
        [turn(call("mul", {"a": 6, "b": 7}), chunk_size=3), turn("It is 42.")]
    ) as emu:
        async with ADAPTERS[api](emu, stream=stream) as provider:
            run = agent_loop(
                "6*7?",
                AgentContext(tools=[MUL]),
                LoopConfig(
                    provider=provider, model="m", tool_choice="required", parallel_tool_calls=False
                ),
            )
            messages = await run.result()
        emu.assert_complete()
        first_request = emu.requests[0].json
    assert run.termination == "completed"
    assert isinstance(messages[2], ToolResultMessage) and messages[2].text == "42"
    assert messages[-1].text == "It is 42."
    choice = first_request["tool_choice"]
    assert choice == {"anthropic": {"type": "any", "disable_parallel_tool_use": True}}.get(
        api, "required"
    )


@pytest.mark.parametrize("api", ADAPTERS)
@pytest.mark.parametrize(("code", "retryable"), [(401, False), (529, True)])
async def test_status_faults(api: str, code: int, retryable: bool) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("never sent"), faults=[Fault.status(code, headers={"retry-after": "4"})])
        message = await _final(ADAPTERS[api](emu))
    assert (message.error_status, message.error_retryable) == (code, retryable)
    assert message.error_retry_after_s == 4.0


@pytest.mark.parametrize("api", ADAPTERS)
async def test_malformed_frame(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello world", chunk_size=2), faults=[Fault.malformed_frame(3)])
        message = await _final(ADAPTERS[api](emu))
    assert message.stop_reason == "error" and message.error_retryable is True


@pytest.mark.parametrize("api", ADAPTERS)
async def test_cancel_closes_a_stalled_live_stream(api: str) -> None:
    cancel = CancelToken()
    with ProviderEmulator() as emu:
        emu.add(turn("hello"), faults=[Fault.stall(30, after_frame=1)])
        provider = ADAPTERS[api](emu)
        asyncio.get_running_loop().call_later(0.3, cancel.cancel)
        started = time.monotonic()
        message = await asyncio.wait_for(_final(provider, StreamOptions(cancel=cancel)), 10)
        elapsed = time.monotonic() - started
    assert message.stop_reason == "aborted"
    assert elapsed < 10  # did not wait for the 30 s stall


@pytest.mark.parametrize("api", ADAPTERS)
async def test_client_timeout_is_a_retryable_error(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello"), faults=[Fault.stall(30, after_frame=1)])
        message = await asyncio.wait_for(_final(ADAPTERS[api](emu, timeout=0.3)), 10)
    assert message.stop_reason == "error"
    assert message.error_retryable is True
    assert "timed out" in (message.error_message or "")


@pytest.mark.parametrize("api", ADAPTERS)
async def test_sdk_retries_when_enabled(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("lost"), faults=[Fault.status(529, headers={"retry-after-ms": "10"})])
        emu.add(turn("recovered"))
        message = await _final(ADAPTERS[api](emu, max_retries=1))
        emu.assert_complete()
    assert message.stop_reason == "stop" and message.text == "recovered"


@pytest.mark.parametrize("api", ADAPTERS)
def test_one_provider_across_event_loops_threads_and_aclose(api: str) -> None:
    """A provider built without a client works from several event loops (``asyncio.run`` per
    call, another thread) and after ``aclose()``: each loop gets its own SDK client."""
    import threading

    with ProviderEmulator([turn("a"), turn("b"), turn("c"), turn("d")]) as emu:
        provider = ADAPTERS[api](emu)

        async def twice_in_one_loop() -> list[str]:
            first = await _final(provider)  # closes this loop's client at the end
            second = await _final(provider)  # ... so this call builds a new one
            return [first.text, second.text]

        texts = asyncio.run(twice_in_one_loop())
        texts.append(asyncio.run(_final(provider)).text)
        box: list[str] = []
        thread = threading.Thread(target=lambda: box.append(asyncio.run(_final(provider)).text))
        thread.start()
        thread.join()
        emu.assert_complete()
    assert texts + box == ["a", "b", "c", "d"]
