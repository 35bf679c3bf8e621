"""One rule for a scripted call to a tool the model call does not offer, in ``ScriptedProvider``
and in scenarios: refused (``ToolNotOffered``, the model call ends with an error naming it)
unless the call is marked deliberately unknown (``call(..., unknown=True)``, a scenario's
``unknown_tool: true``); a marked call of a tool that is offered is refused too."""

from __future__ import annotations

import pytest

from openprogram_testing import ScriptedProvider, call, run_loop_sync, turn
from openprogram_testing.transport.scripted import ScriptedTurn, ToolNotOffered
from tests.harness._harness import add_tool


def test_a_call_to_a_tool_not_offered_is_refused() -> None:
    ran: list[str] = []
    tool = add_tool()
    execute = tool["execute"]
    tool["execute"] = lambda args: ran.append("add") or execute(args)
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2}), call("ad", {"a": 1})), "ok"])
    trace = run_loop_sync(provider, "go", tools=[tool])
    assert trace.termination == "error" and ran == []  # nothing of the turn was played
    assert "the script calls tool 'ad'" in (trace.error or "")
    with pytest.raises(ToolNotOffered) as info:
        provider.assert_complete()
    refused = info.value
    assert (refused.request_index, refused.turn_index, refused.call_index) == (0, 0, 1)
    assert (refused.tool, refused.offered, refused.marked_unknown) == ("ad", ("add",), False)
    assert "call(..., unknown=True)" in str(refused)


def test_a_call_marked_unknown_plays_the_not_found_path() -> None:
    provider = ScriptedProvider([turn(call("ad", {"a": 1}, unknown=True)), "ok"])
    trace = run_loop_sync(provider, "go", tools=[add_tool()])
    provider.assert_complete()
    assert trace.termination == "completed"
    (result,) = trace.tool_results
    assert result.is_error and "Tool ad not found" in result.text


def test_a_call_marked_unknown_of_an_offered_tool_is_refused() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2}, unknown=True)), "ok"])
    trace = run_loop_sync(provider, "go", tools=[add_tool()])
    assert trace.termination == "error"
    with pytest.raises(ToolNotOffered, match=r"marked call\(\.\.\., unknown=True\) but"):
        provider.assert_complete()


def test_a_responders_turn_is_judged_by_the_same_rule() -> None:
    def respond(request: object) -> ScriptedTurn:
        return turn(call("missing"))

    provider = ScriptedProvider([respond])
    trace = run_loop_sync(provider, "go", tools=[add_tool()])
    assert trace.termination == "error"
    with pytest.raises(ToolNotOffered):
        provider.assert_complete()


def test_no_tools_offered_is_a_menu_too() -> None:
    provider = ScriptedProvider([turn(call("add")), "ok"])
    run_loop_sync(provider, "go")
    with pytest.raises(ToolNotOffered, match="it offers no tools"):
        provider.assert_complete()
