"""Under pytest-xdist a worker names each scenario item from the file's top level
(``yamlread.header``: ``name`` and ``usefixtures`` read from the parser's events) and loads a
file only when it runs it, so the suite is validated once, not once per worker.  The header is
used only where it cannot differ from the load (else the file is loaded at collection, as in one
process); items get the same ids and fixtures either way; an invalid file fails either way; and
a file whose top level changed between collection and run fails saying so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram_testing.frontends.scenarios import loader as loader_module
from openprogram_testing.frontends.scenarios.yamlread import header
from openprogram_testing.scenarios import ScenarioError, load_scenario
from tests.scenarios._scenarios import ONE_TOOL_CALL, XdistWorker, run_command

ROOT = Path(__file__).resolve().parents[2]
PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2}\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("name: hello\nusefixtures: [a, b]\nprompt: x\n", ("hello", ("a", "b"))),
        ("prompt: x\nusefixtures:\n  - a\nname: 'quoted name'\n", ("quoted name", ("a",))),
        ("name: first\nname: second\n", ("second", ())),
        ("name:\nusefixtures:\n", (None, ())),
        ("name: ''\n", (None, ())),
        ("prompt: x\ntools: [{name: t, parameters: {type: object}}]\n", (None, ())),
        ("? [complex, key]\n: 1\nname: n\n", ("n", ())),
        ("{name: flow, usefixtures: [f]}\n", ("flow", ("f",))),
        # every case where the events could say something else than the load: not read
        ("- a list\n", None),
        ("just text\n", None),
        ("", None),
        ("name: [a]\n", None),
        ("name: 12\n", None),
        ("name: yes\n", None),
        ("name: !!str tagged\n", None),
        ("a: &n x\nname: *n\n", None),
        ("*alias_key : 1\n", None),
        ("base: &b {name: merged}\n<<: *b\n", None),
        ("name: caf\u00e9\n", None),
        ("usefixtures: one\n", None),
        ("usefixtures: [[nested]]\n", None),
        ("usefixtures: [12]\n", None),
        ("usefixtures: {a: 1}\n", None),
        ("name: a\n---\nname: b\n", None),
        ("name: [unclosed\n", None),
    ],
)
def test_the_header_is_read_only_where_it_is_certain(
    text: str, expected: tuple[str | None, tuple[str, ...]] | None
) -> None:
    assert header(text) == expected


BUNDLED = sorted(p for p in (ROOT / "scenarios").glob("*.yaml") if p.is_file())
MALFORMED = sorted((ROOT / "tests" / "scenarios" / "malformed").glob("*.yaml"))


@pytest.mark.parametrize("path", BUNDLED, ids=lambda p: p.name)
def test_the_header_of_every_bundled_scenario_is_read_and_agrees_with_the_load(path: Path) -> None:
    read = header(path.read_text(encoding="utf-8"))
    scenario = load_scenario(path)
    assert read is not None
    assert (read[0] or scenario.display_name, read[1]) == (
        scenario.display_name,
        tuple(scenario.usefixtures),
    )


@pytest.mark.parametrize("path", MALFORMED, ids=lambda p: p.name)
def test_a_malformed_file_s_header_is_an_answer_never_an_error(path: Path) -> None:
    read = header(path.read_text(encoding="utf-8", errors="replace"))
    assert read is None or (
        (read[0] is None or isinstance(read[0], str)) and all(isinstance(f, str) for f in read[1])
    )
    with pytest.raises(ScenarioError):
        load_scenario(path)


names = st.one_of(st.none(), st.text(st.characters(codec="ascii"), max_size=12))
fixture_names = st.lists(st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True), max_size=3)


@settings(max_examples=200, deadline=None)
@given(
    names, fixture_names, st.permutations(["name", "usefixtures", "prompt", "tools"]), st.booleans()
)
def test_the_header_reads_what_the_yaml_says(
    name: str | None, fixtures: list[str], order: list[str], flow: bool
) -> None:
    values: dict[str, Any] = {
        "name": name,
        "usefixtures": fixtures,
        "prompt": "hi",
        "tools": [{"name": "t", "parameters": {"type": "object"}}],
    }
    text = yaml.safe_dump({k: values[k] for k in order}, default_flow_style=flow, sort_keys=False)
    data = yaml.safe_load(text)
    assert header(text) == (data["name"] or None, tuple(data["usefixtures"]))


def suite(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "conftest.py").write_text(
        "import pytest\n\n@pytest.fixture\ndef marker_fixture():\n    yield 'set'\n"
    )
    (root / "scenario_named.yaml").write_text("name: a named one\n" + PASSING)
    (root / "scenario_fixtures.yaml").write_text("usefixtures: [marker_fixture]\n" + PASSING)
    (root / "scenario_plain.yaml").write_text(PASSING)
    (root / "scenario_merged.yaml").write_text("<<: {name: merged in}\n" + PASSING)
    (root / "scenario_invalid.yaml").write_text("name: broken one\nprompt: [not, text]\n")
    return root


class AsWorker(XdistWorker):
    """Collects as an xdist worker does, and counts file loads during collection and after."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.collecting = 0
        self.running = 0
        self.phase = "collect"
        self.ids: list[str] = []
        original = loader_module.ScenarioReader.load

        def counted(reader: Any, path: Any) -> Any:
            if self.phase == "collect":
                self.collecting += 1
            else:
                self.running += 1
            return original(reader, path)

        monkeypatch.setattr(loader_module.ScenarioReader, "load", counted)

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.phase = "run"
        self.ids = sorted(item.nodeid for item in session.items)


def collected_ids(folder: Path) -> list[str]:
    class Ids:
        ids: list[str] = []

        def pytest_collection_finish(self, session: pytest.Session) -> None:
            Ids.ids = sorted(item.nodeid for item in session.items)

    pytest.main([str(folder), "--collect-only", "-q", "-p", "no:cacheprovider"], plugins=[Ids()])
    return Ids.ids


def test_a_worker_loads_only_what_it_runs_and_names_items_as_one_process_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = suite(tmp_path / "suite")
    serial = collected_ids(folder)
    worker = AsWorker(monkeypatch)
    code = pytest.main([str(folder), "-q", "-p", "no:cacheprovider"], plugins=[worker])
    assert code == 1  # the invalid file fails, as in one process
    assert worker.ids == serial and len(serial) == 5
    assert any(i.endswith("::a named one") for i in serial)
    assert any(i.endswith("::broken one") for i in serial)  # invalid: named by its header
    assert any(i.endswith("::merged in") for i in serial)  # a merge key: loaded to be named
    assert worker.collecting == 1  # only the file with a merge key was loaded to be named
    assert worker.running == 4  # every other file once, when it ran


def test_a_file_changed_after_collection_fails_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "suite"
    folder.mkdir()
    target = folder / "scenario_changes.yaml"
    target.write_text("name: before\n" + PASSING)

    class Change:
        def pytest_collection_finish(self, session: pytest.Session) -> None:
            target.write_text("name: after\n" + PASSING)

    code = pytest.main(
        [str(folder), "-q", "-p", "no:cacheprovider"], plugins=[AsWorker(monkeypatch), Change()]
    )
    assert code == 1
    out = capsys.readouterr().out
    assert "collected as 'before'" in out and "the file says 'after'" in out


def test_under_xdist_the_run_reports_what_one_process_reports(tmp_path: Path) -> None:
    folder = suite(tmp_path / "suite")
    records = {}
    for how, extra in (("serial", []), ("xdist", ["-n", "2"])):
        target = tmp_path / f"{how}.json"
        done = run_command("run", str(folder), "--records", str(target), *extra, cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "4 passed, 1 invalid" in done.stdout, done.stdout
        data = json.loads(target.read_text(encoding="utf-8"))
        records[how] = sorted((t["nodeid"], t["outcome"]) for t in data["tests"])
    assert records["serial"] == records["xdist"]


@pytest.mark.parametrize(
    "text",
    [
        "name: deep\nprompt: " + "[" * 5000 + "]" * 5000 + "\n",
        "name: bomb\n"
        + "a: &a [x, x, x, x, x, x, x, x, x]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n"
            for i in range(8)
        ),
    ],
    ids=["5000-deep", "alias-bomb"],
)
def test_a_hostile_file_is_named_quickly_and_fails_when_loaded(
    tmp_path: Path, text: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    name = text.split("\n", 1)[0].removeprefix("name: ")
    # the events only: nothing built, nothing expanded (libyaml refuses the deepest nesting
    # itself: then the file is loaded at collection, and the loader reports it)
    assert header(text) in (None, (name, ()))
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "scenario_hostile.yaml").write_text(text)
    code = pytest.main(
        [str(folder), "-q", "-p", "no:cacheprovider"], plugins=[AsWorker(monkeypatch)]
    )
    out = capsys.readouterr().out
    assert code == 1 and f"::{name} FAILED" not in out and "invalid scenario file" in out


def test_a_file_too_large_for_a_header_read_is_loaded_at_collection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram_testing.frontends.scenarios.collect import MAX_HEADER_BYTES

    folder = tmp_path / "suite"
    folder.mkdir()
    padding = "x" * (MAX_HEADER_BYTES + 10)
    (folder / "scenario_large.yaml").write_text(f"name: large\ndescription: {padding}\n" + PASSING)
    (folder / "scenario_small.yaml").write_text("name: small\n" + PASSING)
    serial = collected_ids(folder)
    worker = AsWorker(monkeypatch)
    assert pytest.main([str(folder), "-q", "-p", "no:cacheprovider"], plugins=[worker]) == 0
    assert worker.ids == serial
    assert (worker.collecting, worker.running) == (1, 1)  # the large one at collection
