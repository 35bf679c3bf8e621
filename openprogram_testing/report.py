"""See what a suite did: the HTML report of its loop runs and its loop-behaviour coverage.

- ``behaviours``: the loop's behaviours, each defined once as a function of a trace;
- ``coverage``: which behaviours a set of runs exercised, how often, which never;
- ``record``: a trace as JSON data for the report (rounds, calls, tools, arrivals, nested runs);
- ``html``: the self-contained report page;
- ``pytest_plugin``: the pytest options and hooks (``--openprogram-html``,
  ``--openprogram-coverage``, ``--openprogram-coverage-fail-under``).
"""

from __future__ import annotations

from .frontends.report.behaviours import BEHAVIOURS, Behaviour, exhibited
from .frontends.report.coverage import Coverage
from .frontends.report.html import render_html, write_html
from .frontends.report.record import RunCollector, trace_record

__all__ = [
    "BEHAVIOURS",
    "Behaviour",
    "Coverage",
    "RunCollector",
    "exhibited",
    "render_html",
    "trace_record",
    "write_html",
]
