"""Assertions on loop traces: ``assert_*`` helpers that fail with a readable message.

Every failure message names what was expected, what happened, and ends with the run's timeline
(numbered events), rich-coloured on a terminal.  The helpers hide themselves from pytest's
traceback (``__tracebackhide__``), so a failure points at the test's own line.  The loop
invariants live in ``openprogram_testing.judges.invariants``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from openprogram.texts import CLIP_LIMIT, clip, clipped_repr
from openprogram_testing.base import deprecated
from openprogram_testing.base.failures import TraceFailure
from openprogram_testing.core.render import lane_text
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.core.tree import Subject

# What the helpers check (``Subject``): a ``LoopTrace``, or a ``TraceTree`` (its outer run, or
# with ``run=`` the nested run at that tool path, e.g. ``run="summarize_cities"``).

TERMINATIONS = ("completed", "max_iterations", "error", "aborted")


def _q(text: str, limit: int = 60) -> str:
    return clipped_repr(text, limit)


def _fail(message: str, subject: Subject, run: str | Sequence[str] | None = None) -> TraceFailure:
    """The failure of a check on ``subject`` (at ``run``): it names the run and shows that
    run's lane, not the whole tree's timeline."""
    where = ""
    if run:
        where = run if isinstance(run, str) else "/".join(run)
        message = f"in run {where}: {message}"
    message = clip(message, 2 * CLIP_LIMIT)  # whatever value a message quotes
    return TraceFailure(message, lane_text(subject, run), run=where)


def _pick(subject: Subject, run: str | Sequence[str] | None) -> LoopTrace:
    """The trace to check: ``subject`` itself, or the run of a tree at path ``run``."""
    __tracebackhide__ = True
    if isinstance(subject, LoopTrace):
        if run:
            raise TypeError("run= addresses a nested run of a TraceTree (run_exec / exec_runner)")
        return subject
    if not run:
        return subject.trace
    try:
        return subject[run].trace
    except KeyError as exc:
        raise _fail(str(exc.args[0]), subject) from None


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_terminated(
    subject: Subject, termination: str, *, run: str | Sequence[str] | None = None
) -> None:
    """The run ended with ``termination`` (completed, max_iterations, error, aborted)."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    if termination not in TERMINATIONS:
        raise ValueError(
            f"unknown termination {termination!r}; expected one of {', '.join(TERMINATIONS)}"
        )
    if trace.termination != termination:
        extra = f" (error: {trace.error})" if trace.error else ""
        raise _fail(
            f"expected termination {termination!r}, got {trace.termination!r}{extra}", subject, run
        )


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_model_calls(subject: Subject, n: int, *, run: str | Sequence[str] | None = None) -> None:
    """The model was called exactly ``n`` times."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    if trace.model_calls != n:
        raise _fail(f"expected {n} model call(s), got {trace.model_calls}", subject, run)


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_skipped(
    subject: Subject, ids_or_names: str | Sequence[str], *, run: str | Sequence[str] | None = None
) -> None:
    """Exactly these calls were skipped, in this order; each entry is a tool call id or a tool
    name.  ``assert_skipped(trace, [])`` asserts nothing was skipped."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    wanted = [ids_or_names] if isinstance(ids_or_names, str) else list(ids_or_names)
    got = trace.skipped
    ok = len(got) == len(wanted) and all(
        w in (r.tool_call_id, r.tool_name) for w, r in zip(wanted, got, strict=True)
    )
    if not ok:
        desc = [f"{r.tool_call_id} ({r.tool_name})" for r in got]
        raise _fail(f"expected skipped calls {wanted}, got {desc or 'none'}", subject, run)


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_recovered(subject: Subject, *, run: str | Sequence[str] | None = None) -> None:
    """An error tool result was followed by another model call and the run finished
    successfully (termination ``completed``, final message not an error)."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    errors = [r for r in trace.tool_results if r.is_error and not r.skipped]
    if not errors:
        raise _fail("expected a recovery, but no tool call failed", subject, run)
    if not trace.recovered_errors:
        raise _fail(
            f"{len(errors)} tool call(s) failed but the model was not called again afterwards",
            subject,
            run,
        )
    final = trace.final_message
    if (
        trace.termination != "completed"
        or final is None
        or final.stop_reason in ("error", "aborted")
    ):
        raise _fail(
            f"the model was called again after the error, but the run did not finish successfully "
            f"(termination {trace.termination!r})",
            subject,
            run,
        )


_RESULT_KEYS = {"name", "id", "is_error", "skipped", "text", "contains", "match"}


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_tool_results(
    subject: Subject,
    expected: Sequence[str | Mapping[str, Any]],
    *,
    run: str | Sequence[str] | None = None,
) -> None:
    """The run's tool results, in order, match ``expected``: each entry is a tool name or a
    mapping with any of ``name``, ``id``, ``is_error``, ``skipped``, ``text`` (exact),
    ``contains`` (substring) and ``match`` (regex, ``re.search``)."""
    __tracebackhide__ = True
    trace = _pick(subject, run)
    specs: list[Mapping[str, Any]] = []
    for k, want in enumerate(expected):
        spec: Mapping[str, Any] = {"name": want} if isinstance(want, str) else want
        unknown = set(spec) - _RESULT_KEYS
        if unknown:
            raise ValueError(
                f"assert_tool_results: unknown key(s) {sorted(unknown)} in entry {k}; "
                f"use {sorted(_RESULT_KEYS)}"
            )
        specs.append(spec)
    got = trace.tool_results
    problems: list[str] = []
    if len(got) != len(specs):
        problems.append(f"expected {len(specs)} tool result(s), got {len(got)}")
    for k, (spec, r) in enumerate(zip(specs, got, strict=False)):
        checks: list[tuple[str, Any, Callable[[Any, Any], bool]]] = [
            ("name", r.tool_name, lambda v, a: v == a),
            ("id", r.tool_call_id, lambda v, a: v == a),
            ("is_error", r.is_error, lambda v, a: bool(v) == a),
            ("skipped", r.skipped, lambda v, a: bool(v) == a),
            ("text", r.text, lambda v, a: v == a),
            ("contains", r.text, lambda v, a: v in a),
            ("match", r.text, lambda v, a: re.search(v, a) is not None),
        ]
        for key, actual, test in checks:
            if key in spec and not test(spec[key], actual):
                shown = _q(actual, 80) if isinstance(actual, str) else repr(actual)
                problems.append(
                    f"result {k} ({r.tool_call_id} {r.tool_name}): {key} {spec[key]!r} "
                    f"does not hold for {shown}"
                )
    if problems:
        raise _fail("tool results differ:\n  " + "\n  ".join(problems), subject, run)


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def assert_final_text(
    subject: Subject,
    text: str | None = None,
    *,
    match: str | None = None,
    run: str | Sequence[str] | None = None,
) -> None:
    """The final assistant text equals ``text`` (or matches the regex ``match``).  Given
    neither, it refuses (``ValueError``): a check of nothing would always pass."""
    __tracebackhide__ = True
    if text is None and match is None:
        raise ValueError("assert_final_text: give text= or match= (there is nothing to check)")
    trace = _pick(subject, run)
    final = trace.final_text
    if text is not None and final != text:
        raise _fail(f"expected final text {_q(text, CLIP_LIMIT)}, got {_q(final, CLIP_LIMIT)}",
                    subject, run)  # fmt: skip
    if match is not None and re.search(match, final) is None:
        raise _fail(f"final text {_q(final, CLIP_LIMIT)} does not match {match!r}", subject, run)


__all__ = [
    "TERMINATIONS",
    "Subject",
    "assert_final_text",
    "assert_model_calls",
    "assert_recovered",
    "assert_skipped",
    "assert_terminated",
    "assert_tool_results",
]
