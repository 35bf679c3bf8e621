"""Reports and result files are never written through a link that leaves the project: a linked
``build/`` (or a planted result file) pointing elsewhere is refused before anything is written;
a path the user names outside every project, or a link that stays inside, is allowed."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_testing.base.paths import OutsideProject, writable_target
from openprogram_testing.frontends.cli.main import main
from tests.scenarios._scenarios import ONE_TOOL_CALL

pytest_plugins = ["pytester"]

PASSING = ONE_TOOL_CALL + "expect: {termination: completed}\n"


def _project(tmp_path: Path) -> tuple[Path, Path]:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (project / "scenario_a.yaml").write_text(PASSING)
    (project / "build").symlink_to(elsewhere, target_is_directory=True)
    return project, elsewhere


@pytest.mark.parametrize("option", ["--html", "--results-dir"])
def test_the_cli_refuses_an_output_behind_a_link_out_of_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    project, elsewhere = _project(tmp_path)
    target = project / "build" / ("r.html" if option == "--html" else "results")
    code = main(["run", str(project / "scenario_a.yaml"), option, str(target)])
    out, err = capsys.readouterr()
    assert code == 2, out + err
    assert "leads outside the project" in err and "Traceback" not in out + err
    assert list(elsewhere.iterdir()) == []


def test_a_planted_result_file_link_is_refused(tmp_path: Path, capsys) -> None:
    project, elsewhere = _project(tmp_path)
    results = project / "results"
    results.mkdir()
    victim = elsewhere / "victim.txt"
    victim.write_text("keep me")
    (results / "scenario_a.result.json").symlink_to(victim)
    code = main(["run", str(project / "scenario_a.yaml"), "--results-dir", str(results)])
    out, err = capsys.readouterr()
    assert code != 0 and "leads outside the project" in err and "Traceback" not in out + err
    assert victim.read_text() == "keep me"


def test_pytest_refuses_the_html_report_behind_such_a_link(
    tmp_path: Path, pytester: pytest.Pytester
) -> None:
    pytester.makepyprojecttoml("[project]\nname = 'x'\n")
    pytester.makepyfile("def test_ok():\n    pass\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (pytester.path / "build").symlink_to(elsewhere, target_is_directory=True)
    result = pytester.runpytest(
        "--openprogram-html=build/r.html", "-o", "asyncio_default_fixture_loop_scope=function"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "leads outside the project" in result.stderr.str()
    assert list(elsewhere.iterdir()) == []


def test_paths_outside_every_project_and_links_that_stay_inside_are_allowed(
    tmp_path: Path,
) -> None:
    project, _ = _project(tmp_path)
    assert writable_target(tmp_path / "loose" / "r.html", "x") == tmp_path / "loose" / "r.html"
    (project / "out").mkdir()
    (project / "current").symlink_to(project / "out", target_is_directory=True)
    assert writable_target(project / "current" / "r.html", "x") == project / "out" / "r.html"
    with pytest.raises(OutsideProject):
        writable_target(project / "build" / "r.html", "x")
