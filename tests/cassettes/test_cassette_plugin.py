"""The pytest side: the ``cassette`` fixture, the ``op_cassette`` marker and
``--openprogram-record-mode``.

The cassettes these tests replay live in the project's ``cassettes/`` folder and were recorded
against the loopback provider emulator with ``--openprogram-record-mode=once`` (the same command
records against the real APIs).  In the default mode (``none``) the emulator below is started but
never reached: the cassette answers every request.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram.providers import guard
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.cassettes import CassetteSession
from openprogram_testing.core.trace import run_loop
from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.transport.faults import TruncateAfter
from openprogram_testing.transport.scripted import call, turn
from tests.providers._helper import ADD_TEXT

ROOT = Path(__file__).resolve().parents[2]

pytest_plugins = ["pytester"]


async def _tool_loop(cassette: CassetteSession) -> tuple[object, int]:
    script = [turn(call("add", {"a": 2, "b": 3}), "Let me add."), "2 + 3 = 5."]
    with ProviderEmulator(script) as emulator:
        provider = OpenAIChatProvider(api_key="dummy-key", base_url=emulator.openai_base_url)
        trace = await run_loop(provider, "What is 2 + 3?", tools=[ADD_TEXT])
        live = len(emulator.requests)
    if cassette.replay_only:
        assert live == 0  # answered from the file
    return trace, live


@pytest.mark.op_cassette("emulator/chat_tool_loop")
async def test_the_marker_names_the_cassette(cassette: CassetteSession) -> None:
    trace, _ = await _tool_loop(cassette)
    assert cassette.path == ROOT / "cassettes" / "emulator" / "chat_tool_loop.yaml"
    assert trace.final_text == "2 + 3 = 5."  # type: ignore[attr-defined]
    assert [r.content[0].text for r in trace.tool_results] == ["5"]  # type: ignore[attr-defined]
    assert cassette.record_mode == "none" or cassette.replay_only is False


async def test_the_default_cassette_is_named_after_the_test(cassette: CassetteSession) -> None:
    with guard.allow_model_requests(False):
        guard.check("https://api.openai.com/v1")  # the fixture's replaying() reaches the test
    trace, _ = await _tool_loop(cassette)
    assert cassette.path == (
        ROOT
        / "cassettes"
        / "tests"
        / "cassettes"
        / "test_cassette_plugin"
        / "test_the_default_cassette_is_named_after_the_test.yaml"
    )
    assert trace.termination == "completed"  # type: ignore[attr-defined]


@pytest.mark.op_cassette(
    "emulator/chat_tool_loop", mutations={0: [TruncateAfter(2)]}, allow_unplayed=True
)
async def test_the_marker_passes_mutations(cassette: CassetteSession) -> None:
    if not cassette.replay_only:
        pytest.skip("mutations apply to playback; this run records")
    trace, _ = await _tool_loop(cassette)
    assert trace.termination == "error"  # type: ignore[attr-defined]
    assert trace.tool_results == []  # type: ignore[attr-defined]
    assert cassette.unplayed == [1]


NAMES = """
import json, pathlib, pytest
from openprogram_testing.frontends.pytest.plugin import _cassette_path

@pytest.mark.parametrize("x", ["a/b", "a-b", "ab", "a:b"])
def test_t(request, x):
    _write(request)

class TestK:
    def test_t(self, request):
        _write(request)

def _write(request):
    out = pathlib.Path(request.config.rootpath) / "paths.txt"
    with out.open("a") as f:
        f.write(str(_cassette_path(request, None)) + "\\n")
"""


def test_default_cassette_names_never_collide(pytester: pytest.Pytester) -> None:
    for folder in ("suite", "suite/a", "suite/b"):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / "__init__.py").write_text("")
    for folder in ("suite/a", "suite/b"):
        (pytester.path / folder / "test_x.py").write_text(NAMES)
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly").assert_outcomes(
        passed=10
    )
    paths = (pytester.path / "paths.txt").read_text().split()
    assert len(paths) == len(set(paths)) == 10
    names = sorted(str(Path(p).relative_to(pytester.path)) for p in paths)
    assert "cassettes/suite/a/test_x/TestK.test_t.yaml" in names
    assert "cassettes/suite/b/test_x/test_t[ab].yaml" in names
    assert "cassettes/suite/b/test_x/test_t[a-b].yaml" in names
    assert any(n.startswith("cassettes/suite/a/test_x/test_t[ab]-") for n in names)  # a/b


def test_a_cassette_at_its_old_name_is_reported_with_the_move(pytester: pytest.Pytester) -> None:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_old.py").write_text("def test_t(cassette):\n    pass\n")
    old = pytester.path / "cassettes" / "test_old" / "test_t.yaml"
    old.parent.mkdir(parents=True)
    old.write_text("version: 1\ninteractions: []\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*found it at its old name cassettes/test_old/test_t.yaml: move it (git mv "
            "cassettes/test_old/test_t.yaml cassettes/tests/test_old/test_t.yaml)*"
        ]
    )


def test_the_record_mode_option_defaults_to_replay_only(request: pytest.FixtureRequest) -> None:
    assert request.config.getoption("--openprogram-record-mode") in ("none", "once")
    markers = "\n".join(request.config.getini("markers"))
    assert (
        "op_cassette(name=None, *, match_body=True, ignore_paths=(), allow_unplayed=False"
        in markers
    )


OVERRIDES = """
import pytest

@pytest.fixture
def op_cassette_dir():
    return "recorded"  # relative: under the rootdir

@pytest.fixture
def op_record_mode():
    return "new_episodes"
"""

USES = """
import pathlib, pytest

def test_default(cassette):
    where = cassette.path.relative_to(pathlib.Path.cwd()).as_posix()
    assert where == "recorded/tests/test_o/test_default.yaml"
    assert cassette.record_mode == "new_episodes"

@pytest.mark.op_cassette("named", record_mode="none", allow_unplayed=True)
def test_marker_wins(cassette):
    assert cassette.path.relative_to(pathlib.Path.cwd()).as_posix() == "recorded/named.yaml"
    assert cassette.record_mode == "none"
"""


def test_a_conftest_overrides_the_cassette_dir_and_the_record_mode(
    pytester: pytest.Pytester,
) -> None:
    """pytest-recording's override points: a conftest.py fixture moves the cassettes and sets
    the record mode for its folder; a marker still wins over both."""
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "conftest.py").write_text(OVERRIDES)
    (pytester.path / "tests" / "test_o.py").write_text(USES)
    named = pytester.path / "recorded" / "named.yaml"
    named.parent.mkdir()
    named.write_text("version: 1\ninteractions: []\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    assert not (pytester.path / "cassettes").exists()  # nothing read or written there


def test_without_overrides_the_defaults_are_the_options(pytester: pytest.Pytester) -> None:
    (pytester.path / "test_d.py").write_text(
        "def test_t(op_cassette_dir, op_record_mode, request):\n"
        "    import pathlib\n"
        "    assert op_cassette_dir == pathlib.Path(str(request.config.rootpath)) / 'cassettes'\n"
        "    assert op_record_mode == 'once'\n"
    )
    result = pytester.runpytest_inprocess(
        "-p", "no:cacheprovider", "--openprogram-record-mode=once"
    )
    result.assert_outcomes(passed=1)
