"""Hostile inputs at the loop end cleanly: raising steering/follow-up sources, unserialisable tool
values, ``BaseException``s from async tools, tools that never return, deep or non-object argument
JSON, cancel tokens fired by tools, and JSON Schema ``format`` checks."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from openprogram import (
    AgentContext,
    AgentEnd,
    AgentEvent,
    AgentStream,
    CancelToken,
    LoopConfig,
    ToolResultMessage,
    agent_loop,
)
from openprogram.tools import json_schema_validator
from openprogram_testing import ScriptedProvider, call, turn
from tests.runtime._loop import FAILED_REPLY, USER, add_tool, run_order, tokens

ROOT = Path(__file__).resolve().parents[2]


async def _drain(stream: AgentStream) -> tuple[list[AgentEvent], BaseException | None]:
    events: list[AgentEvent] = []
    try:
        async for event in stream:
            events.append(event)
    except BaseException as exc:  # what the run re-raises after agent_end
        return events, exc
    return events, None


def _run(
    provider: Any, tools: list[Any], **config: Any
) -> tuple[list[AgentEvent], BaseException | None, AgentStream]:
    context = AgentContext(tools=tools)
    stream = agent_loop("go", context, LoopConfig(provider=provider, **config))
    loop = asyncio.new_event_loop()  # not asyncio.run: a KeyboardInterrupt must stay catchable
    try:
        events, exc = loop.run_until_complete(_drain(stream))
    finally:
        loop.close()
    return events, exc, stream


def _end(events: list[AgentEvent]) -> AgentEnd:
    assert isinstance(events[-1], AgentEnd), tokens(events)
    return events[-1]


def _results(events: list[AgentEvent]) -> list[ToolResultMessage]:
    return [m for m in _end(events).messages if isinstance(m, ToolResultMessage)]


def _steering(script: dict[int, list[str] | BaseException]) -> Callable[[], list[str]]:
    """A steering source scripted by poll number (the loop polls once before the model call and
    once after each tool call): on a poll named in ``script`` it hands over those messages or
    raises that exception, on any other it has nothing."""
    polls = 0

    def steering() -> list[str]:
        nonlocal polls
        polls += 1
        step = script.get(polls, [])
        if isinstance(step, BaseException):
            raise step
        return step

    return steering


def _two_calls() -> ScriptedProvider:
    return ScriptedProvider(
        [turn(call("add", {"a": 1, "b": 2}, id="t1"), call("add", {"a": 3, "b": 4}, id="t2"))]
    )


# -- raising steering / follow-up sources --------------------------------------------------------


def test_a_steering_source_raising_mid_batch_closes_the_batch_and_reraises() -> None:
    steering = _steering({2: RuntimeError("source broke")})  # the poll after call t1
    events, exc, stream = _run(_two_calls(), [add_tool()], get_steering_messages=steering)
    assert isinstance(exc, RuntimeError) and str(exc) == "source broke"
    assert tokens(events)[-3:] == ["me(toolResult)", "turn_end(2)", "agent_end(error)"]
    assert [(r.tool_call_id, r.text) for r in _results(events)] == [
        ("t1", "3"),
        ("t2", "Cancelled"),
    ]
    assert stream.termination == "error"


def test_steering_handed_over_before_the_source_raised_is_reported_undelivered() -> None:
    steering = _steering({2: ["change of plan"], 3: ValueError("second poll broke")})
    events, exc, stream = _run(
        _two_calls(), [add_tool()], get_steering_messages=steering, steering_mode="after_batch"
    )
    assert isinstance(exc, ValueError)
    end = _end(events)
    assert end.termination == "error"
    assert [m.text for m in end.undelivered] == ["change of plan"]
    assert [m.text for m in stream.undelivered] == ["change of plan"]
    assert tokens(events)[-2:] == ["turn_end(2)", "agent_end(error)"]


def test_the_first_steering_poll_raising_closes_round_zero() -> None:
    def steering() -> list[str]:
        raise RuntimeError("broken before the model")

    provider = ScriptedProvider(["never asked"])
    events, exc, stream = _run(provider, [], get_steering_messages=steering)
    assert isinstance(exc, RuntimeError)
    assert tokens(events) == run_order([*USER, *FAILED_REPLY], end="error")
    failed = _end(events).messages[-1]
    assert failed.error_message == ("Steering or follow-up source failed: broken before the model")
    assert stream.model_calls == 0 and provider.remaining == 1


def test_a_follow_up_source_raising_ends_the_run_error_and_reraises() -> None:
    def follow_up() -> list[str]:
        raise LookupError("no follow-ups today")

    events, exc, _ = _run(ScriptedProvider(["done"]), [], get_follow_up_messages=follow_up)
    assert isinstance(exc, LookupError)
    assert tokens(events)[-2:] == ["turn_end(0)", "agent_end(error)"]


def test_a_source_raising_a_base_exception_aborts_and_reraises_it() -> None:
    steering = _steering({2: KeyboardInterrupt()})
    events, exc, _ = _run(_two_calls(), [add_tool()], get_steering_messages=steering)
    assert isinstance(exc, KeyboardInterrupt)
    assert _end(events).termination == "aborted"
    assert [r.text for r in _results(events)] == ["3", "Cancelled"]


# -- values that cannot become text; exceptions whose __str__ raises -----------------------------


class _BadStr:
    def __str__(self) -> str:
        raise RuntimeError("no str for you")

    __repr__ = __str__


class _BadDump:
    def model_dump(self, mode: str = "python") -> Any:
        raise ValueError("dump failed")


class _BadMessage(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no message either")


def _deep() -> list[Any]:
    value: list[Any] = []
    for _ in range(5000):
        value = [value]
    return value


def _tool(execute: Any, name: str = "t") -> dict[str, Any]:
    return {"spec": {"name": name, "parameters": {"type": "object"}}, "execute": execute}


@pytest.mark.parametrize("kind", ["sync", "async", "timed"])
@pytest.mark.parametrize("value", [_deep, _BadStr, _BadDump], ids=["deep", "bad_str", "bad_dump"])
def test_unserialisable_values_become_error_results_on_every_path(kind: str, value: Any) -> None:
    def sync_tool(args: dict[str, Any]) -> Any:
        return value()

    async def async_tool(args: dict[str, Any]) -> Any:
        return value()

    provider = ScriptedProvider([turn(call("t", {})), "recovered"])
    execute = async_tool if kind == "async" else sync_tool
    timeout = 5.0 if kind == "timed" else None
    events, exc, stream = _run(provider, [_tool(execute)], tool_timeout_s=timeout)
    assert exc is None and stream.termination == "completed"
    (result,) = _results(events)
    assert result.is_error
    assert result.text.startswith("Tool t returned a value that cannot be turned into text: ")


@pytest.mark.parametrize("kind", ["sync", "async", "timed"])
def test_an_exception_whose_str_raises_is_reported_by_its_class_name(kind: str) -> None:
    def sync_tool(args: dict[str, Any]) -> Any:
        raise _BadMessage

    async def async_tool(args: dict[str, Any]) -> Any:
        raise _BadMessage

    provider = ScriptedProvider([turn(call("t", {})), "recovered"])
    execute = async_tool if kind == "async" else sync_tool
    events, exc, _ = _run(
        provider, [_tool(execute)], tool_timeout_s=5.0 if kind == "timed" else None
    )
    assert exc is None
    (result,) = _results(events)
    assert result.is_error and result.text == "_BadMessage"


# -- KeyboardInterrupt / SystemExit from async tools ---------------------------------------------


@pytest.mark.parametrize("error", [KeyboardInterrupt, SystemExit])
@pytest.mark.parametrize("kind", ["sync", "async"])
def test_base_exceptions_from_tools_abort_and_reraise_after_agent_end(
    kind: str, error: type[BaseException]
) -> None:
    def sync_tool(args: dict[str, Any]) -> Any:
        raise error()

    async def async_tool(args: dict[str, Any]) -> Any:
        raise error()

    provider = ScriptedProvider([turn(call("t", {}, id="c1"), call("t", {}, id="c2"))])
    execute = async_tool if kind == "async" else sync_tool
    events, exc, _ = _run(provider, [_tool(execute)])
    assert isinstance(exc, error)
    assert _end(events).termination == "aborted"
    assert [r.text for r in _results(events)] == ["Cancelled", "Cancelled"]


# -- tools that never return ------------------------------------------------------------------------


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
    )


def test_a_timed_sync_tool_that_never_returns_lets_asyncio_run_and_the_process_finish() -> None:
    started = time.monotonic()
    proc = _python(
        """
        import asyncio, threading
        from openprogram import AgentContext, LoopConfig, agent_loop
        from openprogram_testing import ScriptedProvider, call, turn

        def hang(args):
            threading.Event().wait()  # never returns

        tool = {"spec": {"name": "hang", "parameters": {"type": "object"}}, "execute": hang}
        provider = ScriptedProvider([turn(call("hang", {})), "gave up waiting"])

        async def main():
            stream = agent_loop("go", AgentContext(tools=[tool]),
                                LoopConfig(provider=provider, tool_timeout_s=0.2))
            messages = await stream
            return messages[2].text, messages[-1].text

        print(asyncio.run(main()))
        """
    )
    assert proc.returncode == 0, proc.stderr
    assert "('Tool hang timed out after 0.2s', 'gave up waiting')" in proc.stdout
    assert time.monotonic() - started < 30


def test_runtime_exec_with_a_hanging_sync_tool_and_one_swallowing_cancellation_returns() -> None:
    proc = _python(
        """
        import asyncio, threading, time
        from openprogram import Runtime
        from openprogram_testing import ScriptedProvider, call, turn

        def hang(args):
            threading.Event().wait()

        async def stubborn(args):
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    continue  # swallows cancellation

        tools = [
            {"spec": {"name": "hang", "parameters": {"type": "object"}}, "execute": hang},
            {"spec": {"name": "stubborn", "parameters": {"type": "object"}}, "execute": stubborn},
        ]
        provider = ScriptedProvider([turn(call("hang", {}), call("stubborn", {})), "done"])
        runtime = Runtime(provider, "m", tool_timeout_s=0.2)
        started = time.monotonic()
        print(runtime.exec("go", tools=tools), round(time.monotonic() - started))
        """
    )
    assert proc.returncode == 0, proc.stderr
    text, seconds = proc.stdout.split()
    assert text == "done" and int(seconds) <= 5


# -- argument JSON: too deep, not an object -------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        ("[" * 1000 + "]" * 1000, "arguments are not valid JSON (nested too deeply)"),
        ('{"a":' * 3000 + "1" + "}" * 3000, "arguments are not valid JSON (nested too deeply)"),
        ("[1, 2]", "arguments must be a JSON object, got an array"),
        ('"text"', "arguments must be a JSON object, got a string"),
        ("42", "arguments must be a JSON object, got a number"),
        ("null", "arguments must be a JSON object, got null"),
        ("{not json", "arguments are not valid JSON"),
    ],
    ids=["deep-array", "deep-object", "array", "string", "number", "null", "broken"],
)
def test_bad_argument_json_is_fed_back_as_invalid_arguments(raw: str, problem: str) -> None:
    provider = ScriptedProvider([turn(call("add", raw=raw)), "recovered"])
    events, exc, stream = _run(provider, [add_tool()])
    assert exc is None and stream.termination == "completed" and stream.model_calls == 2
    (result,) = _results(events)
    assert result.is_error
    lines = result.text.splitlines()
    assert lines[:2] == ['Validation failed for tool "add":', f"  - root: {problem}"]
    assert lines[3] == "Received arguments:" and result.text.endswith(raw)


# -- a cancel token fired by a tool ---------------------------------------------------------------


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_cancel_token_fired_by_a_tool_cancels_the_rest_of_its_batch(kind: str) -> None:
    token = CancelToken()
    ran: list[str] = []

    def sync_fire(args: dict[str, Any]) -> str:
        ran.append("fire")
        token.cancel("user pressed stop")
        return "fired"

    async def async_fire(args: dict[str, Any]) -> str:
        return sync_fire(args)

    def other(args: dict[str, Any]) -> str:
        ran.append("other")
        return "ran"

    provider = ScriptedProvider(
        [turn(call("fire", {}, id="c1"), call("other", {}, id="c2"), call("other", {}, id="c3"))]
    )
    fire = _tool(async_fire if kind == "async" else sync_fire, "fire")
    events, exc, stream = _run(provider, [fire, _tool(other, "other")], cancel=token)
    assert exc is None and ran == ["fire"]
    assert [r.text for r in _results(events)] == ["fired", "Cancelled", "Cancelled"]
    assert stream.termination == "aborted" and stream.model_calls == 1


# -- format checks ------------------------------------------------------------------------------

_FORMATS = {
    "date-time": ("2024-05-01T12:30:00Z", "2024-13-01 noon"),
    "date": ("2024-05-01", "2024-02-30x"),
    "time": ("12:30:00Z", "25:61"),
    "duration": ("P3DT4H", "three days"),
    "email": ("ada@example.com", "not-an-email"),
    "hostname": ("api.example.com", "-bad-.example..com"),
    "idn-hostname": ("bücher.example", "-bad-.example..com"),
    "ipv4": ("192.168.0.1", "999.1.1.1"),
    "ipv6": ("::1", "12345::"),
    "uri": ("https://example.com/a?b=c", "not a uri"),
    "uri-reference": ("/relative/path", "\\\\bad uri ref"),
    "iri": ("https://例え.jp/パス", "no scheme here"),
    "iri-reference": ("/パス?q=1", "bad ref\\with spaces"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    "regex": ("^a+$", "(unclosed"),
    "json-pointer": ("/a/b", "a/b"),
    "relative-json-pointer": ("0/a", "/a"),
    "uri-template": ("https://example.com/{id}", "https://example.com/{id"),
}


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_string_formats_are_checked(fmt: str) -> None:
    good, bad = _FORMATS[fmt]
    validate = json_schema_validator(
        {"type": "object", "properties": {"v": {"type": "string", "format": fmt}}}
    )
    assert validate({"v": good})[1] == [], fmt
    problems = validate({"v": bad})[1]
    assert problems and problems[0][0] == "v", (fmt, bad)
