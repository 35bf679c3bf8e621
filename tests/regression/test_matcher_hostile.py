"""Hostile expectations end in a clear error or a clean verdict, never a traceback: a matcher
given as the whole arguments (Python, ``expect.trajectory``, ``when:``, ``SteeringSchedule.when``),
numbers past float range (``$approx``, usage budgets), expected and actual arguments thousands of
levels deep (every mode, both sides)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import (
    Approx,
    Matches,
    SteeringSchedule,
    TrajectoryMismatch,
    assert_trajectory,
    assert_usage,
    run_loop_sync,
)
from openprogram_testing.core.matchers import MatcherError
from tests.harness._harness import add_tool
from tests.regression._traces import made
from tests.scenarios._scenarios import load_error

MODES = ("strict", "unordered", "subset", "superset")
TRACE = made(("t", {"a": "x"}))


@pytest.mark.parametrize(
    "args",
    [
        {"$regex": "a"},
        {"$approx": 1},
        {"$approx": 1, "$abs": 1},
        {"$literal": 5},
        Approx(1),
        Matches("a"),
    ],
    ids=["regex", "approx", "approx-abs", "literal-number", "Approx", "Matches"],
)
def test_a_matcher_as_the_whole_arguments_is_refused(args: Any) -> None:
    for mode in MODES:
        for check in ("exact", "subset", "ignore"):
            with pytest.raises(MatcherError, match="the arguments are a mapping of argument names"):
                assert_trajectory(TRACE, [("t", args)], mode=mode, args=check)  # type: ignore[arg-type]
    with pytest.raises(MatcherError, match=r"expected\[0\]\.args: the arguments are a mapping"):
        SteeringSchedule().when("t", "m", args=args)


SCENARIO = """
prompt: go
tools: [{name: t, returns: ok}]
script:
  - calls: [{name: t, args: {a: x}}]
  - done
"""


@pytest.mark.parametrize(
    ("tail", "says"),
    [
        (
            "expect:\n  trajectory:\n    args: subset\n    calls: [{name: t, args: {$regex: a}}]\n",
            "the arguments are a mapping of argument names",
        ),
        (
            "steering:\n  - when: {tool: t, args: {$approx: 1}}\n    message: m\n",
            "the arguments are a mapping of argument names",
        ),
        (
            "expect:\n  trajectory:\n    calls: [{name: t, args: {a: {$approx: 1"
            + "0" * 400
            + "}}}]\n",
            "the value ($approx) must be a finite number, got an integer of about 401 digits",
        ),
    ],
    ids=["trajectory-whole", "when-whole", "huge-approx"],
)
def test_hostile_matchers_in_a_scenario_are_load_errors(
    tmp_path: Path, tail: str, says: str
) -> None:
    path = tmp_path / "scenario_m.yaml"
    path.write_text(SCENARIO + tail, encoding="utf-8")
    message = load_error(path)
    assert "scenario_m.yaml:" in message and says in message, message


def test_numbers_past_float_range() -> None:
    with pytest.raises(MatcherError, match="too large for a float"):
        assert_trajectory(TRACE, [("t", {"a": {"$approx": 10**400}})])
    with pytest.raises(ValueError, match="too large for a float"):
        Approx(1, abs=10**400)
    # A budget past float range is a budget nothing exceeds; an actual count past it is judged.
    assert_usage(TRACE, max_input_tokens=10**400, max_total_tokens=10**400)
    assert_usage(TRACE, max_cost=10**400, prices={"*": {"input": 1.0}})
    huge = made(("t", {"a": 10**400}))
    assert_trajectory(huge, [("t", {"a": 10**400})], mode="unordered")
    with pytest.raises(TrajectoryMismatch, match="does not fit approx"):
        assert_trajectory(huge, [("t", {"a": {"$approx": 1}})])


def _deep(depth: int, leaf: Any = 1) -> Any:
    value = leaf
    for k in range(depth):
        value = {"k": value} if k % 2 else [value]
    return value


@pytest.mark.parametrize("mode", MODES)
def test_arguments_thousands_deep_get_a_verdict(mode: str) -> None:
    deep = made(("t", {"a": _deep(3000)}))
    assert_trajectory(deep, [("t", {"a": _deep(3000)})], mode=mode)  # type: ignore[arg-type]
    assert_trajectory(deep, [("t", {"a": _deep(3000)})], mode=mode, args="subset")  # type: ignore[arg-type]
    if mode == "superset":
        return  # "made nothing else": a call no entry fits is the failure below, as "extra"
    with pytest.raises(TrajectoryMismatch) as info:
        assert_trajectory(deep, [("t", {"a": _deep(3000, leaf=2)})], mode=mode)  # type: ignore[arg-type]
    path = info.value.arg_path
    assert path is not None and path.startswith("args.a.k[0].k[0]") and "levels)..." in path
    assert len(str(info.value)) < 20_000
    # The deep value on one side only: the other side's shape differs at once.
    with pytest.raises(TrajectoryMismatch, match=r"expected an object|expected a list"):
        assert_trajectory(TRACE, [("t", {"a": _deep(3000)})], mode=mode)  # type: ignore[arg-type]
    with pytest.raises(TrajectoryMismatch, match="too deep or too large to show"):
        assert_trajectory(deep, [("t", {"a": 1})], mode=mode)  # type: ignore[arg-type]


def test_a_when_condition_thousands_deep_fires_on_its_call_only() -> None:
    from openprogram_testing import ScriptedProvider, call, turn

    schedule = SteeringSchedule().when("add", "deep", args={"a": 1, "b": {"x": _deep(3000)}})
    schedule.when("add", "plain", args={"a": 1})
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2})), "done"])
    run_loop_sync(provider, "go", tools=[add_tool()], schedule=schedule)
    assert [e.describe()[:8] for e in schedule.pending] == ["when(add"]
    assert [d.message.text for d in schedule.delivered] == ["plain"]
