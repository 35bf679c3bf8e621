"""Failures of scenarios are data: the failure carries the result, the terminal reporter reads
fields, and no caller takes a failure's text apart."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from openprogram_testing.base.failures import TimelineNote
from openprogram_testing.core.render import timeline_shown
from openprogram_testing.frontends.report.terminal import ScenarioReporter
from openprogram_testing.frontends.scenarios.collect import ScenarioFailure
from openprogram_testing.frontends.scenarios.outcome import ScenarioOutcome
from openprogram_testing.scenarios import ScenarioResult


def _failed(failures: list[str], timeline: str = "") -> ScenarioResult:
    return ScenarioResult("weather", "s.yaml", False, failures, _timeline=timeline)


def test_a_scenario_failure_carries_its_result() -> None:
    result = _failed(["final text: expected 'sunny'"], "00 AgentStart")
    failure = ScenarioFailure(ScenarioOutcome("weather", "s.yaml", result=result))
    assert failure.result is result and failure.load_error is None
    assert str(failure) == result.failure_text
    invalid = ScenarioFailure(ScenarioOutcome("bad", "bad.yaml", load_error="bad.yaml:1:1: x"))
    assert invalid.result is None and invalid.load_error == "bad.yaml:1:1: x"
    assert invalid.outcome.failure == "bad.yaml:1:1: x"
    assert str(invalid) == "invalid scenario file:\nbad.yaml:1:1: x"  # what pytest shows


def test_the_summary_is_a_field_not_a_cut_of_the_text() -> None:
    # an expectation whose own message holds "\ntimeline:" must not be cut there
    result = _failed(["final text: expected 'a\ntimeline: b'"], "00 AgentStart")
    assert "timeline: b'" in result.summary
    assert "AgentStart" not in result.summary
    assert result.failure_text == f"{result.summary}\n\ntimeline:\n00 AgentStart"


def _report(details: dict[str, object] | None, longrepr: str) -> pytest.TestReport:
    report = pytest.TestReport(
        "s.yaml::weather", ("s.yaml", 0, "weather"), {}, "failed", longrepr, "call"
    )
    if details is not None:
        report.openprogram_scenario = details  # type: ignore[attr-defined]
    return report


def _reporter() -> ScenarioReporter:
    return ScenarioReporter(Console(file=io.StringIO()), Console(file=io.StringIO()))


def test_the_terminal_reporter_reads_the_outcome_fields() -> None:
    fields = ScenarioOutcome("bad", "bad.yaml", load_error="bad.yaml:3:1: tools: x").fields()
    reporter = _reporter()
    # pytest's text says something else: the row shows the field, unchanged
    reporter.pytest_runtest_logreport(_report(dict(fields), "pytest's own words"))
    row = reporter.rows["s.yaml::weather"]
    assert row.invalid and row.failure == "bad.yaml:3:1: tools: x"


def test_another_failure_is_shown_as_pytest_wrote_it() -> None:
    reporter = _reporter()
    reporter.pytest_runtest_logreport(_report(None, "fixture 'db' not found"))
    assert reporter.rows["s.yaml::weather"].failure == "fixture 'db' not found"


def test_a_timeline_note_is_known_by_its_type() -> None:
    error = RuntimeError("boom")
    error.add_note("the timeline: is a word in this note")
    assert not timeline_shown(error)
    error.add_note(TimelineNote("loop timeline:\n00 AgentStart"))
    assert timeline_shown(error)
