"""The terminal reporter of ``openprogram-testing run``: a rich progress bar while pytest runs
the scenarios, then one table row per scenario, the failures, and (when asked) the loop-behaviour
coverage and the HTML report's path.

It is a pytest plugin object handed to ``pytest.main`` in place of pytest's own terminal
reporter, so a run on pytest-xdist workers reports exactly like a serial one: everything it
shows arrives on the test reports (``--openprogram-scenario-details``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import pytest
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from rich.text import Text

from openprogram.texts import whole_text
from openprogram_testing.frontends.scenarios.outcome import OutcomeFields

from .pytest_plugin import PLUGIN_NAME


@dataclass
class Row:
    """One scenario's outcome as the table shows it."""

    nodeid: str
    name: str
    path: str
    passed: bool = True
    invalid: bool = False
    failure: str = ""
    termination: str | None = None
    model_calls: int | None = None
    duration_s: float = 0.0
    snapshot_written: bool = False
    timeline: str = ""
    result: dict[str, Any] | None = None
    done: bool = False


@dataclass(eq=False)  # a pytest plugin object: pluggy keeps plugins in sets
class ScenarioReporter:
    """Collects rows from test reports and prints the run's report at the end."""

    out: Console
    err: Console
    verbose: bool = False
    rows: dict[str, Row] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    started: float = field(default_factory=time.perf_counter)
    progress: Progress | None = None
    task: Any = None
    session_report: Any = None

    def pytest_sessionstart(self, session: pytest.Session) -> None:

        self.session_report = session.config.pluginmanager.get_plugin(PLUGIN_NAME)

    # -- progress -----------------------------------------------------------------------------
    def _start(self, total: int) -> None:
        if self.progress is not None:
            return
        self.progress = Progress(
            TextColumn("running scenarios"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=self.err,
            transient=True,
        )
        self.progress.start()
        self.task = self.progress.add_task("", total=total)

    def stop(self) -> None:
        if self.progress is not None:
            self.progress.stop()
            self.progress = None

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not hasattr(session.config, "workerinput") and session.items:
            self._start(len(session.items))

    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self._start(len(ids))

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            text = whole_text(report.longreprtext)
            self.problems.append(f"could not collect {report.nodeid}:\n{text}")

    # -- rows ---------------------------------------------------------------------------------
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path, _, name = report.nodeid.partition("::")
        row = self.rows.setdefault(report.nodeid, Row(report.nodeid, name or path, path))
        row.duration_s += report.duration
        details: OutcomeFields | None = getattr(report, "openprogram_scenario", None)
        if details:
            row.name = details["name"]
            row.path = details["path"]
            row.invalid = details["invalid"]
            row.termination = details["termination"]
            row.model_calls = details["model_calls"]
            row.snapshot_written = details["snapshot_written"]
            row.timeline = details["timeline"]
            row.result = details["result"]
        if report.failed:
            row.passed = False
            # a scenario's own failure is a field of its outcome; anything else (a fixture's
            # error, another test's failure) is the report's text as pytest wrote it
            own = details.get("failure", "") if details else ""
            text = whole_text(own or report.longreprtext)  # written to a terminal
            row.failure = f"{row.failure}\n{text}" if row.failure else text
        if report.when == "teardown" and not row.done:
            row.done = True
            if self.progress is not None:
                self.progress.update(self.task, advance=1, description=row.name)

    # -- the report ---------------------------------------------------------------------------
    def print_report(self, coverage: Any = None, html: Any = None) -> None:
        self.stop()
        rows = list(self.rows.values())
        self.out.print(_table(rows, self.out.width), soft_wrap=True)
        for row in rows:
            if not row.passed:
                title = "invalid scenario file" if row.invalid else "FAILED"
                self.out.print(f"\n[bold red]{title}[/] {escape(_shown(row.path))}")
                self.out.print(escape(_shown(row.failure, lines=True)))
            elif self.verbose and row.timeline:
                self.out.print(f"\n[green]PASSED[/] {escape(_shown(row.name))}")
                self.out.print(escape(_shown(row.timeline, lines=True)))
        for problem in self.problems:
            self.out.print(f"\n[bold red]error[/] {escape(_shown(problem, lines=True))}")
        if coverage is not None:
            self.out.print()
            self.out.print(escape(coverage.text()))
        if html is not None:
            self.out.print(f"\nHTML report written to {escape(str(html))}")
        passed = sum(1 for r in rows if r.passed)
        invalid = sum(1 for r in rows if r.invalid)
        failed = len(rows) - passed - invalid
        parts = [f"{passed} passed"]
        if failed:
            parts.append(f"{failed} failed")
        if invalid:
            parts.append(f"{invalid} invalid")
        colour = "green" if passed == len(rows) and not self.problems else "red"
        elapsed = time.perf_counter() - self.started
        self.out.print(f"\n[bold {colour}]{', '.join(parts)}[/] in {elapsed:.2f}s")


_HEADINGS = ("scenario", "result", "termination", "model calls", "time")

_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_CONTROLS_IN_LINES = {c: v for c, v in _CONTROLS.items() if chr(c) not in "\n\t"}


def _shown(text: str, *, lines: bool = False) -> str:
    """``text`` as the terminal should show it: control characters (an escape sequence in a
    scenario's name or a tool's output would restyle or move the terminal) spelled as ``\\xNN``,
    line breaks and tabs kept where ``lines``."""
    return text.translate(_CONTROLS_IN_LINES if lines else _CONTROLS)


def _status(row: Row) -> tuple[str, str]:
    if row.invalid:
        text, style = "INVALID", "bold red"
    elif row.passed:
        text, style = "PASS", "green"
    else:
        text, style = "FAIL", "bold red"
    return (text + " (snapshot written)" if row.snapshot_written else text), style


def _table(rows: list[Row], width: int) -> Text:
    """One line per scenario under a heading, columns aligned, the name folded onto more lines
    when the terminal is too narrow for it.

    Laid out here rather than by ``rich.table.Table``, which measures every cell of every row
    again to fit the columns: a third of a millisecond per scenario, a third of a second for a
    suite of 1,000, more than its runs took."""
    cells = [
        (
            _shown(row.name),
            *_status(row),
            row.termination or "-",
            "-" if row.model_calls is None else str(row.model_calls),
            f"{row.duration_s * 1000:.0f} ms",
        )
        for row in rows
    ]
    widths = [len(h) for h in _HEADINGS]
    for name, status, _, termination, calls, took in cells:
        for i, cell in enumerate((name, status, termination, calls, took)):
            widths[i] = max(widths[i], len(cell))
    rest = sum(widths[1:]) + 2 * (len(widths) - 1)
    widths[0] = max(12, min(widths[0], width - rest - 1))
    text = Text()
    text.append("OpenProgram scenarios\n", style="italic")
    heading = "  ".join(
        h.rjust(w) if h in ("model calls", "time") else h.ljust(w)
        for h, w in zip(_HEADINGS, widths, strict=True)
    )
    text.append(heading.rstrip() + "\n", style="bold")
    name_width = widths[0]
    for name, status, style, termination, calls, took in cells:
        pieces = [name[i : i + name_width] for i in range(0, len(name), name_width)] or [""]
        text.append(pieces[0].ljust(name_width) + "  ")
        text.append(status.ljust(widths[1]), style=style)
        text.append(
            f"  {termination.ljust(widths[2])}  {calls.rjust(widths[3])}  {took.rjust(widths[4])}\n"
        )
        for piece in pieces[1:]:
            text.append(piece + "\n")
    text.rstrip()
    return text


__all__ = ["Row", "ScenarioReporter"]
