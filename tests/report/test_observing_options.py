"""No option that only observes changes a verdict: every bundled scenario gets the same outcome,
phase by phase and test id by test id, with and without each report option
(``--openprogram-html``, ``--openprogram-records``, the coverage and usage tables with a price
table) and under ``openprogram-testing run --html --records -v --results-dir --coverage``; every
test of the example project gets the same with all of the pytest options at once.

A cassette replay with ``fallback=`` once failed only when a report was asked for (the report's
traffic listener made the fallback read the address of an emulator that never listens):
``scenarios/scenario_58_cassette_fallback_after_drift.yaml`` is that pattern among the bundled
scenarios, so this test fails on any such seam again.

Each session runs in its own interpreter (one per option, two at a time) in a copy of the
project, so the files the options write stay inside that project and nothing is shared; seven
sessions in all keep it to about a minute of CPU.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: A plugin each session loads (``-p``, or ``PYTEST_ADDOPTS`` under the command): it writes
#: every test's outcome per phase, as the summary names it, to the file in
#: ``OPENPROGRAM_VERDICTS`` (the controller's view under pytest-xdist).
PROBE = """
import json, os
from openprogram_testing.frontends.report.pytest_plugin import outcome_of

_verdicts = {}


def pytest_runtest_logreport(report):
    _verdicts.setdefault(report.nodeid, []).append(report.when + ":" + outcome_of(report))


def pytest_sessionfinish(session):
    if not hasattr(session.config, "workerinput"):
        with open(os.environ["OPENPROGRAM_VERDICTS"], "w", encoding="utf-8") as f:
            json.dump(_verdicts, f)
"""

PRICES = '{"*": {"input": 1.0, "output": 2.0}}'

#: pytest options that only observe, each run on its own over the bundled scenarios (the
#: fallback, fault and nested scenarios among them) and compared with a plain run.
PYTEST_OPTIONS: dict[str, list[str]] = {
    "html": ["--openprogram-html=build/report.html"],
    "records": ["--openprogram-records=build/records.json"],
    "tables": ["--openprogram-coverage", "--openprogram-usage", "--openprogram-prices=prices.json"],
}
#: The example project, with every one of them at once (its verdicts against its plain run).
EVERY_OPTION = [o for options in PYTEST_OPTIONS.values() for o in options]
#: ``openprogram-testing run`` with every option that only observes (it adds the scenario
#: details, timelines and result files of its own), against the plain pytest session.
RUN_OPTIONS = ["--html", "build/run.html", "--records", "build/run-records.json", "-v",
               "--results-dir", "build/results", "--coverage"]  # fmt: skip


def _copy(source: Path, target: Path) -> Path:
    shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return target


def _outputs(project: Path) -> Path:
    """Where the options write (inside the project, as they require) and the price table."""
    (project / "prices.json").write_text(PRICES, encoding="utf-8")
    (project / "build").mkdir()
    return project


def _session(
    tmp_path: Path, cwd: Path, label: str, argv: list[str], addopts: str = ""
) -> dict[str, list[str]]:
    """Run ``argv`` (a fresh interpreter's arguments) in ``cwd`` with the probe loaded; the
    verdicts it wrote, by test id."""
    out = tmp_path / f"verdicts-{cwd.name}-{label.replace(' ', '_')}.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "OPENPROGRAM_"))}
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "probe"), str(ROOT)])
    env["OPENPROGRAM_VERDICTS"] = str(out)
    env["NO_COLOR"] = "1"
    if addopts:
        env["PYTEST_ADDOPTS"] = addopts
    done = subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert out.exists(), f"{label}: no verdicts written\n{done.stdout[-3000:]}\n{done.stderr}"
    verdicts: dict[str, list[str]] = json.loads(out.read_text(encoding="utf-8"))
    return verdicts


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, list[str]]]:
    """Every session's verdicts: ``"<project> <option>"`` → test id → outcomes per phase."""
    tmp_path = tmp_path_factory.mktemp("observing")
    (tmp_path / "probe").mkdir()
    (tmp_path / "probe" / "verdict_probe.py").write_text(PROBE, encoding="utf-8")
    bundled = tmp_path / "bundled"
    bundled.mkdir()
    (bundled / "pyproject.toml").write_text(
        (ROOT / "pyproject.toml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    _copy(ROOT / "scenarios", bundled / "scenarios")
    _copy(ROOT / "cassettes", bundled / "cassettes")  # a scenario replays one of the project's
    _outputs(bundled)
    example = _outputs(_copy(ROOT / "examples" / "city_agent", tmp_path / "city_agent"))
    jobs: dict[str, tuple[Path, list[str], str]] = {}
    base = ["-m", "pytest", "-q", "-p", "no:randomly", "-p", "verdict_probe"]
    for label, options in {"plain": [], **PYTEST_OPTIONS}.items():
        jobs[f"scenarios {label}"] = (bundled, [*base, "-n", "0", "scenarios", *options], "")
    jobs["example plain"] = (example, base, "")
    jobs["example every option"] = (example, [*base, *EVERY_OPTION], "")
    cli = ["-m", "openprogram_testing.frontends.cli.main", "run", "scenarios", *RUN_OPTIONS]
    jobs["scenarios run"] = (bundled, cli, "-p no:randomly -p verdict_probe")
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            name: pool.submit(_session, tmp_path, cwd, name, argv, addopts)
            for name, (cwd, argv, addopts) in jobs.items()
        }
        return {name: future.result() for name, future in futures.items()}


def _bundled_ids() -> set[str]:
    return {f"scenarios/{p.name}" for p in (ROOT / "scenarios").glob("scenario_*.yaml")}


def test_the_plain_sessions_run_every_bundled_scenario_and_example_test_and_pass(
    verdicts: dict[str, dict[str, list[str]]],
) -> None:
    """The comparison means something: every bundled scenario file and the example project's
    tests ran, and all of them pass without any option."""
    scenarios = verdicts["scenarios plain"]
    assert {nodeid.split("::")[0] for nodeid in scenarios} == _bundled_ids()
    example = verdicts["example plain"]
    assert len(example) >= 10 and any(i.endswith(".yaml::nested_agent") for i in example)
    for session in (scenarios, example):
        failing = {i: v for i, v in session.items() if v != ["setup:passed", "call:passed",
                                                              "teardown:passed"]}  # fmt: skip
        assert not failing


def _changed(plain: dict[str, list[str]], observed: dict[str, list[str]]) -> dict[str, object]:
    """The test ids whose outcomes differ: (without, with the option)."""
    return {
        nodeid: (plain.get(nodeid), observed.get(nodeid))
        for nodeid in plain.keys() | observed.keys()
        if plain.get(nodeid) != observed.get(nodeid)
    }


@pytest.mark.parametrize("option", list(PYTEST_OPTIONS))
def test_a_report_option_changes_no_verdict_of_a_bundled_scenario(
    verdicts: dict[str, dict[str, list[str]]], option: str
) -> None:
    changed = _changed(verdicts["scenarios plain"], verdicts[f"scenarios {option}"])
    assert not changed, f"{PYTEST_OPTIONS[option]} changed these verdicts: {changed}"


def test_the_report_options_change_no_verdict_of_the_example_project(
    verdicts: dict[str, dict[str, list[str]]],
) -> None:
    changed = _changed(verdicts["example plain"], verdicts["example every option"])
    assert not changed, f"{EVERY_OPTION} changed these verdicts: {changed}"


def test_the_run_command_with_its_report_options_changes_no_verdict(
    verdicts: dict[str, dict[str, list[str]]],
) -> None:
    changed = _changed(verdicts["scenarios plain"], verdicts["scenarios run"])
    assert not changed, f"`run {' '.join(RUN_OPTIONS)}` changed these verdicts: {changed}"
