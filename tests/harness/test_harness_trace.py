"""run_loop / run_loop_sync / LoopTrace and the assertion helpers."""

from __future__ import annotations

import asyncio

import pytest

from openprogram.types import UserMessage
from openprogram_testing import (
    LoopTrace,
    ScriptedProvider,
    assert_final_text,
    assert_model_calls,
    assert_recovered,
    assert_skipped,
    assert_terminated,
    assert_tool_results,
    call,
    error_turn,
    raising_turn,
    run_loop,
    run_loop_sync,
    turn,
)
from tests.harness._harness import add_tool, failing_tool


def test_trace_holds_the_run_result_and_views() -> None:
    provider = ScriptedProvider(
        [
            turn("Adding.", call("add", {"a": 1, "b": 2}, id="c1"), call("boom", id="c2")),
            "The sum is 3.",
        ]
    )
    trace = run_loop_sync(
        provider, "add", tools=[add_tool(), failing_tool()], max_iterations=5, system_prompt="sys"
    )
    assert trace.termination == "completed" and trace.model_calls == 2 and trace.cap == 5
    assert [m.role for m in trace.messages] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]
    assert trace.events[0].type == "agent_start" and trace.events[-1].type == "agent_end"
    assert [c.id for c in trace.tool_calls] == ["c1", "c2"]
    assert [r.text for r in trace.tool_results] == ["3", "kaboom"]
    assert trace.final_text == "The sum is 3." and trace.error is None
    assert [m.text for m in trace.user_messages] == ["add"]
    assert trace.recovered_errors == [trace.tool_results[1]]
    assert trace.tool_names == ["add", "boom"] and trace.prompts == [trace.messages[0]]
    assert trace.requests is not None and [r.index for r in trace.requests] == [0, 1]
    assert trace.requests[0].system_prompt == "sys" and trace.system_prompt == "sys"
    assert "termination='completed'" in repr(trace)
    assert_terminated(trace, "completed")
    assert_model_calls(trace, 2)
    assert_recovered(trace)
    assert_skipped(trace, [])
    assert_final_text(trace, "The sum is 3.")
    assert_final_text(trace, match=r"sum is \d")
    assert_tool_results(
        trace,
        [
            "add",
            {
                "name": "boom",
                "is_error": True,
                "contains": "kab",
                "match": "^k.*m$",
                "skipped": False,
            },
        ],
    )


def test_requests_are_those_of_this_run_only() -> None:
    provider = ScriptedProvider(["one", "two"])
    first = run_loop_sync(provider, "a")
    second = run_loop_sync(provider, "b")
    assert [r.index for r in first.requests or []] == [0]
    assert [r.index for r in second.requests or []] == [1]


class _NoRequests:
    """A provider without a ``requests`` list (like a real adapter)."""

    def __init__(self) -> None:
        self.inner = ScriptedProvider(["hi"])

    def stream(self, model, context, options):  # type: ignore[no-untyped-def]
        return self.inner.stream(model, context, options)


def test_any_provider_works_and_requests_is_none_without_a_record() -> None:
    trace = run_loop_sync(_NoRequests(), "hello")
    assert trace.requests is None and trace.final_text == "hi"


def test_history_without_prompts_continues_the_conversation() -> None:
    provider = ScriptedProvider(["continued"])
    trace = run_loop_sync(provider, [], history=[UserMessage(content="earlier")])
    assert trace.final_text == "continued"
    assert [m.text for m in provider.requests[0].messages] == ["earlier"]
    assert [m.role for m in trace.messages] == ["assistant"]


def test_provider_error_is_visible_on_the_trace() -> None:
    trace = run_loop_sync(ScriptedProvider([error_turn("overloaded", status=529)]), "hi")
    assert_terminated(trace, "error")
    assert trace.error == "overloaded"
    with pytest.raises(
        AssertionError,
        match="expected termination 'completed', got 'error' \\(error: overloaded\\)",
    ):
        assert_terminated(trace, "completed")


class _Stop(BaseException):
    pass


def test_what_the_loop_raises_is_re_raised_with_the_timeline() -> None:
    with pytest.raises(_Stop) as info:
        run_loop_sync(ScriptedProvider([raising_turn(_Stop())]), "hi")
    notes = "\n".join(getattr(info.value, "__notes__", []))
    assert "loop timeline:" in notes and "agent_end termination=aborted" in notes


async def test_run_loop_in_async_code_and_run_loop_sync_inside_a_running_loop() -> None:
    trace = await run_loop(ScriptedProvider(["async"]), "hi")
    assert trace.final_text == "async"
    assert asyncio.get_running_loop() is not None
    trace2 = run_loop_sync(ScriptedProvider(["from a thread"]), "hi")
    assert trace2.final_text == "from a thread"


def test_bad_arguments_are_clear_errors() -> None:
    with pytest.raises(ValueError, match="steering_mode must be 'skip' or 'after_batch'"):
        run_loop_sync(ScriptedProvider([]), "hi", steering_mode="later")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="a prompt must be a str or UserMessage, got int"):
        run_loop_sync(ScriptedProvider([]), [1])  # type: ignore[list-item]
    trace = run_loop_sync(ScriptedProvider(["x"]), "hi")
    with pytest.raises(ValueError, match="unknown termination 'done'"):
        assert_terminated(trace, "done")
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['texts'\]"):
        assert_tool_results(trace, [{"texts": "x"}])


def test_from_events_without_agent_end() -> None:
    trace = run_loop_sync(ScriptedProvider(["x"]), "hi")
    partial = LoopTrace.from_events(trace.events[:-1])
    assert partial.termination == "error" and [m.role for m in partial.messages] == [
        "user",
        "assistant",
    ]


def test_assertion_failures_explain_and_show_the_timeline() -> None:
    trace = run_loop_sync(
        ScriptedProvider(
            [
                turn(
                    call("add", {"a": 1, "b": 2}, id="c1"), call("add", {"a": 1, "b": 1}, id="c2")
                ),
                "ok",
            ]
        ),
        "go",
        tools=[add_tool()],
    )
    cases = [
        (lambda: assert_model_calls(trace, 3), "expected 3 model call(s), got 2"),
        (lambda: assert_skipped(trace, ["c2"]), "expected skipped calls ['c2'], got none"),
        (lambda: assert_recovered(trace), "no tool call failed"),
        (lambda: assert_final_text(trace, "nope"), "expected final text 'nope', got 'ok'"),
        (lambda: assert_tool_results(trace, ["add"]), "expected 1 tool result(s), got 2"),
        (
            lambda: assert_tool_results(trace, [{"text": "4"}, {"is_error": True}]),
            "result 0 (c1 add): text '4' does not hold for '3'",
        ),
    ]
    for check, message in cases:
        with pytest.raises(AssertionError) as info:
            check()
        text = str(info.value)
        assert message in text, text
        assert "run timeline:" in text and "#0" in text and "tool_execution_end c1 add ok" in text


def test_assert_recovered_needs_another_call_and_a_good_finish() -> None:
    no_retry = run_loop_sync(
        ScriptedProvider([turn(call("boom"))]), "go", tools=[failing_tool()], max_iterations=1
    )
    with pytest.raises(AssertionError, match="the model was not called again"):
        assert_recovered(no_retry)
    bad_finish = run_loop_sync(
        ScriptedProvider([turn(call("boom")), error_turn("down")]), "go", tools=[failing_tool()]
    )
    with pytest.raises(AssertionError, match="did not finish successfully"):
        assert_recovered(bad_finish)


@pytest.mark.parametrize("api", ["openai_chat", "anthropic"])
def test_works_with_an_emulator_backed_real_adapter(api: str, provider_emulator) -> None:  # type: ignore[no-untyped-def]
    from openprogram.providers.anthropic import AnthropicProvider
    from openprogram.providers.openai_chat import OpenAIChatProvider
    from openprogram_testing import SteeringSchedule, check_invariants, render_snapshot

    provider_emulator.add(
        turn(
            call("add", {"a": 1, "b": 2}),
            call("add", {"a": 3, "b": 4}),
            call("add", {"a": 5, "b": 6}),
        ),
        "Stopped after two.",
    )
    if api == "openai_chat":
        provider = OpenAIChatProvider(api_key="test", base_url=provider_emulator.openai_base_url)
    else:
        provider = AnthropicProvider(api_key="test", base_url=provider_emulator.anthropic_base_url)
    schedule = SteeringSchedule().after_tool(1, "stop")
    trace = run_loop_sync(provider, "add", tools=[add_tool()], schedule=schedule)
    check_invariants(trace)
    assert_skipped(trace, ["add"])
    assert trace.requests is None and trace.final_text == "Stopped after two."
    snap = render_snapshot(trace)
    assert "call call#3 add" in snap and "SKIPPED" in snap
