"""Usage and cost: sums per run and per tree, budgets that fail when exceeded and pass within,
prices from the user only; hostile usage (huge, negative, non-numeric counts)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pytest

from openprogram import Registry, Runtime, agentic_function, function
from openprogram.types import Usage
from openprogram_testing import (
    Prices,
    ScriptedProvider,
    UsageError,
    UsageOverBudget,
    assert_usage,
    call,
    run_exec_sync,
    run_loop_sync,
    turn,
    usage_of,
)
from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.harness._harness import add_tool
from tests.regression._traces import made
from tests.scenarios._scenarios import load_error

PRICES = {"test-model": {"input": 1.0, "output": 4.0, "cache_read": 0.5}}


def _run() -> Any:
    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 1, "b": 2}), usage=Usage(100, 20, 50, 0)),
            turn("3", usage=Usage(150, 10, 0, 0)),
        ]
    )
    return run_loop_sync(provider, "add", tools=[add_tool()])


def test_a_run_is_summed_per_kind_and_per_model() -> None:
    usage = usage_of(_run())
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (250, 30, 50)
    assert usage.model_calls == 2 and usage.total_tokens == 330
    assert usage.by_model == {
        "test-model": {
            "input_tokens": 250,
            "output_tokens": 30,
            "cache_read_tokens": 50,
            "cache_write_tokens": 0,
        }
    }
    assert math.isclose(Prices(PRICES).cost(usage), (250 + 30 * 4 + 25) / 1e6)


def test_budgets_pass_within_and_fail_over() -> None:
    trace = _run()
    within = assert_usage(
        trace, max_input_tokens=250, max_model_calls=2, max_cost=0.001, prices=PRICES
    )
    assert within.input_tokens == 250
    with pytest.raises(UsageOverBudget) as info:
        assert_usage(trace, max_input_tokens=249, max_output_tokens=100, max_model_calls=1)
    failure = info.value
    assert [(o.name, o.limit, o.used) for o in failure.over] == [
        ("max_input_tokens", 249, 250),
        ("max_model_calls", 1, 2),
    ]
    assert "input_tokens 250 > max_input_tokens 249" in failure.reason
    assert "run timeline:" in str(failure) and isinstance(failure, AssertionError)
    with pytest.raises(UsageOverBudget, match=r"cost 0\.000395 > max_cost 0\.0001"):
        assert_usage(trace, max_cost=0.0001, prices=PRICES)


def test_cost_needs_the_users_prices_and_every_model_priced() -> None:
    trace = _run()
    with pytest.raises(ValueError, match="max_cost needs prices"):
        assert_usage(trace, max_cost=1.0)
    with pytest.raises(UsageError, match="no price for model 'test-model'"):
        assert_usage(trace, max_cost=1.0, prices={"other": {"input": 1}})
    assert_usage(trace, max_cost=1.0, prices={"*": {"input": 1}})  # "*": any other model
    with pytest.raises(ValueError, match="give at least one budget"):
        assert_usage(trace)
    with pytest.raises(ValueError, match="unknown key"):
        Prices({"m": {"inputs": 1}})
    with pytest.raises(ValueError, match=">= 0"):
        Prices({"m": {"input": -1}})
    with pytest.raises(ValueError, match="must be a number"):
        assert_usage(trace, max_input_tokens=-1)


def test_prices_load_from_a_file(tmp_path: Path) -> None:
    path = tmp_path / "prices.yaml"
    path.write_text("test-model: {input: 1.0, output: 4.0}\n", encoding="utf-8")
    assert Prices.load(str(path)).row("test-model") == {"input": 1.0, "output": 4.0}


def test_huge_usage_numbers_are_judged_not_crashed() -> None:
    huge = 10**400
    trace = made(("f", {}), usage=Usage(huge, 1, 0, 0))
    usage = usage_of(trace)
    assert usage.input_tokens == 2 * huge
    with pytest.raises(UsageOverBudget) as info:
        assert_usage(trace, max_input_tokens=10**9, max_cost=1.0, prices={"*": {"input": 1.0}})
    assert info.value.cost == math.inf and "cost inf" in info.value.reason
    assert_usage(trace, max_output_tokens=2)


@pytest.mark.parametrize("bad", [-5, 1.5, float("nan"), "12", None, True])
def test_a_broken_usage_report_is_an_error_not_a_pass(bad: Any) -> None:
    trace = made(usage=Usage(0, 0, 0, 0))
    trace.assistant_messages[0].usage.input_tokens = bad
    with pytest.raises(UsageError, match="assistant message 0 input_tokens"):
        assert_usage(trace, max_input_tokens=10**12)


def test_an_empty_run_uses_nothing() -> None:
    trace = made()
    assert usage_of(trace).total_tokens == 0
    assert_usage(trace, max_total_tokens=0, max_model_calls=1)


registry = Registry()


@function(registry=registry)
def lookup(city: str) -> str:
    """Weather of a city."""
    return "fine"


@agentic_function(registry=registry)
def survey(city: str, runtime: Runtime) -> str:
    """Ask a nested run."""
    return runtime.exec("Weather of " + city, tools=[lookup])


def test_a_tree_sums_every_run_and_addresses_one() -> None:
    provider = ScriptedProvider(
        [
            turn(call("survey", {"city": "Oslo"}), usage=Usage(10, 1, 0, 0)),
            turn(call("lookup", {"city": "Oslo"}), usage=Usage(20, 2, 0, 0)),
            turn("fine", usage=Usage(30, 3, 0, 0)),
            turn("All fine.", usage=Usage(40, 4, 0, 7)),
        ]
    )
    tree = run_exec_sync(Runtime(provider, "test-model", registry=registry), "go", tools=[survey])
    assert usage_of(tree).input_tokens == 100 and usage_of(tree).model_calls == 4
    assert usage_of(tree, nested=False).input_tokens == 50
    assert usage_of(tree, run="survey").input_tokens == 50
    assert usage_of(tree).cache_write_tokens == 7
    with pytest.raises(UsageOverBudget, match="in run survey: over budget"):
        assert_usage(tree, run="survey", max_output_tokens=4)


SCENARIO = """
prompt: add
tools: [{name: add, returns: 3}]
script:
  - calls: [{name: add, args: {a: 1, b: 2}}]
    usage: {input_tokens: 100, output_tokens: 20}
  - text: "3"
    usage: {input_tokens: 150, output_tokens: 10, cache_read_tokens: 40}
expect:
  usage:
"""


def _scenario(tmp_path: Path, usage: str) -> list[str]:
    path = tmp_path / "scenario_u.yaml"
    path.write_text(SCENARIO + usage, encoding="utf-8")
    return run_scenario(load_scenario(path)).failures


def test_expect_usage_in_yaml_fails_over_and_passes_within(tmp_path: Path) -> None:
    prices = "    prices: {test-model: {input: 1, output: 4}}\n"
    assert _scenario(tmp_path, "    max_input_tokens: 250\n    max_model_calls: 2\n") == []
    assert _scenario(tmp_path, "    max_cost: 0.001\n" + prices) == []
    over = _scenario(tmp_path, "    max_output_tokens: 29\n    max_cache_read_tokens: 39\n")
    assert len(over) == 1 and over[0].startswith("expect.usage: over budget: output_tokens 30")
    assert "cache_read_tokens 40 > max_cache_read_tokens 39" in over[0]
    cost = _scenario(tmp_path, "    max_cost: 0.0001\n" + prices)
    assert cost == [
        "expect.usage: over budget: cost 0.00037 > max_cost 0.0001 (used: 2 model call(s), "
        "250 in / 30 out tokens (cache 40 read / 0 write), cost 0.00037)"
    ]
    unpriced = _scenario(tmp_path, "    max_cost: 1\n    prices: {other: {input: 1}}\n")
    assert unpriced and "no price for model 'test-model'" in unpriced[0]


@pytest.mark.parametrize(
    ("usage", "says"),
    [
        ("    {}\n", "give at least one budget"),
        ("    max_cost: 1\n", "max_cost needs prices"),
        ("    max_input_tokens: -1\n", "max_input_tokens"),
        ("    max_cost: .nan\n    prices: {m: {input: 1}}\n", "max_cost"),
        ("    max_cost: 1\n    prices: {m: {inputs: 1}}\n", "inputs"),
    ],
)
def test_bad_budgets_are_load_errors(tmp_path: Path, usage: str, says: str) -> None:
    path = tmp_path / "scenario_bad.yaml"
    path.write_text(SCENARIO + usage, encoding="utf-8")
    message = load_error(path)
    assert "scenario_bad.yaml:" in message and says in message, message
