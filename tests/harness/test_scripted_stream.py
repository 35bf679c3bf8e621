"""The scripted provider's stream, iterated by hand: what the loop relies on from any provider.

It is a plain async iterator (not an async generator), so these pin what an async generator
gave for free: nothing happens before the first event is asked for, events are built one at a
time (the partial message grows as on the wire), a cancel token ends it with ``aborted``, and
once it ended (terminal event, cut, scripted exception, responder exception) it stays ended.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram.cancel import CancelToken
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import UserMessage
from openprogram_testing import (
    ScriptedProvider,
    call,
    cut_turn,
    error_turn,
    raising_turn,
    turn,
)


def _context() -> Context:
    return Context(None, [UserMessage(content="hi")], [])


async def _drain(stream: Any, limit: int = 50) -> list[Any]:
    """The events of ``stream`` (at most ``limit``: a stream that never ends fails, not hangs)."""
    events = []
    async for event in stream:
        events.append(event)
        if len(events) >= limit:
            break
    return events


def test_nothing_is_recorded_or_played_until_the_first_event_is_asked_for() -> None:
    provider = ScriptedProvider(["one"])
    stream = provider.stream("m", _context(), StreamOptions())
    assert provider.requests == [] and provider.played == 0
    events = asyncio.run(_drain(stream))
    assert [e.type for e in events] == ["start", "text_start", "text_delta", "text_end", "done"]
    assert len(provider.requests) == 1 and provider.played == 1


def test_events_are_built_one_at_a_time() -> None:
    provider = ScriptedProvider([turn("ab", call("add", {"a": 1}, unknown=True), chunk_size=1)])

    async def go() -> list[tuple[str, int, str]]:
        seen = []
        async for event in provider.stream("m", _context(), StreamOptions()):
            message = event.partial
            text = message.content[0].text if message.content else ""
            seen.append((event.type, len(message.content), text))
        return seen

    seen = asyncio.run(go())
    assert seen[:5] == [
        ("start", 0, ""),
        ("text_start", 1, ""),
        ("text_delta", 1, "a"),
        ("text_delta", 1, "ab"),
        ("text_end", 1, "ab"),
    ]
    assert seen[5][:2] == ("toolcall_start", 2) and seen[-1][0] == "done"


def test_an_ended_stream_stays_ended() -> None:
    async def go(provider: ScriptedProvider) -> tuple[list[str], list[str]]:
        stream = provider.stream("m", _context(), StreamOptions())
        first = [e.type for e in await _drain(stream)]
        again = [e.type for e in await _drain(stream)]
        return first, again

    first, again = asyncio.run(go(ScriptedProvider(["x"])))
    assert first[-1] == "done" and again == []
    first, again = asyncio.run(go(ScriptedProvider([cut_turn("partial")])))
    assert first == ["start", "text_start", "text_delta", "text_end"] and again == []
    first, again = asyncio.run(go(ScriptedProvider([error_turn("boom", status=503)])))
    assert first == ["start", "error"] and again == []


@pytest.mark.parametrize("where", ["turn", "responder"])
def test_a_scripted_or_responder_exception_ends_the_stream(where: str) -> None:
    def responder(request: Any) -> str:
        raise LookupError("responder failed")

    spec: Any = raising_turn(LookupError("turn failed"), "text") if where == "turn" else responder
    provider = ScriptedProvider([spec])

    async def go() -> tuple[list[str], list[str]]:
        stream = provider.stream("m", _context(), StreamOptions())
        seen: list[str] = []
        with pytest.raises(LookupError, match=f"{where} failed"):
            async for event in stream:
                seen.append(event.type)
        return seen, [e.type for e in await _drain(stream)]

    seen, again = asyncio.run(go())
    assert again == [] and len(provider.requests) == 1
    assert seen == (
        [] if where == "responder" else ["start", "text_start", "text_delta", "text_end"]
    )


def test_a_cancel_token_set_while_streaming_ends_it_aborted() -> None:
    cancel = CancelToken()
    provider = ScriptedProvider([turn("abcdef", chunk_size=1)])

    async def go() -> tuple[list[str], list[str]]:
        stream = provider.stream("m", _context(), StreamOptions(cancel=cancel))
        seen = []
        async for event in stream:
            seen.append(event.type)
            if event.type == "text_delta":
                cancel.cancel()
        return seen, [e.type for e in await _drain(stream)]

    seen, again = asyncio.run(go())
    assert seen == ["start", "text_start", "text_delta", "error"] and again == []


def test_past_the_script_the_stream_is_an_error_naming_the_call() -> None:
    provider = ScriptedProvider([])
    events = asyncio.run(_drain(provider.stream("m", _context(), StreamOptions())))
    assert [e.type for e in events] == ["start", "error"]
    assert events[-1].message.error_message.startswith("unexpected model call #0")
    assert len(provider.violations) == 1 and len(provider.requests) == 1
