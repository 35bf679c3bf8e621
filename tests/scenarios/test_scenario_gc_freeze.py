"""``openprogram-testing run`` keeps the objects alive after start-up and after collection out of
the garbage collector's full walks (``gc.freeze``): for the session when the command is called in
a process that goes on (``cli.main`` with arguments: the objects are unfrozen when the session
ends), until the process exits when the command is the process.  A plain pytest run freezes
nothing unless asked."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from openprogram_testing.frontends.cli import commands
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios.collect import FREEZE_OPTION
from tests.scenarios._scenarios import ONE_TOOL_CALL, XdistWorker, run_command

ROOT = Path(__file__).resolve().parents[2]
PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2}\n"


class FrozenDuringRuns:
    """Records ``gc.get_freeze_count()`` when each test runs."""

    def __init__(self) -> None:
        self.counts: list[int] = []

    def pytest_runtest_call(self, item: pytest.Item) -> None:
        self.counts.append(gc.get_freeze_count())


@pytest.fixture
def suite(tmp_path: Path) -> Iterator[Path]:
    for i in range(3):
        (tmp_path / f"scenario_{i}.yaml").write_text(PASSING)
    yield tmp_path
    gc.unfreeze()  # whatever a failing check left frozen


def run_pytest(suite: Path, *options: str) -> FrozenDuringRuns:
    seen = FrozenDuringRuns()
    args = [str(suite), "-q", "-p", "no:cacheprovider", *options]
    assert pytest.main(args, plugins=[seen]) == 0
    return seen


def test_frozen_for_the_session_then_given_back(suite: Path) -> None:
    seen = run_pytest(suite, FREEZE_OPTION, "session")
    assert len(seen.counts) == 3 and min(seen.counts) > 1000
    assert gc.get_freeze_count() == 0


def test_frozen_until_the_process_exits(suite: Path) -> None:
    run_pytest(suite, FREEZE_OPTION, "process")
    assert gc.get_freeze_count() > 1000


def test_nothing_frozen_unless_asked(suite: Path) -> None:
    assert run_pytest(suite).counts == [0, 0, 0]
    assert gc.get_freeze_count() == 0


def test_the_command_in_process_freezes_for_its_session_only(
    suite: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen = FrozenDuringRuns()
    original = pytest.main

    def with_probe(args: list[str], plugins: list[object] | None = None) -> object:
        assert args[args.index(FREEZE_OPTION) + 1] == "session"
        return original(args, plugins=[*(plugins or []), seen])

    monkeypatch.setattr(pytest, "main", with_probe)
    assert main(["run", str(suite)]) == 0
    assert commands.OWN_PROCESS is False
    assert len(seen.counts) == 3 and min(seen.counts) > 1000
    assert gc.get_freeze_count() == 0


def test_the_command_as_its_process_keeps_them_frozen_to_the_end(suite: Path) -> None:
    (suite / "conftest.py").write_text(
        "import gc\n"
        "def pytest_runtest_call(item):\n"
        "    print('FROZEN-DURING', gc.get_freeze_count() > 1000)\n"
        "def pytest_unconfigure(config):\n"
        "    import atexit\n"
        "    atexit.register(lambda: print('FROZEN-AT-EXIT', gc.get_freeze_count() > 1000))\n"
    )
    done = run_command("run", str(suite), "-v", cwd=suite, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "FROZEN-AT-EXIT True" in done.stdout + done.stderr


def test_an_xdist_worker_keeps_them_frozen_as_its_process_ends_with_the_session(
    suite: Path,
) -> None:
    args = [str(suite), "-q", "-p", "no:cacheprovider", FREEZE_OPTION, "session"]
    assert pytest.main(args, plugins=[XdistWorker()]) == 0
    assert gc.get_freeze_count() > 1000


def test_an_unknown_freeze_mode_is_a_usage_error(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = [str(suite), "-q", "-p", "no:cacheprovider", FREEZE_OPTION, "always"]
    assert pytest.main(args) == pytest.ExitCode.USAGE_ERROR
    assert "invalid choice: 'always'" in capsys.readouterr().err
    assert gc.get_freeze_count() == 0
