"""The loop property suite (the loop invariants): generated scenarios through the real loop.

Every example is checked three ways (``check_run``): the invariants 1-9
(``check_invariants``), the exact rules of the spec restated on the trace (``check_rules``: skip
text, termination rules, model calls ≤ cap, steering delivered or reported undelivered), and the
reference model's prediction of the whole outcome (``check_outcome``).  Invariant 10 has its own
property.  A failing example is shrunk by hypothesis and written out as a YAML scenario
(``report_failure``) to commit as a regression test.
"""

from __future__ import annotations

import asyncio
import json

from hypothesis import given

from openprogram_testing.strategies import (
    GeneratedScenario,
    check_outcome,
    check_run,
    property_settings,
    report_failure,
    scenarios,
)
from tests.properties._settings import half_property_settings

# The active profile ($HYPOTHESIS_PROFILE, or "ci" when $CI is set, else "dev") for these
# properties only: hypothesis's global default, which other test modules use, is left alone.
PROPERTY = property_settings()

# The re-chunking property runs every example twice: half the examples keeps its cost level.
_HALF = half_property_settings()


def final_messages(trace: object) -> list[str]:
    return [
        json.dumps(m.model_dump(mode="json"), sort_keys=True)
        for m in trace.messages  # type: ignore[attr-defined]
    ]


@PROPERTY
@given(generated=scenarios())
def test_generated_scenarios_follow_the_spec(
    generated: GeneratedScenario, event_runner: asyncio.Runner
) -> None:
    with report_failure(generated):
        check_run(generated, generated.run_sync(runner=event_runner))


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
