"""A ``ScenarioReader`` loads a suite with one look per folder: each folder's project root is
found once and the import roots resolved once, not once per file (the collector, ``validate``
and ``run`` keep one reader for their pass); what it loads is what ``load_scenario`` loads."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios import loader as loader_module
from openprogram_testing.frontends.scenarios.loader import ScenarioReader
from openprogram_testing.scenarios import load_scenario
from tests.scenarios._scenarios import ONE_TOOL_CALL

PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2}\n"


def suite(root: Path, folders: int, per_folder: int) -> list[Path]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text("")
    files = []
    for f in range(folders):
        folder = root / f"group_{f}"
        folder.mkdir(parents=True)
        for i in range(per_folder):
            path = folder / f"scenario_{i:03d}.yaml"
            path.write_text(PASSING.replace("hi", f"hi {f}/{i}"))
            files.append(path)
    return files


class CountProjectRoots:
    """Counts the reader's walks up to a project marker."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.folders: list[Path] = []
        original = loader_module.project_root

        def counted(directory: Path) -> Path:
            self.folders.append(directory)
            return original(directory)

        monkeypatch.setattr(loader_module, "project_root", counted)


def test_one_project_root_walk_per_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = suite(tmp_path, folders=3, per_folder=20)
    counter = CountProjectRoots(monkeypatch)
    reader = ScenarioReader()
    for path in files:
        reader.load(path)
    assert sorted(counter.folders) == sorted({p.parent.resolve() for p in files})


def test_the_reader_loads_what_load_scenario_loads(tmp_path: Path) -> None:
    files = suite(tmp_path / "project", folders=2, per_folder=3)
    inner = tmp_path / "project" / "group_1" / "inner"
    (inner / ".git").mkdir(parents=True)  # a project of its own inside the first one
    (inner / "scenario_inner.yaml").write_text(PASSING)
    files.append(inner / "scenario_inner.yaml")
    reader = ScenarioReader([tmp_path])
    for path in files:
        mine, theirs = reader.load(path), load_scenario(path, import_roots=[tmp_path])
        assert mine.model_dump() == theirs.model_dump()
        assert (mine._path, mine._root) == (theirs._path, theirs._root)
    assert reader.load(files[-1])._root == inner.resolve()
    assert reader.load(files[0])._root == (tmp_path / "project").resolve()


def test_a_reader_with_a_root_confines_every_file_to_it(tmp_path: Path) -> None:
    files = suite(tmp_path, folders=1, per_folder=2)
    reader = ScenarioReader(root=tmp_path / "group_0")
    assert {reader.load(p)._root for p in files} == {(tmp_path / "group_0").resolve()}


def _count_during(monkeypatch: pytest.MonkeyPatch, run: Any) -> list[Path]:
    counter = CountProjectRoots(monkeypatch)
    run()
    return counter.folders


def test_the_collector_and_the_cli_look_once_per_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    files = suite(tmp_path, folders=2, per_folder=15)
    folders = {p.parent.resolve() for p in files}
    collected = _count_during(
        monkeypatch,
        lambda: pytest.main([str(tmp_path), "--collect-only", "-q", "-p", "no:cacheprovider"]),
    )
    assert sorted(collected) == sorted(folders)
    monkeypatch.undo()
    validated = _count_during(monkeypatch, lambda: main(["validate", str(tmp_path)]))
    assert sorted(validated) == sorted(folders)
    assert "30 scenario file(s) valid" in capsys.readouterr().out
