"""``run_scenario``: tool behaviours, every expectation kind (met and failed, with the failure
text), invariant checking, snapshots and the event-token notation."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.scenarios import (
    Scenario,
    ScenarioError,
    ScenarioResult,
    event_tokens,
    load_scenario,
    run_scenario,
)

ROOT = Path(__file__).resolve().parents[2]

ADD = {
    "name": "add",
    "parameters": {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
    "returns": 3,
}


def scenario(**fields: Any) -> Scenario:
    if "prompts" not in fields:
        fields.setdefault("prompt", "go")
    return Scenario.model_validate(fields)


def run(**fields: Any) -> ScenarioResult:
    return run_scenario(scenario(**fields))


def test_passing_scenario_has_trace_timeline_and_no_failure_text() -> None:
    result = run(
        tools=[ADD],
        script=[{"calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}, "3"],
        expect={
            "termination": "completed",
            "model_calls": 2,
            "final_text": "3",
            "tool_results": [{"name": "add", "is_error": False, "text": "3"}],
        },
    )
    assert result.passed, result.failure_text
    assert result.failure_text == ""
    assert result.trace.model_calls == 2
    assert "tool_execution_start" in result.timeline
    json.dumps(result.to_dict())  # JSON-ready


def test_failed_expectations_are_each_named_with_expected_and_got() -> None:
    result = run(
        tools=[ADD],
        script=[{"calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}, "three"],
        expect={
            "termination": "max_iterations",
            "model_calls": 1,
            "final_text": "3",
            "final_text_matches": "^\\d+$",
            "tool_results": [
                {
                    "name": "sub",
                    "is_error": True,
                    "skipped": True,
                    "text": "4",
                    "text_matches": "^x",
                }
            ],
            "undelivered": 1,
            "delivered": 2,
            "error_text": "boom",
            "request_roles": [["user"]],
        },
    )
    assert not result.passed
    assert result.failures == [
        "expect.termination: expected 'max_iterations', got 'completed'",
        "expect.model_calls: expected 1, got 2",
        "expect.tool_results[0].name: expected 'sub', got 'add'",
        "expect.tool_results[0].is_error: expected True, got False (text '3')",
        "expect.tool_results[0].skipped: expected True, got False",
        "expect.tool_results[0].text: expected '4', got '3'",
        "expect.tool_results[0].text_matches: '^x' does not match '3'",
        "expect.final_text: expected '3', got 'three'",
        "expect.final_text_matches: '^\\\\d+$' does not match 'three'",
        "expect.error_text: expected an error containing 'boom', got None",
        "expect.undelivered: expected 1, got 0 []",
        "expect.delivered: expected 2, got 0",
        "expect.request_roles: expected [['user']], got [['user'], ['user', 'assistant', "
        "'toolResult']]",
    ]
    text = result.failure_text
    assert text.startswith("scenario 'scenario' failed\n  - expect.termination")
    assert "\ntimeline:\n" in text and "agent_end termination=completed" in text


def test_tool_result_count_mismatch_lists_what_came() -> None:
    result = run(script=["hi"], expect={"tool_results": [{"name": "add"}]})
    assert result.failures == ["expect.tool_results: expected 1 result(s), got 0: []"]


def test_multi_line_text_mismatch_is_a_diff() -> None:
    result = run(script=["line one\nline two"], expect={"final_text": "line one\nline 2"})
    (failure,) = result.failures
    assert failure.startswith("expect.final_text: the text differs\n")
    assert "-line 2" in failure and "+line two" in failure


def test_events_expectation_shows_a_diff_of_tokens() -> None:
    result = run(
        script=["hi"], expect={"events": ["agent_start", "turn_start", "agent_end(completed)"]}
    )
    (failure,) = result.failures
    assert failure.startswith("expect.events: the event order differs\n")
    assert "+ms(U)" in failure


def test_model_script_strictness_unplayed_and_unexpected_calls() -> None:
    left = run(script=["a", "b"])
    assert left.failures == [
        "model script: 1 scripted turn(s) were never played (played 1 of 2): [text]"
    ]
    extra = run(tools=[ADD], script=[{"calls": [{"name": "add", "args": {"a": 1, "b": 2}}]}])
    assert extra.trace.termination == "error"
    assert extra.failures[0].startswith("model script: unexpected model call #1 (0-based)")


def test_invariants_are_checked_unless_disabled(monkeypatch: pytest.MonkeyPatch) -> None:
    import openprogram_testing.judges.invariants as invariants

    def broken(trace: Any) -> None:
        violation = invariants.Violation(4, "a ToolCall without result", (7,))
        raise invariants.InvariantViolation([violation], timeline="TIMELINE")

    monkeypatch.setattr(invariants, "check_invariants", broken)
    checked = run(script=["hi"])
    (failure,) = checked.failures
    assert failure.startswith("loop invariant 4 violated:\n  - invariant 4 (")
    assert failure.endswith("a ToolCall without result [events #7]")
    assert "TIMELINE" not in failure  # the result's own timeline follows the failures
    assert run(script=["hi"], check_invariants=False).passed


def test_tool_behaviours() -> None:
    tools = [
        {"name": "echo", "echo": True},
        {"name": "plain_raise", "raises": "went wrong"},
        {"name": "typed_raise", "raises": {"type": "ValueError", "message": "bad value"}},
        {"name": "empty_raise", "raises": {"type": "KeyError"}},
        {"name": "flaky", "sequence": [{"raises": "first"}, {"returns": "second"}]},
        {"name": "nothing"},
        {"name": "marked", "returns": {"x": 1}, "is_error": True},
        {"name": "slow", "sleep": 5, "returns": "late"},
    ]
    calls = [
        {"name": "echo", "args": {"q": "hi"}},
        {"name": "plain_raise"},
        {"name": "typed_raise"},
        {"name": "empty_raise"},
        {"name": "flaky"},
        {"name": "flaky"},
        {"name": "flaky"},  # the last outcome repeats
        {"name": "nothing"},
        {"name": "marked"},
        {"name": "slow"},
    ]
    result = run(tools=tools, script=[{"calls": calls}, "done"], options={"tool_timeout_s": 0.05})
    assert result.passed, result.failure_text
    got = [(r.tool_name, r.is_error, r.text) for r in result.trace.tool_results]
    assert got == [
        ("echo", False, '{"q": "hi"}'),
        ("plain_raise", True, "went wrong"),
        ("typed_raise", True, "bad value"),
        ("empty_raise", True, "KeyError"),
        ("flaky", True, "first"),
        ("flaky", False, "second"),
        ("flaky", False, "second"),
        ("nothing", False, ""),
        ("marked", True, '{"x": 1}'),
        ("slow", True, "Tool slow timed out after 0.05s"),
    ]


def test_tool_updates_become_tool_execution_update_events() -> None:
    result = run(
        tools=[{"name": "t", "updates": ["a", {"pct": 50}], "returns": "ok"}],
        script=[{"calls": [{"name": "t"}]}, "done"],
    )
    updates = [e.partial for e in result.trace.events if e.type == "tool_execution_update"]
    assert updates == ["a", {"pct": 50}]


def test_script_turn_kinds_reach_the_provider() -> None:
    result = run(
        system_prompt="be brief",
        tools=[ADD],
        script=[
            {
                "thinking": "hmm",
                "text": "adding",
                "calls": [{"name": "add", "raw_args": '{"a": 1', "id": "c-1"}],
                "chunk_size": 1,
            },
            {"error": "overloaded", "status": 529, "retryable": True, "retry_after": 3},
        ],
        options={
            "tool_choice": {"type": "function", "name": "add"},
            "parallel_tool_calls": False,
            "model": "m-1",
        },
        expect={"termination": "error"},
    )
    assert result.passed, result.failure_text
    trace = result.trace
    first, second = trace.requests
    assert first.system_prompt == "be brief" and first.model == "m-1"
    assert first.tool_choice == {"type": "function", "name": "add"}
    assert first.parallel_tool_calls is False
    message = trace.assistant_messages[0]
    assert [b.type for b in message.content] == ["thinking", "text", "toolCall"]
    assert message.tool_calls[0].id == "c-1"
    assert trace.tool_results[0].is_error
    final = trace.assistant_messages[1]
    assert (final.error_status, final.error_retryable, final.error_retry_after_s) == (529, True, 3)


def test_event_tokens_tell_prompt_steering_and_follow_up_apart() -> None:
    result = run(
        prompts=["p1", "p2"],
        script=["a", "b", "c"],
        steering=[{"before_round": 0, "message": "s0"}, {"before_round": 1, "message": "s1"}],
        follow_ups=["f"],
    )
    assert result.passed, result.failure_text
    tokens = [t for t in event_tokens(result.trace) if t.startswith("ms(")]
    assert tokens == ["ms(U)", "ms(U)", "ms(S)", "ms(A)", "ms(S)", "ms(A)", "ms(F)", "ms(A)"]


def test_snapshot_missing_then_written_then_compared(tmp_path: Path) -> None:
    path = tmp_path / "scenario_snap.yaml"
    path.write_text("prompt: hi\nscript: [hello]\nexpect: {snapshot: true}\n")
    missing = run_scenario(load_scenario(path))
    target = tmp_path / "__snapshots__" / "scenario_snap" / "snap.trace.txt"
    assert missing.failures == [
        f"expect.snapshot: no snapshot stored at {target}; run with update_snapshots=True to "
        "write it"
    ]
    written = run_scenario(load_scenario(path), update_snapshots=True)
    assert written.passed and written.snapshot_written and target.is_file()
    again = run_scenario(load_scenario(path))
    assert again.passed and not again.snapshot_written
    path.write_text("prompt: hi\nscript: [goodbye]\nexpect: {snapshot: true}\n")
    changed = run_scenario(load_scenario(path))
    (failure,) = changed.failures
    assert failure.startswith(f"expect.snapshot: the trace differs from {target}")
    assert "goodbye" in failure and "hello" in failure


async def test_run_scenario_works_inside_a_running_event_loop() -> None:
    result = run(script=["hi"], expect={"final_text": "hi"})
    assert result.passed, result.failure_text


def _local_cassette(tmp_path: Path, name: str) -> str:
    """Copy a bundled cassette beside the scenario (cassette paths stay inside its root)."""
    shutil.copy(ROOT / "scenarios" / "cassettes" / name, tmp_path / name)
    return name


def test_a_fault_addressing_a_missing_interaction_is_a_load_error(tmp_path: Path) -> None:
    cassette = _local_cassette(tmp_path, "openai_chat_text.yaml")
    path = tmp_path / "scenario_f.yaml"
    path.write_text(
        f"prompt: hi\ncassette:\n  path: {cassette}\n  api: openai_chat\n"
        "  faults: [{drop_terminal: true, interaction: 5}]\n"
    )
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value) == (
        f"{path}:5:47: cassette.faults[0].interaction: interaction 5 does not exist: the "
        "cassette has 1 (0-based)"
    )


def test_cassette_recorded_for_another_api_is_rejected(tmp_path: Path) -> None:
    cassette = _local_cassette(tmp_path, "anthropic_text.yaml")
    path = tmp_path / "scenario_g.yaml"
    path.write_text(f"prompt: hi\ncassette: {{path: {cassette}, api: openai_chat}}\n")
    (failure,) = run_scenario(load_scenario(path)).failures
    assert failure.startswith("the run raised ValueError: cassette ")
    assert "not the openai_chat endpoint (/chat/completions)" in failure


def test_agentic_tool_runs_a_nested_loop_on_the_same_script() -> None:
    result = run(
        tools=[
            {
                "name": "outer",
                "parameters": {"type": "object", "properties": {"x": {}}},
                "agentic": {"prompt": "inner {x}"},
            },
            {"name": "broken", "agentic": {"prompt": "needs {missing}"}},
        ],
        script=[
            {"calls": [{"name": "outer", "args": {"x": "1"}}, {"name": "broken"}]},
            "nested answer",
            "outer answer",
        ],
        expect={"final_text": "outer answer"},
    )
    assert result.passed, result.failure_text
    # The nested run is part of the scenario's trace tree; the outer trace holds its own calls.
    assert [len(result.trace.requests or []), len(result.tree.runs)] == [2, 2]
    nested_request = (result.tree["outer"].trace.requests or [])[0]
    assert [m.text for m in nested_request.messages] == ["inner 1"]
    assert nested_request.tools == []
    got = [(r.tool_name, r.is_error, r.text) for r in result.trace.tool_results]
    assert got == [
        ("outer", False, "nested answer"),
        ("broken", True, "the agentic prompt needs the argument 'missing'"),
    ]


def test_unplayed_cassette_interactions_fail_but_keep_the_trace(tmp_path: Path) -> None:
    cassette = _local_cassette(tmp_path, "openai_chat_weather.yaml")
    path = tmp_path / "scenario_u.yaml"
    path.write_text(
        "prompt: What is the weather in Paris?\n"
        "tools: [{name: get_weather, description: Current weather for a city., parameters: "
        "{type: object, properties: {city: {type: string}}, required: [city]}}]\n"
        "options: {max_iterations: 1}\n"
        f"cassette: {{path: {cassette}, api: openai_chat}}\n"
        "expect: {termination: max_iterations, model_calls: 1}\n"
    )
    result = run_scenario(load_scenario(path))
    (failure,) = result.failures
    assert failure.startswith("cassette: ")
    assert "unplayed" in failure or "not played" in failure
    assert result.trace is not None and "agent_end termination=max_iterations" in result.timeline
