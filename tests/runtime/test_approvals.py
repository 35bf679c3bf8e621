"""Approvals in the runtime: ``requires_approval`` on a tool, the approval gate on the
``Runtime`` (sync or async) answering ``Approve``, ``Deny(message)`` or ``Modify(arguments)``,
and every way a decision fails to come (a raising gate, a gate that never answers, changed
arguments the schema refuses, no gate): the call never runs, the model reads why, the run goes
on.  Each check is shown failing on the broken case too: the call that must not run is counted.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from openprogram import (
    ApprovalRequest,
    Approve,
    AssistantMessage,
    CancelledRun,
    CancelToken,
    Deny,
    Modify,
    Registry,
    Runtime,
    ToolApprovalEnd,
    ToolApprovalStart,
    ToolResultMessage,
    function,
)
from openprogram.approvals import CHECK_RAISED, gated_tools, requirement_verdict
from openprogram_testing import ScriptedProvider, call, turn


def _agent(
    requires: Any = True,
) -> tuple[Registry, list[dict[str, Any]]]:
    """A registry with ``delete(path)`` (requires approval as given) and ``read(path)`` (never
    does); ``ran`` records every body that actually ran."""
    registry = Registry()
    ran: list[dict[str, Any]] = []

    @function(registry=registry, requires_approval=requires)
    def delete(path: str, force: bool = False) -> str:
        """Delete a file."""
        ran.append({"tool": "delete", "path": path, "force": force})
        return f"deleted {path}"

    @function(registry=registry)
    def read(path: str) -> str:
        """Read a file."""
        ran.append({"tool": "read", "path": path})
        return f"contents of {path}"

    return registry, ran


def _results(runtime: Runtime) -> list[ToolResultMessage]:
    assert runtime.last_run is not None
    return [m for m in runtime.last_run.messages if isinstance(m, ToolResultMessage)]


def _run(
    gate: Any,
    *,
    requires: Any = True,
    calls: tuple[Any, ...] = (call("delete", {"path": "/tmp/a"}),),
    timeout: float | None = None,
) -> tuple[Runtime, list[dict[str, Any]], list[Any], ScriptedProvider]:
    registry, ran = _agent(requires)
    provider = ScriptedProvider([turn(*calls), "done"])
    events: list[Any] = []
    runtime = Runtime(
        provider,
        registry=registry,
        approval_gate=gate,
        approval_timeout_s=timeout,
        on_event=events.append,
    )
    assert runtime.exec("clean up") == "done"
    return runtime, ran, events, provider


def _approvals(events: list[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, ToolApprovalStart | ToolApprovalEnd)]


# -- the verdict rules (upstream's _evaluate_approval) ------------------------------------------


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        (None, (False, None)),
        (False, (False, None)),
        (True, (True, None)),
        (lambda path: True, (True, None)),
        (lambda path: False, (False, None)),
        (lambda path: None, (False, None)),
        (lambda path: f"deletes {path}", (True, "deletes /x")),
        (lambda path: "", (False, None)),
        (lambda path: 1, (True, None)),
        (lambda path: [], (False, None)),
    ],
)
def test_verdict_rules(requirement: Any, expected: tuple[bool, str | None]) -> None:
    assert requirement_verdict(requirement, {"path": "/x"}) == expected


def test_a_raising_check_means_approval_is_required() -> None:
    def check(path: str) -> bool:
        raise ValueError("policy store down")

    needed, reason = requirement_verdict(check, {"path": "/x"})
    assert needed is True
    assert reason == CHECK_RAISED.format("ValueError: policy store down")
    # a check that does not take the call's arguments raises too: fail closed
    assert requirement_verdict(lambda: False, {"path": "/x"})[0] is True


def test_an_async_check_is_refused_as_requiring_approval() -> None:
    async def check(path: str) -> bool:
        return False

    needed, reason = requirement_verdict(check, {"path": "/x"})
    assert needed is True and reason is not None and "not async" in reason


def test_requires_approval_is_checked_at_decoration() -> None:
    with pytest.raises(TypeError, match="requires_approval= of tool 'bad'"):

        @function(registry=Registry(), requires_approval="yes")  # type: ignore[call-overload]
        def bad() -> None: ...


def test_a_run_without_gated_tools_checks_nothing() -> None:
    registry, _ = _agent(requires=False)
    tools = [f.to_agent_tool() for f in registry.toolset("full")]
    assert gated_tools(tools) is None
    registry, _ = _agent(requires=True)
    gated = gated_tools([f.to_agent_tool() for f in registry.toolset("full")])
    assert gated == {"delete": True}


# -- approve, deny, modify ----------------------------------------------------------------------


def test_approve_runs_the_call_as_asked() -> None:
    asked: list[ApprovalRequest] = []

    def gate(request: ApprovalRequest) -> Approve:
        asked.append(request)
        return Approve()

    runtime, ran, events, _ = _run(gate)
    assert ran == [{"tool": "delete", "path": "/tmp/a", "force": False}]
    assert [(r.tool_name, r.arguments) for r in asked] == [("delete", {"path": "/tmp/a"})]
    assert asked[0].run is not None and asked[0].run.run_id == runtime.last_run.run.run_id  # type: ignore[union-attr]
    assert [e.type for e in _approvals(events)] == ["tool_approval_start", "tool_approval_end"]
    assert _approvals(events)[1].outcome == "approved"
    assert _results(runtime)[0].text == "deleted /tmp/a"


def test_deny_never_runs_the_call_and_the_model_reads_why() -> None:
    runtime, ran, events, provider = _run(lambda r: Deny("never outside /tmp/keep"))
    assert ran == []  # the broken case (the body running) would show here
    result = _results(runtime)[0]
    assert result.is_error
    assert result.text == "Tool delete was not run: the call was denied: never outside /tmp/keep"
    end = _approvals(events)[1]
    assert (end.outcome, end.message, end.runs) == ("denied", "never outside /tmp/keep", False)
    # the model's next request carries the denial as the call's result
    assert "was not run" in str(provider.requests[1].messages[-1])


def test_modify_runs_the_call_with_the_changed_arguments() -> None:
    runtime, ran, events, _ = _run(lambda r: Modify({"path": "/tmp/a.bak", "force": True}))
    assert ran == [{"tool": "delete", "path": "/tmp/a.bak", "force": True}]
    end = _approvals(events)[1]
    assert (end.outcome, end.args) == ("modified", {"path": "/tmp/a.bak", "force": True})
    assert _results(runtime)[0].text == "deleted /tmp/a.bak"
    # the history keeps what the model asked for
    asked = next(m for m in runtime.last_run.messages if isinstance(m, AssistantMessage))  # type: ignore[union-attr]
    assert asked.tool_calls[0].arguments == {"path": "/tmp/a"}


def test_changed_arguments_the_schema_refuses_are_answered_not_run() -> None:
    runtime, ran, events, _ = _run(lambda r: Modify({"path": 3, "mode": "x"}))
    assert ran == []
    text = _results(runtime)[0].text
    assert text.startswith(
        "Tool delete was not run: the arguments the reviewer changed it to are invalid"
    )
    assert "path" in text and "mode" in text
    assert _approvals(events)[1].outcome == "invalid_arguments"


async def test_an_async_gate_decides_too() -> None:
    registry, ran = _agent()

    async def gate(request: ApprovalRequest) -> Deny:
        await asyncio.sleep(0)
        return Deny("no")

    runtime = Runtime(
        ScriptedProvider([turn(call("delete", {"path": "p"})), "ok"]),
        registry=registry,
        approval_gate=gate,
    )
    assert await runtime.aexec("go") == "ok"
    assert (
        ran == []
        and _results(runtime)[0].text == "Tool delete was not run: the call was denied: no"
    )


def test_a_callable_check_decides_per_call() -> None:
    asked: list[str | None] = []

    def gate(request: ApprovalRequest) -> Approve:
        asked.append(request.reason)
        return Approve()

    def outside_tmp(path: str, force: bool = False) -> str | None:
        return None if path.startswith("/tmp/") else f"{path} is outside /tmp"

    _, ran, _, _ = _run(
        gate,
        requires=outside_tmp,
        calls=(call("delete", {"path": "/tmp/a"}), call("delete", {"path": "/etc/x"})),
    )
    assert asked == ["/etc/x is outside /tmp"]  # only the call the check flagged was asked about
    assert [r["path"] for r in ran] == ["/tmp/a", "/etc/x"]


def test_a_tool_without_requires_approval_is_never_asked_about() -> None:
    def gate(request: ApprovalRequest) -> Deny:
        raise AssertionError("asked about a tool that does not require approval")

    _, ran, events, _ = _run(gate, calls=(call("read", {"path": "a"}),))
    assert ran == [{"tool": "read", "path": "a"}] and _approvals(events) == []


def test_a_call_with_invalid_arguments_is_not_asked_about() -> None:
    def gate(request: ApprovalRequest) -> Approve:
        raise AssertionError("asked about a call that cannot run")

    runtime, ran, events, _ = _run(gate, calls=(call("delete", {"path": 1}),))
    assert ran == [] and _approvals(events) == []
    assert _results(runtime)[0].text.startswith('Validation failed for tool "delete"')


def test_a_dict_tool_can_require_approval() -> None:
    ran: list[Any] = []
    tool = {
        "spec": {"name": "wipe", "parameters": {"type": "object", "properties": {}}},
        "execute": lambda args: ran.append(args),
        "requires_approval": True,
    }
    runtime = Runtime(ScriptedProvider([turn(call("wipe")), "ok"]), approval_gate=lambda r: Deny())
    assert runtime.exec("go", tools=[tool]) == "ok"
    assert ran == [] and _results(runtime)[0].text == "Tool wipe was not run: the call was denied"


# -- hostile gates: a clear result, no hang, no run ---------------------------------------------


def test_no_gate_denies_a_call_that_requires_approval() -> None:
    runtime, ran, events, _ = _run(None)
    assert ran == []
    assert _results(runtime)[0].text == (
        "Tool delete was not run: it requires approval and no approval gate is configured"
    )
    assert _approvals(events)[1].outcome == "no_gate"


def test_a_raising_gate_is_a_refusal_not_a_crash() -> None:
    def gate(request: ApprovalRequest) -> Approve:
        raise RuntimeError("review service down")

    runtime, ran, events, _ = _run(gate)
    assert ran == []
    assert _results(runtime)[0].text == (
        "Tool delete was not run: the approval gate failed: RuntimeError: review service down"
    )
    assert _approvals(events)[1].outcome == "gate_failed"


def test_a_gate_answering_something_else_is_a_refusal() -> None:
    runtime, ran, _, _ = _run(lambda r: "yes")
    assert ran == []
    assert "it answered 'yes', not Approve(), Deny(message) or Modify(arguments)" in (
        _results(runtime)[0].text
    )


def test_a_bad_decision_object_raises_inside_the_gate() -> None:
    runtime, ran, _, _ = _run(lambda r: Modify(["path"]))  # type: ignore[arg-type]
    assert ran == [] and "Modify(arguments) takes a dict" in _results(runtime)[0].text


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_a_gate_that_never_answers_times_out(kind: str) -> None:
    never = threading.Event()

    def sync_gate(request: ApprovalRequest) -> Approve:
        never.wait()
        return Approve()

    async def async_gate(request: ApprovalRequest) -> Approve:
        await asyncio.Event().wait()
        return Approve()

    begin = time.monotonic()
    runtime, ran, events, _ = _run(sync_gate if kind == "sync" else async_gate, timeout=0.2)
    assert time.monotonic() - begin < 5
    never.set()
    assert ran == []
    assert _results(runtime)[0].text == "Tool delete was not run: no approval decision within 0.2s"
    assert _approvals(events)[1].outcome == "timed_out"


def test_the_timeout_is_checked() -> None:
    for bad in (0, -1, "5", True):
        with pytest.raises(ValueError, match="approval_timeout_s"):
            Runtime(ScriptedProvider([]), approval_timeout_s=bad)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a callable"):
        Runtime(ScriptedProvider([]), approval_gate="yes")  # type: ignore[arg-type]


def test_cancelling_while_the_gate_thinks_aborts_the_run() -> None:
    token = CancelToken()
    registry, ran = _agent()

    async def gate(request: ApprovalRequest) -> Approve:
        token.cancel()
        await asyncio.Event().wait()
        return Approve()

    runtime = Runtime(
        ScriptedProvider([turn(call("delete", {"path": "p"}), call("read", {"path": "q"}))]),
        registry=registry,
        approval_gate=gate,
        cancel=token,
    )
    with pytest.raises(CancelledRun):
        runtime.exec("go")
    assert ran == []
    assert [r.text for r in _results(runtime)] == ["Cancelled", "Cancelled"]
    assert runtime.last_run.termination == "aborted"  # type: ignore[union-attr]


# -- steering while a call waits for approval (docs/decisions.md) -------------------------------


@pytest.mark.parametrize("decision", [Approve(), Deny("no")])
def test_steering_queued_during_the_wait_arrives_after_the_decided_call(decision: Any) -> None:
    registry, ran = _agent()
    holder: list[Runtime] = []

    def gate(request: ApprovalRequest) -> Any:
        holder[0].steer("actually, stop")
        return decision

    provider = ScriptedProvider(
        [turn(call("delete", {"path": "p"}), call("read", {"path": "q"})), "stopped"]
    )
    runtime = Runtime(provider, registry=registry, approval_gate=gate)
    holder.append(runtime)
    assert runtime.exec("go") == "stopped"
    # the waiting call is decided as the gate said (not interrupted); the rest of the batch
    # is skipped (steering_mode="skip") and the message is the next thing the model reads
    assert [r["tool"] for r in ran] == (["delete"] if isinstance(decision, Approve) else [])
    results = _results(runtime)
    assert results[1].skipped
    last = provider.requests[1].messages[-1]
    assert "actually, stop" in str(last)


# -- the override a test uses for an application's own Runtime -----------------------------------


def test_runtime_override_installs_a_gate_for_every_run_inside() -> None:
    registry, ran = _agent()
    runtime = Runtime(
        ScriptedProvider([turn(call("delete", {"path": "p"})), "ok"] * 2),
        registry=registry,
        approval_gate=lambda r: Approve(),
    )
    with Runtime.override(approval_gate=lambda r: Deny("test says no")):
        runtime.exec("go")
    assert ran == []
    runtime.exec("go")  # outside the block: the runtime's own gate again
    assert [r["tool"] for r in ran] == ["delete"]


async def test_the_override_reaches_a_bare_loop_run_too() -> None:
    from openprogram import AgentContext, LoopConfig, agent_loop

    registry, ran = _agent()
    tools = [registry.get("delete")]
    provider = ScriptedProvider([turn(call("delete", {"path": "p"})), "ok"])
    config = LoopConfig(provider=provider, approval_gate=lambda r: Approve())
    with Runtime.override(approval_gate=lambda r: Deny("override")):
        await agent_loop("go", AgentContext(tools=tools), config)
    assert ran == []
    assert "denied: override" in str(provider.requests[1].messages[-1])
