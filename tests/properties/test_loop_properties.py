"""The loop property suite (SPEC §9.6, §10): generated scenarios through the real loop.

Every example is checked three ways: the §10 invariants (``check_invariants``), the exact rules
restated below straight from the spec, and the reference model's prediction of the whole outcome
(``check_outcome``).  A failing example is shrunk by hypothesis and written out as a YAML
scenario (``report_failure``) to commit as a regression test.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import given, settings

from openprogram.tools import SKIPPED_TEXT
from openprogram.types import AssistantMessage
from openprogram_testing.assertions import check_invariants
from openprogram_testing.strategies import (
    GeneratedScenario,
    check_outcome,
    report_failure,
    scenarios,
)

# The re-chunking property runs every example twice: half the examples keeps its cost level.
_HALF = settings(max_examples=max(10, settings.default.max_examples // 2))


def check_exact_rules(generated: GeneratedScenario, trace: object) -> None:
    """The rules of SPEC §4/§5/§10 stated directly on the trace (no reference model)."""
    t: object = trace
    cap = t.cap  # type: ignore[attr-defined]
    assistants: list[AssistantMessage] = t.assistant_messages  # type: ignore[attr-defined]
    # Model calls: never above the cap; every call produced exactly one assistant message.
    assert t.model_calls <= cap, f"{t.model_calls} model calls exceed the cap {cap}"  # type: ignore[attr-defined]
    assert t.model_calls == len(assistants)  # type: ignore[attr-defined]
    # Skipped calls carry exactly the spec's text; nothing else does.
    for result in t.tool_results:  # type: ignore[attr-defined]
        if result.skipped:
            assert result.is_error and result.text == SKIPPED_TEXT, result
        else:
            assert result.text != SKIPPED_TEXT, result
    if generated.steering_mode == "after_batch":
        assert not t.skipped, "after_batch mode never skips a call"  # type: ignore[attr-defined]
    # Termination rules.
    last = assistants[-1] if assistants else None
    termination = t.termination  # type: ignore[attr-defined]
    if termination == "completed":
        assert last is not None and last.stop_reason in ("stop", "length")
        assert not last.tool_calls, "a run completes only on a reply without tool calls"
        assert not t.undelivered  # type: ignore[attr-defined]
    elif termination == "error":
        assert last is not None and last.stop_reason == "error" and last.error_message
    elif termination == "aborted":
        assert last is not None and last.stop_reason == "aborted"
    else:
        assert termination == "max_iterations"
        assert t.model_calls == cap, "the cap ends a run only after exactly cap model calls"  # type: ignore[attr-defined]
    # Steering: every message the schedule handed over was delivered or reported undelivered.
    schedule = t.schedule  # type: ignore[attr-defined]
    if schedule is not None:
        in_run = {id(m) for m in t.messages}  # type: ignore[attr-defined]
        undelivered = {id(m) for m in t.undelivered}  # type: ignore[attr-defined]
        for delivery in schedule.delivered:
            assert (id(delivery.message) in in_run) != (id(delivery.message) in undelivered), (
                f"{delivery.message.text!r} must be delivered xor reported undelivered"
            )


def final_messages(trace: object) -> list[str]:
    return [json.dumps(m.model_dump(mode="json"), sort_keys=True) for m in trace.messages]  # type: ignore[attr-defined]


@given(generated=scenarios())
def test_generated_scenarios_follow_the_spec(generated: GeneratedScenario, event_runner: asyncio.Runner) -> None:
    with report_failure(generated):
        trace = generated.run_sync(runner=event_runner)
        check_invariants(trace)
        check_exact_rules(generated, trace)
        check_outcome(generated, trace)


@_HALF
@given(generated=scenarios())
def test_rechunking_does_not_change_the_final_messages(
    generated: GeneratedScenario, event_runner: asyncio.Runner
) -> None:
    """Invariant 10: the same script streamed one character per delta and in one piece per block
    gives the same final messages."""
    with report_failure(generated):
        whole = generated.run_sync(chunk_size=10_000, runner=event_runner)
        char = generated.run_sync(chunk_size=1, runner=event_runner)
        assert whole.termination == char.termination
        assert final_messages(whole) == final_messages(char)
        check_outcome(generated, char)
