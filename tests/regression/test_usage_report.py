"""Usage in the HTML report (per run, per test, cost with the user's prices) and in the
terminal summary (``--openprogram-usage``, ``--openprogram-prices``), also under xdist."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from openprogram.types import Usage
from openprogram_testing.judges.usage import Prices
from openprogram_testing.report import render_html, trace_record
from tests.regression._traces import made

pytest_plugins = ["pytester"]

SUITE = """
from openprogram.types import Usage
from openprogram_testing import call, turn


def test_spends(scripted_provider, loop_runner):
    scripted_provider.add(turn(call("t"), usage=Usage(1000, 50, 0, 0)), turn("ok", usage=Usage(1200, 30, 0, 0)))
    loop_runner("go", tools=[{"spec": {"name": "t", "parameters": {"type": "object"}}, "execute": lambda a: 1}])


def test_no_runs():
    pass
"""


@pytest.fixture(autouse=True)
def _ini(request: pytest.FixtureRequest) -> None:
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester").makeini(
            "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        )


def _blocks(page: str) -> dict[str, Any]:
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    return {key: json.loads(text) for key, text in found}


def test_a_run_record_carries_its_usage_and_a_test_row_the_sum_and_cost() -> None:
    trace = made(("f", {}), usage=Usage(10, 2, 3, 4))
    record = trace_record(trace)
    assert record["usage"]["input_tokens"] == 20 and record["usage"]["model_calls"] == 2
    page = render_html(
        [{"name": "t", "nodeid": "t", "outcome": "passed", "runs": [record, record]}],
        coverage=None,
        prices=Prices({"*": {"input": 1000}}),
    )
    (row,) = _blocks(page)["summary"]
    assert row["usage"]["input_tokens"] == 40 and row["usage"]["cost"] == "0.04"
    assert "<th>usage</th>" in page


def test_a_broken_usage_report_shows_as_unknown_not_as_zero() -> None:
    trace = made(usage=Usage(0, 0, 0, 0))
    trace.assistant_messages[0].usage.output_tokens = -3
    record = trace_record(trace)
    assert "negative" in record["usage"]["error"]
    page = render_html([{"name": "t", "runs": [record]}], coverage=None)
    (row,) = _blocks(page)["summary"]
    assert "negative" in row["usage"]["error"]


def test_the_terminal_summary_and_the_html_report_show_usage(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    prices = pytester.path / "prices.json"
    prices.write_text('{"test-model": {"input": 2.0, "output": 10.0}}')
    out = pytester.path / "r.html"
    result = pytester.runpytest(
        "--openprogram-usage", "--openprogram-prices", str(prices), "--openprogram-html", str(out)
    )
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*openprogram usage*",
        "test_suite.py::test_spends: 2 model call(s), 2,200 in / 80 out tokens "
        "(cache 0 read / 0 write), cost 0.0052",
    ])  # fmt: skip
    assert "test_no_runs" not in result.stdout.str().split("openprogram usage")[1]
    rows = _blocks(out.read_text())["summary"]
    assert [r["usage"].get("cost") for r in rows] == ["0.0052", "0"]


def test_a_price_table_that_cannot_be_read_stops_the_session(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    bad = pytester.path / "prices.json"
    bad.write_text('{"m": {"input": -1}}')
    result = pytester.runpytest("--openprogram-usage", "--openprogram-prices", str(bad))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--openprogram-prices*must be a number >= 0*"])
    missing = pytester.runpytest("--openprogram-usage", "--openprogram-prices", "nope.json")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR


def test_usage_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", "--openprogram-usage")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_spends: 2 model call(s), 2,200 in / 80 out tokens*"])
