"""Every adapter against the loopback ``ProviderEmulator`` (real sockets, the SDKs' real HTTP
stacks): full loops in stream and JSON modes, HTTP status faults, and the faults a mocked
transport cannot produce (stalls, dropped connections, no terminal frame, malformed frames, CRC
mismatches) ending every run in one clean ``error``; cancellation closing a live connection,
client timeouts and the SDK's own retries."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.cancel import CancelToken
from openprogram.providers import guard
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.base import StreamOptions
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram.types import ToolResultMessage
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.transport.scripted import call, turn
from tests.providers._google_aws import bedrock_at, gemini_at
from tests.providers._helper import CTX, MUL, run_mul_loop

OPENAI_ANTHROPIC = {
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
GOOGLE_AWS = {
    "gemini": lambda emu, **kw: gemini_at(emu.base_url, **kw),
    "bedrock": lambda emu, **kw: bedrock_at(emu.base_url, **kw),
}
ADAPTERS = {**OPENAI_ANTHROPIC, **GOOGLE_AWS}
# The Gemini and Bedrock SDKs open a stream more slowly: they get more time before the cancel
# fires and a longer client timeout.  (seconds: cancel after, client timeout)
STALL_TIMES = {api: (0.5, 1.0) if api in GOOGLE_AWS else (0.3, 0.3) for api in ADAPTERS}
# A retryable status each SDK retries by itself, with a short wait.
RETRIED = {
    api: (503, {"retry-after": "0"}) if api in GOOGLE_AWS else (529, {"retry-after-ms": "10"})
    for api in ADAPTERS
}
STATUS_CASES = [
    *[
        pytest.param(api, True, code, retryable, id=f"{api}-{code}")
        for api in OPENAI_ANTHROPIC
        for code, retryable in [(401, False), (529, True)]
    ],
    *[
        pytest.param(api, stream, code, retryable, id=f"{api}-{mode}-{code}")
        for api in GOOGLE_AWS
        for stream, mode in [(True, "stream"), (False, "json")]
        for code, retryable in [(400, False), (401, False), (429, True), (503, True)]
    ],
]


@pytest.fixture(autouse=True)
def _no_real_calls() -> Any:
    # Everything here is loopback: the guard must let it through even when disallowed.
    with guard.allow_model_requests(False):
        yield


async def final_message(provider: Any, options: StreamOptions | None = None) -> Any:
    """Stream one ``hi`` through ``provider`` (closing it after) and return the terminal
    event's message, checking there was exactly one terminal event and that it came last."""
    async with provider:
        events = [e async for e in provider.stream("m", CTX, options or StreamOptions())]
    assert sum(e.is_terminal for e in events) == 1 and events[-1].is_terminal
    return events[-1].message


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", OPENAI_ANTHROPIC)
async def test_full_loop(api: str, stream: bool) -> None:
    run, messages, requests = await run_mul_loop(
        [turn(call("mul", {"a": 6, "b": 7}), chunk_size=3), turn("It is 42.")],
        OPENAI_ANTHROPIC[api],
        stream=stream,
        parallel_tool_calls=False,
    )
    assert run.termination == "completed"
    assert isinstance(messages[2], ToolResultMessage) and messages[2].text == "42"
    assert messages[-1].text == "It is 42."
    choice = requests[0].json["tool_choice"]
    assert choice == {"anthropic": {"type": "any", "disable_parallel_tool_use": True}}.get(
        api, "required"
    )


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", GOOGLE_AWS)
async def test_full_loop_with_parallel_calls(api: str, stream: bool) -> None:
    script = [
        turn(call("mul", {"a": 6, "b": 7}), call("mul", {"a": 2, "b": 3}), chunk_size=3),
        turn("It is 42."),
    ]
    run, messages, requests = await run_mul_loop(script, GOOGLE_AWS[api], stream=stream)
    first, second = requests[0].json, requests[1].json
    assert run.termination == "completed", [getattr(m, "error_message", None) for m in messages]
    assert [m.text for m in messages if isinstance(m, ToolResultMessage)] == ["42", "6"]
    assert messages[-1].text == "It is 42."
    calls = messages[1].tool_calls  # type: ignore[union-attr]
    assert len({c.id for c in calls}) == 2  # parallel calls, distinct ids (made up when absent)
    if api == "gemini":
        assert first["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}
        responses = [p["functionResponse"] for p in second["contents"][-1]["parts"]]
        assert [(r["id"], r["response"]) for r in responses] == [
            (calls[0].id, {"output": "42"}),
            (calls[1].id, {"output": "6"}),
        ]
    else:
        assert first["toolConfig"]["toolChoice"] == {"any": {}}
        results = [b["toolResult"] for b in second["messages"][-1]["content"]]
        assert [(r["toolUseId"], r["content"]) for r in results] == [
            (calls[0].id, [{"text": "42"}]),
            (calls[1].id, [{"text": "6"}]),
        ]


@pytest.mark.parametrize(("api", "stream", "code", "retryable"), STATUS_CASES)
async def test_status_faults(api: str, stream: bool, code: int, retryable: bool) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("never sent"), faults=[Fault.http_error(code, headers={"retry-after": "4"})])
        message = await final_message(ADAPTERS[api](emu, stream=stream))
    assert (message.stop_reason, message.error_status, message.error_retryable) == (
        "error",
        code,
        retryable,
    )
    assert message.error_retry_after_s == 4.0


@pytest.mark.parametrize("api", OPENAI_ANTHROPIC)
async def test_malformed_frame(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello world", chunk_size=2), faults=[Fault.malformed_frame(3)])
        message = await final_message(ADAPTERS[api](emu))
    assert message.stop_reason == "error" and message.error_retryable is True


FRAME_FAULTS = {
    "truncate_after_1_disconnect": lambda: Fault.truncate_after(1, disconnect=True),
    "drop_terminal": Fault.drop_terminal,
    "malformed_frame_1": lambda: Fault.malformed_frame(1),
}


@pytest.mark.parametrize("fault", FRAME_FAULTS)
@pytest.mark.parametrize("api", GOOGLE_AWS)
async def test_frame_faults_end_in_one_clean_error(api: str, fault: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(
            turn(call("mul", {"a": 1, "b": 2}), "and some text", chunk_size=2),
            faults=[FRAME_FAULTS[fault]()],
        )
        message = await final_message(ADAPTERS[api](emu))
    assert message.stop_reason == "error" and message.error_retryable is True
    assert message.error_message


async def test_crc_mismatch_on_bedrock_is_a_malformed_frame() -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello world", chunk_size=2), faults=[Fault.crc_mismatch(2)])
        message = await final_message(bedrock_at(emu.base_url))
    assert message.stop_reason == "error" and message.error_retryable is True
    assert "malformed stream frame" in (message.error_message or "")


@pytest.mark.parametrize("api", GOOGLE_AWS)
async def test_loop_never_runs_the_calls_of_a_cut_message(api: str) -> None:
    ran: list[Any] = []
    tool = {**MUL, "execute": lambda args: ran.append(args) or 0}
    with ProviderEmulator() as emu:
        emu.add(
            turn(call("mul", {"a": 1, "b": 2}), "trailing text", chunk_size=2),
            faults=[Fault.drop_terminal()],
        )
        async with ADAPTERS[api](emu) as provider:
            run = agent_loop(
                "x", AgentContext(tools=[tool]), LoopConfig(provider=provider, model="m")
            )
            await run.result()
    assert run.termination == "error" and ran == []


@pytest.mark.parametrize("api", ADAPTERS)
async def test_cancel_closes_a_stalled_live_stream(api: str) -> None:
    cancel = CancelToken()
    with ProviderEmulator() as emu:
        emu.add(turn("hello", chunk_size=1), faults=[Fault.stall(30, after_frame=1)])
        provider = ADAPTERS[api](emu)
        asyncio.get_running_loop().call_later(STALL_TIMES[api][0], cancel.cancel)
        started = time.monotonic()
        message = await asyncio.wait_for(final_message(provider, StreamOptions(cancel=cancel)), 15)
        elapsed = time.monotonic() - started
    assert message.stop_reason == "aborted"
    assert elapsed < 10  # did not wait for the 30 s stall
    deadline = time.monotonic() + 5  # and Bedrock's worker thread ended (its socket was shut)
    while any(t.name.startswith("openprogram-bedrock") for t in threading.enumerate()):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


@pytest.mark.parametrize("api", ADAPTERS)
async def test_client_timeout_on_a_stall_is_a_retryable_error(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello", chunk_size=1), faults=[Fault.stall(30, after_frame=1)])
        provider = ADAPTERS[api](emu, timeout=STALL_TIMES[api][1])
        message = await asyncio.wait_for(final_message(provider), 20)
    assert message.stop_reason == "error" and message.error_retryable is True
    assert "timed out" in (message.error_message or "")


@pytest.mark.parametrize("api", ADAPTERS)
async def test_sdk_retries_when_enabled(api: str) -> None:
    status, headers = RETRIED[api]
    with ProviderEmulator() as emu:
        emu.add(turn("lost"), faults=[Fault.http_error(status, headers=headers)])
        emu.add(turn("recovered"))
        message = await final_message(ADAPTERS[api](emu, max_retries=1))
        emu.assert_complete()
    assert message.stop_reason == "stop" and message.text == "recovered"


@pytest.mark.parametrize("api", OPENAI_ANTHROPIC)
def test_one_provider_across_event_loops_threads_and_aclose(api: str) -> None:
    """A provider built without a client works from several event loops (``asyncio.run`` per
    call, another thread) and after ``aclose()``: each loop gets its own SDK client."""
    with ProviderEmulator([turn("a"), turn("b"), turn("c"), turn("d")]) as emu:
        provider = ADAPTERS[api](emu)

        async def twice_in_one_loop() -> list[str]:
            first = await final_message(provider)  # closes this loop's client at the end
            second = await final_message(provider)  # ... so this call builds a new one
            return [first.text, second.text]

        texts = asyncio.run(twice_in_one_loop())
        texts.append(asyncio.run(final_message(provider)).text)
        box: list[str] = []
        thread = threading.Thread(
            target=lambda: box.append(asyncio.run(final_message(provider)).text)
        )
        thread.start()
        thread.join()
        emu.assert_complete()
    assert texts + box == ["a", "b", "c", "d"]
