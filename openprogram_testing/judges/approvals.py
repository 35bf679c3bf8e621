"""Judging a run's approvals: ``assert_approvals`` and the facts it (and ``expect.approvals``)
reads, from the one reading of a trace (``core.rounds``: each call's ``tool_approval_start`` /
``tool_approval_end``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, get_args

from openprogram.events import ApprovalOutcome, ToolApprovalEnd
from openprogram_testing.core.rounds import ReadableTrace, split_rounds

from .assertions import Subject, _fail, _pick

OUTCOMES: tuple[str, ...] = get_args(ApprovalOutcome)
"""Every ``tool_approval_end`` outcome."""


def approval_decisions(trace: ReadableTrace) -> list[ToolApprovalEnd]:
    """The run's approval decisions, in call order (calls nobody was asked about are absent)."""
    return [t.decided for r in split_rounds(trace) for t in r.tools if t.decided is not None]


def check_outcome(outcome: Any, where: str) -> str:
    if outcome not in OUTCOMES:
        raise ValueError(
            f"{where}: unknown approval outcome {outcome!r}; expected one of {', '.join(OUTCOMES)}"
        )
    return str(outcome)


def _wanted(expected: Sequence[Any]) -> list[tuple[str | None, str]]:
    """``expected`` as ``(tool or None, outcome)``: an outcome, a ``(tool, outcome)`` pair or
    a ``{tool, outcome}`` mapping."""
    if isinstance(expected, str | bytes | Mapping):
        raise TypeError(
            "expected is a list of approvals: outcomes, (tool, outcome) or {tool, outcome}"
        )
    out: list[tuple[str | None, str]] = []
    for k, entry in enumerate(expected):
        where = f"expected[{k}]"
        if isinstance(entry, str):
            out.append((None, check_outcome(entry, where)))
        elif isinstance(entry, tuple) and len(entry) == 2:
            out.append((str(entry[0]), check_outcome(entry[1], where)))
        elif (
            isinstance(entry, Mapping) and set(entry) <= {"tool", "outcome"} and "outcome" in entry
        ):
            tool = entry.get("tool")
            out.append(
                (None if tool is None else str(tool), check_outcome(entry["outcome"], where))
            )
        else:
            raise ValueError(
                f"{where} must be an outcome, (tool, outcome) or {{tool, outcome}}, got {entry!r}"
            )
    return out


def approvals_difference(trace: ReadableTrace, expected: Sequence[Any]) -> str | None:
    """Why the run's decisions are not ``expected`` (the same list, in order), else ``None``."""
    wanted = _wanted(expected)
    got = approval_decisions(trace)
    ok = len(got) == len(wanted) and all(
        w_outcome == g.outcome and (w_tool is None or w_tool == g.tool_name)
        for (w_tool, w_outcome), g in zip(wanted, got, strict=True)
    )
    if ok:
        return None
    shown_want = [o if t is None else f"{t}: {o}" for t, o in wanted]
    shown_got = [f"{g.tool_name}: {g.outcome}" for g in got]
    return f"expected approvals {shown_want}, got {shown_got or 'none'}"


def assert_approvals(
    subject: Subject, expected: Sequence[Any], *, run: str | Sequence[str] | None = None
) -> None:
    """The run's approval decisions are exactly ``expected``, in call order: each an outcome
    (``"denied"``), a ``(tool, outcome)`` pair or a ``{"tool", "outcome"}`` mapping.
    ``assert_approvals(trace, [])``: nobody was asked."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    problem = approvals_difference(trace, expected)
    if problem is not None:
        raise _fail(problem, subject, run)


__all__ = [
    "OUTCOMES",
    "approval_decisions",
    "approvals_difference",
    "assert_approvals",
]
