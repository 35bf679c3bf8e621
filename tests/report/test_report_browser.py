"""The HTML report as a person sees it, in a real headless Chromium (Debian's ``/usr/bin/chromium``
driven by playwright; no browser is ever downloaded): the timeline renders, a skipped call is
visibly marked, expanding a tool call shows its arguments, the filter works, hostile text stays
text, and the page logs no console errors.  A screenshot of the small report is kept as a test
artefact (``build/test-artifacts/report.png``).

Without chromium (or playwright) the tests skip, saying so, except where ``CI`` is set: there
they fail, since ``.ci/run`` installs chromium."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.report import Coverage, exhibited, trace_record, write_html
from tests.report._report_traces import batch, call, run, steer_after, turn

CHROMIUM = Path("/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTEFACTS = Path(__file__).resolve().parents[2] / "build" / "test-artifacts"
HOSTILE = "<script>window.__pwned = 1</script><img src=x onerror='window.__pwned=2'>"
DIFF = 'snapshot differs:\n  turn_start round 0\n- text "old reply"\n+ text "new reply"'


def _unavailable(reason: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"{reason}: in CI the browser tests must run (.ci/run installs chromium)")
    pytest.skip(f"{reason}; install it with: apt-get install -y chromium")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is not installed")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("the playwright package is not installed (pip install playwright)")
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            profile,
            executable_path=str(CHROMIUM),
            headless=True,
            args=ARGS,
            viewport={"width": 1200, "height": 900},
        )
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small report: a steered batch (one skipped call), a failing test with hostile tool
    output and a snapshot diff, and a plain text reply."""
    weather = {
        "spec": {"name": "weather", "parameters": {"type": "object"}},
        "execute": lambda a: f"sunny in {a.get('city')}",
    }
    from openprogram_testing.scripted import ScriptedProvider
    from openprogram_testing.trace import run_loop_sync

    steered = run_loop_sync(
        ScriptedProvider(
            [
                turn(
                    "Checking both.",
                    call("weather", {"city": "Paris"}),
                    call("weather", {"city": "Rome"}),
                ),
                turn("Paris only: sunny."),
            ]
        ),
        "Weather in Paris and Rome?",
        tools=[weather],
        schedule=steer_after(0),
    )
    hostile_tool = {
        "spec": {"name": "fetch", "parameters": {"type": "object"}},
        "execute": lambda a: HOSTILE,
    }
    hostile = run_loop_sync(
        ScriptedProvider([turn(call("fetch", {"url": HOSTILE})), turn("done")]),
        "fetch it",
        tools=[hostile_tool],
    )
    plain = run("Hello there.")
    traces = {"steered": steered, "hostile": hostile, "plain": plain}
    tests = [
        {"name": "tests/test_agent.py::test_steering_skips_rome", "nodeid": "a", "outcome": "passed",
         "ms": 12.0, "failure": None, "runs": [trace_record(steered, label="run 1")]},
        {"name": "tests/test_agent.py::test_fetch_snapshot", "nodeid": "b", "outcome": "failed",
         "ms": 8.0, "failure": DIFF + "\n" + HOSTILE, "runs": [trace_record(hostile)]},
        {"name": "tests/test_agent.py::test_greeting", "nodeid": "c", "outcome": "passed",
         "ms": 3.0, "failure": None, "runs": [trace_record(plain)]},
    ]  # fmt: skip
    coverage = Coverage.of(exhibited(t) for t in traces.values())
    return write_html(tmp_path_factory.mktemp("report") / "report.html", tests, coverage=coverage)


@pytest.fixture
def page(browser: Any, report: Path) -> Iterator[Any]:
    page = browser.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(report.as_uri())
    page.errors = errors
    yield page
    assert errors == [], f"console errors: {errors}"
    page.close()


def row(page: Any, text: str) -> Any:
    return page.locator("tr.test", has_text=text)


def test_timeline_renders_with_skipped_call_marked(page: Any) -> None:
    row(page, "test_steering_skips_rome").click()
    rounds = page.locator(".round")
    assert rounds.count() == 2
    assert rounds.nth(0).locator(".round-head").inner_text().startswith("round 0")
    skipped = page.locator("details.tool.exec.skipped")
    assert skipped.count() == 1
    badge = skipped.locator(".badge.skipped")
    assert badge.is_visible() and badge.inner_text() == "SKIPPED"
    # visibly different: a filled badge and a tinted row, not just a word
    assert badge.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    assert skipped.evaluate("e => getComputedStyle(e).backgroundColor") != "rgba(0, 0, 0, 0)"
    arrival = page.locator(".arrival", has_text="steering")
    assert "arrived after tool call 0 of the previous round" in arrival.inner_text()
    assert "skipped weather (call_1)" in arrival.inner_text()
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTEFACTS / "report.png"), full_page=True)
    assert (ARTEFACTS / "report.png").stat().st_size > 10_000


def test_expanding_a_tool_call_shows_its_arguments(page: Any) -> None:
    row(page, "test_steering_skips_rome").click()
    call_box = page.locator("details.tool.call", has_text="weather").first
    args = call_box.locator("pre.args")
    assert not args.is_visible()
    call_box.locator("summary").click()
    assert args.is_visible()
    assert args.inner_text() == '{\n  "city": "Paris"\n}'


def test_filter_by_text_and_outcome(page: Any) -> None:
    assert page.locator("tr.test:visible").count() == 3
    page.fill("#filter", "steering")
    assert page.locator("tr.test:visible").count() == 1
    assert "1 shown" in page.inner_text("#shown")
    page.fill("#filter", "")
    page.select_option("#status", "failed")
    visible = page.locator("tr.test:visible")
    assert visible.count() == 1 and "test_fetch_snapshot" in visible.inner_text()
    page.fill("#filter", "skip_first")  # behaviours are searchable too
    page.select_option("#status", "all")
    assert page.locator("tr.test:visible").count() == 1


def test_hostile_text_and_failure_diff(page: Any) -> None:
    row(page, "test_fetch_snapshot").click()
    page.locator("details.tool.exec").first.locator("summary").click()
    assert page.evaluate("window.__pwned") is None
    assert page.locator("img[src=x]").count() == 0
    result = page.locator("details.tool.exec pre").nth(1)
    assert result.inner_text() == HOSTILE
    failure = page.locator("pre.failure").first
    assert failure.locator(".del").inner_text() == '- text "old reply"'
    assert failure.locator(".add").inner_text() == '+ text "new reply"'


def test_coverage_table(page: Any) -> None:
    never = page.locator("#coverage-rows tr.never")
    assert never.count() > 0
    assert "never exercised" in never.first.inner_text()
    assert page.locator("#coverage-rows tr").count() == len(exhibited.__globals__["BEHAVIOURS"])


def test_a_thousand_runs_open_quickly(browser: Any, tmp_path: Path) -> None:
    record = trace_record(run(batch(3), "done", schedule=steer_after(1)))
    tests = [{"name": f"t{i}", "nodeid": f"t{i}", "outcome": "passed", "ms": 1.0,
              "failure": None, "runs": [record]} for i in range(1000)]  # fmt: skip
    path = write_html(tmp_path / "big.html", tests, coverage=Coverage.of([record["behaviours"]]))
    page = browser.new_page()
    try:
        page.goto(path.as_uri())
        assert page.locator("tr.test").count() == 1000
        assert page.locator(".round").count() == 0  # details are rendered on expand only
        elapsed = page.evaluate(
            "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
        )
        assert elapsed < 10_000
        page.locator("tr.test").nth(999).click()
        assert page.locator(".round").count() == 2
    finally:
        page.close()
