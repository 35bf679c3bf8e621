"""Snapshots never read or write through a symlink that leaves the project: a snapshot file
linked to a file outside is neither shown nor overwritten, and a linked ``__snapshots__``
directory is not written into (scenario snapshots from Python and under pytest, and the
``trace_snapshot`` fixture)."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_testing.scenarios import run_scenario

pytest_plugins = ["pytester"]

SCENARIO = "prompt: hi\nscript: [hello]\nexpect: {snapshot: true}\n"
SECRET = "outside text, never shown\n"


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "pyproject.toml").touch()
    (project / "scenario_s.yaml").write_text(SCENARIO)
    return project, outside


def test_a_linked_snapshot_file_is_neither_read_nor_overwritten(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    secret = outside / "secret.txt"
    secret.write_text(SECRET)
    stored = project / "__snapshots__" / "scenario_s" / "s.trace.txt"
    stored.parent.mkdir(parents=True)
    stored.symlink_to(secret)
    for update in (False, True):
        result = run_scenario(project / "scenario_s.yaml", update_snapshots=update)
        assert not result.passed
        (line,) = result.failures
        assert "leads outside the project" in line and "outside text" not in line
    assert secret.read_text() == SECRET


def test_a_linked_snapshots_directory_is_not_written_into(layout: tuple[Path, Path]) -> None:
    project, outside = layout
    (project / "__snapshots__").symlink_to(outside, target_is_directory=True)
    result = run_scenario(project / "scenario_s.yaml", update_snapshots=True)
    assert not result.passed and "leads outside the project" in result.failures[0]
    assert list(outside.rglob("*")) == []


def test_under_pytest_neither_scenarios_nor_trace_snapshot_write_outside(
    pytester: pytest.Pytester, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makefile(".yaml", scenario_s=SCENARIO)
    pytester.makepyfile(
        test_t="""
        from openprogram_testing import ScriptedProvider
        from openprogram_testing.core.trace import run_loop_sync

        def test_t(trace_snapshot):
            assert trace_snapshot == run_loop_sync(ScriptedProvider(["hi"]), "go")
        """
    )
    (pytester.path / "__snapshots__").symlink_to(outside, target_is_directory=True)
    result = pytester.runpytest("--snapshot-update", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=2)
    assert "leads outside the project" in result.stdout.str()
    assert [p for p in outside.rglob("*") if p.is_file()] == []
