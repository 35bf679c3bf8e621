"""Approval decisions drawn by hypothesis (``approval_decisions``): whatever a reviewer answers
for a call (approve, deny with any message, modify with schema-valid or refused arguments), the
run obeys it (``decision_problems``) and the loop invariants hold, invariant 11 included.  The
rule itself is shown failing on runs that disobey."""

from __future__ import annotations

from typing import Any

from hypothesis import given

from openprogram import Approve, Deny, Modify, Runtime
from openprogram.types import TextContent, ToolResultMessage
from openprogram_testing import ScriptedProvider, call, check_invariants, run_loop_sync, turn
from openprogram_testing.strategies import approval_decisions, decision_problems, schema_arguments
from tests.properties._settings import fixed_settings

MOVE = {
    "name": "move",
    "description": "Move a file.",
    "parameters": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "to": {"type": "string"}},
        "required": ["path", "to"],
        "additionalProperties": False,
    },
}


@fixed_settings(60)
@given(
    decision=approval_decisions((MOVE["name"], MOVE["parameters"]), invalid=True),
    asked=schema_arguments((MOVE["name"], MOVE["parameters"])),
)
def test_every_drawn_decision_is_obeyed(decision: Any, asked: dict[str, Any]) -> None:
    ran: list[dict[str, Any]] = []

    def execute(arguments: dict[str, Any]) -> str:
        ran.append(dict(arguments))
        return "moved"

    tool = {"spec": MOVE, "execute": execute, "requires_approval": True}
    provider = ScriptedProvider([turn(call("move", asked)), "done"])
    with Runtime.override(approval_gate=lambda request: decision):
        trace = run_loop_sync(provider, "go", tools=[tool])
    assert decision_problems(decision, ran, trace.tool_results[0], asked) == []
    check_invariants(trace)


def _result(text: str, is_error: bool = False) -> ToolResultMessage:
    return ToolResultMessage("c1", "move", [TextContent(text)], is_error=is_error)


def test_the_rule_fails_on_runs_that_disobey() -> None:
    asked = {"path": "a", "to": "b"}
    not_run = _result("Tool move was not run: the call was denied: no", is_error=True)
    assert decision_problems(Deny("no"), [], not_run, asked) == []
    assert decision_problems(Deny("no"), [asked], not_run, asked) == [
        "a denied call ran with {'path': 'a', 'to': 'b'}"
    ]
    assert decision_problems(Deny("no"), [], _result("moved"), asked)  # ran, by its result
    changed = {"path": "a", "to": "/tmp/b"}
    assert decision_problems(Modify(changed), [changed], _result("moved"), asked) == []
    assert decision_problems(Modify(changed), [asked], _result("moved"), asked)
    assert decision_problems(Approve(), [asked], _result("moved"), asked) == []
    assert decision_problems(Approve(), [], not_run, asked)
