"""The HTML report: one self-contained file (inline CSS and JavaScript, no network).

The page embeds a small summary (one row per test or scenario) and, per test, its full detail
as a separate JSON block that the page parses only when the row is expanded, so a report of
thousands of runs opens as fast as its summary table renders.  All data is JSON inside
``<script type="application/json">`` blocks with ``<`` escaped, and the script renders it with
``textContent``: text from models and tools can never become markup.  ``docs/decisions.md``
says why there is no template engine.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections.abc import Mapping, Sequence
from functools import cache
from html import escape
from importlib import resources
from pathlib import Path
from typing import Any

from openprogram.texts import whole_text
from openprogram_testing.judges.usage import UsageError, UsageTotals, format_cost

from .coverage import Coverage

TestEntry = Mapping[str, Any]
"""One test or scenario: ``name``, ``nodeid``, ``outcome`` (one of ``OUTCOMES``), ``ms``,
``failure`` (text or ``None``: the whole failure, a snapshot diff included), ``runs``
(``trace_record`` dicts) and, optionally, ``http`` (``http_record`` dicts: what clients that
are not openprogram sent to the provider emulator or through a cassette)."""

OUTCOMES = ("failed", "error", "passed", "skipped", "xfailed", "xpassed")
"""Each test outcome as pytest names it, counted and shown as itself, in the header's order."""

FAILING = frozenset({"failed", "error"})
"""The outcomes listed first and highlighted: what a reader opens the report for."""


@cache
def _asset(name: str) -> str:
    return resources.files(__package__).joinpath(name).read_text(encoding="utf-8")


def _json_block(element_id: str, value: Any) -> str:
    """A JSON data block that no text inside it can close (``<`` is escaped as ``\\u003c``)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return f'<script type="application/json" id="{element_id}">{text}</script>\n'


def _summary_row(i: int, test: TestEntry, prices: Any = None) -> dict[str, Any]:
    runs = list(test.get("runs") or [])
    http = test.get("http") or []
    behaviours: dict[str, None] = {}
    for run in runs:
        behaviours.update(dict.fromkeys(run.get("behaviours") or {}))
    return {
        "i": i,
        "name": str(test.get("name", "")),
        "nodeid": str(test.get("nodeid", "")),
        "outcome": str(test.get("outcome", "passed")),
        "ms": test.get("ms"),
        "runs": len(runs),
        "termination": runs[-1].get("termination") if runs else None,
        "behaviours": list(behaviours),
        "usage": usage_summary(runs, prices),
        "repeat": test.get("repeat"),
        "http": len(http),
    }


def failures_first(tests: Sequence[TestEntry]) -> list[int]:
    """The order the summary lists tests in: failed and errored ones first, each group in the
    order the tests ran (a stable sort, so the order stays reproducible)."""
    return sorted(range(len(tests)), key=lambda i: str(tests[i].get("outcome")) not in FAILING)


def usage_summary(runs: Sequence[Mapping[str, Any]], prices: Any = None) -> dict[str, Any]:
    """One test's usage over its runs and their nested lanes: ``tokens`` (input, output, cache
    read, cache write), ``model_calls``, ``cost`` (with prices) or ``error`` (why not)."""

    total = UsageTotals()
    stack = list(runs)
    try:
        while stack:
            run = stack.pop()
            if not isinstance(run, Mapping):  # a hand-made records file merged: not a run
                raise UsageError(f"a run record is {type(run).__name__}, not an object")
            children = run.get("children") or []
            stack.extend(children if isinstance(children, list) else [children])
            usage = run.get("usage")
            if not usage:
                continue
            if not isinstance(usage, Mapping) or not isinstance(usage.get("by_model", {}), Mapping):
                raise UsageError(f"a run's usage record is not an object: {usage!r:.60}")
            if "error" in usage:
                raise UsageError(str(usage["error"]))
            total.add(UsageTotals.from_dict(usage))
        out: dict[str, Any] = {"line": total.line(prices), **total.to_dict()}
        if prices is not None:
            out["cost"] = format_cost(prices.cost(total))
        return out
    except UsageError as exc:
        return {"error": str(exc), "line": f"usage unknown ({exc})"}


def render_html(
    tests: Sequence[TestEntry],
    *,
    title: str = "OpenProgram report",
    coverage: Coverage | None,
    prices: Any = None,
) -> str:
    """The whole report page as a string (``prices``, a ``usage.Prices``, adds each test's
    cost)."""
    counts: dict[str, int] = {}
    for test in tests:
        outcome = str(test.get("outcome", "passed"))
        counts[outcome] = counts.get(outcome, 0) + 1
    runs = sum(len(test.get("runs") or []) for test in tests)
    stamp = _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{escape(title)}</title>\n<style>\n{_asset('report.css')}</style>\n</head>\n",
        f'<body>\n<header>\n<h1>{escape(title)}</h1>\n<div class="counts">',
    ]
    others = sorted(set(counts) - set(OUTCOMES))  # an outcome this page has no name for
    for outcome in (*OUTCOMES, *others):
        if counts.get(outcome):
            cls = f"count o-{outcome}" if outcome in OUTCOMES else "count"
            parts.append(f'<span class="{cls}">{counts[outcome]} {escape(outcome)}</span>')
    parts.append(f"<span>{runs} loop run{'s' if runs != 1 else ''}</span>")
    if coverage is not None:
        parts.append(f'<span id="coverage-line">{escape(coverage.summary_line())}</span>')
    parts.append(f'<span class="ms">generated {stamp}</span></div>\n</header>\n<main>\n')
    parts.append(
        '<div class="controls"><input id="filter" type="search" '
        'placeholder="filter by name or behaviour" aria-label="filter">'
        '<select id="status" aria-label="outcome"><option value="all">all</option>'
        + "".join(f'<option value="{o}">{o}</option>' for o in OUTCOMES)
        + '</select><span id="shown" class="ms"></span>'
        "</div>\n<table><thead><tr><th>result</th><th>test</th><th>termination</th>"
        "<th>runs</th><th>time</th><th>usage</th><th>behaviours</th></tr></thead>"
        '<tbody id="tests"></tbody></table>\n'
    )
    if coverage is not None:
        parts.append(
            '<section class="coverage"><h2>Loop-behaviour coverage</h2>'
            f"<p>{escape(coverage.summary_line())}</p>"
            f'<p id="coverage-trajectory">{escape(coverage.trajectory_line())}</p>'
            "<table><thead><tr><th>behaviour</th>"
            "<th>title</th><th>runs</th><th>times</th><th>definition</th></tr></thead>"
            '<tbody id="coverage-rows"></tbody></table></section>\n'
        )
    parts.append("</main>\n")
    summary = [_summary_row(i, tests[i], prices) for i in failures_first(tests)]
    parts.append(_json_block("summary", summary))
    if coverage is not None:
        parts.append(_json_block("coverage", {"rows": coverage.rows()}))
    for i, test in enumerate(tests):
        detail = {
            "failure": test.get("failure"),
            "runs": list(test.get("runs") or []),
            "http": list(test.get("http") or []),
        }
        parts.append(_json_block(f"d-{i}", detail))
    parts.append(f"<script>\n{_asset('report.js')}</script>\n</body>\n</html>\n")
    return whole_text("".join(parts))  # a lone surrogate from a tool or a prompt: U+FFFD


def write_html(
    path: str | Path,
    tests: Sequence[TestEntry],
    *,
    title: str = "OpenProgram report",
    coverage: Coverage | None = None,
    prices: Any = None,
) -> Path:
    """Write the report to ``path`` (parent directories are created); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    page = render_html(tests, title=title, coverage=coverage, prices=prices)
    target.write_text(page, encoding="utf-8")
    return target


__all__ = [
    "FAILING",
    "OUTCOMES",
    "TestEntry",
    "failures_first",
    "render_html",
    "usage_summary",
    "write_html",
]
