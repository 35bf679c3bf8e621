"""``openprogram-testing run`` collects linearly: pytest is given each folder once and the list of
selected files (``collect.Selection``), instead of one argument per file, which made pytest walk
the folder again for every file (n files, n² collector calls).  What it collects is exactly the
selection: no Python test file or unselected YAML beside it, a selected file even in a folder
pytest would not recurse into, conftest files still loaded, under xdist too."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_testing.frontends.cli.commands import discover, pytest_args
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios.collect import Selection
from tests.scenarios._scenarios import ONE_TOOL_CALL

PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2}\n"


class CountCollectCalls:
    """A pytest plugin counting ``pytest_collect_file`` calls."""

    def __init__(self) -> None:
        self.calls = 0

    def pytest_collect_file(self, file_path: Path, parent: object) -> None:
        self.calls += 1


def _folder(root: Path, n: int) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        (root / f"scenario_{i:04d}.yaml").write_text(PASSING.replace("hi", f"hi {i}"))
    return root


def _collect_calls(files: list[Path], selection_file: Path | None) -> int:
    counter = CountCollectCalls()
    args = pytest_args(files, selection_file=selection_file)
    code = pytest.main([*args, "--collect-only", "-p", "no:randomly"], plugins=[counter])
    assert code == 0
    return counter.calls


@pytest.mark.parametrize("n", [50, 400])
def test_collector_calls_grow_linearly_with_the_number_of_files(tmp_path: Path, n: int) -> None:
    files = discover([_folder(tmp_path / "s", n)])
    assert _collect_calls(files, tmp_path / "selected.txt") == n


def test_one_argument_per_file_was_quadratic(tmp_path: Path) -> None:
    # the shape the selection replaces: the check above would fail on it
    files = discover([_folder(tmp_path / "s", 30)])
    assert _collect_calls(files, None) >= 30 * 30  # at least every file once per argument


def test_selection_keeps_folders_leading_to_selected_files_only(tmp_path: Path) -> None:
    a, b = tmp_path / "x" / "a.yaml", tmp_path / "x" / "deep" / "b.yaml"
    selection = Selection.of([a, b])
    assert selection.keeps(a) and selection.keeps(b)
    assert selection.keeps(tmp_path / "x") and selection.keeps(tmp_path / "x" / "deep")
    assert not selection.keeps(tmp_path / "x" / "c.yaml")
    assert not selection.keeps(tmp_path / "y")
    assert selection.roots() == [tmp_path / "x"]
    listed = tmp_path / "list.txt"
    selection.write(listed)
    assert Selection.read(str(listed)) == selection


def _mixed_suite(root: Path) -> Path:
    _folder(root, 2)
    (root / "scenario_unlisted.yaml").write_text(PASSING)  # present, not selected below
    (root / "test_python.py").write_text("def test_never():\n    raise AssertionError('ran')\n")
    (root / "conftest.py").write_text(
        "import os\nos.environ['OPENPROGRAM_TEST_CONFTEST_LOADED'] = '1'\n"
    )
    hidden = root / "build"  # pytest's norecursedirs skips it when walking a folder
    hidden.mkdir()
    (hidden / "scenario_in_build.yaml").write_text(PASSING)
    return root


@pytest.mark.parametrize("workers", ["1", "2"])
def test_run_collects_exactly_the_selection(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    workers: str,
) -> None:
    monkeypatch.delenv("OPENPROGRAM_TEST_CONFTEST_LOADED", raising=False)
    root = _mixed_suite(tmp_path / "suite")
    code = main(
        [
            "run",
            str(root / "scenario_0000.yaml"),
            str(root / "scenario_0001.yaml"),
            str(root / "build" / "scenario_in_build.yaml"),
            "-n",
            workers,
        ]
    )
    out, err = capsys.readouterr()
    assert code == 0, out + err
    assert "3 passed in" in out, out
    assert "unlisted" not in out and "test_never" not in out
    if workers == "1":  # in this process: the folder's conftest was loaded as pytest loads it
        import os

        assert os.environ.get("OPENPROGRAM_TEST_CONFTEST_LOADED") == "1"
