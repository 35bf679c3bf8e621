"""Failures as data: what the judges raise when a run is not what the test expects.

``TraceFailure`` is the one failure type of the assertion helpers and the invariant checks: an
``AssertionError`` (pytest reports it as a failed assertion) carrying its ``summary`` (what was
expected and what happened), the ``violations`` behind it (broken invariants; empty for an
assertion helper) and the run's ``timeline``.  Callers read the fields; nothing splits the text.
An exception a run raised gets its timeline as a ``TimelineNote``, found by its type.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class TraceFailure(AssertionError):
    """A run failed a check: ``summary``, ``violations``, the run's ``timeline`` and ``run``, the
    path of the nested run checked (``"plan_trip/compare_options"``; ``""``: the outermost run or
    a bare loop run, whose timeline is then the whole one); its text is the summary, then the
    timeline."""

    def __init__(
        self, summary: str, timeline: str = "", violations: Sequence[Any] = (), run: str = ""
    ) -> None:
        self.summary = summary
        self.timeline = timeline
        self.violations = list(violations)
        self.run = run
        text = f"{summary}\n\nrun timeline:\n{timeline}" if timeline else summary
        super().__init__(text)

    @property
    def timeline_shown(self) -> bool:
        """Whether the failure's text shows the timeline (the pytest plugin then does not
        print it a second time)."""
        return bool(self.timeline)


class TimelineNote(str):
    """A note (``exc.add_note``) that shows a run's timeline: added to an exception a run
    raised, so the pytest plugin knows by its type, not by its words, that the timeline is
    shown already."""

    __slots__ = ()


__all__ = ["TimelineNote", "TraceFailure"]
