"""Tool execution outcomes of the contract, each with its exact result text."""

from __future__ import annotations

import asyncio
import json

import pytest

from openprogram import CancelToken, ImageContent, TextContent, ToolResult, ToolResultMessage
from openprogram_testing import ScriptedProvider, call, turn
from tests.runtime._loop import add_tool, run, tokens


def results_of(events: list) -> list[ToolResultMessage]:
    return [m for m in events[-1].messages if isinstance(m, ToolResultMessage)]


def one_call_then_text(
    name: str, args: dict | None = None, *, raw: str | None = None, unknown: bool = False
) -> ScriptedProvider:
    return ScriptedProvider(
        [turn(call(name, args, raw=raw, id="c1", unknown=unknown)), "recovered"]
    )


def test_unknown_tool_is_an_error_result_and_the_loop_continues() -> None:
    events, stream = run(one_call_then_text("nope", unknown=True), tools=[add_tool()])
    (r,) = results_of(events)
    assert (r.text, r.is_error) == ("Tool nope not found", True)
    assert stream.model_calls == 2 and stream.termination == "completed"


def test_invalid_arguments_list_every_problem_with_nested_paths() -> None:
    tool = {
        "spec": {
            "name": "book",
            "parameters": {
                "type": "object",
                "properties": {
                    "guests": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "name": {"type": "string"},
                                "email": {"type": "string", "format": "email"},
                            },
                            "required": ["name"],
                        },
                    },
                    "nights": {"type": "integer", "minimum": 1},
                },
                "required": ["guests", "nights"],
            },
        },
        "execute": lambda args: "booked",
    }
    args = {
        "guests": [{"name": "Ann", "email": "not-an-email"}, {"email": "b@example.com"}],
        "nights": 0,
    }
    events, stream = run(one_call_then_text("book", args), tools=[tool])
    (r,) = results_of(events)
    assert r.is_error
    assert r.text == "\n".join(
        [
            'Validation failed for tool "book":',
            "  - guests.0.email: 'not-an-email' is not a 'email'",
            "  - guests.1: 'name' is a required property",
            "  - nights: 0 is less than the minimum of 1",
            "",
            "Received arguments:",
            json.dumps(args, indent=2),
        ]
    )
    assert stream.model_calls == 2


def test_missing_and_wrong_typed_arguments_at_root() -> None:
    events, _ = run(one_call_then_text("add", {"a": "x"}), tools=[add_tool()])
    (r,) = results_of(events)
    assert r.text.splitlines()[:3] == [
        'Validation failed for tool "add":',
        "  - root: 'b' is a required property",
        "  - a: 'x' is not of type 'integer'",
    ]


def test_argument_json_that_does_not_parse_is_an_invalid_arguments_result() -> None:
    events, stream = run(one_call_then_text("add", raw='{"a": 1,'), tools=[add_tool()])
    (r,) = results_of(events)
    assert r.is_error
    assert r.text == (
        'Validation failed for tool "add":\n  - root: arguments are not valid JSON\n\n'
        'Received arguments:\n{"a": 1,'
    )
    assert stream.termination == "completed"


@pytest.mark.parametrize(
    ("exc", "text"),
    [
        (ValueError("bad value"), "bad value"),
        (RuntimeError(), "RuntimeError"),
        (KeyError("k"), "'k'"),
    ],
)
def test_a_raising_tool_becomes_an_error_result(exc: Exception, text: str) -> None:
    def execute(args: dict) -> str:
        raise exc

    tool = {"spec": {"name": "boom", "parameters": {"type": "object"}}, "execute": execute}
    events, stream = run(one_call_then_text("boom"), tools=[tool])
    (r,) = results_of(events)
    assert (r.text, r.is_error) == (text, True)
    assert stream.model_calls == 2 and stream.termination == "completed"


def test_an_async_raising_tool_becomes_an_error_result() -> None:
    async def execute(args: dict) -> str:
        await asyncio.sleep(0)
        raise RuntimeError()

    tool = {"spec": {"name": "boom", "parameters": {"type": "object"}}, "execute": execute}
    events, _ = run(one_call_then_text("boom"), tools=[tool])
    assert results_of(events)[0].text == "RuntimeError"


def test_an_async_tool_that_times_out() -> None:
    async def execute(args: dict) -> str:
        await asyncio.sleep(5)
        return "never"

    tool = {"spec": {"name": "slow", "parameters": {"type": "object"}}, "execute": execute}
    events, stream = run(one_call_then_text("slow"), tools=[tool], tool_timeout_s=0.05)
    (r,) = results_of(events)
    assert (r.text, r.is_error) == ("Tool slow timed out after 0.05s", True)
    assert stream.termination == "completed"


def test_a_sync_tool_that_times_out() -> None:
    import time

    def execute(args: dict) -> str:
        time.sleep(0.3)
        return "late"

    tool = {"spec": {"name": "slow", "parameters": {"type": "object"}}, "execute": execute}
    events, _ = run(one_call_then_text("slow"), tools=[tool], tool_timeout_s=0.05)
    assert results_of(events)[0].text == "Tool slow timed out after 0.05s"


def test_a_base_exception_from_a_tool_aborts_with_a_result_for_every_call() -> None:
    def execute(args: dict) -> str:
        raise KeyboardInterrupt

    tool = {"spec": {"name": "stop", "parameters": {"type": "object"}}, "execute": execute}
    provider = ScriptedProvider([turn(call("stop", id="a"), call("add", {"a": 1, "b": 2}, id="b"))])
    events: list = []

    async def consume() -> None:
        from openprogram import AgentContext, LoopConfig, agent_loop

        stream = agent_loop(
            "hi", AgentContext(tools=[tool, add_tool()]), LoopConfig(provider=provider)
        )
        async for e in stream:
            events.append(e)

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(consume())
    assert tokens(events)[-2:] == ["turn_end(2)", "agent_end(aborted)"]
    results = results_of(events)
    assert [(r.tool_call_id, r.text, r.is_error) for r in results] == [
        ("a", "Cancelled", True),
        ("b", "Cancelled", True),
    ]


def test_cancellation_mid_tool() -> None:
    token = CancelToken()

    async def execute(args: dict) -> str:
        token.cancel()
        await asyncio.sleep(5)
        return "never"

    tool = {"spec": {"name": "long", "parameters": {"type": "object"}}, "execute": execute}
    provider = ScriptedProvider([turn(call("long", id="a"), call("long", id="b"))])
    events, stream = run(provider, tools=[tool], cancel=token)
    assert stream.termination == "aborted"
    assert [(r.tool_call_id, r.text) for r in results_of(events)] == [
        ("a", "Cancelled"),
        ("b", "Cancelled"),
    ]
    assert stream.model_calls == 1
    assert tokens(events)[-2:] == ["turn_end(2)", "agent_end(aborted)"]


def test_cancellation_mid_stream() -> None:
    token = CancelToken()
    ran: list = []

    def responder(request):  # cancel as soon as the model is asked
        token.cancel()
        return turn("partial text", call("add", {"a": 1, "b": 2}), chunk_size=2)

    provider = ScriptedProvider([responder])
    events, stream = run(provider, tools=[add_tool(ran)], cancel=token)
    assert stream.termination == "aborted"
    message = events[-1].messages[-1]
    assert message.stop_reason == "aborted"
    assert ran == []
    assert tokens(events)[-3:] == ["me(assistant)", "turn_end(0)", "agent_end(aborted)"]


def test_cancelled_before_the_first_model_call_never_calls_the_model() -> None:
    token = CancelToken()
    token.cancel()
    provider = ScriptedProvider([])
    events, stream = run(provider, cancel=token)
    assert provider.requests == [] and stream.model_calls == 0
    assert stream.termination == "aborted"


def test_tool_result_shapes() -> None:
    outcomes = {
        "s": "plain",
        "n": None,
        "d": {"x": [1, 2]},
        "r": ToolResult(
            content=[TextContent(text="a"), ImageContent(data_b64="AA==", mime_type="image/png")],
            details={"k": 1},
            is_error=True,
        ),
    }
    tools = [
        {
            "spec": {"name": name, "parameters": {"type": "object"}},
            "execute": (lambda v: lambda args: v)(value),
        }
        for name, value in outcomes.items()
    ]
    provider = ScriptedProvider([turn(*[call(n, id=n) for n in outcomes]), "done"])
    events, _ = run(provider, tools=tools)
    by_id = {r.tool_call_id: r for r in results_of(events)}
    assert by_id["s"].content == [TextContent(text="plain")]
    assert by_id["n"].content == [TextContent(text="")]
    assert by_id["d"].text == '{"x": [1, 2]}'
    assert len(by_id["r"].content) == 2 and by_id["r"].details == {"k": 1} and by_id["r"].is_error


def test_execute_receives_only_the_extras_it_asks_for_and_streams_updates() -> None:
    seen: dict = {}

    async def execute(args: dict, *, tool_call_id: str, on_update) -> str:
        seen["id"] = tool_call_id
        on_update("25%")
        await asyncio.sleep(0)
        on_update("75%")
        return "done"

    tool = {"spec": {"name": "job", "parameters": {"type": "object"}}, "execute": execute}
    events, _ = run(one_call_then_text("job"), tools=[tool])
    assert seen == {"id": "c1"}
    toks = tokens(events)
    assert toks[toks.index("tes(c1)") : toks.index("tee(c1)") + 1] == [
        "tes(c1)",
        "teu(c1)",
        "teu(c1)",
        "tee(c1)",
    ]
    assert [e.partial for e in events if e.type == "tool_execution_update"] == ["25%", "75%"]


def test_tool_execution_start_carries_raw_arguments() -> None:
    events, _ = run(one_call_then_text("add", {"a": 1, "b": 2}), tools=[add_tool()])
    (start,) = [e for e in events if e.type == "tool_execution_start"]
    assert start.args == {"a": 1, "b": 2} and start.tool_name == "add"


def test_invalid_tool_entries_raise_type_error_before_any_model_call() -> None:
    provider = ScriptedProvider([])
    with pytest.raises(TypeError, match="invalid tool entry 42"):
        run(provider, tools=[42])
    with pytest.raises(TypeError, match="needs both 'spec' and 'execute'"):
        run(provider, tools=[{"spec": {"name": "x"}}])
    assert provider.requests == []


def test_object_tool_form() -> None:
    class Echo:
        spec = {
            "name": "echo",
            "parameters": {"type": "object", "properties": {"v": {"type": "string"}}},
        }

        async def execute(self, args: dict) -> str:
            return args["v"]

    events, _ = run(one_call_then_text("echo", {"v": "hey"}), tools=[Echo()])
    assert results_of(events)[0].text == "hey"
