"""assert_trajectory: each mode fails on the broken run and passes on the correct one; argument
matching; hostile input (empty runs, thousands of calls, unknown tools, non-JSON arguments,
huge numbers); trees (run=, nested=)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from openprogram import Registry, Runtime, agentic_function, function
from openprogram_testing import (
    Approx,
    Matches,
    ScriptedProvider,
    TrajectoryMismatch,
    assert_trajectory,
    call,
    run_exec_sync,
    run_loop_sync,
    turn,
)
from tests.harness._harness import add_tool
from tests.regression._traces import made

SEARCH = ("search", {"city": "Oslo"})
BOOK = ("book", {"city": "Oslo", "seats": 2})
PAY = ("pay", {"amount": 120.0})


def _fails(trace: Any, expected: Any, **kw: Any) -> TrajectoryMismatch:
    with pytest.raises(TrajectoryMismatch) as info:
        assert_trajectory(trace, expected, **kw)
    assert isinstance(info.value, AssertionError)
    assert "run timeline:" in str(info.value)
    return info.value


# -- modes -------------------------------------------------------------------------------------


def test_strict_passes_on_the_same_calls_in_order() -> None:
    assert_trajectory(made(SEARCH, BOOK, PAY), [SEARCH, BOOK, PAY])
    assert_trajectory(made(SEARCH, BOOK), ["search", "book"])  # names alone


def test_strict_names_the_out_of_order_call() -> None:
    failure = _fails(made(BOOK, SEARCH), [SEARCH, BOOK])
    assert failure.kind == "order" and failure.expected is not None
    assert failure.expected.name == "search" and failure.made is not None
    assert failure.made.name == "book"
    assert "out of order: expected search" in failure.reason and "later as call 1" in failure.reason


def test_strict_names_the_missing_and_the_extra_call() -> None:
    missing = _fails(made(SEARCH), [SEARCH, BOOK])
    assert missing.kind == "missing" and "missing book" in missing.reason
    extra = _fails(made(SEARCH, BOOK, PAY), [SEARCH, BOOK])
    assert extra.kind == "extra" and extra.made is not None and extra.made.name == "pay"
    instead = _fails(made(SEARCH, PAY), [SEARCH, BOOK])
    assert instead.kind == "extra" and "expected book" in instead.reason


def test_strict_names_the_argument_path_that_differs() -> None:
    failure = _fails(made(SEARCH, ("book", {"city": "Rome", "seats": 2})), [SEARCH, BOOK])
    assert failure.kind == "arguments" and failure.arg_path == "args.city"
    assert 'expected "Oslo", got "Rome"' in failure.reason


def test_unordered_passes_in_any_order_and_fails_on_a_missing_or_extra_call() -> None:
    assert_trajectory(made(PAY, BOOK, SEARCH), [SEARCH, BOOK, PAY], mode="unordered")
    assert _fails(made(PAY, SEARCH), [SEARCH, BOOK, PAY], mode="unordered").kind == "missing"
    extra = _fails(made(PAY, SEARCH, BOOK, SEARCH), [SEARCH, BOOK, PAY], mode="unordered")
    assert extra.kind == "extra" and "no entry left" in extra.reason


def test_subset_means_the_run_made_at_least_these() -> None:
    assert_trajectory(made(SEARCH, ("log", {}), BOOK), [BOOK, SEARCH], mode="subset")
    failure = _fails(made(SEARCH, ("log", {})), [SEARCH, BOOK], mode="subset")
    assert failure.kind == "missing" and failure.expected is not None
    assert failure.expected.name == "book"


def test_superset_means_the_run_made_nothing_else() -> None:
    assert_trajectory(made(BOOK), [SEARCH, BOOK, PAY], mode="superset")
    assert_trajectory(made(), [SEARCH], mode="superset")
    failure = _fails(made(BOOK, ("delete_account", {})), [SEARCH, BOOK], mode="superset")
    assert failure.kind == "extra" and failure.made is not None
    assert failure.made.name == "delete_account"


def test_pairing_is_a_maximum_matching_not_first_come() -> None:
    # The loose first entry must not take the only call the strict second entry fits.
    trace = made(("a", {"x": 1}), ("a", {"x": 2}))
    assert_trajectory(trace, ["a", ("a", {"x": 1})], mode="unordered")
    assert_trajectory(trace, [("a", {"x": 2}), "a"], mode="subset")


# -- argument matching ---------------------------------------------------------------------------


def test_argument_modes() -> None:
    trace = made(("book", {"city": "Oslo", "seats": 2, "note": "window"}))
    exact = _fails(trace, [BOOK])
    assert exact.arg_path == "args.note" and "not expected" in exact.reason
    assert_trajectory(trace, [BOOK], args="subset")
    assert_trajectory(trace, [("book", {"city": "Rome"})], args="ignore")
    wrong = _fails(trace, [("book", {"seats": 3})], args="subset")
    assert wrong.arg_path == "args.seats"
    absent = _fails(trace, [("book", {"class": "economy"})], args="subset")
    assert absent.arg_path == "args.class" and "missing" in absent.reason


def test_argument_checks_per_tool() -> None:
    trace = made(SEARCH, ("book", {"city": "Oslo", "seats": 9}))
    seats_ok = {"book": lambda want, got: got["seats"] <= 4, "*": "exact"}
    failure = _fails(trace, [SEARCH, BOOK], args=seats_ok)
    assert failure.kind == "arguments" and "rejected by" in failure.reason
    assert_trajectory(trace, [SEARCH, BOOK], args={"book": "ignore"})
    assert_trajectory(trace, [SEARCH, ("book", lambda a: a["seats"] == 9)])


def test_value_matchers_regex_and_tolerance_in_python_and_yaml_form() -> None:
    trace = made(("pay", {"amount": 119.5, "to": "Oslo Air", "items": [{"sku": "A-1"}]}))
    python = {
        "amount": Approx(120, abs=1),
        "to": Matches("^Oslo"),
        "items": [{"sku": re.compile("A-")}],
    }
    assert_trajectory(trace, [("pay", python)])
    yaml_form = {
        "amount": {"$approx": 120, "$rel": 0.01},
        "to": {"$regex": "Air$"},
        "items": [{"sku": "A-1"}],
    }
    assert_trajectory(trace, [("pay", yaml_form)])
    assert_trajectory(trace, [("pay", {"amount": pytest.approx(119.4, abs=0.2)})], args="subset")
    far = _fails(trace, [("pay", {"amount": Approx(100, abs=1)})], args="subset")
    assert far.arg_path == "args.amount" and "approx(100" in far.reason
    nested = _fails(trace, [("pay", {"items": [{"sku": "B-2"}]})], args="subset")
    assert nested.arg_path == "args.items[0].sku"


def test_a_bool_is_not_a_number_and_a_number_is_not_a_string() -> None:
    _fails(made(("f", {"n": True})), [("f", {"n": 1})])
    _fails(made(("f", {"n": True})), [("f", {"n": Approx(1)})])
    _fails(made(("f", {"n": 7})), [("f", {"n": Matches("7")})])


# -- hostile input -----------------------------------------------------------------------------


def test_empty_trajectories() -> None:
    assert_trajectory(made(), [])
    for mode in ("strict", "unordered", "subset", "superset"):
        assert_trajectory(made(), [], mode=mode)  # type: ignore[arg-type]
    assert _fails(made(SEARCH), []).kind == "extra"
    assert _fails(made(), [SEARCH]).kind == "missing"
    assert_trajectory(made(SEARCH), [], mode="subset")  # at least nothing: always true


def test_thousands_of_calls_are_judged() -> None:
    n = 3000
    calls = [("step", {"i": i}) for i in range(n)]
    trace = made(*calls)
    assert_trajectory(trace, calls)
    assert_trajectory(trace, list(reversed(calls)), mode="unordered")
    assert_trajectory(trace, ["step"] * n, mode="unordered")
    assert_trajectory(trace, calls[::2], mode="subset")
    failure = _fails(trace, [*calls[:-1], ("step", {"i": -1})], mode="unordered")
    assert failure.kind == "arguments" and failure.made is not None and failure.made.index == n - 1


def test_an_unknown_tool_is_named_as_missing() -> None:
    failure = _fails(made(SEARCH), [SEARCH, "no_such_tool"], mode="subset")
    assert "made no call of no_such_tool" in failure.reason


def test_non_json_arguments_fit_nothing_but_ignore() -> None:
    trace = made(("book", '{"city": "Os'))
    failure = _fails(trace, [("book", {})])
    assert "not JSON" in failure.reason and failure.arg_path == "args"
    _fails(trace, [("book", lambda a: True)])
    assert_trajectory(trace, ["book"])  # the name alone
    assert_trajectory(trace, [("book", {})], args="ignore")


def test_huge_and_odd_numbers() -> None:
    big = 10**400
    trace = made(("f", {"n": big, "x": float("nan")}))
    assert_trajectory(trace, [("f", {"n": big})], args="subset")
    _fails(trace, [("f", {"n": Approx(1e300)})], args="subset")
    _fails(trace, [("f", {"x": Approx(0, abs=1e308)})], args="subset")


def test_bad_expectations_are_errors_not_verdicts() -> None:
    trace = made(SEARCH)
    with pytest.raises(ValueError, match="unknown trajectory mode"):
        assert_trajectory(trace, [], mode="loose")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="use one of exact, ignore, subset"):
        assert_trajectory(trace, [], args="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="list of calls"):
        assert_trajectory(trace, "search")
    with pytest.raises(ValueError, match="expected\\[0\\]"):
        assert_trajectory(trace, [42])
    with pytest.raises(ValueError, match="unknown key"):
        assert_trajectory(trace, [{"name": "search", "arguments": {}}])
    with pytest.raises(ValueError, match="invalid regular expression"):
        assert_trajectory(trace, [("search", {"city": {"$regex": "("}})])
    with pytest.raises(ValueError, match="raised"):
        assert_trajectory(trace, [("search", lambda a: a["missing"])])


# -- real runs and trees -----------------------------------------------------------------------


def test_a_real_run_and_another_runs_calls_as_the_expectation() -> None:
    def run() -> Any:
        provider = ScriptedProvider(
            [turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})), "7"]
        )
        return run_loop_sync(provider, "add", tools=[add_tool()])

    first, second = run(), run()
    assert_trajectory(second, first.tool_calls)  # the recorded run's calls, exactly
    _fails(second, first.tool_calls[:1])


registry = Registry()


@function(registry=registry)
def lookup(city: str) -> str:
    """Weather of a city."""
    return f"{city}: fine"


@agentic_function(registry=registry)
def survey(cities: list[str], runtime: Runtime) -> str:
    """Weather of several cities."""
    return runtime.exec("Weather of " + ", ".join(cities), tools=[lookup])


def _tree() -> Any:
    provider = ScriptedProvider(
        [
            turn(call("survey", {"cities": ["Oslo", "Rome"]})),
            turn(call("lookup", {"city": "Oslo"}), call("lookup", {"city": "Rome"})),
            "Both fine.",
            turn(call("lookup", {"city": "Bergen"})),
            "All fine.",
        ]
    )
    runtime = Runtime(provider, "test-model", registry=registry)
    return run_exec_sync(runtime, "weather?", tools=[survey, lookup])


def test_a_tree_outer_run_nested_run_and_all_runs() -> None:
    tree = _tree()
    assert_trajectory(tree, ["survey", "lookup"])
    assert_trajectory(
        tree, [("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"})], run="survey"
    )
    every = ["survey", ("lookup", {"city": "Oslo"}), ("lookup", {"city": "Rome"}), "lookup"]
    assert_trajectory(tree, every, nested=True)
    failure = _fails(tree, ["lookup", "lookup", "lookup"], run="survey")
    assert failure.reason.startswith("in run survey:") and failure.kind == "missing"
    lane = _fails(tree, ["survey", ("lookup", {"city": "Rome"})], nested=True, args="subset")
    assert lane.kind == "arguments" and lane.made is not None and lane.made.lane == "survey"
    assert "(call_1 in run survey)" in lane.reason
    with pytest.raises(AssertionError, match="no run at 'nowhere'"):
        assert_trajectory(tree, [], run="nowhere")
    with pytest.raises(TypeError, match="run= addresses"):
        assert_trajectory(tree.trace, [], run="survey")
