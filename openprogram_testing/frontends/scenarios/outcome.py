"""What a collected scenario did, as data: the collector fills it in, the reports read it.

A scenario item's ``ScenarioOutcome`` lives in its ``stash`` under ``OUTCOME`` (set when the item
is made, completed when it has run) and travels on its ``ScenarioFailure``.  The report layer
reads it from there and never imports the collector; what crosses from a pytest-xdist worker is
``ScenarioOutcome.fields`` (``OutcomeFields``, plain data), so the terminal reporter reads named
fields instead of taking a failure's text apart.  Cheap to import: pytest and nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypedDict

import pytest

if TYPE_CHECKING:
    from .runner import ScenarioResult


class OutcomeFields(TypedDict, total=False):
    """A scenario item's outcome on its call report (``report.openprogram_scenario``)."""

    name: str
    path: str
    invalid: bool
    """The file did not load (``failure`` is then the loader's ``file:line:column`` report)."""
    failure: str
    """The readable report of a failed or invalid scenario; empty when it passed."""
    termination: str | None
    model_calls: int | None
    snapshot_written: bool
    timeline: str
    result: dict[str, Any] | None
    failures: list[str]


@dataclass(frozen=True, slots=True)
class ScenarioOutcome:
    """A scenario item: its name and file, the loader's report when the file is invalid, the
    ``ScenarioResult`` once it ran."""

    name: str
    path: str
    load_error: str | None = None
    result: ScenarioResult | None = None

    @property
    def invalid(self) -> bool:
        return self.load_error is not None

    @property
    def passed(self) -> bool:
        return not self.invalid and (self.result is None or self.result.passed)

    @property
    def failure(self) -> str:
        """What a failure shows: the loader's report of an invalid file, or the failed
        expectations and the timeline (``ScenarioResult.failure_text``); empty otherwise."""
        if self.load_error is not None:
            return self.load_error
        return self.result.failure_text if self.result is not None else ""

    def fields(self, *, timeline: bool = True, result: bool = True) -> OutcomeFields:
        """Plain data for a test report; the timeline and the result JSON (most of the cost
        of a passing scenario) only when asked for."""
        out = OutcomeFields(
            name=self.name,
            path=self.path,
            invalid=self.invalid,
            failure=self.failure,
            termination=None,
            model_calls=None,
            snapshot_written=False,
            timeline="",
            result=None,
        )
        ran = self.result
        if ran is not None:
            if ran.trace is not None:
                out["termination"] = ran.trace.termination
                out["model_calls"] = ran.trace.model_calls
            out["snapshot_written"] = ran.snapshot_written
            out["timeline"] = ran.timeline if timeline else ""
            out["result"] = ran.to_dict() if result else None
            out["failures"] = list(ran.failures)
        return out


OUTCOME = pytest.StashKey[ScenarioOutcome]()
"""Where a scenario item keeps its ``ScenarioOutcome`` (``item.stash[OUTCOME]``)."""


__all__ = ["OUTCOME", "OutcomeFields", "ScenarioOutcome"]
