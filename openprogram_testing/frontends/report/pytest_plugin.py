"""pytest hooks of the HTML report and loop-behaviour coverage.

Options (all off by default, and nothing is recorded unless one is given):

- ``--openprogram-html=FILE``: write the HTML report of the session's runs to FILE;
- ``--openprogram-coverage``: print the loop-behaviour coverage table at the end;
- ``--openprogram-coverage-fail-under=PCT``: fail the session when coverage is below PCT;
- ``--openprogram-usage``: print each test's token usage and model calls at the end;
- ``--openprogram-prices=FILE``: a price table (JSON or YAML, per model, per million tokens)
  that adds each test's cost to the usage table and the HTML report;
- ``--openprogram-records=FILE``: the session's tests and runs as JSON, which
  ``openprogram-testing report merge`` combines with other sessions' (shards of one suite).

Every finished trace of a test (``run_loop``, ``loop_runner``, scenarios, trace trees) reaches
a trace listener installed around the test, and every run of a ``Runtime`` made in the test
(the application's own entry point, with no runner in between) is captured (``capture_runs``);
its record rides on the test's teardown report, so pytest-xdist workers send it to the
controller with the report and the controller writes one file for the whole session.  Heavy
modules load only when an option is on.
"""

from __future__ import annotations

import threading
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.scenarios.outcome import OUTCOME, OutcomeFields

_RUNS = pytest.StashKey[list[dict[str, Any]]]()
_FLUSH = pytest.StashKey[Any]()
_HTTP = pytest.StashKey[list[Any]]()
_TRAJECTORIES = pytest.StashKey[list[dict[str, Any]]]()
PLUGIN_NAME = "openprogram-report"


def outcome_of(report: pytest.TestReport) -> str:
    """The outcome of one phase's report as pytest's summary names it: ``xfailed`` (an
    expected failure, which pytest reports as skipped) and ``xpassed`` (an unexpected pass,
    reported as passed) are their own, as is ``error`` (a failing setup or teardown)."""
    xfail = hasattr(report, "wasxfail")
    if report.failed:
        return "failed" if report.when == "call" else "error"
    if report.skipped:
        return "xfailed" if xfail else "skipped"
    return "xpassed" if xfail else "passed"


def wanted(config: pytest.Config) -> bool:
    """Whether any option asks for the session's runs."""
    return bool(
        config.getoption("--openprogram-html", default=None)
        or config.getoption("--openprogram-coverage", default=False)
        or config.getoption("--openprogram-coverage-fail-under", default=None) is not None
        or config.getoption("--openprogram-usage", default=False)
        or config.getoption("--openprogram-records", default=None)
    )


def pytest_configure(config: pytest.Config) -> None:
    for option, what in (("--openprogram-html", "the HTML report"),
                         ("--openprogram-records", "the run records")):  # fmt: skip
        target = config.getoption(option, default=None)
        if target:
            from openprogram_testing.base.paths import OutsideProject, writable_target

            try:  # refused before anything runs, not after the whole session
                writable_target(Path(target), what)
            except OutsideProject as exc:
                raise pytest.UsageError(str(exc)) from None
    if wanted(config):
        config.pluginmanager.register(RunRecorder(), "openprogram-run-recorder")
        if not hasattr(config, "workerinput"):  # the controller (or a session without xdist)
            config.pluginmanager.register(SessionReport(config), PLUGIN_NAME)
    if config.getoption("--openprogram-scenario-details", default=False):
        details = ScenarioDetails(
            timelines=bool(config.getoption("--openprogram-scenario-timelines", default=False)),
            results=bool(config.getoption("--openprogram-scenario-results", default=False)),
        )
        config.pluginmanager.register(details, "openprogram-scenario-details")


class RunRecorder:
    """Records the runs of each test (where the test runs: in-process or in a worker)."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Generator[None]:
        from openprogram_testing.base.recording import (
            add_exchange_listener,
            add_trace_listener,
            remove_exchange_listener,
            remove_trace_listener,
        )
        from openprogram_testing.core.capture import capture_runs
        from openprogram_testing.core.trace import LoopTrace
        from openprogram_testing.judges.trajectory import (
            add_trajectory_listener,
            remove_trajectory_listener,
        )

        from .record import RunCollector

        collector = RunCollector()
        item.stash[_RUNS] = collector.runs
        exchanges: list[Any] = []  # HTTP served to the test's clients (emulator, cassette)
        item.stash[_HTTP] = exchanges
        checks: list[dict[str, Any]] = item.stash.setdefault(_TRAJECTORIES, [])
        lock = threading.Lock()

        def listener(trace: LoopTrace) -> None:
            with lock:
                collector.add(trace)

        def checked(check: dict[str, Any]) -> None:
            with lock:
                checks.append(check)

        add_trace_listener(listener)
        add_exchange_listener(exchanges.append)
        add_trajectory_listener(checked)
        try:
            with capture_runs() as captured:

                def flush() -> None:
                    """The captured runs no runner announced (a run announced already, by
                    ``exec_runner`` or a scenario, is recorded once)."""
                    for trace in captured.traces:
                        listener(trace)

                item.stash[_FLUSH] = flush
                return (yield)
        finally:
            remove_exchange_listener(exchanges.append)
            remove_trace_listener(listener)
            remove_trajectory_listener(checked)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "teardown":
            from openprogram.texts import whole_values

            flush = item.stash.get(_FLUSH, None)
            if flush is not None:
                flush()
            runs: list[dict[str, Any]] = item.stash.get(_RUNS, [])
            # pytest-xdist's channel refuses a string with a lone surrogate (execnet DumpError)
            report.openprogram_runs = whole_values(list(runs))  # type: ignore[attr-defined]
            served: list[Any] = item.stash.get(_HTTP, [])
            exchanges = list(served)
            if exchanges and not runs:
                # A client that is not openprogram: its traffic is all the report can show.
                # (An openprogram run shows its model calls in its timeline already, and
                # every request of a long run repeats the history: not stored twice.)
                from .record import http_records

                http = whole_values(http_records(exchanges))
                report.openprogram_http = http  # type: ignore[attr-defined]
            checks = item.stash.get(_TRAJECTORIES, [])
            report.openprogram_trajectory = whole_values(list(checks))  # type: ignore[attr-defined]
        return report


class ScenarioDetails:
    """Puts a scenario's result on its call report (it survives pytest-xdist's transport).

    Only what the command will show travels: the timeline of a passing scenario when it
    prints timelines (``-v``; a failure's timeline is in its failure text already) and the
    result JSON when it writes result files.  Both are most of the cost of a passing
    scenario otherwise (the JSON holds every event)."""

    def __init__(self, *, timelines: bool = True, results: bool = True) -> None:
        self.timelines = timelines
        self.results = results

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if call.when == "call":
            from openprogram.texts import whole_values

            details = scenario_details(item, timeline=self.timelines, result=self.results)
            if details is not None:
                report.openprogram_scenario = whole_values(details)  # type: ignore[attr-defined]
        return report


def scenario_details(
    item: pytest.Item, *, timeline: bool = True, result: bool = True
) -> OutcomeFields | None:
    """What the command line shows of a scenario item (``None`` for any other test): the
    fields of the outcome the collector keeps in the item's stash; the timeline and the result
    JSON when ``timeline`` and ``result`` ask for them."""
    outcome = item.stash.get(OUTCOME, None)
    return None if outcome is None else outcome.fields(timeline=timeline, result=result)


class SessionReport:
    """Gathers every test's outcome and runs on the controller; writes the HTML report,
    prints the coverage table and applies the threshold at the end of the session."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.tests: dict[str, dict[str, Any]] = {}
        self.html: Path | None = None
        self.coverage: Any = None
        self.below: str | None = None
        self.shard = _shard(config.getoption("--openprogram-records-shard", default=None))
        self.prices: Any = None
        source = config.getoption("--openprogram-prices", default=None)
        if source:
            from openprogram_testing.judges.usage import Prices

            try:
                self.prices = Prices.load(source)
            except Exception as exc:  # unreadable, not JSON/YAML, not a price table
                raise pytest.UsageError(f"--openprogram-prices {source}: {exc}") from None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        entry = self.tests.setdefault(
            report.nodeid,
            {"name": report.nodeid, "nodeid": report.nodeid, "outcome": "passed", "ms": 0.0,
             "failure": None, "runs": []},
        )  # fmt: skip
        from .html import FAILING

        entry["ms"] += report.duration * 1000
        outcome = outcome_of(report)
        if report.failed:
            if entry["outcome"] not in FAILING:  # a call failure stays one at teardown
                entry["outcome"] = outcome
            text = report.longreprtext  # whole: a snapshot diff cut short misleads
            entry["failure"] = text if entry["failure"] is None else entry["failure"] + "\n" + text
        elif outcome != "passed" and entry["outcome"] == "passed":
            entry["outcome"] = outcome
            reason = getattr(report, "wasxfail", None)
            text = report.longreprtext or (f"xfail reason: {reason}" if reason else "")
            entry["failure"] = text or None
        runs = getattr(report, "openprogram_runs", None)
        if runs:
            entry["runs"].extend(runs)
        http = getattr(report, "openprogram_http", None)
        if http:
            entry.setdefault("http", []).extend(http)
        checks = getattr(report, "openprogram_trajectory", None)
        if checks:
            entry.setdefault("trajectory", []).extend(checks)
        repeat = getattr(report, "openprogram_repeat", None)
        if isinstance(repeat, dict):
            from openprogram_testing.frontends.pytest.repeat import summary

            entry["repeat"] = summary(repeat)

    def entries(self) -> list[dict[str, Any]]:
        return list(self.tests.values())

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from .coverage import Coverage
        from .html import write_html

        tests = self.entries()
        self.coverage = Coverage.of_tests(tests)
        target = self.config.getoption("--openprogram-html", default=None)
        if target:
            self.html = write_html(
                Path(target),
                tests,
                coverage=self.coverage,
                title="OpenProgram test report",
                prices=self.prices,
            )
        records = self.config.getoption("--openprogram-records", default=None)
        if records:
            from .merge import Records

            Records(tests=tests, shard=self.shard).write(records)
        threshold = self.config.getoption("--openprogram-coverage-fail-under", default=None)
        from .merge import below_threshold

        self.below = below_threshold(self.coverage, threshold)
        if self.below and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        tr = terminalreporter
        if self.coverage is not None and (
            self.config.getoption("--openprogram-coverage", default=False) or self.below
        ):
            tr.write_sep("=", "openprogram loop-behaviour coverage")
            tr.write_line(self.coverage.text())
        if self.below:
            tr.write_line(f"FAIL: {self.below}", red=True, bold=True)
        if self.config.getoption("--openprogram-usage", default=False):
            from .html import usage_summary

            tr.write_sep("=", "openprogram usage")
            for test in self.entries():
                if test["runs"]:
                    tr.write_line(
                        f"{test['nodeid']}: {usage_summary(test['runs'], self.prices)['line']}"
                    )
        if self.html is not None:
            tr.write_line(f"openprogram HTML report: {self.html}")


def _shard(raw: str | None) -> Any:
    """The ``Shard`` that ``--openprogram-records-shard I/N/SUITE[/FILES]`` names."""
    if not raw:
        return None
    from .merge import Shard, shard_count_problem

    parts = raw.split("/")
    try:
        index, count = int(parts[0]), int(parts[1])
        suite = parts[2]
        files = int(parts[3]) if len(parts) > 3 else 0
    except (IndexError, ValueError):
        raise pytest.UsageError(
            f"--openprogram-records-shard: expected I/N/SUITE[/FILES], got {raw!r}"
        ) from None
    problem = shard_count_problem(index, count)
    if problem is not None or not suite or files < 0:
        raise pytest.UsageError(
            f"--openprogram-records-shard: {raw!r} is not shard I of N"
            + (f" ({problem})" if problem else "")
        )
    return Shard(index, count, suite, files)


__all__ = [
    "PLUGIN_NAME",
    "RunRecorder",
    "SessionReport",
    "outcome_of",
    "scenario_details",
    "wanted",
]
