"""Loop-behaviour coverage of a suite: which behaviours its runs exercised, how often, and
which never (``BEHAVIOURS`` in ``behaviours``).  Counts add up run by run, so workers of a
distributed session can each count and the totals still agree."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .behaviours import BEHAVIOURS, Behaviour


@dataclass
class Coverage:
    """Per behaviour: the number of runs that showed it and the total number of times."""

    runs: int = 0
    runs_by_behaviour: dict[str, int] = field(default_factory=dict)
    occurrences: dict[str, int] = field(default_factory=dict)
    trajectory: dict[str, list[str]] = field(default_factory=dict)
    """Which tests checked a trajectory (``assert_trajectory`` / ``expect.trajectory``), by
    mode: ``{"strict": [test ids], ...}``.  The behaviours say what the runs did; this says
    which tests judged the calls the model chose."""

    def add(self, counts: Mapping[str, int]) -> None:
        """Count one run, given what it exhibited (``behaviours.exhibited``)."""
        self.runs += 1
        for name, n in counts.items():
            if n > 0:
                self.runs_by_behaviour[name] = self.runs_by_behaviour.get(name, 0) + 1
                self.occurrences[name] = self.occurrences.get(name, 0) + n

    def add_trajectories(self, tests: Iterable[Mapping[str, Any]]) -> None:
        """Note the trajectory checks of each test (its ``trajectory`` list of checks, each
        with a ``mode``), once per test and mode."""
        for test in tests:
            name = str(test.get("nodeid") or test.get("name") or "?")
            checks = test.get("trajectory") or []
            for mode in dict.fromkeys(str(c.get("mode")) for c in checks if isinstance(c, Mapping)):
                self.trajectory.setdefault(mode, []).append(name)

    def trajectory_line(self) -> str:
        """``trajectory checked by 3 tests: strict 2, subset 1`` (or that none did)."""
        tests = {t for names in self.trajectory.values() for t in names}
        if not tests:
            return "trajectory checked by no test (assert_trajectory / expect.trajectory)"
        modes = ", ".join(f"{m} {len(n)}" for m, n in sorted(self.trajectory.items()))
        return f"trajectory checked by {len(tests)} test{'s' if len(tests) != 1 else ''}: {modes}"

    @classmethod
    def of(cls, runs: Iterable[Mapping[str, int]]) -> Coverage:
        coverage = cls()
        for counts in runs:
            coverage.add(counts)
        return coverage

    @classmethod
    def of_tests(cls, tests: Iterable[Mapping[str, Any]]) -> Coverage:
        """The coverage of a suite from its test entries (the report's data): every run's
        behaviours and every test's trajectory checks.  The session, ``report merge`` and every
        view count through here, so a merged report can never say less than the session did."""
        tests = list(tests)
        coverage = cls.of(
            run.get("behaviours") or {}
            for t in tests
            for run in (t.get("runs") or [])
            if isinstance(run, Mapping)
        )
        coverage.add_trajectories(tests)
        return coverage

    @property
    def covered(self) -> list[Behaviour]:
        return [b for b in BEHAVIOURS if self.runs_by_behaviour.get(b.name)]

    @property
    def missing(self) -> list[Behaviour]:
        return [b for b in BEHAVIOURS if not self.runs_by_behaviour.get(b.name)]

    @property
    def percent(self) -> float:
        return 100.0 * len(self.covered) / len(BEHAVIOURS)

    def summary_line(self) -> str:
        return (
            f"loop-behaviour coverage: {len(self.covered)}/{len(BEHAVIOURS)} behaviours "
            f"({self.percent:.1f} %) over {self.runs} run{'s' if self.runs != 1 else ''}"
        )

    def rows(self) -> list[dict[str, Any]]:
        """One row per behaviour, in definition order (the HTML report's table)."""
        return [
            {
                "name": b.name,
                "title": b.title,
                "definition": b.definition,
                "runs": self.runs_by_behaviour.get(b.name, 0),
                "occurrences": self.occurrences.get(b.name, 0),
            }
            for b in BEHAVIOURS
        ]

    def text(self) -> str:
        """A plain table for terminals: behaviour, runs, occurrences; then what never ran."""
        width = max(len(b.name) for b in BEHAVIOURS)
        lines = [self.summary_line(), f"  {'behaviour'.ljust(width)}  runs  times"]
        for row in self.rows():
            mark = "" if row["runs"] else "  <- never exercised"
            lines.append(
                f"  {row['name'].ljust(width)}  {row['runs']:>4}  {row['occurrences']:>5}{mark}"
            )
        if self.missing:
            lines.append("never exercised: " + ", ".join(b.name for b in self.missing))
        lines.append(self.trajectory_line())
        return "\n".join(lines)


__all__ = ["Coverage"]
