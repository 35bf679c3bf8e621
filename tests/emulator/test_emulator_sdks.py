"""The loopback provider emulator, driven by the real official SDK clients.

Each scripted turn must come out of the SDKs exactly as the real API's would (the SDKs' own
stream accumulators are used where they exist, so a frame in the wrong order or shape fails), and
every fault must surface in the SDK as the matching error.
"""

from __future__ import annotations

import asyncio
import json
import socket
import ssl
import threading
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from openprogram.types import TextContent, ToolCall, ToolResultMessage, Usage, UserMessage
from openprogram_testing.emulator import (
    EmulatorProtocolError,
    Fault,
    ProviderEmulator,
    main_emulator,
    serve,
)
from openprogram_testing.transport.scripted import (
    ModelRequest,
    ScriptedTurn,
    UnconsumedTurns,
    UnexpectedModelCall,
    aborted_turn,
    call,
    cut_turn,
    error_turn,
    raising_turn,
    think,
    turn,
)
from tests.providers._adapters_http import chat_tool_call

pytest_plugins = ["pytester"]

APIS = ["openai_chat", "openai_responses", "anthropic"]
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def emu() -> Iterator[ProviderEmulator]:
    emulator = ProviderEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()


# one TLS context for every client: building one per client costs ~0.2 s (CA bundle loading)
_TLS = ssl.create_default_context()


_CLIENTS: list[Any] = []


@pytest.fixture(autouse=True)
async def _close_clients() -> Any:
    """Close every SDK client a test made while its event loop still runs."""
    yield
    while _CLIENTS:
        await _CLIENTS.pop().close()


def _client(sdk: Any, client_class: Any, base_url: str, **kw: Any) -> Any:
    """An official SDK client on the emulator (the shared TLS context, no retries unless asked),
    closed when the test ends."""
    kw.setdefault("max_retries", 0)
    client = client_class(
        base_url=base_url,
        api_key="test",
        http_client=sdk.DefaultAsyncHttpxClient(verify=_TLS),
        **kw,
    )
    _CLIENTS.append(client)
    return client


def oai(emu: ProviderEmulator, **kw: Any) -> openai.AsyncOpenAI:
    return _client(openai, openai.AsyncOpenAI, emu.openai_base_url, **kw)


def ant(emu: ProviderEmulator, **kw: Any) -> anthropic.AsyncAnthropic:
    return _client(anthropic, anthropic.AsyncAnthropic, emu.anthropic_base_url, **kw)


# -- a normalised view of one SDK response ---------------------------------------------------


def _norm(
    text: str,
    thinking: list[tuple[str, str | None]],
    calls: list[tuple[str, str, Any]],
    stop: str,
    usage: tuple[int, int, int],
) -> dict[str, Any]:
    return {"text": text, "thinking": thinking, "calls": calls, "stop": stop, "usage": usage}


def _args(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value) if value.strip() else {}
    return value


async def ask(emu: ProviderEmulator, api: str, stream: bool, **kw: Any) -> dict[str, Any]:
    """One request through the official SDK; the answer normalised for comparison."""
    if api == "openai_chat":
        return await _ask_chat(emu, stream, **kw)
    if api == "openai_responses":
        return await _ask_responses(emu, stream, **kw)
    return await _ask_anthropic(emu, stream, **kw)


async def _ask_chat(emu: ProviderEmulator, stream: bool, **kw: Any) -> dict[str, Any]:
    client = oai(emu)
    if not stream:
        r = await client.chat.completions.create(model="m", messages=USER, **kw)
        msg = r.choices[0].message
        reasoning = getattr(msg, "reasoning_content", None)
        u = r.usage
        assert u is not None
        cached = u.prompt_tokens_details.cached_tokens if u.prompt_tokens_details else 0
        return _norm(
            msg.content or "",
            [(reasoning, None)] if reasoning else [],
            [(c.id, c.function.name, _args(c.function.arguments)) for c in msg.tool_calls or []],
            {"stop": "stop", "length": "length", "tool_calls": "toolUse"}[
                r.choices[0].finish_reason
            ],
            (u.prompt_tokens - (cached or 0), u.completion_tokens, cached or 0),
        )
    stream_ = await client.chat.completions.create(
        model="m", messages=USER, stream=True, stream_options={"include_usage": True}, **kw
    )
    text, reasoning, finish, usage = "", "", None, None
    calls: dict[int, list[Any]] = {}
    async for chunk in stream_:
        if not chunk.choices:
            usage = chunk.usage
            continue
        choice = chunk.choices[0]
        text += choice.delta.content or ""
        reasoning += getattr(choice.delta, "reasoning_content", None) or ""
        for tc in choice.delta.tool_calls or []:
            if tc.index not in calls:  # id and name come only in the first fragment
                assert tc.id and tc.function and tc.function.name
                calls[tc.index] = [tc.id, tc.function.name, tc.function.arguments or ""]
            else:
                assert tc.id is None and (tc.function is None or tc.function.name is None)
                calls[tc.index][2] += tc.function.arguments if tc.function else ""
        finish = choice.finish_reason or finish
    assert usage is not None and finish is not None
    cached = usage.prompt_tokens_details.cached_tokens if usage.prompt_tokens_details else 0
    return _norm(
        text,
        [(reasoning, None)] if reasoning else [],
        [(i, n, _args(a)) for i, n, a in (calls[k] for k in sorted(calls))],
        {"stop": "stop", "length": "length", "tool_calls": "toolUse"}[finish],
        (usage.prompt_tokens - (cached or 0), usage.completion_tokens, cached or 0),
    )


async def _ask_responses(emu: ProviderEmulator, stream: bool, **kw: Any) -> dict[str, Any]:
    client = oai(emu)
    if stream:
        events = [
            ev
            async for ev in await client.responses.create(model="m", input="hi", stream=True, **kw)
        ]
        assert events[-1].type in ("response.completed", "response.incomplete")
        r = events[-1].response
        # the items streamed one by one are the ones the terminal event lists
        done = [ev.item for ev in events if ev.type == "response.output_item.done"]
        assert done == r.output
    else:
        r = await client.responses.create(model="m", input="hi", **kw)
    text, thinking, calls = "", [], []
    for item in r.output:
        if item.type == "message":
            text += "".join(c.text for c in item.content if c.type == "output_text")
        elif item.type == "reasoning":
            thinking.append(("".join(s.text for s in item.summary), item.encrypted_content))
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, _args(item.arguments)))
    stop = "length" if r.status == "incomplete" else ("toolUse" if calls else "stop")
    assert r.usage is not None
    cached = r.usage.input_tokens_details.cached_tokens
    return _norm(
        text, thinking, calls, stop, (r.usage.input_tokens - cached, r.usage.output_tokens, cached)
    )


async def _ask_anthropic(emu: ProviderEmulator, stream: bool, **kw: Any) -> dict[str, Any]:
    client = ant(emu)
    if stream:
        async with client.messages.stream(model="m", max_tokens=100, messages=USER, **kw) as s:
            async for _ in s:
                pass
            m = await s.get_final_message()
    else:
        m = await client.messages.create(model="m", max_tokens=100, messages=USER, **kw)
    text, thinking, calls = "", [], []
    for b in m.content:
        if b.type == "text":
            text += b.text
        elif b.type == "thinking":
            thinking.append((b.thinking, b.signature or None))
        elif b.type == "redacted_thinking":
            thinking.append(("", b.data))
        elif b.type == "tool_use":
            calls.append((b.id, b.name, b.input))
    stop = {"end_turn": "stop", "max_tokens": "length", "tool_use": "toolUse"}[m.stop_reason]
    u = m.usage
    return _norm(
        text,
        thinking,
        calls,
        stop,
        (u.input_tokens, u.output_tokens, u.cache_read_input_tokens or 0),
    )


# -- content, stop reasons, usage across the three APIs --------------------------------------

SCENARIOS: dict[str, tuple[ScriptedTurn | str, dict[str, Any]]] = {
    "text": ("Hello, world!", _norm("Hello, world!", [], [], "stop", (0, 0, 0))),
    "one_call": (
        turn(call("add", {"a": 1, "b": 2})),
        _norm("", [], [("call_0", "add", {"a": 1, "b": 2})], "toolUse", (0, 0, 0)),
    ),
    "parallel_calls": (
        turn(call("add", {"a": 1}), call("mul", {"x": [1, 2]}, id="custom_id")),
        _norm(
            "",
            [],
            [("call_0", "add", {"a": 1}), ("custom_id", "mul", {"x": [1, 2]})],
            "toolUse",
            (0, 0, 0),
        ),
    ),
    "text_and_call": (
        turn("Let me add.", call("add", {"a": 1})),
        _norm("Let me add.", [], [("call_0", "add", {"a": 1})], "toolUse", (0, 0, 0)),
    ),
    "empty_arguments": (
        turn(call("now")),
        _norm("", [], [("call_0", "now", {})], "toolUse", (0, 0, 0)),
    ),
    "usage": (
        turn("ok", usage=Usage(input_tokens=11, output_tokens=7, cache_read_tokens=3)),
        _norm("ok", [], [], "stop", (11, 7, 3)),
    ),
    "length": (turn("trunc", stop="length"), _norm("trunc", [], [], "length", (0, 0, 0))),
    "forced_stop_with_call": (
        turn(call("add", {"a": 1}), stop="stop"),
        _norm("", [], [("call_0", "add", {"a": 1})], "stop", (0, 0, 0)),
    ),
}


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", APIS)
@pytest.mark.parametrize("name", list(SCENARIOS))
async def test_turn_round_trips_through_the_sdk(emu, api, stream, name):
    scripted, expected = SCENARIOS[name]
    emu.chunk_size = 3  # many deltas per text and per argument string
    emu.add(scripted)
    if api == "openai_responses" and name == "forced_stop_with_call":
        # Responses has no stop reason apart from status: calls always mean a tool round
        expected = {**expected, "stop": "toolUse"}
    got = await ask(emu, api, stream)
    assert got == expected
    emu.assert_complete()
    (req,) = emu.requests
    assert (req.api, req.stream, req.method) == (api, stream, "POST")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
@pytest.mark.parametrize("api", ["openai_responses", "anthropic"])
async def test_thinking_with_signature(emu, api, stream):
    emu.add(turn(think("step by step", signature="sig-1"), "answer", chunk_size=4))
    got = await ask(emu, api, stream)
    assert got["thinking"] == [("step by step", "sig-1")]
    assert got["text"] == "answer"


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_chat_thinking_uses_reasoning_content(emu, stream):
    emu.add(ScriptedTurn(parts=[think("hmm"), "done"], chunk_size=2))
    got = await ask(emu, "openai_chat", stream)
    assert got["thinking"] == [("hmm", None)]
    assert got["text"] == "done"


async def test_anthropic_redacted_thinking(emu):
    emu.add(turn(think("opaque-blob", redacted=True), "ok"))
    got = await ask(emu, "anthropic", True)
    assert got["thinking"] == [("", "opaque-blob")]


# -- wire-level frame shapes ------------------------------------------------------------------


async def raw_post(emu: ProviderEmulator, path: str, body: dict[str, Any]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=5, verify=_TLS) as client:
        return await client.post(emu.base_url + path, json=body)


def sse_events(text: str) -> list[tuple[str | None, str]]:
    out = []
    for block in text.split("\n\n"):
        if not block:
            continue
        event = None
        data = ""
        for line in block.split("\n"):
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                data = line[6:]
        out.append((event, data))
    return out


async def test_chat_chunks_have_the_real_shape(emu):
    emu.add(
        turn(
            "hi",
            call("a", {"k": "vvvvv"}),
            call("b", {"k": 1}),
            chunk_size=3,
            usage=Usage(input_tokens=2, output_tokens=3),
        )
    )
    r = await raw_post(
        emu,
        "/v1/chat/completions",
        {
            "model": "gpt-x",
            "messages": USER,
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    )
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/event-stream")
    assert r.headers["transfer-encoding"] == "chunked"
    events = sse_events(r.text)
    assert all(e is None for e, _ in events)  # chat completions: data-only frames
    assert events[-1][1] == "[DONE]"
    chunks = [json.loads(d) for _, d in events[:-1]]
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert {c["id"] for c in chunks} == {"chatcmpl-emu0"}
    assert {c["model"] for c in chunks} == {"gpt-x"}
    usage_chunk = chunks[-1]
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"]["prompt_tokens"] == 2
    assert usage_chunk["usage"]["completion_tokens"] == 3
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    fragments = [tc for c in chunks[:-1] for tc in c["choices"][0]["delta"].get("tool_calls", [])]
    by_index: dict[int, list[dict[str, Any]]] = {}
    for f in fragments:
        by_index.setdefault(f["index"], []).append(f)
    assert sorted(by_index) == [0, 1]
    for index, frags in by_index.items():
        assert "id" in frags[0] and frags[0]["function"]["name"] == ["a", "b"][index]
        assert all("id" not in f and "name" not in f["function"] for f in frags[1:])
        assert len(frags) > 2  # the argument JSON really is chunked
    assert json.loads("".join(f["function"]["arguments"] for f in by_index[0])) == {"k": "vvvvv"}


async def test_chat_usage_chunk_only_when_requested(emu):
    emu.add("hi")
    r = await raw_post(
        emu, "/v1/chat/completions", {"model": "m", "messages": USER, "stream": True}
    )
    chunks = [json.loads(d) for _, d in sse_events(r.text)[:-1]]
    assert all(c["choices"] for c in chunks)
    assert all("usage" not in c for c in chunks)


async def test_responses_events_have_the_real_shape(emu):
    emu.add(turn("hello", call("f", {"x": 1}), chunk_size=2))
    r = await raw_post(emu, "/v1/responses", {"model": "m", "input": "hi", "stream": True})
    events = sse_events(r.text)
    datas = [json.loads(d) for _, d in events]
    assert [e for e, _ in events] == [d["type"] for d in datas]  # event: names = data types
    assert [d["sequence_number"] for d in datas] == list(range(len(datas)))
    types = [d["type"] for d in datas]
    assert types[:2] == ["response.created", "response.in_progress"]
    assert types[-1] == "response.completed"
    assert "[DONE]" not in r.text
    assert types.count("response.output_item.added") == 2
    assert "response.function_call_arguments.done" in types
    completed = datas[-1]["response"]
    assert [o["type"] for o in completed["output"]] == ["message", "function_call"]
    assert completed["output"][1]["call_id"] == "call_0"


async def test_anthropic_events_have_the_real_shape(emu):
    emu.add(
        turn(
            "hello", call("f", {"x": 1}), chunk_size=2, usage=Usage(input_tokens=4, output_tokens=9)
        )
    )
    r = await raw_post(
        emu,
        "/v1/messages",
        {"model": "claude-x", "max_tokens": 10, "messages": USER, "stream": True},
    )
    events = sse_events(r.text)
    datas = [json.loads(d) for _, d in events]
    assert [e for e, _ in events] == [d["type"] for d in datas]
    types = [d["type"] for d in datas]
    assert types[0] == "message_start" and types[-2:] == ["message_delta", "message_stop"]
    assert "ping" in types
    assert datas[0]["message"]["usage"]["input_tokens"] == 4
    assert datas[-2]["delta"]["stop_reason"] == "tool_use"
    assert datas[-2]["usage"]["output_tokens"] == 9
    starts = [d for d in datas if d["type"] == "content_block_start"]
    assert [s["content_block"]["type"] for s in starts] == ["text", "tool_use"]
    assert starts[1]["content_block"] == {
        "type": "tool_use",
        "id": "call_0",
        "name": "f",
        "input": {},
    }
    json_deltas = [
        d["delta"]["partial_json"]
        for d in datas
        if d["type"] == "content_block_delta" and d["index"] == 1
    ]
    assert json_deltas[0] == "" and json.loads("".join(json_deltas)) == {"x": 1}


async def test_anthropic_empty_input_streams_only_an_empty_fragment(emu):
    emu.add(turn(call("now")))
    r = await raw_post(
        emu, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": USER, "stream": True}
    )
    deltas = [json.loads(d)["delta"] for e, d in sse_events(r.text) if e == "content_block_delta"]
    assert deltas == [{"type": "input_json_delta", "partial_json": ""}]


async def test_ids_are_deterministic_across_emulators():
    bodies = []
    for _ in range(2):
        with ProviderEmulator([turn("a", call("f"))]) as e:
            r = await raw_post(e, "/v1/responses", {"model": "m", "input": "x", "stream": True})
            bodies.append(r.text)
    assert bodies[0] == bodies[1]


# -- scripted endings -------------------------------------------------------------------------


@pytest.mark.parametrize("api", APIS)
async def test_error_turn_is_an_http_error_with_retry_after(emu, api):
    emu.add(error_turn("slow down", status=429, retry_after_s=2))
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as info:
        await ask(emu, api, True)
    err = info.value
    assert err.status_code == 429
    assert err.response.headers["retry-after"] == "2"
    assert "slow down" in str(err)


async def test_error_turn_defaults_to_500(emu):
    emu.add(error_turn("boom"))
    with pytest.raises(openai.InternalServerError) as info:
        await ask(emu, "openai_chat", False)
    assert info.value.status_code == 500
    assert info.value.body == {
        "message": "boom",
        "type": "server_error",
        "param": None,
        "code": None,
    }


async def test_error_turn_with_parts_streams_then_errors_in_band(emu):
    emu.add(error_turn("overloaded mid-stream", "partial", status=529))
    client = ant(emu)
    seen = []
    with pytest.raises(anthropic.APIStatusError) as info:
        stream = await client.messages.create(model="m", max_tokens=5, messages=USER, stream=True)
        async for ev in stream:
            seen.append(ev.type)
    assert "content_block_delta" in seen
    assert info.value.body["error"] == {
        "type": "overloaded_error",
        "message": "overloaded mid-stream",
    }


async def test_chat_in_band_error_raises_api_error(emu):
    emu.add(error_turn("broke", "partial"))
    client = oai(emu)
    with pytest.raises(openai.APIError, match="broke"):
        stream = await client.chat.completions.create(model="m", messages=USER, stream=True)
        async for _ in stream:
            pass


async def test_responses_in_band_error_is_an_error_event(emu):
    emu.add(error_turn("broke", "partial"))
    stream = await oai(emu).responses.create(model="m", input="x", stream=True)
    types = [ev.type async for ev in stream]
    assert types[-1] == "error"
    assert "response.completed" not in types


async def test_aborted_turn_is_served_as_an_error(emu):
    emu.add(aborted_turn())
    with pytest.raises(openai.InternalServerError, match="aborted"):
        await ask(emu, "openai_chat", True)


@pytest.mark.parametrize("api", APIS)
async def test_cut_turn_ends_without_terminal_frames(emu, api):
    emu.add(cut_turn("partial text", chunk_size=4))
    body = {"model": "m", "stream": True, "max_tokens": 5, "messages": USER, "input": "x"}
    path = {
        "openai_chat": "/v1/chat/completions",
        "openai_responses": "/v1/responses",
        "anthropic": "/v1/messages",
    }[api]
    r = await raw_post(emu, path, body)
    assert r.status_code == 200
    text = r.text
    for terminal in (
        "[DONE]",
        "response.completed",
        "message_stop",
        "message_delta",
        'finish_reason":"stop',
    ):
        assert terminal not in text
    assert "part" in text


async def test_raising_turn_drops_the_connection(emu):
    emu.add(raising_turn(RuntimeError("x"), "partial"))
    with pytest.raises(openai.APIConnectionError):
        stream = await oai(emu).chat.completions.create(model="m", messages=USER, stream=True)
        async for _ in stream:
            pass


# -- faults -----------------------------------------------------------------------------------

STATUS_TYPES = {
    401: ("AuthenticationError", "authentication_error"),
    404: ("NotFoundError", "not_found_error"),
    429: ("RateLimitError", "rate_limit_error"),
    500: ("InternalServerError", "api_error"),
    529: ("InternalServerError", "overloaded_error"),
}


@pytest.mark.parametrize("code", sorted(STATUS_TYPES))
@pytest.mark.parametrize("api", APIS)
async def test_status_fault(emu, api, code):
    headers = {"retry-after": "7"} if code == 429 else None
    emu.add("never sent", faults=[Fault.http_error(code, headers=headers)])
    with pytest.raises((openai.APIStatusError, anthropic.APIStatusError)) as info:
        await ask(emu, api, True)
    err = info.value
    assert err.status_code == code
    sdk_class, anthropic_type = STATUS_TYPES[code]
    if api == "anthropic":
        if code == 529:
            sdk_class = "OverloadedError"
        assert type(err).__name__ == sdk_class
        assert err.body["type"] == "error"
        assert err.body["error"]["type"] == anthropic_type
        assert err.response.headers["request-id"] == "req_emu_0"
    else:
        assert type(err).__name__ == sdk_class
        assert set(err.body) == {"message", "type", "param", "code"}
        assert err.response.headers["x-request-id"] == "req_emu_0"
    if code == 429:
        assert err.response.headers["retry-after"] == "7"
    emu.assert_complete()


async def test_status_fault_custom_body(emu):
    emu.add(Fault.http_error(400, body={"error": {"message": "custom", "type": "x"}}))
    with pytest.raises(openai.BadRequestError, match="custom"):
        await ask(emu, "openai_chat", False)


async def test_sdk_retries_through_a_429_slot(emu):
    """A bare status fault is a request slot of its own: the SDK retries and gets the turn."""
    emu.add(Fault.http_error(429, headers={"retry-after": "0"}), "finally")
    client = oai(emu, max_retries=2)
    r = await client.chat.completions.create(model="m", messages=USER)
    assert r.choices[0].message.content == "finally"
    assert len(emu.requests) == 2
    emu.assert_complete()


DROPPED_CONNECTION: dict[str, tuple[type[BaseException], ...]] = {
    "openai_chat": (openai.APIConnectionError,),
    "openai_responses": (openai.APIConnectionError,),
    # anthropic wraps a failed read of a streamed body in its own class since 2.17; the releases
    # before it in our range (>= 2.5) let httpx2's TransportError through
    "anthropic": (anthropic.APIConnectionError,)
    if tuple(int(p) for p in anthropic.__version__.split(".")[:2]) >= (2, 17)
    else (httpx2.TransportError,),
}
"""What each SDK raises for a connection dropped mid-stream: its own class (never another SDK's)."""


@pytest.mark.parametrize(
    ("api", "received"),
    [
        ("openai_chat", 3),
        ("openai_responses", 3),
        ("anthropic", 2),  # anthropic: ping is frame 2
    ],
)
async def test_disconnect_after_n_frames(emu, api, received):
    """A connection dropped mid-stream surfaces as that SDK's connection error."""
    emu.add(turn("hello world", chunk_size=2), faults=[Fault.truncate_after(3, disconnect=True)])
    seen: list[Any] = []
    with pytest.raises(DROPPED_CONNECTION[api]):
        if api == "anthropic":
            stream = await ant(emu).messages.create(
                model="m", max_tokens=5, messages=USER, stream=True
            )
        elif api == "openai_chat":
            stream = await oai(emu).chat.completions.create(model="m", messages=USER, stream=True)
        else:
            stream = await oai(emu).responses.create(model="m", input="x", stream=True)
        async for ev in stream:
            seen.append(ev)
    assert len(seen) == received


async def test_disconnect_on_a_json_response(emu):
    emu.add("hello", faults=[Fault.truncate_after(0, disconnect=True)])
    with pytest.raises(openai.APIConnectionError):
        await ask(emu, "openai_chat", False)


async def test_bare_disconnect_slot(emu):
    emu.add(Fault.truncate_after(0, disconnect=True))
    with pytest.raises(anthropic.APIConnectionError):
        await ask(emu, "anthropic", False)


@pytest.mark.parametrize(
    ("api", "terminal"),
    [
        ("openai_chat", None),
        ("openai_responses", "response.completed"),
        ("anthropic", "message_stop"),
    ],
)
async def test_no_terminal_frame(emu, api, terminal):
    emu.add("hello", faults=[Fault.drop_terminal()])
    if api == "openai_chat":
        r = await raw_post(
            emu, "/v1/chat/completions", {"model": "m", "messages": USER, "stream": True}
        )
        # the SDK swallows [DONE]: the finish_reason chunk goes too, or nothing would change
        assert "[DONE]" not in r.text and '"finish_reason":"stop"' not in r.text
        assert '"content":"hello"' in r.text
        return
    if api == "anthropic":
        stream = await ant(emu).messages.create(model="m", max_tokens=5, messages=USER, stream=True)
    else:
        stream = await oai(emu).responses.create(model="m", input="x", stream=True)
    types = [ev.type async for ev in stream]  # the body ends cleanly: no exception
    assert terminal not in types
    assert len(types) > 3


@pytest.mark.parametrize("api", APIS)
async def test_malformed_frame(emu, api):
    emu.add("hello", faults=[Fault.malformed_frame(1 if api != "anthropic" else 0)])
    with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK's SSE decoding
        await ask(emu, api, True)


async def test_malformed_json_body(emu):
    emu.add("hello", faults=[Fault.malformed_frame(0)])
    with pytest.raises((ValueError, openai.APIResponseValidationError)):
        await ask(emu, "openai_responses", False)
    r = emu.requests[0]
    assert r.api == "openai_responses"


@pytest.mark.parametrize("api", ["openai_chat", "anthropic"])
@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_stall_times_the_client_out(emu, api, stream):
    emu.add("hello", faults=[Fault.stall(30, after_frame=1)])
    # the Anthropic SDK lets a read timeout during iteration through unwrapped
    with pytest.raises((openai.APITimeoutError, anthropic.APITimeoutError, httpx2.ReadTimeout)):
        if api == "openai_chat":
            client = oai(emu, timeout=0.3)
            if stream:
                s = await client.chat.completions.create(model="m", messages=USER, stream=True)
                async for _ in s:
                    pass
            else:
                await client.chat.completions.create(model="m", messages=USER)
        else:
            client2 = ant(emu, timeout=0.3)
            if stream:
                s2 = await client2.messages.create(
                    model="m", max_tokens=5, messages=USER, stream=True
                )
                async for _ in s2:
                    pass
            else:
                await client2.messages.create(model="m", max_tokens=5, messages=USER)
    # the stall is still running server-side; stop() must interrupt it, not wait 30 s
    started = time.monotonic()
    emu.stop()
    assert time.monotonic() - started < 10
    assert _emulator_threads() == []  # the stalled handler ended, not abandoned


async def test_latency_slows_every_frame_but_keeps_content(emu):
    emu.add(
        "abcdef",
        faults=[Fault.latency(0.02)],
    )
    emu.chunk_size = 1
    started = time.monotonic()
    got = await ask(emu, "anthropic", True)
    assert got["text"] == "abcdef"
    # 6 deltas + start/stop/ping/message frames, 20 ms each (a lower bound only)
    assert time.monotonic() - started >= 0.2


async def test_turn_delay_is_per_frame_latency(emu):
    emu.add(turn("abc", chunk_size=1, delay_s=0.03))
    started = time.monotonic()
    got = await ask(emu, "openai_chat", True)
    assert got["text"] == "abc"
    assert time.monotonic() - started >= 0.15


@pytest.mark.parametrize(
    "make",
    [
        lambda: Fault.http_error(200),
        lambda: Fault.http_error(700),
        lambda: Fault.truncate_after(-1, disconnect=True),
        lambda: Fault.malformed_frame(1.5),
        lambda: Fault.stall(-1),
        lambda: Fault.latency("x"),
    ],
)
def test_fault_arguments_are_validated(make):
    with pytest.raises(ValueError, match="Fault"):
        make()


def test_bad_turns_and_faults_are_rejected():
    emu = ProviderEmulator()
    with pytest.raises(TypeError, match="turn"):
        emu.add(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="Fault"):
        emu.add("x", faults=["stall"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="alone"):
        emu.add(Fault.latency(1))


# -- requests, responders, strictness --------------------------------------------------------


async def test_requests_are_recorded(emu):
    emu.add("a", "b")
    await oai(emu).chat.completions.create(model="gpt-q", messages=USER, temperature=0.5)
    await ant(emu).messages.create(model="claude-q", max_tokens=9, messages=USER, stream=True)
    first, second = emu.requests
    assert (first.method, first.path, first.api, first.stream) == (
        "POST",
        "/v1/chat/completions",
        "openai_chat",
        False,
    )
    assert first.headers["authorization"] == "Bearer test"
    assert first.body["model"] == "gpt-q" and first.json is first.body
    assert first.model_request.temperature == 0.5
    assert first.turn == 0 and second.turn == 1
    assert (second.path, second.api, second.stream) == ("/v1/messages", "anthropic", True)
    assert "anthropic-version" in second.headers
    assert second.model_request.max_tokens == 9
    assert second.model_request.index == 1


async def test_responder_sees_the_parsed_chat_request(emu):
    seen: list[ModelRequest] = []

    def responder(req: ModelRequest) -> str:
        seen.append(req)
        return f"{len(req.messages)} messages"

    emu.add(responder)
    r = await oai(emu).chat.completions.create(
        model="m",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "add 1 and 2"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    chat_tool_call("c1", "add", '{"a": 1, "b": 2}'),
                    chat_tool_call("c2", "add", "{bad"),
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "3"},
            {"role": "tool", "tool_call_id": "c2", "content": "invalid"},
        ],
        tools=[
            {
                "type": "function",
                "function": {
                    "name": "add",
                    "description": "adds",
                    "parameters": {"type": "object"},
                },
            }
        ],
        tool_choice={"type": "function", "function": {"name": "add"}},
        parallel_tool_calls=False,
        max_completion_tokens=50,
    )
    assert r.choices[0].message.content == "4 messages"
    (req,) = seen
    assert req.system_prompt == "be brief"
    user, assistant, res1, res2 = req.messages
    assert isinstance(user, UserMessage) and user.text == "add 1 and 2"
    assert assistant.tool_calls == [
        ToolCall(id="c1", name="add", arguments={"a": 1, "b": 2}),
        ToolCall(id="c2", name="add", arguments={}, raw_arguments="{bad"),
    ]
    assert isinstance(res1, ToolResultMessage)
    assert (res1.tool_call_id, res1.tool_name, res1.text) == ("c1", "add", "3")
    assert res2.tool_call_id == "c2"
    assert req.tool_names == ["add"] and req.tools[0].description == "adds"
    assert req.tool_choice == {"type": "function", "name": "add"}
    assert req.parallel_tool_calls is False
    assert req.max_tokens == 50


async def test_responder_sees_the_parsed_responses_request(emu):
    seen: list[ModelRequest] = []

    async def responder(req: ModelRequest) -> ScriptedTurn:  # async responders work too
        await asyncio.sleep(0)
        seen.append(req)
        return turn("ok")

    emu.add(responder)
    await oai(emu).responses.create(
        model="m",
        instructions="sys",
        input=[
            {"role": "user", "content": [{"type": "input_text", "text": "go"}]},
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": [{"type": "summary_text", "text": "think"}],
            },
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "done"},
        ],
        tools=[
            {"type": "function", "name": "f", "parameters": {"type": "object"}, "strict": False}
        ],
        tool_choice="required",
    )
    (req,) = seen
    assert req.system_prompt == "sys"
    user, assistant, result = req.messages
    assert user.content == [TextContent(text="go")]
    assert [b.type for b in assistant.content] == ["thinking", "toolCall"]
    assert assistant.content[0].thinking == "think"
    assert (result.tool_call_id, result.tool_name, result.text) == ("c1", "f", "done")
    assert req.tool_choice == "required" and req.tool_names == ["f"]


async def test_responder_sees_the_parsed_anthropic_request(emu):
    seen: list[ModelRequest] = []
    emu.add(lambda req: seen.append(req) or "ok")
    await ant(emu).messages.create(
        model="m",
        max_tokens=5,
        system=[{"type": "text", "text": "sys"}],
        messages=[
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "tool_use", "id": "tu1", "name": "f", "input": {"x": 1}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "tu1",
                        "content": "bad",
                        "is_error": True,
                    },
                    {"type": "text", "text": "and now?"},
                ],
            },
        ],
        tools=[{"name": "f", "description": "d", "input_schema": {"type": "object"}}],
        tool_choice={"type": "any", "disable_parallel_tool_use": True},
    )
    (req,) = seen
    assert req.system_prompt == "sys"
    user, assistant, result, follow = req.messages
    assert assistant.content[0].signature == "s"
    assert assistant.tool_calls == [ToolCall(id="tu1", name="f", arguments={"x": 1})]
    assert (result.tool_name, result.is_error, result.text) == ("f", True, "bad")
    assert follow.text == "and now?"
    assert req.tool_choice == "required" and req.parallel_tool_calls is False


async def test_responder_error_is_a_500_and_a_violation(emu):
    def broken(req):
        raise KeyError("oops")

    emu.add(broken)
    with pytest.raises(openai.InternalServerError, match="responder"):
        await ask(emu, "openai_chat", False)
    with pytest.raises(AssertionError, match="KeyError"):
        emu.assert_complete()


async def test_extra_request_is_a_500_naming_it(emu):
    emu.add("only one")
    await ask(emu, "openai_chat", False)
    with pytest.raises(openai.InternalServerError, match=r"unexpected model call #1"):
        await ask(emu, "openai_chat", False)
    with pytest.raises(UnexpectedModelCall, match="all played"):
        emu.assert_complete()


async def test_extra_anthropic_request_gets_an_anthropic_error_body(emu):
    with pytest.raises(anthropic.InternalServerError) as info:
        await ask(emu, "anthropic", True)
    assert info.value.body["error"]["type"] == "api_error"
    assert "unexpected model call #0" in info.value.body["error"]["message"]


async def test_unplayed_turns_fail_assert_complete(emu):
    emu.add("a", turn(call("f")))
    await ask(emu, "anthropic", False)
    with pytest.raises(UnconsumedTurns, match=r"1 emulator turn\(s\).*call f"):
        emu.assert_complete()


async def test_non_strict_tolerates_leftovers_and_uses_fallback():
    with ProviderEmulator(["a", "b"], strict=False, fallback="fallback") as e:
        await ask(e, "openai_chat", False)
        e.assert_complete()
    with ProviderEmulator(fallback=lambda req: "again") as e:
        assert (await ask(e, "openai_chat", False))["text"] == "again"
        assert (await ask(e, "openai_chat", False))["text"] == "again"
        e.assert_complete()


async def test_unknown_endpoint_and_bad_bodies(emu):
    async with httpx2.AsyncClient(timeout=5, verify=_TLS) as client:
        r = await client.post(emu.base_url + "/v1/embeddings", json={"input": "x"})
        assert r.status_code == 404
        assert "does not serve POST /v1/embeddings" in r.json()["error"]["message"]
        r = await client.get(emu.base_url + "/v1/messages")
        assert r.status_code == 405 and r.json()["type"] == "error"
        r = await client.post(emu.base_url + "/v1/chat/completions", content=b"{not json")
        assert r.status_code == 400 and "not valid JSON" in r.json()["error"]["message"]
        r = await client.post(emu.base_url + "/v1/messages", json=[1, 2])
        assert r.status_code == 400 and "JSON object" in r.json()["error"]["message"]
    assert len(emu.requests) == 4
    assert emu.played == 0  # none of them consumed a turn
    with pytest.raises(EmulatorProtocolError, match="embeddings"):
        emu.assert_complete()


async def test_call_ids_continue_across_turns_like_the_scripted_provider(emu):
    emu.add(turn(call("f"), call("g")), turn(call("h")))
    first = await ask(emu, "openai_chat", True)
    second = await ask(emu, "anthropic", False)
    assert [c[0] for c in first["calls"]] == ["call_0", "call_1"]
    assert [c[0] for c in second["calls"]] == ["call_2"]


# -- lifecycle --------------------------------------------------------------------------------


def _emulator_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("provider-emulator")]


def test_start_stop_many_times_leaks_nothing():
    ports = []
    for _ in range(20):
        e = ProviderEmulator().start()
        ports.append(e.port)
        e.stop()
        e.stop()  # idempotent
        assert not e.running
    assert _emulator_threads() == []
    # the last port is free again
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", ports[-1]))


async def test_stop_closes_idle_keep_alive_connections():
    e = ProviderEmulator(["a", "b"]).start()
    client = oai(e)
    await client.chat.completions.create(model="m", messages=USER)
    await client.chat.completions.create(model="m", messages=USER)  # reuses the connection
    assert len(_emulator_threads()) >= 2  # server + a connection handler parked in keep-alive
    e.stop()
    assert _emulator_threads() == []
    await client.close()


def test_addresses_need_a_started_emulator():
    e = ProviderEmulator()
    with pytest.raises(RuntimeError, match="not started"):
        _ = e.base_url
    with e:
        assert e.base_url.startswith("http://127.0.0.1:")
        assert e.openai_base_url == e.base_url + "/v1"
        assert e.anthropic_base_url == e.base_url
        with pytest.raises(RuntimeError, match="already started"):
            e.start()


def test_serve_and_main_emulator_run_until_stopped():
    stop = threading.Event()
    ready: list[ProviderEmulator] = []
    result: list[ProviderEmulator] = []

    def on_ready(e: ProviderEmulator) -> None:
        ready.append(e)
        client = openai.OpenAI(base_url=e.openai_base_url, api_key="x", max_retries=0)
        r = client.chat.completions.create(model="m", messages=USER)
        assert r.choices[0].message.content == "scripted"
        r = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "yo"}])
        assert r.choices[0].message.content == "echo: yo"
        stop.set()

    result.append(serve(["scripted"], on_ready=on_ready, stop_event=stop))
    assert len(result[0].requests) == 2 and not result[0].running

    lines: list[str] = []
    stop2 = threading.Event()
    thread = threading.Thread(
        target=lambda: lines.append(
            str(main_emulator(["hi"], stop_event=stop2, write=lines.append))
        )
    )
    thread.start()
    for _ in range(200):
        if lines:
            break
        time.sleep(0.01)
    stop2.set()
    thread.join(5)
    assert lines[0].startswith("provider emulator listening on http://127.0.0.1:")
    assert lines[-1] == "0"
    assert _emulator_threads() == []


def test_main_emulator_reports_a_busy_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        lines: list[str] = []
        assert main_emulator(port=s.getsockname()[1], write=lines.append) == 2
        assert lines[0].startswith("error:")


# -- cassettes --------------------------------------------------------------------------------


async def test_from_cassette_serves_recorded_streams(conformance_cassettes):
    path = (
        conformance_cassettes
        / "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml"
    )
    with ProviderEmulator.from_cassette(path) as e:
        async with ant(e).messages.stream(model="m", max_tokens=5, messages=USER) as s:
            m = await s.get_final_message()
        assert [b.type for b in m.content] == ["text", "tool_use", "tool_use"]
        assert [b.input for b in m.content[1:]] == [
            {"password": "mellon"},
            {"password": "radiance"},
        ]
        assert e.remaining == 1


async def test_from_cassette_serves_gzip_json_and_errors(conformance_cassettes):
    sync = (
        conformance_cassettes / "mirascope/test_call_with_tools/openai_gpt_4o_completions/sync.yaml"
    )
    with ProviderEmulator.from_cassette(sync, strict=False) as e:
        r = await oai(e).chat.completions.create(model="m", messages=USER)
        assert len(r.choices[0].message.tool_calls) == 2
    err = (
        conformance_cassettes
        / "mirascope/test_model_not_found_stream/openai_gpt_4o_completions.yaml"
    )
    with ProviderEmulator.from_cassette(err, strict=False) as e:
        with pytest.raises(openai.NotFoundError, match="does not exist"):
            await ask(e, "openai_chat", True)


async def test_from_cassette_faults_apply_to_recorded_frames(conformance_cassettes):
    path = (
        conformance_cassettes
        / "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml"
    )
    with pytest.raises(ValueError, match="no interaction 9"):
        ProviderEmulator.from_cassette(path, faults={9: [Fault.drop_terminal()]})
    with ProviderEmulator.from_cassette(
        path,
        strict=False,
        faults={0: [Fault.truncate_after(4, disconnect=True)], 1: [Fault.drop_terminal()]},
    ) as e:
        client = ant(e)
        seen: list[str] = []
        with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
            stream = await client.messages.create(
                model="m", max_tokens=5, messages=USER, stream=True
            )
            async for ev in stream:
                seen.append(ev.type)
        # the recording's frames 0-3 (its ping comes later, as frame 4)
        assert seen == [
            "message_start",
            "content_block_start",
            "content_block_delta",
            "content_block_delta",
        ]
        stream = await client.messages.create(model="m", max_tokens=5, messages=USER, stream=True)
        types = [ev.type async for ev in stream]
        assert types[-1] == "message_delta"


def test_from_cassette_rejects_a_non_cassette(tmp_path):
    bad = tmp_path / "x.yaml"
    bad.write_text("just: a mapping\n")
    with pytest.raises(ValueError, match="vcrpy cassette"):
        ProviderEmulator.from_cassette(bad)
    with pytest.raises(ValueError, match="cannot load cassette"):
        ProviderEmulator.from_cassette(tmp_path / "missing.yaml")


# -- the pytest fixture ----------------------------------------------------------------------


async def test_provider_emulator_fixture(provider_emulator):
    assert provider_emulator.running
    provider_emulator.add("from the fixture")
    assert (await ask(provider_emulator, "anthropic", True))["text"] == "from the fixture"


async def test_an_emulator_bug_is_a_clear_500_not_a_hang(emu, monkeypatch):
    import openprogram_testing.transport.emulator.server as module

    def broken(*args: Any) -> Any:
        raise RuntimeError("parser exploded")

    monkeypatch.setattr(module, "model_request", broken)
    emu.add("x")
    with pytest.raises(openai.InternalServerError, match=r"internal error.*parser exploded"):
        await ask(emu, "openai_chat", True)
    with pytest.raises(EmulatorProtocolError, match="parser exploded"):
        emu.assert_complete()


def test_fixture_and_readme_example_in_a_pytest_run(pytester):
    """One inner pytest run (each costs a plugin load): the fixture fails a test that leaves a
    turn unplayed, stops its emulator anyway, and the first example of docs/emulator.md passes."""
    from pathlib import Path

    page = Path(__file__).resolve().parents[2] / "docs" / "emulator.md"
    section = page.read_text(encoding="utf-8")
    code = section[section.index("```python\n") + 10 :]
    code = code[: code.index("```")]
    pytester.makepyfile(
        test_emulator_readme_example=code,
        test_fixture_teardown="""
        import threading

        def test_leftover(provider_emulator):
            provider_emulator.add("never requested")

        def test_after():
            assert not [t for t in threading.enumerate()
                        if t.name.startswith("provider-emulator")]
        """,
    )
    pytester.makeini(
        "[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(
        ["*ERROR at teardown of test_leftover*", "*UnconsumedTurns*never requested*"]
    )


async def test_concurrent_requests_are_served_in_arrival_order(emu):
    release = threading.Event()

    def slow(req: ModelRequest) -> str:
        release.wait(5)  # holds its turn while the second request arrives
        return "first"

    emu.add(slow, "second")
    first = asyncio.ensure_future(ask(emu, "openai_chat", True))
    while not emu.requests:
        await asyncio.sleep(0.01)
    second = asyncio.ensure_future(ask(emu, "anthropic", False))
    await asyncio.sleep(0.05)
    assert not second.done()  # the script is played in order: it waits for turn 0
    release.set()
    assert (await first)["text"] == "first"
    assert (await second)["text"] == "second"
    assert [r.turn for r in emu.requests] == [0, 1]


async def test_raising_turn_on_a_json_request_drops_the_connection(emu):
    emu.add(raising_turn(RuntimeError("x"), "partial"))
    with pytest.raises(anthropic.APIConnectionError):
        await ask(emu, "anthropic", False)


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "json"])
async def test_responses_redacted_reasoning_is_encrypted_content_only(emu, stream):
    emu.add(turn(think("opaque", redacted=True), "ok"))
    got = await ask(emu, "openai_responses", stream)
    assert got["thinking"] == [("", "opaque")] and got["text"] == "ok"


async def test_anthropic_beta_query_string_is_served_and_recorded(emu):
    emu.add("beta ok")
    # recorded beta clients call /v1/messages?beta=true (this SDK version adds no query itself)
    m = await ant(emu).messages.create(
        model="m", max_tokens=5, messages=USER, extra_query={"beta": "true"}
    )
    assert m.content[0].text == "beta ok"
    (req,) = emu.requests
    assert (req.path, req.query, req.api) == ("/v1/messages", "beta=true", "anthropic")
