"""``expect.trajectory`` in YAML: each mode fails its broken run and passes the right one; bad
matchers and modes are load errors placed at their line; the JSON Schema knows the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.scenarios._scenarios import load_error

SCENARIO = """
prompt: book
tools:
  - {name: search, returns: found}
  - {name: book, returns: booked}
  - {name: log, returns: ok}
script:
  - calls: [{name: search, args: {to: Oslo}}]
  - calls: [{name: log}, {name: book, args: {to: Oslo, seats: 2}}]
  - done
expect:
  trajectory:
"""


def _run(tmp_path: Path, trajectory: str) -> list[str]:
    path = tmp_path / "scenario_t.yaml"
    path.write_text(SCENARIO + trajectory, encoding="utf-8")
    return run_scenario(load_scenario(path)).failures


@pytest.mark.parametrize(
    ("right", "wrong", "says"),
    [
        (
            "    calls: [search, log, book]\n",
            "    calls: [search, book, log]\n",
            "out of order: expected book",
        ),
        (
            "    mode: unordered\n    calls: [book, log, search]\n",
            "    mode: unordered\n    calls: [book, search]\n",
            "extra call 1 log",
        ),
        (
            "    mode: subset\n    calls: [book, search]\n",
            "    mode: subset\n    calls: [book, search, pay]\n",
            "missing pay",
        ),
        (
            "    mode: superset\n    calls: [book, search, log, pay]\n",
            "    mode: superset\n    calls: [book, search]\n",
            "extra call 1 log",
        ),
        (
            "    mode: subset\n    args: subset\n    calls: [{name: book, args: {seats: 2}}]\n",
            "    mode: subset\n    calls: [{name: book, args: {seats: 2}}]\n",
            "args.to: not expected",
        ),
        (
            "    mode: subset\n    args: {book: ignore}\n    calls: [{name: book, args: {x: 1}}]\n",
            "    mode: subset\n    args: {search: ignore}\n    calls: [{name: book, args: {x: 1}}]\n",
            "args.x: missing",
        ),
        (
            "    mode: subset\n    calls: [{name: search, args: {to: {$regex: ^Os}}}]\n",
            "    mode: subset\n    calls: [{name: search, args: {to: {$regex: ^Ro}}}]\n",
            "does not fit matches('^Ro')",
        ),
    ],
    ids=["strict", "unordered", "subset", "superset", "args-subset", "args-per-tool", "regex"],
)
def test_each_mode_passes_the_right_run_and_fails_the_wrong_one(
    tmp_path: Path, right: str, wrong: str, says: str
) -> None:
    assert _run(tmp_path, right) == []
    failures = _run(tmp_path, wrong)
    assert len(failures) == 1 and failures[0].startswith("expect.trajectory: trajectory (")
    assert says in failures[0], failures[0]


@pytest.mark.parametrize(
    ("trajectory", "says"),
    [
        ("    mode: loose\n    calls: []\n", "mode"),
        ("    args: fuzzy\n    calls: []\n", "args"),
        ("    calls: [{name: search, args: {to: {$regex: '('}}}]\n", "invalid regular expression"),
        (
            "    calls: [{name: search, args: {to: {$approx: x}}}]\n",
            "($approx) must be a finite number, got 'x'",
        ),
        ("    calls: [{name: search, arguments: {}}]\n", "arguments"),
        ("    mode: strict\n", "calls"),
    ],
)
def test_bad_trajectories_are_load_errors_at_their_line(
    tmp_path: Path, trajectory: str, says: str
) -> None:
    path = tmp_path / "scenario_bad.yaml"
    path.write_text(SCENARIO + trajectory, encoding="utf-8")
    message = load_error(path)
    assert "scenario_bad.yaml:" in message and says in message, message


def test_the_json_schema_has_the_trajectory_key() -> None:
    root = Path(__file__).resolve().parents[2]
    schema = json.loads((root / "openprogram_testing" / "scenario.schema.json").read_text())
    assert "trajectory" in schema["$defs"]["Expectations"]["properties"]
    assert schema["$defs"]["TrajectoryExpect"]["properties"]["mode"]["enum"] == [
        "strict",
        "unordered",
        "subset",
        "superset",
    ]
