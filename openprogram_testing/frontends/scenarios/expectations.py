"""Checking a finished run against ``expect``: one readable line per unmet expectation.

Regexes run on the ``regex`` engine with a time limit (the rest of the scenario's time), so a
pattern that backtracks catastrophically fails its scenario instead of hanging the run.
"""

from __future__ import annotations

import difflib
import threading
import time
from typing import Any

from openprogram_testing.core.matchers import match_deadline
from openprogram_testing.core.tree import TraceTree
from openprogram_testing.judges.approvals import approvals_difference
from openprogram_testing.judges.trajectory import trajectory_mismatch
from openprogram_testing.judges.usage import (
    Prices,
    UsageError,
    budget_problems,
    over_budget_text,
    usage_of,
)

from .events import event_tokens
from .model import Expectations, Scenario, ToolResultExpect, compile_regex

REGEX_TIME_LIMIT_S = 5.0
"""How long all regexes of one scenario may take when no deadline is given."""


def _search(where: str, pattern: str, text: str, deadline: float) -> bool | str:
    """Does ``pattern`` match somewhere in ``text``?  A string is the failure line when the
    deadline passed first."""
    left = max(deadline - time.monotonic(), 0.01)
    outcome: list[bool] = []
    worker = threading.Thread(
        target=_match, args=(compile_regex(pattern), text, left, outcome), daemon=True
    )
    worker.start()
    worker.join(left)
    if outcome:
        return outcome[0]
    return (
        f"{where}: the regular expression {pattern!r} did not finish within the scenario's "
        "time limit (catastrophic backtracking?); simplify it"
    )


def _match(compiled: Any, text: str, limit: float, outcome: list[bool]) -> None:
    """Search on a worker thread: the ``regex`` engine releases the GIL (``concurrent``) and
    stops itself at ``limit`` (roughly: its clock is checked between backtracking steps), so
    the caller can give up on time and the worker still ends."""
    try:
        outcome.append(compiled.search(text, timeout=limit, concurrent=True) is not None)
    except TimeoutError:
        pass


def check_expectations(scenario: Scenario, ran: Any, *, deadline: float | None = None) -> list[str]:
    """Every failed expectation as one readable line (empty list: all met).  ``ran`` is the
    run's ``LoopTrace``, or the ``TraceTree`` of a run through ``Runtime.exec`` (``expect``
    judges its outermost run, ``expect.runs`` the nested runs by path).  Regexes are matched
    with the ``regex`` engine and stop at ``deadline`` (a ``time.monotonic()`` value; default:
    ``REGEX_TIME_LIMIT_S`` from now)."""

    if deadline is None:
        deadline = time.monotonic() + REGEX_TIME_LIMIT_S
    tree = ran if isinstance(ran, TraceTree) else None
    if tree is None:
        out = check_run(scenario.expect, ran, deadline, "expect")
    else:  # the outermost run's request_roles list every model call of the scenario, in order
        every = [r for node in tree.walk() for r in node.trace.requests or []]
        every.sort(key=lambda r: r.index)
        requests = every if tree.trace.requests is not None else None
        out = check_run(
            scenario.expect, tree.trace, deadline, "expect", requests=requests, whole=tree
        )
    for key, expect in (scenario.expect.runs or {}).items():
        where = f"expect.runs[{key!r}]"
        node = tree.find(key) if tree is not None else None
        if node is None:
            ran_paths = [] if tree is None else [n.path for n in tree.walk() if n.path]
            out.append(
                f"{where}: no run at {key!r} ran (nested runs: {', '.join(ran_paths) or 'none'})"
            )
            continue
        out.extend(check_run(expect, node.trace, deadline, where))
    return out


def check_run(
    exp: Expectations,
    trace: Any,
    deadline: float,
    where: str,
    *,
    requests: Any = (),
    whole: Any = None,
) -> list[str]:
    """The failed expectations ``exp`` of one run's ``trace``, each line starting with
    ``where`` (``expect`` or ``expect.runs['plan']``); ``requests`` replaces the trace's own
    for ``request_roles``, and ``whole`` (the tree of the outermost run) is what ``usage``
    counts (a budget is about what the whole agent cost)."""
    out: list[str] = []
    if exp.termination is not None and trace.termination != exp.termination:
        out.append(f"{where}.termination: expected {exp.termination!r}, got {trace.termination!r}")
    if exp.model_calls is not None and trace.model_calls != exp.model_calls:
        out.append(f"{where}.model_calls: expected {exp.model_calls}, got {trace.model_calls}")
    if exp.tool_results is not None:
        out.extend(_check_tool_results(exp.tool_results, list(trace.tool_results), deadline, where))
    final = trace.final_text
    if exp.final_text is not None and final != exp.final_text:
        out.append(_text_mismatch(f"{where}.final_text", exp.final_text, final))
    if exp.final_text_matches is not None:
        found = _search(
            f"{where}.final_text_matches", exp.final_text_matches, final or "", deadline
        )
        if isinstance(found, str):
            out.append(found)
        elif not found:
            out.append(
                f"{where}.final_text_matches: {exp.final_text_matches!r} does not match {final!r}"
            )
    if exp.error_text is not None:
        errors = [m.error_message for m in trace.assistant_messages if m.error_message]
        got = errors[-1] if errors else None
        if got is None or exp.error_text not in got:
            out.append(
                f"{where}.error_text: expected an error containing {exp.error_text!r}, got {got!r}"
            )
    if exp.undelivered is not None and len(trace.undelivered) != exp.undelivered:
        texts = [m.text for m in trace.undelivered]
        out.append(f"{where}.undelivered: expected {exp.undelivered}, got {len(texts)} {texts!r}")
    if exp.delivered is not None:
        got_n = len(trace.deliveries) - len(trace.undelivered)
        if got_n != exp.delivered:
            out.append(f"{where}.delivered: expected {exp.delivered}, got {got_n}")
    if exp.events is not None:
        tokens = event_tokens(trace)
        if tokens != exp.events:
            out.append(f"{where}.events: the event order differs\n" + _diff(exp.events, tokens))
    if exp.trajectory is not None:
        out.extend(_check_trajectory(exp.trajectory, trace, where, deadline))
    if exp.approvals is not None:
        wanted = [a.outcome if a.tool is None else (a.tool, a.outcome) for a in exp.approvals]
        problem = approvals_difference(trace, wanted)
        if problem is not None:
            out.append(f"{where}.approvals: {problem}")
    if exp.usage is not None:
        out.extend(_check_usage(exp.usage, whole if whole is not None else trace, where))
    if exp.request_roles is not None:
        if requests == ():
            requests = trace.requests
        if requests is None:
            out.append(f"{where}.request_roles: this run does not record requests (cassette)")
        else:
            got_roles = [[m.role for m in r.messages] for r in requests]
            if got_roles != exp.request_roles:
                out.append(f"{where}.request_roles: expected {exp.request_roles}, got {got_roles}")
    return out


def _check_trajectory(spec: Any, trace: Any, where: str, deadline: float) -> list[str]:

    try:
        with match_deadline(deadline):  # every $regex of the trajectory, within the time left
            failure = trajectory_mismatch(trace, spec.expected(), mode=spec.mode, args=spec.args)
    except ValueError as exc:  # a regex past its time limit
        return [f"{where}.trajectory: {exc}"]
    return [] if failure is None else [f"{where}.trajectory: {failure.reason}"]


def _check_usage(spec: Any, trace: Any, where: str) -> list[str]:

    table = spec.price_table()
    prices = Prices(table) if table is not None else None
    try:
        usage = usage_of(trace)
        over, _cost = budget_problems(usage, spec.budgets(), prices)
    except UsageError as exc:
        return [f"{where}.usage: {exc}"]
    return [f"{where}.usage: {over_budget_text(over, usage, prices)}"] if over else []


def _check_tool_results(
    expected: list[ToolResultExpect], results: list[Any], deadline: float, prefix: str
) -> list[str]:
    out: list[str] = []
    if len(expected) != len(results):
        got = ", ".join(f"{r.tool_name}{' (error)' if r.is_error else ''}" for r in results)
        out.append(
            f"{prefix}.tool_results: expected {len(expected)} result(s), got {len(results)}: "
            f"[{got}]"
        )
    for i, (want, got) in enumerate(zip(expected, results, strict=False)):
        where = f"{prefix}.tool_results[{i}]"
        if want.name is not None and got.tool_name != want.name:
            out.append(f"{where}.name: expected {want.name!r}, got {got.tool_name!r}")
        if want.is_error is not None and got.is_error != want.is_error:
            out.append(
                f"{where}.is_error: expected {want.is_error}, got {got.is_error} "
                f"(text {got.text!r})"
            )
        if want.skipped is not None and got.skipped != want.skipped:
            out.append(f"{where}.skipped: expected {want.skipped}, got {got.skipped}")
        if want.text is not None and got.text != want.text:
            out.append(_text_mismatch(f"{where}.text", want.text, got.text))
        if want.text_matches is not None:
            found = _search(f"{where}.text_matches", want.text_matches, got.text, deadline)
            if isinstance(found, str):
                out.append(found)
            elif not found:
                out.append(
                    f"{where}.text_matches: {want.text_matches!r} does not match {got.text!r}"
                )
    return out


def _text_mismatch(where: str, expected: str, got: str) -> str:
    if "\n" not in expected and "\n" not in got:
        return f"{where}: expected {expected!r}, got {got!r}"
    return f"{where}: the text differs\n" + _diff(expected.splitlines(), got.splitlines())


def _diff(expected: list[str], got: list[str]) -> str:
    lines = difflib.unified_diff(expected, got, "expected", "got", lineterm="", n=2)
    return "\n".join("    " + line for line in lines)


__all__ = ["REGEX_TIME_LIMIT_S", "check_expectations", "check_run"]
