"""``scaffold`` from a run of the HTML report (or a run record JSON): the written scenario replays
the run's model turns, expects what it did, validates and passes as written; an edited run fails
it; hostile sources (not JSON, not a report, no such test, an ambiguous id, nested runs,
unreadable arguments, thousands of calls) are clean errors that leave no file behind."""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings

from openprogram import function
from openprogram_testing import (
    ScriptedProvider,
    SteeringSchedule,
    call,
    run_loop_sync,
    think,
    turn,
)
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.report.html import write_html
from openprogram_testing.frontends.report.record import trace_record
from openprogram_testing.frontends.scenarios.scaffold import ScaffoldError
from openprogram_testing.frontends.scenarios.scaffold_record import scaffold_record
from openprogram_testing.frontends.strategies.hostile import hostile_records
from openprogram_testing.scenarios import load_scenario, run_scenario


@function
def search(city: str) -> dict:
    """Search flights."""
    return {"city": city, "flights": 2}


@function
def book(city: str, seats: int) -> str:
    """Book a flight."""
    raise ValueError("sold out")


def _record() -> dict[str, Any]:
    """A run with thinking, text, an unknown tool, non-JSON arguments, a raising tool, steering
    that skips a call, a follow-up and usage."""
    provider = ScriptedProvider(
        [
            turn(
                think("hmm"),
                "Looking.",
                call("search", {"city": "Oslo"}),
                call("nope", {}, unknown=True),
                call("book", raw="{bad"),
                call("search", {"city": "Rome"}),
            ),
            turn(call("book", {"city": "Oslo", "seats": 2})),
            "Sold out, sorry.",
            "Anything else?",
        ]
    )
    schedule = SteeringSchedule().after_tool(2, "stop").follow_up("more?")
    trace = run_loop_sync(
        provider, "go", tools=[search, book], schedule=schedule, system_prompt="be nice"
    )
    return trace_record(trace)


def _report(path: Path, *tests: tuple[str, list[dict[str, Any]]]) -> Path:
    entries = [
        {"name": name, "nodeid": name, "outcome": "passed", "ms": 1.0, "failure": None, "runs": r}
        for name, r in tests
    ]
    return write_html(path, entries, coverage=None)


def test_a_run_of_the_report_becomes_a_scenario_that_passes_as_written(tmp_path: Path) -> None:
    record = _record()
    page = _report(tmp_path / "report.html", ("tests/test_a.py::test_book", [record]))
    out = tmp_path / "scenario_book.yaml"
    result = scaffold_record(page, out, test="test_book")
    assert result.passed
    scenario = load_scenario(out)
    assert scenario.prompt == "go" and scenario.system_prompt == "be nice"
    assert [t.name for t in scenario.tools] == ["search", "book"]
    assert len(scenario.turns) == 4 and scenario.turns[0].thinking == "hmm"
    calls = scenario.turns[0].calls
    assert calls[1].unknown_tool and calls[2].raw_args == "{bad"
    assert [(s.after_call is not None, s.follow_up) for s in scenario.steering] == [
        (True, False),
        (False, True),
    ]
    expect = scenario.expect
    assert (expect.termination, expect.model_calls, expect.final_text) == (
        "completed",
        4,
        "Anything else?",
    )
    assert expect.trajectory is not None and expect.trajectory.mode == "strict"
    assert run_scenario(load_scenario(out)).passed  # again, from the file alone
    assert "run 1 of tests/test_a.py::test_book" in out.read_text(encoding="utf-8")


def test_the_scenario_fails_when_the_run_changes(tmp_path: Path) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(_record()), encoding="utf-8")
    out = tmp_path / "scenario_run.yaml"
    scaffold_record(source, out)
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace("returns: sold out", "returns: booked"), encoding="utf-8")
    failures = run_scenario(load_scenario(out)).failures
    assert len(failures) == 1 and "tool_results[4].text" in failures[0]


def test_the_command_takes_a_report_with_test_and_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    record = _record()
    other = trace_record(run_loop_sync(ScriptedProvider(["hello"]), "hi"))
    _report(tmp_path / "report.html", ("t::test_two", [other, record]), ("t::test_one", [other]))
    args = ["scaffold", "report.html", "--out", "scenario_x.yaml"]
    assert main([*args, "--test", "t::test_two", "--run", "2"]) == 0
    assert "passes as written" in capsys.readouterr().out
    assert load_scenario(tmp_path / "scenario_x.yaml").expect.final_text == "Anything else?"
    assert main([*args, "--test", "test_two", "--force"]) == 2
    assert "has 2 runs: pass --run 1..2" in capsys.readouterr().err
    assert main([*args, "--test", "t::", "--run", "1", "--force"]) == 2
    assert "matches 2 tests" in capsys.readouterr().err
    assert main([*args, "--force"]) == 2
    assert "pass --test" in capsys.readouterr().err
    assert main([*args, "--test", "test_one", "--run", "3", "--force"]) == 2
    assert "--run must be 1..1" in capsys.readouterr().err
    assert main([*args, "--test", "nothing", "--force"]) == 2
    assert "no test of the report matches 'nothing'" in capsys.readouterr().err
    assert main(["scaffold", "x.yaml", "--out", "s.yaml", "--test", "a"]) == 2
    assert "--test and --run pick a run" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "name", "found"),
    [
        ("", "run.json", "not JSON"),
        ("{not json", "run.json", "not JSON"),
        ("[]", "run.json", "ran no loop"),
        ('{"a": 1}', "run.json", "no run record"),
        ('[{"rounds": "x"}]', "run.json", "not a run record"),
        ("[3]", "run.json", "not a run record"),
        ('{"rounds": []}', "run.json", "no rounds"),
        ('{"rounds": [{"arrivals": []}]}', "run.json", "no prompt"),
        ("<html>no report</html>", "r.html", "not an OpenProgram HTML report"),
        ("\udcff", "run.json", "cannot read"),
    ],
)
def test_a_record_that_cannot_be_loaded_is_a_clean_error(
    tmp_path: Path, content: str, name: str, found: str
) -> None:
    source = tmp_path / name
    source.write_bytes(content.encode("utf-8", "surrogateescape"))
    out = tmp_path / "scenario_x.yaml"
    with pytest.raises(ScaffoldError, match=found):
        scaffold_record(source, out)
    assert not out.exists()


def _edited(change: Any) -> dict[str, Any]:
    record = _record()
    change(record)
    return record


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda r: r["rounds"][0]["reply"]["calls"][0].update(args="{clipped"), "cannot be read"),
        (lambda r: r["rounds"][0]["reply"]["calls"][0].update(args="[1]"), "not an object"),
        (lambda r: r["rounds"][0]["reply"]["calls"][0].update(name=""), "no tool name"),
        (lambda r: r["children"].append({"rounds": []}), "nested runs"),
        (lambda r: r["rounds"][1]["arrivals"][0].update(kind="user"), "unknown origin"),
        (lambda r: r.update(final_text="something else"), "final_text"),
    ],
)
def test_a_record_that_does_not_replay_is_refused_naming_why(
    tmp_path: Path, change: Any, found: str
) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(_edited(change)), encoding="utf-8")
    out = tmp_path / "scenario_x.yaml"
    with pytest.raises(ScaffoldError, match=found):
        scaffold_record(source, out)
    assert not out.exists()


def test_thousands_of_calls_and_an_empty_trajectory(tmp_path: Path) -> None:
    many = ScriptedProvider([turn(*(call("search", {"city": f"c{i}"}) for i in range(2000))), "ok"])
    source = tmp_path / "many.json"
    source.write_text(json.dumps(trace_record(run_loop_sync(many, "go", tools=[search]))))
    result = scaffold_record(source, tmp_path / "scenario_many.yaml")
    assert result.passed and len(result.trace.tool_calls) == 2000
    empty = tmp_path / "empty.json"
    empty.write_text(
        json.dumps({"runs": [trace_record(run_loop_sync(ScriptedProvider([""]), "go"))]})
    )
    out = tmp_path / "scenario_empty.yaml"
    assert scaffold_record(empty, out).passed
    scenario = load_scenario(out)
    assert scenario.expect.trajectory is not None and scenario.expect.trajectory.calls == []


@pytest.mark.parametrize(
    ("change", "found"),
    [
        (lambda r: r["rounds"][0].update(arrivals=7), "rounds[0].arrivals is not a list: 7"),
        (lambda r: r["rounds"][0]["tools"][0].update(id=[None]), "rounds[0].tools[0].id is not text: [null]"),
        (lambda r: r["rounds"][0]["reply"]["calls"][1].update(id=[None]), "rounds[0].reply.calls[1].id is not text"),
        (lambda r: r["rounds"][1]["arrivals"].append(3), "rounds[1].arrivals[1] is not an object: 3"),
        (lambda r: r.update(rounds=[{"arrivals": [{"kind": 5}]}]), "rounds[0].arrivals[0].kind is not text"),
        (lambda r: r.update(model_calls=True), "model_calls is not an integer: true"),
        (
            lambda r: r["rounds"][0]["reply"]["calls"][0].update(args='{"a": ' + "[" * 50_000 + "]" * 50_000 + "}"),
            "rounds[0].reply.calls[0].args: line 1 column 96: the arguments of search nest deeper than 90",
        ),
    ],
)  # fmt: skip
def test_a_hand_made_record_is_refused_at_the_value_that_is_wrong(
    tmp_path: Path, change: Any, found: str
) -> None:
    source = tmp_path / "run.json"
    source.write_text(json.dumps(_edited(change)), encoding="utf-8")
    out = tmp_path / "scenario_x.yaml"
    with pytest.raises(ScaffoldError, match=re.escape(found)):
        scaffold_record(source, out)
    assert not out.exists()


def test_a_record_nested_fifty_thousand_deep_is_refused_with_its_position(
    tmp_path: Path,
) -> None:
    source = tmp_path / "run.json"
    source.write_text('{"rounds": ' + "[" * 50_000 + "]" * 50_000 + "}", encoding="utf-8")
    with pytest.raises(ScaffoldError, match="line 1 column 211: nested deeper than 200 levels"):
        scaffold_record(source, tmp_path / "scenario_x.yaml")
    page = _report(tmp_path / "report.html", ("t::test_a", [_record()]))
    text = page.read_text(encoding="utf-8")
    deep = text.replace('"rounds":[', '"x":' + "[" * 50_000 + "]" * 50_000 + ',"rounds":[', 1)
    assert deep != text
    page.write_text(deep, encoding="utf-8")
    with pytest.raises(ScaffoldError, match="nested deeper than 200 levels"):
        scaffold_record(page, tmp_path / "scenario_x.yaml", test="test_a")


RECORD = _record()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile_records(RECORD))
def test_any_damaged_record_ends_in_a_refusal_or_a_passing_scenario(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        source = Path(folder) / "run.json"
        source.write_text(text, encoding="utf-8")
        out = Path(folder) / "scenario_x.yaml"
        try:
            result = scaffold_record(source, out)
        except ScaffoldError:
            assert not out.exists()
        else:
            assert result.passed and out.exists()
