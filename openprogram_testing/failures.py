"""Failures as data: what the judges raise when a run is not what the test expects.

``TraceFailure`` is the one failure type of the assertion helpers and the invariant checks: an
``AssertionError`` (pytest reports it as a failed assertion) carrying its ``summary`` (what was
expected and what happened), the ``violations`` behind it (broken invariants; empty for an
assertion helper) and the run's ``timeline``.  Callers read the fields; nothing splits the text.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TraceFailure(AssertionError):
    """A run failed a check: ``summary``, ``violations`` and the run's ``timeline``; its text is
    the summary, then the timeline."""

    def __init__(self, summary: str, timeline: str = "", violations: Sequence[Any] = ()) -> None:
        self.summary = summary
        self.timeline = timeline
        self.violations = list(violations)
        text = f"{summary}\n\nrun timeline:\n{timeline}" if timeline else summary
        super().__init__(text)

    @property
    def timeline_shown(self) -> bool:
        """Whether the failure's text shows the timeline (the pytest plugin then does not
        print it a second time)."""
        return bool(self.timeline)


__all__ = ["TraceFailure"]
