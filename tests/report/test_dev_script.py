"""``python3 scripts/dev.py run`` (the main job) runs the bundled scenarios with the HTML report
and coverage and prints the report's path; the bundled scenarios cover the loop behaviours."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.main import main
from openprogram_testing.report import BEHAVIOURS

ROOT = Path(__file__).resolve().parents[2]


def _dev() -> Any:
    spec = importlib.util.spec_from_file_location("dev_script", ROOT / "scripts" / "dev.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # registered first, as an import does: dataclasses look their module up by name
    sys.modules["dev_script"] = module
    spec.loader.exec_module(module)
    return module


def test_run_job_writes_the_report_and_prints_its_path(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    dev = _dev()
    report = tmp_path / "build" / "report" / "scenarios.html"
    monkeypatch.setattr(dev, "REPORT", report)
    monkeypatch.setattr(dev, "ensure_env", lambda: None)
    calls: list[list[str]] = []

    def call(cmd: list[str], cwd: Path) -> int:
        calls.append(cmd)
        report.parent.mkdir(parents=True)
        report.write_text("<html></html>")
        return 0

    monkeypatch.setattr(dev.subprocess, "call", call)
    assert dev.main(["run"]) == 0
    (cmd,) = calls
    assert cmd[1:3] == ["run", "scenarios/"]
    assert cmd[3:] == ["--html", str(report), "--coverage"]
    assert f"report of the bundled scenarios: {report}" in capsys.readouterr().out


def test_bundled_scenarios_cover_the_loop_behaviours(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same command the main job runs: every scenario passes, the report is written, and
    every behaviour is exercised."""
    html = tmp_path / "scenarios.html"
    code = main(["run", str(ROOT / "scenarios"), "--html", str(html), "--coverage"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert html.is_file() and f"HTML report written to {html}" in out
    assert "never exercised" not in out, out
    assert f"{len(BEHAVIOURS)}/{len(BEHAVIOURS)} behaviours (100.0 %)" in out, out
