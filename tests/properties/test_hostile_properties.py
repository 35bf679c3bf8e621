"""Hostile runs: generated runs with a raising steering/follow-up source, a tool that fires the
cancel token, raises KeyboardInterrupt/SystemExit or returns a value that cannot become text,
or argument JSON too deep or not an object, checked against every invariant and the rules of
these paths.  Two planted bugs show the property finds them."""

from __future__ import annotations

import collections
from typing import Any

import pytest
from hypothesis import given

import openprogram.calls as calls_module
import openprogram.loop as loop_module
from openprogram_testing.judges.invariants import InvariantViolation
from openprogram_testing.strategies import (
    HOSTILE_KINDS,
    HostileScenario,
    OutcomeMismatch,
    check_hostile_run,
    hostile_scenarios,
)
from tests.properties._settings import fixed_settings, half_property_settings

_HALF = half_property_settings()
_HUNT = fixed_settings(300, print_blob=False)


@_HALF
@given(scenario=hostile_scenarios())
def test_hostile_runs_end_cleanly(scenario: HostileScenario) -> None:
    check_hostile_run(scenario, *scenario.run_sync())


def test_every_hostility_strikes() -> None:
    struck: collections.Counter[str] = collections.Counter()

    @_HUNT
    @given(scenario=hostile_scenarios())
    def sample(scenario: HostileScenario) -> None:
        trace, raised = scenario.run_sync()
        kind = scenario.hostility.kind
        hit = scenario.strike.struck or (
            kind.endswith("_arguments")
            and trace is not None
            and any(r.tool_call_id == scenario.target and not r.skipped for r in trace.tool_results)
        )
        struck[kind] += hit
        if scenario.strike.raised is not None:
            struck[type(scenario.strike.raised).__name__] += 1

    sample()
    assert all(struck[k] for k in HOSTILE_KINDS), struck
    assert struck["KeyboardInterrupt"] and struck["SystemExit"] and struck["SourceFailure"]


def _hunt() -> None:
    @_HUNT
    @given(scenario=hostile_scenarios())
    def prop(scenario: HostileScenario) -> None:
        check_hostile_run(scenario, *scenario.run_sync())

    prop()


def test_an_interrupted_batch_answered_wrongly_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(loop_module, "CANCELLED_TEXT", "Canceled")  # the planted bug
    with pytest.raises((OutcomeMismatch, InvariantViolation)) as caught:
        _hunt()
    assert "Canceled" in str(caught.value)


def test_an_unserialisable_value_reported_wrongly_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    def wrong(name: str, reason: str) -> str:
        return f"{name} failed"

    monkeypatch.setattr(calls_module, "unserialisable_text", wrong)  # the planted bug
    with pytest.raises(OutcomeMismatch, match="an unserialisable value gave"):
        _hunt()


def test_a_run_that_swallows_a_source_failure_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    from openprogram_testing.frontends.strategies import hostile

    real = HostileScenario.run

    async def swallowing(self: HostileScenario) -> Any:
        trace, _ = await real(self)
        return trace, None  # the planted bug: the failure is not re-raised

    monkeypatch.setattr(hostile.HostileScenario, "run", swallowing)
    with pytest.raises(OutcomeMismatch, match="the run raised None, expected"):
        _hunt()
