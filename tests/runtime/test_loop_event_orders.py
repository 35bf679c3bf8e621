"""Each exact event order of the loop, (a) to (g), asserted event by event."""

from __future__ import annotations

from openprogram import AssistantMessage, ToolResultMessage, UserMessage
from openprogram_testing import ScriptedProvider, call, error_turn, turn
from tests.runtime._loop import REPLY, USER, add_tool, run, run_order, tokens, tool_call

SKIP = "Skipped due to queued user message."


def test_a_text_only() -> None:
    events, stream = run(ScriptedProvider(["hello"]))
    assert tokens(events) == run_order([*USER, *REPLY])
    updates = [e.event.type for e in events if e.type == "message_update"]
    assert updates == ["start", "text_start", "text_delta", "text_end", "done"]
    end = events[-1]
    assert [m.role for m in end.messages] == ["user", "assistant"]
    assert end.messages[1].text == "hello"
    assert stream.termination == "completed" and stream.model_calls == 1


def test_b_two_tool_calls_then_text() -> None:
    seen: list[dict] = []
    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 1, "b": 2}, id="t1"), call("add", {"a": 3, "b": 4}, id="t2")),
            "7 and 3",
        ]
    )
    events, stream = run(provider, tools=[add_tool(seen)])
    calls = [*USER, *REPLY, *tool_call("t1"), *tool_call("t2")]
    assert tokens(events) == run_order(calls, REPLY)
    assert seen == [{"a": 1, "b": 2}, {"a": 3, "b": 4}]  # sequential, message order
    roles = [m.role for m in events[-1].messages]
    assert roles == ["user", "assistant", "toolResult", "toolResult", "assistant"]
    results = [m for m in events[-1].messages if isinstance(m, ToolResultMessage)]
    assert [(r.tool_call_id, r.text, r.is_error) for r in results] == [
        ("t1", "3", False),
        ("t2", "7", False),
    ]
    # the second model call saw both results
    assert [m.role for m in provider.requests[1].messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
    ]


def test_c_steering_after_first_of_two_calls_skips_the_second() -> None:
    queue: list[str] = []
    seen: list[dict] = []

    def execute(args: dict) -> str:
        seen.append(args)
        queue.append("stop, do something else")
        return "ok"

    tool = {"spec": {"name": "work", "parameters": {"type": "object"}}, "execute": execute}
    provider = ScriptedProvider(
        [turn(call("work", {"n": 1}, id="t1"), call("work", {"n": 2}, id="t2")), "fine"]
    )

    def steering() -> list[str]:
        out = list(queue)
        queue.clear()
        return out

    events, stream = run(provider, tools=[tool], get_steering_messages=steering)
    calls = [*USER, *REPLY, *tool_call("t1"), *tool_call("t2", error=True)]
    assert tokens(events) == run_order(calls, [*USER, *REPLY])  # the steering message, then a reply
    assert seen == [{"n": 1}]
    skipped = events[-1].messages[3]
    assert isinstance(skipped, ToolResultMessage)
    assert (skipped.text, skipped.is_error, skipped.skipped) == (SKIP, True, True)
    assert [m.role for m in provider.requests[1].messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "user",
    ]
    assert provider.requests[1].messages[-1].text == "stop, do something else"


def test_d_provider_error() -> None:
    provider = ScriptedProvider([error_turn("overloaded", "partial ", status=529, retryable=True)])
    events, stream = run(provider)
    assert tokens(events) == run_order([*USER, *REPLY], end="error")
    assert events[-2].type == "turn_end" and events[-2].tool_results == []
    message = events[-1].messages[-1]
    assert isinstance(message, AssistantMessage)
    assert (
        message.stop_reason,
        message.error_message,
        message.error_status,
        message.error_retryable,
    ) == (
        "error",
        "overloaded",
        529,
        True,
    )
    assert [m.role for m in events[-1].messages] == ["user", "assistant"]


def test_e_cap_two_model_always_calls_a_tool() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1})) for _ in range(2)])
    events, stream = run(provider, tools=[add_tool()], max_iterations=2)
    toks = tokens(events)
    assert toks.count("turn_start") == 2
    assert toks[-2:] == ["turn_end(1)", "agent_end(max_iterations)"]
    assert len(provider.requests) == 2 and stream.model_calls == 2
    assert stream.termination == "max_iterations"
    provider.assert_complete()


def test_f_follow_up() -> None:
    follow = [["and then?"]]

    def follow_ups() -> list[str]:
        return follow.pop() if follow else []

    provider = ScriptedProvider(["first", "second"])
    events, stream = run(provider, get_follow_up_messages=follow_ups)
    assert tokens(events) == run_order([*USER, *REPLY], [*USER, *REPLY])  # the follow-up's turn
    assert [m.role for m in events[-1].messages] == ["user", "assistant", "user", "assistant"]
    assert events[-1].messages[2].text == "and then?"


def test_g_steering_queued_before_round_one_is_delivered_with_the_prompt() -> None:
    queue = [UserMessage(content="also: be brief")]

    def steering() -> list[UserMessage]:
        out = list(queue)
        queue.clear()
        return out

    provider = ScriptedProvider(["ok"])
    events, stream = run(provider, get_steering_messages=steering)
    assert tokens(events) == run_order([*USER, *USER, *REPLY])  # the prompt, then the steering
    assert [m.text for m in provider.requests[0].messages] == ["hi", "also: be brief"]


def test_text_beside_tool_calls_does_not_end_the_loop() -> None:
    provider = ScriptedProvider([turn("let me add", call("add", {"a": 2, "b": 2})), "4"])
    events, stream = run(provider, tools=[add_tool()])
    assert stream.model_calls == 2 and stream.termination == "completed"
    assert events[-1].messages[-1].text == "4"


def test_message_update_carries_the_partial_message_and_toolcall_end_the_parsed_call() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2}, id="x"), chunk_size=3), "done"])
    events, _ = run(provider, tools=[add_tool()])
    deltas = [
        e.event.delta
        for e in events
        if e.type == "message_update" and e.event.type == "toolcall_delta"
    ]
    assert "".join(deltas) == '{"a": 1, "b": 2}' and len(deltas) > 1
    ends = [
        e.event.tool_call
        for e in events
        if e.type == "message_update" and e.event.type == "toolcall_end"
    ]
    assert ends[0].arguments == {"a": 1, "b": 2} and ends[0].id == "x"
