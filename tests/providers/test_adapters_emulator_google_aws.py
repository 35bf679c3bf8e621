"""GeminiProvider and BedrockProvider against the loopback ``ProviderEmulator`` (real sockets, the
SDKs' real HTTP stacks): full loops in stream and JSON modes, and the fault matrix (HTTP status,
disconnect after n frames, no terminal frame, malformed frame, stall, CRC mismatch) ending every
run in one clean ``error``."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram.cancel import CancelToken
from openprogram.providers import guard
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import ToolResultMessage, UserMessage
from openprogram_testing.emulator import Fault, ProviderEmulator
from openprogram_testing.scripted import call, turn


def gemini(emu: ProviderEmulator, **kw: Any) -> Any:
    from openprogram.providers.gemini import GeminiProvider

    return GeminiProvider(api_key="test-key", base_url=emu.base_url, **kw)


def bedrock(emu: ProviderEmulator, **kw: Any) -> Any:
    from botocore.config import Config

    from openprogram.providers.bedrock import BedrockProvider

    timeout = kw.pop("timeout", None)
    config = Config(read_timeout=timeout, connect_timeout=timeout) if timeout else None
    return BedrockProvider(
        base_url=emu.base_url,
        region_name="us-east-1",
        aws_access_key_id="AKIDTEST",
        aws_secret_access_key="test-secret",
        config=config,
        **kw,
    )


ADAPTERS = {"gemini": gemini, "bedrock": bedrock}
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
    with guard.allow_model_requests(False):  # loopback only: the guard lets it through
        yield


async def _final(provider: Any, options: StreamOptions | None = None) -> Any:
    async with provider:
        events = [e async for e in provider.stream("m", CTX, options or StreamOptions())]
    assert sum(e.is_terminal for e in events) == 1 and events[-1].is_terminal
    return events[-1].message


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", ADAPTERS)
async def test_full_loop(api: str, stream: bool) -> None:
    script = [
        turn(call("mul", {"a": 6, "b": 7}), call("mul", {"a": 2, "b": 3}), chunk_size=3),
        turn("It is 42."),
    ]
    with ProviderEmulator(script) as emu:
        async with ADAPTERS[api](emu, stream=stream) as provider:
            run = agent_loop(
                "6*7?",
                AgentContext(tools=[MUL]),
                LoopConfig(provider=provider, model="m", tool_choice="required"),
            )
            messages = await run.result()
        emu.assert_complete()
        first, second = emu.requests[0].json, emu.requests[1].json
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


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", ADAPTERS)
@pytest.mark.parametrize(
    ("code", "retryable"), [(400, False), (401, False), (429, True), (503, True)]
)
async def test_status_faults(api: str, stream: bool, code: int, retryable: bool) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("never sent"), faults=[Fault.status(code, headers={"retry-after": "4"})])
        message = await _final(ADAPTERS[api](emu, stream=stream))
    assert (message.stop_reason, message.error_status, message.error_retryable) == (
        "error",
        code,
        retryable,
    )
    assert message.error_retry_after_s == 4.0


FRAME_FAULTS = {
    "disconnect_after_1": lambda: Fault.disconnect_after(1),
    "no_terminal": Fault.no_terminal,
    "malformed_frame_1": lambda: Fault.malformed_frame(1),
}


@pytest.mark.parametrize("fault", FRAME_FAULTS)
@pytest.mark.parametrize("api", ADAPTERS)
async def test_frame_faults_end_in_one_clean_error(api: str, fault: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(
            turn(call("mul", {"a": 1, "b": 2}), "and some text", chunk_size=2),
            faults=[FRAME_FAULTS[fault]()],
        )
        message = await _final(ADAPTERS[api](emu))
    assert message.stop_reason == "error" and message.error_retryable is True
    assert message.error_message


async def test_crc_mismatch_on_bedrock_is_a_malformed_frame() -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("hello world", chunk_size=2), faults=[Fault.crc_mismatch(2)])
        message = await _final(bedrock(emu))
    assert message.stop_reason == "error" and message.error_retryable is True
    assert "malformed stream frame" in (message.error_message or "")


@pytest.mark.parametrize("api", ADAPTERS)
async def test_loop_never_runs_the_calls_of_a_cut_message(api: str) -> None:
    ran: list[Any] = []
    tool = {**MUL, "execute": lambda args: ran.append(args) or 0}
    with ProviderEmulator() as emu:
        emu.add(
            turn(call("mul", {"a": 1, "b": 2}), "trailing text", chunk_size=2),
            faults=[Fault.no_terminal()],
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
        emu.add(turn("hello"), faults=[Fault.stall(30, after_frame=1)])
        provider = ADAPTERS[api](emu)
        asyncio.get_running_loop().call_later(0.5, cancel.cancel)
        started = time.monotonic()
        message = await asyncio.wait_for(_final(provider, StreamOptions(cancel=cancel)), 15)
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
        emu.add(turn("hello"), faults=[Fault.stall(30, after_frame=1)])
        message = await asyncio.wait_for(_final(ADAPTERS[api](emu, timeout=1)), 20)
    assert message.stop_reason == "error" and message.error_retryable is True
    assert "timed out" in (message.error_message or "")


@pytest.mark.parametrize("api", ADAPTERS)
async def test_sdk_retries_when_enabled(api: str) -> None:
    with ProviderEmulator() as emu:
        emu.add(turn("lost"), faults=[Fault.status(503, headers={"retry-after": "0"})])
        emu.add(turn("recovered"))
        message = await _final(ADAPTERS[api](emu, max_retries=1))
        emu.assert_complete()
    assert message.stop_reason == "stop" and message.text == "recovered"
