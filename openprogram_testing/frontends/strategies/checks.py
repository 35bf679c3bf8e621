"""Checks of one generated run: the loop invariants, the exact rules stated directly on the trace,
and the reference model's prediction of the whole outcome.

Three independent views, so a bug the oracle shares with the loop is still caught by the rules
or the invariants, and a rule the invariants do not state is still checked.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from openprogram.tools import SKIPPED_TEXT
from openprogram_testing.judges.invariants import check_invariants

if TYPE_CHECKING:
    from openprogram_testing.core.trace import LoopTrace

    from .model import GeneratedScenario


class OutcomeMismatch(AssertionError):
    """The run differs from what the spec predicts for the generated scenario."""


def outcome_problems(generated: GeneratedScenario, trace: LoopTrace) -> list[str]:
    """Every difference between the run (a ``LoopTrace``) and ``expected_outcome()``, one line
    each (empty: the run is what the spec says)."""
    exp = generated.expected_outcome()
    out: list[str] = []
    if trace.termination != exp.termination:
        out.append(f"termination: expected {exp.termination!r}, got {trace.termination!r}")
    if trace.model_calls != exp.model_calls:
        out.append(f"model calls: expected {exp.model_calls}, got {trace.model_calls}")
    results = list(trace.tool_results)
    if len(results) != len(exp.tool_results):
        names = [f"{r.tool_name}{' (error)' if r.is_error else ''}" for r in results]
        out.append(f"tool results: expected {len(exp.tool_results)}, got {len(results)} {names}")
    for i, (want, got) in enumerate(zip(exp.tool_results, results, strict=False)):
        where = f"tool result {i} ({want.name})"
        if got.tool_name != want.name:
            out.append(f"{where}: name {got.tool_name!r}")
        if got.is_error != want.is_error or got.skipped != want.skipped:
            out.append(
                f"{where}: expected is_error={want.is_error} skipped={want.skipped}, "
                f"got is_error={got.is_error} skipped={got.skipped} (text {got.text!r})"
            )
        if want.text is not None and got.text != want.text:
            out.append(f"{where}: expected text {want.text!r}, got {got.text!r}")
        if want.text_matches is not None and not re.search(want.text_matches, got.text):
            out.append(f"{where}: text {got.text!r} does not match {want.text_matches!r}")
    if exp.final_text is not None and trace.final_text != exp.final_text:
        out.append(f"final text: expected {exp.final_text!r}, got {trace.final_text!r}")
    if exp.error_text is not None and (trace.error is None or exp.error_text not in trace.error):
        out.append(f"error: expected one containing {exp.error_text!r}, got {trace.error!r}")
    if exp.error_text is None and trace.error is not None:
        out.append(f"error: expected none, got {trace.error!r}")
    prompts = 1
    delivered = [m.text for m in trace.user_messages[prompts:]]
    if tuple(delivered) != exp.delivered:
        out.append(f"delivered messages: expected {list(exp.delivered)}, got {delivered}")
    undelivered = [m.text for m in trace.undelivered]
    if tuple(undelivered) != exp.undelivered:
        out.append(f"undelivered messages: expected {list(exp.undelivered)}, got {undelivered}")
    return out


def check_outcome(generated: GeneratedScenario, trace: LoopTrace) -> None:
    """Raise ``OutcomeMismatch`` listing every difference from the spec's prediction."""
    problems = outcome_problems(generated, trace)
    if problems:
        raise OutcomeMismatch(
            "the run differs from the spec's prediction:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )


def check_rules(generated: GeneratedScenario, trace: LoopTrace) -> None:
    """The exact rules of the loop stated directly on a trace (no reference model): model
    calls within the cap, one assistant message per call, the exact skip text (and no skip in
    ``after_batch`` mode), what each termination requires of the last message, and every handed
    over steering/follow-up message delivered xor reported undelivered."""
    cap = trace.cap
    assistants = trace.assistant_messages
    if trace.model_calls > cap:
        raise OutcomeMismatch(f"{trace.model_calls} model calls exceed the cap {cap}")
    if trace.model_calls != len(assistants):
        raise OutcomeMismatch(
            f"{trace.model_calls} model calls but {len(assistants)} assistant messages"
        )
    for result in trace.tool_results:
        if result.skipped and not (result.is_error and result.text == SKIPPED_TEXT):
            raise OutcomeMismatch(f"a skipped call needs the exact skip text: {result!r}")
        if not result.skipped and result.text == SKIPPED_TEXT:
            raise OutcomeMismatch(f"a result carries the skip text but is not skipped: {result!r}")
    if generated.steering_mode == "after_batch" and trace.skipped:
        raise OutcomeMismatch("after_batch mode never skips a call")
    last = assistants[-1] if assistants else None
    termination = trace.termination
    if termination == "completed":
        if last is None or last.stop_reason not in ("stop", "length") or last.tool_calls:
            raise OutcomeMismatch("a run completes only on a reply without tool calls")
        if trace.undelivered:
            raise OutcomeMismatch("a completed run cannot leave messages undelivered")
    elif termination == "error":
        if last is None or last.stop_reason != "error" or not last.error_message:
            raise OutcomeMismatch("termination 'error' needs a last message with an error")
    elif termination == "aborted":
        if last is None or last.stop_reason != "aborted":
            raise OutcomeMismatch("termination 'aborted' needs an aborted last message")
    elif trace.model_calls != cap:
        raise OutcomeMismatch(
            f"termination {termination!r} after {trace.model_calls} model calls (cap {cap})"
        )
    schedule = trace.schedule
    if schedule is not None:
        in_run = {id(m) for m in trace.messages}
        undelivered = {id(m) for m in trace.undelivered}
        for delivery in schedule.delivered:
            if (id(delivery.message) in in_run) == (id(delivery.message) in undelivered):
                raise OutcomeMismatch(
                    f"{delivery.message.text!r} must be delivered xor reported undelivered"
                )


def check_run(generated: GeneratedScenario, trace: LoopTrace) -> None:
    """Everything the property suite checks on one run: the loop invariants
    (``check_invariants``), ``check_rules`` and ``check_outcome``."""

    check_invariants(trace)
    check_rules(generated, trace)
    check_outcome(generated, trace)
