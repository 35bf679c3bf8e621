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
    from openprogram_testing.core.trace import run_loop_sync
    from openprogram_testing.transport.scripted import ScriptedProvider

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


LOAD_BUDGET_MS = 2_000
"""The report of 5,000 runs is usable within this long of navigation start, as the page itself
measures it (``domContentLoadedEventEnd``: the file read, the summary table built), so a slow
browser start on a loaded machine does not count."""


def test_five_thousand_runs_open_within_two_seconds(browser: Any, tmp_path: Path) -> None:
    record = trace_record(run(batch(3), "done", schedule=steer_after(1)))
    tests = [{"name": f"t{i}", "nodeid": f"t{i}", "outcome": "passed", "ms": 1.0,
              "failure": None, "runs": [record]} for i in range(5000)]  # fmt: skip
    path = write_html(tmp_path / "big.html", tests, coverage=Coverage.of([record["behaviours"]]))
    page = browser.new_page()
    try:
        timings = []
        for _ in range(3):  # the best of three: one stall of a loaded machine is not the page
            page.goto(path.as_uri())
            timings.append(
                page.evaluate(
                    "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd"
                )
            )
        assert page.locator("tr.test").count() == 5000
        assert page.locator(".lane, .round").count() == 0  # details are built on expand only
        assert min(timings) < LOAD_BUDGET_MS, f"load times {timings} ms"
        page.locator("tr.test").nth(4999).click()
        assert page.locator(".round").count() == 2
    finally:
        page.close()


def test_a_test_of_many_runs_builds_each_timeline_when_it_is_opened(
    browser: Any, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    record = trace_record(run(batch(2), "done"))
    tests = [{"name": "many", "nodeid": "many", "outcome": "passed", "ms": 1.0,
              "failure": None, "runs": [record] * 50}]  # fmt: skip
    page = browser.new_page()
    try:
        page.goto(write_html(tmp_path / "many.html", tests).as_uri())
        page.locator("tr.test").click()
        assert page.locator("details.lane").count() == 50
        assert page.locator(".round").count() == 0
        page.locator("details.lane > summary").nth(7).click()
        # A <details> element's toggle event fires after the click returns: wait for it.
        expect(page.locator("details.lane").nth(7).locator(".round")).to_have_count(2)
        expect(page.locator(".round")).to_have_count(2)
    finally:
        page.close()


# -- what a person sees: checked on screenshots ------------------------------------------------
PYTEST_DIFF = """    def test_reply_snapshot(snapshot):
>       assert trace.snapshot_text() == snapshot
E       AssertionError: assert [+ received] == [- snapshot]
E
E         -   text "old reply"
E         +   text "new reply"
E             turn_end round 0
E        +  where 3 = len(calls)

tests/test_trip.py:12: AssertionError"""
HIGHLIGHT = (0xFF, 0xEB, 0xE9)
RED_TEXT = (0xCF, 0x22, 0x2E)


@pytest.fixture(scope="module")
def seen(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A passing test whose agent ran a nested run from a tool call, an expected failure, and
    a failing snapshot test (pytest's diff), in that order."""
    from openprogram import Runtime
    from openprogram_testing import add_trace_listener, remove_trace_listener, run_exec_sync
    from openprogram_testing.report import RunCollector
    from openprogram_testing.transport.scripted import ScriptedProvider
    from tests.runtime._agents import research_agent, research_script

    registry, tools = research_agent()
    collector = RunCollector()
    add_trace_listener(collector.add)
    try:
        run_exec_sync(
            Runtime(ScriptedProvider(research_script((1, 2))), "m", registry=registry),
            "go",
            tools=tools,
        )
    finally:
        remove_trace_listener(collector.add)
    tests = [
        {"name": "tests/test_trip.py::test_plans_a_trip", "nodeid": "p", "outcome": "passed",
         "ms": 5.0, "failure": None, "runs": collector.runs},
        {"name": "tests/test_trip.py::test_known_gap", "nodeid": "x", "outcome": "xfailed",
         "ms": 1.0, "failure": "xfail reason: known gap", "runs": []},
        {"name": "tests/test_trip.py::test_reply_snapshot", "nodeid": "f", "outcome": "failed",
         "ms": 2.0, "failure": PYTEST_DIFF, "runs": []},
    ]  # fmt: skip
    return write_html(tmp_path_factory.mktemp("seen") / "seen.html", tests)


@pytest.fixture
def seen_page(browser: Any, seen: Path) -> Iterator[Any]:
    page = browser.new_page()
    page.set_default_timeout(30_000)
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(seen.as_uri())
    yield page
    assert errors == [], f"page errors: {errors}"
    page.close()


def test_the_failing_test_is_first_and_highlighted(seen_page: Any) -> None:
    from tests.report._png import dominant

    rows = seen_page.locator("tr.test")
    assert "test_reply_snapshot" in rows.nth(0).inner_text()
    assert rows.nth(0).get_attribute("class") == "test failing"
    assert [rows.nth(i).locator(".badge").first.inner_text() for i in range(3)] == [
        "failed", "passed", "xfailed",
    ]  # fmt: skip
    assert "1 xfailed" in seen_page.inner_text(".counts")
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    seen_page.screenshot(path=str(ARTEFACTS / "report-failures-first.png"))
    assert dominant(rows.nth(0).screenshot()) == HIGHLIGHT  # what the eye sees: a red row
    assert dominant(rows.nth(1).screenshot()) == (255, 255, 255)


def test_a_diff_line_is_coloured(seen_page: Any) -> None:
    from tests.report._png import share

    seen_page.locator("tr.test").nth(0).click()
    failure = seen_page.locator("pre.failure")
    assert failure.locator(".del").all_inner_texts() == ['E         -   text "old reply"']
    assert failure.locator(".add").all_inner_texts() == ['E         +   text "new reply"']
    # pytest's "+  where" explanation is not a diff line
    assert "where 3" not in " ".join(failure.locator(".add, .del").all_inner_texts())
    removed = failure.locator(".del").screenshot()
    assert share(removed, HIGHLIGHT) > 0.5 and share(removed, RED_TEXT, 60) > 0.02
    failure.screenshot(path=str(ARTEFACTS / "report-diff.png"))


def test_a_nested_run_appears_under_its_tool_call(seen_page: Any) -> None:
    seen_page.locator("tr.test", has_text="test_plans_a_trip").click()
    rounds = seen_page.locator(".detail .lane:not(.nested) > .timeline > .round")
    assert rounds.count() == 2  # the outer run: the research call, then the answer
    first = rounds.nth(0)
    call = first.locator(":scope > details.tool.exec")
    nested = first.locator(":scope > .lane.nested")
    assert call.count() == 1 and nested.count() == 1
    assert nested.get_attribute("data-call") == "call_0"
    assert "exec from research" in nested.locator(".lane-head").inner_text()
    # drawn below the call and above the outer run's next round, indented under it
    tool_box, lane_box = call.bounding_box(), nested.bounding_box()
    next_box = rounds.nth(1).bounding_box()
    assert tool_box["y"] + tool_box["height"] <= lane_box["y"] < next_box["y"]
    assert lane_box["x"] > tool_box["x"]
    seen_page.locator(".detail").screenshot(path=str(ARTEFACTS / "report-nested.png"))


def test_a_tests_http_exchanges_are_listed_when_it_is_opened(browser: Any, tmp_path: Path) -> None:
    from openprogram_testing.base.recording import HttpExchange
    from openprogram_testing.frontends.report.record import http_records

    exchanges = [
        HttpExchange("emulator", 0, "POST", "http://127.0.0.1:1/v1/chat/completions", 1.0,
                     {"authorization": "Bearer sk-test-0123456789abcdef0123"},
                     {"messages": [{"role": "user", "content": HOSTILE}]}, 429,
                     {"retry-after": "0.2"}, b'{"error": "slow down"}'),
        HttpExchange("emulator", 1, "POST", "http://127.0.0.1:1/v1/chat/completions", 1.2,
                     {}, {"messages": []}, 200, {}, b'{"choices": []}'),
    ]  # fmt: skip
    tests = [{"name": "tests/test_pydantic.py::test_retry", "nodeid": "h", "outcome": "passed",
              "ms": 3.0, "failure": None, "runs": [], "http": http_records(exchanges)}]  # fmt: skip
    page = browser.new_page()
    try:
        page.goto(write_html(tmp_path / "http.html", tests).as_uri())
        assert "0 + 2 HTTP" in page.locator("tr.test").inner_text()
        page.locator("tr.test").click()
        log = page.locator(".http-log")
        assert log.locator("h3").inner_text() == "HTTP interactions (2)"
        first, second = log.locator("details.http").all()
        assert "HTTP 429" in first.locator("summary").inner_text()
        assert "+0.0 ms" in first.inner_text() and "+200.0 ms" in second.inner_text()
        first.locator("summary").click()
        assert "authorization: REDACTED" in first.inner_text()
        assert HOSTILE in first.inner_text()  # shown as text
        assert page.evaluate("window.__pwned") is None
        assert "ran no loop" not in page.locator(".detail").inner_text()
    finally:
        page.close()


def test_a_record_the_page_cannot_draw_says_so_in_its_place(browser: Any, tmp_path: Path) -> None:
    good = trace_record(run("Hello there."))
    tests = [{"name": "odd", "nodeid": "o", "outcome": "passed", "ms": 1.0, "failure": None,
              "runs": [{"label": "half a record"}, good], "http": ["not an exchange"]}]  # fmt: skip
    page = browser.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(write_html(tmp_path / "odd.html", tests).as_uri())
        page.locator("tr.test").click()
        broken = page.locator(".detail pre.failure")
        assert broken.count() == 2
        assert broken.nth(0).inner_text().startswith("run 1 could not be drawn: ")
        assert broken.nth(1).inner_text().startswith("HTTP exchange 0 could not be drawn: ")
        assert page.locator(".detail .round").count() == 1  # the good run is drawn
        assert errors == []
    finally:
        page.close()
