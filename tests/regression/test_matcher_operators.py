"""``$`` operators in expected values: an unknown or misplaced one is refused where the value is
read (Python ``assert_trajectory``, ``SteeringSchedule.when``, a scenario's
``expect.trajectory`` and ``when:``), naming it and the known ones; ``{$literal: ...}`` expects
a value with ``$`` keys as written, and fails when the run's value differs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from openprogram import function
from openprogram_testing import (
    Approx,
    Matches,
    ScriptedProvider,
    SteeringSchedule,
    TrajectoryMismatch,
    assert_trajectory,
    call,
    run_loop_sync,
    turn,
)
from openprogram_testing.core.matchers import OPERATORS, MatcherError, value_matcher
from openprogram_testing.frontends.report.record import trace_record
from openprogram_testing.frontends.scenarios.scaffold import expectations
from openprogram_testing.frontends.scenarios.scaffold_record import scaffold_record
from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.regression._traces import made
from tests.scenarios._scenarios import load_error

BOOKED = made(("book", {"flight": "OA-12", "price": 240, "$ref": "cart-1"}))

# (the value under "flight" or "price", the operator the refusal names, a hint it gives)
BAD: list[tuple[Any, str, str]] = [
    ({"$regx": "^OA-"}, "$regx", "did you mean '$regex'?"),
    ({"$REGEX": "^OA-"}, "$REGEX", "did you mean '$regex'?"),
    ({"$eq": "OA-12"}, "$eq", "known: $regex"),
    ({"$aprox": 240}, "$aprox", "did you mean '$approx'?"),
    ({"$abs": 1}, "$abs", "goes with $approx"),
    ({"$rel": 0.1}, "$rel", "goes with $approx"),
    ({"$regex": "^OA-", "$flags": "i"}, "$flags", "known: $regex"),
    ({"$approx": 240, "$tol": 1}, "$tol", "known: $regex"),
    ({"$regex": "^OA-", "$approx": 1}, "$approx", "takes no other operator"),
    ({"$regex": "^OA-", "code": "x"}, "$regex", "cannot stand next to the key 'code'"),
    ({"$literal": 1, "$abs": 1}, "$abs", "takes no other operator"),
    ([{"$gt": 1}], "$gt", "known: $regex"),
]
IDS = [str(i) for i in range(len(BAD))]


@pytest.mark.parametrize(("value", "operator", "hint"), BAD, ids=IDS)
def test_python_refuses_an_unknown_operator_when_the_expectation_is_read(
    value: Any, operator: str, hint: str
) -> None:
    # Under args="ignore" and optional arguments alike: the refusal comes before any verdict.
    for args in ("exact", "subset", "ignore"):
        with pytest.raises(MatcherError) as info:
            assert_trajectory(BOOKED, [("book", {"flight": value})], args=args)
        error = info.value
        assert error.operator == operator and hint in str(error), str(error)
        assert str(error).startswith("expected[0].args.flight"), str(error)
        if operator not in OPERATORS:
            assert "$literal" in str(error) and "known: $regex, $approx" in str(error)
    with pytest.raises(MatcherError, match="expected\\[0\\]\\.args\\.flight"):
        SteeringSchedule().when("book", "wait", args={"flight": value}, required=False)


def test_the_refusal_names_every_known_operator() -> None:
    with pytest.raises(MatcherError) as info:
        value_matcher({"a": {"b": [0, {"$eq": 1}]}})
    assert info.value.path == "args.a.b[1]"
    for name in OPERATORS:
        assert name in str(info.value)


def test_literal_expects_dollar_keys_as_written_and_fails_on_a_difference() -> None:
    assert_trajectory(BOOKED, [("book", {"$literal": {"$ref": "cart-1"}})], args="subset")
    with pytest.raises(TrajectoryMismatch) as info:
        assert_trajectory(BOOKED, [("book", {"$literal": {"$ref": "cart-9"}})], args="subset")
    assert info.value.arg_path == "args.$ref"
    nested = made(("save", {"doc": {"$ref": "#/a", "$regex": "x"}}))
    assert_trajectory(nested, [("save", {"doc": {"$literal": {"$ref": "#/a", "$regex": "x"}}})])
    with pytest.raises(TrajectoryMismatch) as info:
        assert_trajectory(nested, [("save", {"doc": {"$literal": {"$ref": "#/b", "$regex": "x"}}})])
    assert info.value.arg_path == "args.doc.$ref"
    # The whole arguments as written, in every mode (a $ entry is never looked up by its JSON).
    whole = {"$literal": {"flight": "OA-12", "price": 240, "$ref": "cart-1"}}
    for mode in ("strict", "unordered", "subset", "superset"):
        assert_trajectory(BOOKED, [("book", whole)], mode=mode)
    wrong = {"$literal": {"flight": "OA-12", "price": 240, "$ref": "cart-2"}}
    with pytest.raises(TrajectoryMismatch):
        assert_trajectory(BOOKED, [("book", wrong)], mode="unordered")


SCENARIO = """
prompt: book
tools:
  - {name: book, returns: booked}
script:
  - calls: [{name: book, args: {flight: OA-12, $ref: cart-1}}]
  - done
"""


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        (
            "expect:\n  trajectory:\n    calls: [{name: book, args: {flight: {$regx: ^OA}}}]\n",
            "unknown matcher operator '$regx'",
        ),
        (
            "expect:\n  trajectory:\n    args: subset\n"
            "    calls: [{name: book, args: {flight: {$regex: ^OA, $flags: i}}}]\n",
            "unknown matcher operator '$flags'",
        ),
        (
            "steering:\n  - when: {tool: book, args: {flight: {$regx: ^OA}}}\n"
            "    message: wait\n    optional: true\n",
            "unknown matcher operator '$regx'",
        ),
        (
            "steering:\n  - when: {tool: book, args: {n: {$gt: 1}}}\n"
            "    message: wait\n    optional: true\n",
            "unknown matcher operator '$gt'",
        ),
        (
            "expect:\n  runs:\n    x:\n      trajectory:\n"
            "        calls: [{name: book, args: {flight: {$abs: 1}}}]\n",
            "'$abs' goes with $approx",
        ),
    ],
    ids=["trajectory", "sibling", "when-optional-regx", "when-optional-gt", "nested-run"],
)
def test_a_scenario_with_an_unknown_operator_is_a_load_error(
    tmp_path: Path, tail: str, says: str
) -> None:
    path = tmp_path / "scenario_op.yaml"
    path.write_text(SCENARIO + tail, encoding="utf-8")
    message = load_error(path)
    assert "scenario_op.yaml:" in message and says in message, message


def test_a_scenario_expects_dollar_keys_with_literal(tmp_path: Path) -> None:
    path = tmp_path / "scenario_literal.yaml"
    path.write_text(
        SCENARIO + "expect:\n  trajectory:\n    args: subset\n    calls:\n      - name: book\n"
        "        args: {$literal: {$ref: cart-1}}\n",
        encoding="utf-8",
    )
    assert run_scenario(load_scenario(path)).failures == []
    path.write_text(
        SCENARIO + "expect:\n  trajectory:\n    args: subset\n    calls:\n      - name: book\n"
        "        args: {$literal: {$ref: cart-2}}\n",
        encoding="utf-8",
    )
    failures = run_scenario(load_scenario(path)).failures
    assert len(failures) == 1 and "args.$ref" in failures[0], failures


@function
def save(doc: dict) -> str:  # type: ignore[type-arg]
    """Save a document."""
    return "saved"


def _saved(doc: dict[str, Any]) -> Any:
    provider = ScriptedProvider([turn(call("save", {"doc": doc})), "Saved."])
    return run_loop_sync(provider, "save it", tools=[save])


def test_a_recorded_call_with_dollar_keys_is_an_expectation_as_written(tmp_path: Path) -> None:
    doc = {"$regex": "a+", "$ref": "#/x"}
    trace = _saved(doc)
    # Another run's calls as the expectation: compared as written, never read as operators.
    assert_trajectory(_saved(dict(doc)), trace.tool_calls)
    with pytest.raises(TrajectoryMismatch) as info:
        assert_trajectory(_saved({**doc, "$ref": "#/y"}), trace.tool_calls)
    assert info.value.arg_path == "args.doc.$ref"
    # A scaffolded scenario (from a run record) expects them as written, and passes.
    source = tmp_path / "run.json"
    source.write_text(json.dumps(trace_record(trace)), encoding="utf-8")
    out = tmp_path / "scenario_saved.yaml"
    assert scaffold_record(source, out).passed
    assert "$literal" in out.read_text(encoding="utf-8")
    # The cassette scaffold's expectations too.
    calls = expectations(trace)["trajectory"]["calls"]
    assert calls == [{"name": "save", "args": {"$literal": {"doc": doc}}}]
    assert_trajectory(trace, calls)


@pytest.mark.parametrize(
    ("value", "says"),
    [
        (
            {"$approx": 240, "$abs": -1},
            "the tolerance abs ($abs) must be a finite number >= 0, got -1",
        ),
        (
            {"$approx": 240, "$abs": "1"},
            "the tolerance abs ($abs) must be a finite number >= 0, got '1'",
        ),
        (
            {"$approx": 240, "$rel": [1]},
            "the tolerance rel ($rel) must be a finite number >= 0, got [1]",
        ),
        ({"$approx": 240, "$rel": float("nan")}, "got nan"),
        ({"$approx": "240"}, "the value ($approx) must be a finite number, got '240'"),
        ({"$approx": True}, "the value ($approx) must be a finite number, got True"),
        ({"$approx": float("inf")}, "the value ($approx) must be a finite number, got inf"),
        ({"$regex": ["^OA"]}, "a regular expression ($regex) must be text, got ['^OA']"),
        ({"$regex": 5}, "a regular expression ($regex) must be text, got 5"),
    ],
)
def test_a_bad_tolerance_or_pattern_names_the_bad_value(value: Any, says: str) -> None:
    with pytest.raises(MatcherError) as info:
        assert_trajectory(BOOKED, [("book", {"price": value})], args="subset")
    message = str(info.value)
    assert message == f"expected[0].args.price: approx: {says}" or says in message, message
    assert "240," not in message.replace("$approx: 240,", "") and "unhashable" not in message
    with pytest.raises(ValueError, match=re.escape(says)):
        if "$regex" in value:
            Matches(value["$regex"])
        else:
            _approx(value)


def _approx(value: dict[str, Any]) -> Approx:
    return Approx(value["$approx"], abs=value.get("$abs", 0.0), rel=value.get("$rel", 0.0))


def test_a_good_tolerance_still_judges() -> None:
    assert_trajectory(BOOKED, [("book", {"price": {"$approx": 239, "$abs": 1}})], args="subset")
    with pytest.raises(TrajectoryMismatch, match="does not fit approx"):
        assert_trajectory(BOOKED, [("book", {"price": {"$approx": 238, "$abs": 1}})], args="subset")
