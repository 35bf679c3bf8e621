"""Every command-line option and ini setting of the harness's pytest plugin, in one hook.

One place to read what the plugin accepts (pytest-recording's manner): the plugin, the YAML
collector and the report read these options, none adds its own.  Options are namespaced
(``--openprogram-…``) so the plugin coexists with pytest-recording, which owns
``--record-mode``.  Registered through ``pytest_plugins`` of ``frontends.pytest.plugin``; this
module imports nothing heavy (pytest and the record modes only).
"""

from __future__ import annotations

import pytest

from openprogram_testing.transport.cassettes.modes import RECORD_MODES

FREEZE_OPTION = "--openprogram-freeze-gc"
"""Keep what is alive after start-up and after collection out of the garbage collector's full
walks: ``session`` until the session ends, ``process`` until the process exits (what
``openprogram-testing run`` passes when it is the process; see ``_freeze``)."""

SELECTION_OPTION = "--openprogram-only"
"""Collect only the files a list names: how ``openprogram-testing run`` hands pytest its
selection (see ``Selection``)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    """The harness's options, grouped by what reads them."""
    group = parser.getgroup("openprogram", "openprogram_testing harness")
    _harness(group, parser)
    _scenarios(group, parser)
    _report(group)


def _harness(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """The fixtures': record mode, the real-call guard, the invariants of ``loop_runner``, the
    OTLP export of each test's runs (``frontends/pytest/otlp.py``)."""
    group.addoption(
        "--openprogram-record-mode",
        action="store",
        default="none",
        choices=RECORD_MODES,
        help="Cassette record mode for the `cassette` fixture (default: none = replay only, "
        "never reach the network).  Recording allows real model requests.",
    )
    # -- harness: real-call guard, loop_runner ------------------------------------------------
    group.addoption(
        "--openprogram-allow-model-requests",
        action="store_true",
        default=None,
        help="Allow real model API requests in every test (default: blocked by "
        "openprogram.providers.guard; loopback servers and cassette playback always pass).",
    )
    group.addoption(
        "--openprogram-no-invariants",
        action="store_true",
        default=None,
        help="Do not check the loop invariants on every `loop_runner` run.",
    )
    # -- spans: the runs of each test exported over OTLP ----------------------------------------
    group.addoption(
        "--openprogram-otlp",
        action="store",
        default=None,
        metavar="URL",
        help="Export each test's runs as an OpenTelemetry trace named after the test, its "
        "verdict on the root span, to this OTLP/HTTP endpoint (http://host:4318, or the full "
        "/v1/traces URL).  Observing only: no verdict changes.  Needs the otlp extra.",
    )
    parser.addini(
        "openprogram_allow_model_requests",
        "Allow real model API requests in every test (default: false).",
        type="bool",
        default=False,
    )
    parser.addini(
        "openprogram_cassette_match_body",
        "Cassette replay compares the JSON bodies of model calls with the recorded ones "
        "(default: true).  false relaxes it for every `cassette` fixture and YAML cassette "
        "scenario that does not say otherwise.",
        type="bool",
        default=True,
    )
    parser.addini(
        "openprogram_check_invariants",
        "Check the loop invariants on every `loop_runner` run (default: true).",
        type="bool",
        default=True,
    )


def _scenarios(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """The YAML collector's (``frontends/scenarios/collect.py``)."""
    group.addoption(
        FREEZE_OPTION,
        dest="openprogram_freeze_gc",
        choices=("session", "process"),
        default=None,
        help="Keep what is alive after start-up and after collection out of the garbage "
        "collector's full walks, until the session ends or until the process exits (what "
        "`openprogram-testing run` passes).",
    )
    group.addoption(
        SELECTION_OPTION,
        dest="openprogram_only",
        default=None,
        metavar="FILE",
        help="Collect only the scenario files listed in FILE, one path a line (what "
        "`openprogram-testing run` selected).",
    )
    group.addoption(
        "--openprogram-import-root",
        action="append",
        default=[],
        metavar="DIR",
        help="Look up scenario import: paths in DIR first (repeatable; the pythonpath ini "
        "setting and the rootdir are always searched).",
    )
    parser.addini(
        "openprogram_scenarios",
        "Extra glob patterns of YAML scenario files to collect as tests (besides "
        "scenario_*.yaml and *.scenario.yaml).",
        type="linelist",
        default=[],
    )
    parser.addini(
        "openprogram_scenario_time_limit",
        "Wall-clock limit of one scenario run in seconds (default: 60; a scenario's "
        "options.time_limit_s wins).",
        default="",
    )


def _report(group: pytest.OptionGroup) -> None:
    """The report's (``frontends/report/pytest_plugin.py``): all off by default; nothing is
    recorded unless one is given, and none changes a verdict."""
    group.addoption(
        "--openprogram-html",
        metavar="FILE",
        default=None,
        help="Write an HTML report of every loop run of the session to FILE (self-contained).",
    )
    group.addoption(
        "--openprogram-coverage",
        action="store_true",
        default=False,
        help="Print which loop behaviours the session's runs exercised, how often, which never.",
    )
    group.addoption(
        "--openprogram-coverage-fail-under",
        metavar="PCT",
        type=float,
        default=None,
        help="Fail the session when loop-behaviour coverage is below PCT percent.",
    )
    group.addoption(
        "--openprogram-usage",
        action="store_true",
        default=False,
        help="Print each test's token usage, model calls (and cost, with a price table).",
    )
    group.addoption(
        "--openprogram-prices",
        metavar="FILE",
        default=None,
        help="A price table (JSON or YAML: model -> {input, output, cache_read, cache_write} "
        "per million tokens) for the costs in the usage table and the HTML report.",
    )
    group.addoption(
        "--openprogram-records",
        metavar="FILE",
        default=None,
        help="Write the session's tests and run records as JSON to FILE, for "
        "`openprogram-testing report merge` (one report from several sessions or shards).",
    )
    group.addoption(
        "--openprogram-records-shard",
        metavar="I/N/SUITE",
        default=None,
        help="Mark the records as shard I of N of the suite SUITE (set by "
        "`openprogram-testing run --shard`).",
    )
    group.addoption(
        "--openprogram-scenario-details",
        action="store_true",
        default=False,
        help="Attach each scenario's outcome (termination, model calls, failures) to its test "
        "report (used by openprogram-testing run).",
    )
    group.addoption(
        "--openprogram-scenario-timelines",
        action="store_true",
        default=False,
        help="With --openprogram-scenario-details: attach the timeline of every scenario, "
        "passing ones too (openprogram-testing run -v).",
    )
    group.addoption(
        "--openprogram-scenario-results",
        action="store_true",
        default=False,
        help="With --openprogram-scenario-details: attach each scenario's result JSON "
        "(openprogram-testing run --results-dir).",
    )
