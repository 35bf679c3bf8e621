"""Scripted reviewers: the ``approvals`` fixture and ``ScriptedReviewer`` deny, modify and approve
a run's approval requests by tool name, argument matcher, ``nth`` or ``when`` predicate; strict
both ways (a request nobody scripted, a decision never asked: each fails naming it);
``assert_approvals``; the requests and decisions in the timeline and the invariant that a denied
call never runs.  Every check is shown failing on the broken case."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import (
    ApprovalRequest,
    Registry,
    Runtime,
    ToolApprovalEnd,
    ToolApprovalStart,
    function,
)
from openprogram.texts import not_run_text
from openprogram_testing import (
    ApprovalScriptError,
    Matches,
    ScriptedProvider,
    ScriptedReviewer,
    assert_approvals,
    call,
    check_invariants,
    render_timeline,
    run_exec,
    turn,
)
from openprogram_testing.core.approvals import UNSCRIPTED_TEXT
from openprogram_testing.judges.invariants import InvariantViolation

pytest_plugins = ["pytester"]


def _agent() -> tuple[Registry, list[tuple[str, dict[str, Any]]]]:
    registry = Registry()
    ran: list[tuple[str, dict[str, Any]]] = []

    @function(registry=registry, requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(("delete", {"path": path}))
        return f"deleted {path}"

    @function(registry=registry, requires_approval=True)
    def move(path: str, to: str) -> str:
        """Move a file."""
        ran.append(("move", {"path": path, "to": to}))
        return f"moved {path} to {to}"

    return registry, ran


CALLS = (
    call("delete", {"path": "/etc/passwd"}, id="c1"),
    call("move", {"path": "a", "to": "/home/b"}, id="c2"),
    call("delete", {"path": "/tmp/x"}, id="c3"),
)


async def _run(reviewer: ScriptedReviewer, *calls: Any) -> tuple[Any, list[Any]]:
    registry, ran = _agent()
    provider = ScriptedProvider([turn(*(calls or CALLS)), "done"])
    runtime = Runtime(provider, registry=registry, approval_gate=reviewer)
    tree = await run_exec(runtime, "tidy up")
    return tree, ran


# -- deny, modify, approve -----------------------------------------------------------------------


async def test_a_scripted_reviewer_denies_modifies_and_approves() -> None:
    reviewer = (
        ScriptedReviewer()
        .deny("delete", "never /etc", args={"path": Matches(r"^/etc/")})
        .modify("move", {"path": "a", "to": "/tmp/b"})
        .approve("delete")
    )
    tree, ran = await _run(reviewer)
    reviewer.assert_complete()
    assert ran == [("move", {"path": "a", "to": "/tmp/b"}), ("delete", {"path": "/tmp/x"})]
    assert [r.text for r in tree.trace.tool_results] == [
        not_run_text("delete", "the call was denied: never /etc"),
        "moved a to /tmp/b",
        "deleted /tmp/x",
    ]
    assert_approvals(tree, [("delete", "denied"), ("move", "modified"), ("delete", "approved")])
    assert reviewer.decisions() == [("delete", "deny"), ("move", "modify"), ("delete", "approve")]


async def test_nth_when_and_times() -> None:
    reviewer = (
        ScriptedReviewer()
        .deny("delete", "second one", nth=2)
        .approve(when=lambda r: r.tool_name == "delete", times=None)
        .modify("move", lambda args: {**args, "to": "/tmp/" + args["path"]})
    )
    tree, ran = await _run(reviewer)
    reviewer.assert_complete()
    # the nth=2 rule saw the first delete (count 1) and let the when= rule answer it
    assert_approvals(tree, ["approved", "modified", "denied"])
    assert ran == [("delete", {"path": "/etc/passwd"}), ("move", {"path": "a", "to": "/tmp/a"})]


# -- strict both ways ----------------------------------------------------------------------------


async def test_a_request_nobody_scripted_is_denied_and_fails_naming_the_call() -> None:
    reviewer = ScriptedReviewer().approve("delete", times=2)
    tree, ran = await _run(reviewer)
    assert ("move", {"path": "a", "to": "/home/b"}) not in ran  # the safe answer: not run
    assert tree.trace.tool_results[1].text == not_run_text(
        "move", f"the call was denied: {UNSCRIPTED_TEXT}"
    )
    with pytest.raises(ApprovalScriptError) as failure:
        reviewer.assert_complete()
    text = str(failure.value)
    assert "an approval request nobody scripted: move" in text
    assert '{"path": "a", "to": "/home/b"}' in text and "call c2" in text
    assert [r.tool_call_id for r in failure.value.unscripted] == ["c2"]


async def test_a_scripted_decision_never_asked_fails_naming_it() -> None:
    reviewer = (
        ScriptedReviewer()
        .approve(times=None)
        .deny("wipe", "no", required=True)
        .deny("format", required=False)
    )
    await _run(reviewer)
    with pytest.raises(ApprovalScriptError) as failure:
        reviewer.assert_complete()
    assert str(failure.value) == (
        "a scripted approval decision was never asked for: deny(wipe, 'no')"
    )
    # (a times=None rule that answered is used; the optional one is not reported)


async def test_a_rule_shadowed_by_an_earlier_one_is_reported_unused() -> None:
    reviewer = ScriptedReviewer().approve(times=None).deny("delete")
    await _run(reviewer)
    with pytest.raises(ApprovalScriptError, match=r"never asked for: deny\(delete\)"):
        reviewer.assert_complete()


async def test_a_raising_when_predicate_is_a_refusal_and_a_failure() -> None:
    def broken(request: ApprovalRequest) -> bool:
        raise KeyError("nope")

    reviewer = ScriptedReviewer().approve(when=broken, times=None)
    tree, ran = await _run(reviewer, call("delete", {"path": "p"}))
    assert ran == []
    assert_approvals(tree, ["gate_failed"])
    with pytest.raises(ApprovalScriptError, match="when= predicate raised KeyError"):
        reviewer.assert_complete()


def test_scripting_mistakes_fail_where_written() -> None:
    reviewer = ScriptedReviewer()
    with pytest.raises(TypeError, match="modify\\(\\) needs arguments="):
        reviewer.modify("move")
    with pytest.raises(ValueError, match="times="):
        reviewer.approve("x", times=0)
    with pytest.raises(TypeError, match="belong to a tool name"):
        reviewer.approve(args={"a": 1})
    with pytest.raises(TypeError, match="deny\\(message=\\) takes a string"):
        reviewer.deny("x", 3)  # type: ignore[arg-type]


# -- assert_approvals fails on the broken case ---------------------------------------------------


async def test_assert_approvals_fails_on_a_different_outcome_tool_or_count() -> None:
    reviewer = ScriptedReviewer().deny("delete").approve("move").approve("delete")
    tree, _ = await _run(reviewer)
    assert_approvals(tree, [("delete", "denied"), ("move", "approved"), ("delete", "approved")])
    with pytest.raises(AssertionError, match="expected approvals"):
        assert_approvals(
            tree, [("delete", "approved"), ("move", "approved"), ("delete", "approved")]
        )
    with pytest.raises(AssertionError, match="expected approvals"):
        assert_approvals(tree, [("move", "denied"), ("move", "approved"), ("delete", "approved")])
    with pytest.raises(AssertionError, match="expected approvals"):
        assert_approvals(tree, [("delete", "denied")])
    with pytest.raises(ValueError, match="unknown approval outcome"):
        assert_approvals(tree, ["refused"])


# -- the timeline and the invariant ----------------------------------------------------------------


async def test_the_timeline_shows_requests_and_decisions() -> None:
    reviewer = (
        ScriptedReviewer()
        .deny("delete", "never /etc")
        .modify("move", {"path": "a", "to": "/tmp/b"})
        .approve("delete")
    )
    tree, _ = await _run(reviewer)
    text = render_timeline(tree)
    assert "tool_approval_start" in text and "tool_approval_end" in text
    assert "denied: never /etc" in text
    assert 'modified {"path": "a", "to": "/tmp/b"}' in text


async def test_the_invariant_denied_calls_never_run_fails_on_a_broken_trace() -> None:
    reviewer = ScriptedReviewer().deny("delete", "no")
    tree, _ = await _run(reviewer, call("delete", {"path": "p"}, id="c1"))
    check_invariants(tree)  # the real run holds it
    events = tree.trace.events
    # the broken case: the decision says denied, yet the result is the tool's own
    end = next(i for i, e in enumerate(events) if isinstance(e, ToolApprovalEnd))
    from openprogram.events import ToolExecutionEnd
    from openprogram.tools import make_result
    from openprogram_testing import LoopTrace

    forged = list(events)
    k = next(i for i, e in enumerate(forged) if isinstance(e, ToolExecutionEnd))
    result = make_result("c1", "delete", "deleted p")
    forged[k] = ToolExecutionEnd("c1", "delete", result, False)
    with pytest.raises(InvariantViolation, match=r"was denied yet ran"):
        check_invariants(LoopTrace.from_events(forged))
    # and an approval decision with no request before it
    unpaired = [e for e in events if not isinstance(e, ToolApprovalStart)]
    assert end  # (the decision exists in the real run)
    with pytest.raises(
        InvariantViolation, match="tool_approval_end c1 without tool_approval_start"
    ):
        check_invariants(LoopTrace.from_events(unpaired))


# -- the fixture -----------------------------------------------------------------------------------

_FIXTURE_TESTS = '''
from openprogram import Registry, Runtime, function
from openprogram_testing import ScriptedProvider, assert_approvals, call, turn

registry = Registry()
RAN = []

@function(registry=registry, requires_approval=True)
def delete(path: str) -> str:
    """Delete."""
    RAN.append(path)
    return "deleted"

APP = Runtime(ScriptedProvider([]), registry=registry)  # built by the application

def _go(scripted_provider, runtime_override, *paths):
    scripted_provider.add(turn(*(call("delete", {"path": p}) for p in paths)), "done")
    return APP.exec("go")

def test_scripted(scripted_provider, runtime_override, approvals):
    approvals.deny("delete", "no").approve("delete")
    assert _go(scripted_provider, runtime_override, "a", "b") == "done"
    assert RAN[-1:] == ["b"]

def test_unscripted(scripted_provider, runtime_override, approvals):
    _go(scripted_provider, runtime_override, "z")

def test_never_asked(scripted_provider, runtime_override, approvals):
    approvals.approve("delete").deny("delete", "second")
    _go(scripted_provider, runtime_override, "y")
'''


def test_the_fixture_fails_a_test_strictly_both_ways(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=_FIXTURE_TESTS)
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "-rA", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    outcomes = result.parseoutcomes()
    out = result.stdout.str()
    assert (outcomes.get("passed"), outcomes.get("errors")) == (3, 2), out
    assert "ERROR at teardown of test_unscripted" in out
    assert 'an approval request nobody scripted: delete {"path": "z"}' in out
    assert "ERROR at teardown of test_never_asked" in out
    assert "a scripted approval decision was never asked for: deny(delete, 'second')" in out
    assert "teardown of test_scripted" not in out


async def test_the_report_record_carries_each_decision() -> None:
    from openprogram_testing import trace_record

    reviewer = (
        ScriptedReviewer()
        .deny("delete", "never /etc")
        .modify("move", {"path": "a", "to": "/tmp/b"})
        .approve("delete")
    )
    tree, _ = await _run(reviewer)
    tools = trace_record(tree)["rounds"][0]["tools"]
    assert [t.get("approval") for t in tools] == [
        {"outcome": "denied", "message": "never /etc"},
        {"outcome": "modified", "args": '{\n  "path": "a",\n  "to": "/tmp/b"\n}'},
        {"outcome": "approved"},
    ]
    assert [t["status"] for t in tools] == ["error", "ok", "ok"]


async def test_the_snapshot_shows_each_decision_with_normalised_ids() -> None:
    from openprogram_testing import render_snapshot

    reviewer = (
        ScriptedReviewer()
        .deny("delete", "never /etc")
        .modify("move", {"path": "a", "to": "/tmp/b"})
        .approve("delete")
    )
    tree, _ = await _run(reviewer)
    lines = [line.strip() for line in render_snapshot(tree).splitlines() if "approval" in line]
    assert lines == [
        'tool_approval_start call#1 delete {"path": "/etc/passwd"}',
        "tool_approval_end call#1 denied: never /etc",
        'tool_approval_start call#2 move {"path": "a", "to": "/home/b"}',
        'tool_approval_end call#2 modified {"path": "a", "to": "/tmp/b"}',
        'tool_approval_start call#3 delete {"path": "/tmp/x"}',
        "tool_approval_end call#3 approved",
    ]
