"""The schema-driven provider: calls the offered tools with schema-valid arguments, then
summarises; deterministic under a seed; honours tool_choice; records its requests."""

from __future__ import annotations

import json
import warnings
from typing import Any

import pytest

from openprogram_testing import SchemaDrivenProvider, run_loop_sync
from openprogram_testing.strategies import tool_model
from openprogram_testing.transport.schema_values import compiled_validator
from tests.properties._schema_tools import REFUND_SCHEMA, book_hotel, get_order, refund

TOOLS = [get_order, book_hotel, refund]


def test_calls_every_offered_tool_once_with_valid_arguments_then_summarises() -> None:
    provider = SchemaDrivenProvider(seed=3)
    trace = run_loop_sync(provider, ["go"], tools=TOOLS)
    assert trace.termination == "completed"
    calls = [c for m in trace.assistant_messages for c in m.tool_calls]
    assert [c.name for c in calls] == ["get_order", "book_hotel", "refund"]
    for c in calls:
        model = tool_model(
            {"get_order": get_order, "book_hotel": book_hotel, "refund": refund}[c.name]
        )
        assert compiled_validator(model.schema).is_valid(c.arguments), c
    assert not any(r.is_error for r in trace.tool_results)
    assert json.loads(trace.final_text) == {r.tool_name: r.text for r in trace.tool_results}
    assert trace.model_calls == 4 and len(provider.requests) == 4
    assert provider.requests[0].tool_names == ["get_order", "book_hotel", "refund"]
    provider.assert_complete()


def test_the_same_seed_gives_the_same_run_and_another_seed_other_arguments() -> None:
    def arguments(seed: int) -> list[dict[str, Any]]:
        trace = run_loop_sync(SchemaDrivenProvider(seed=seed), ["go"], tools=TOOLS)
        return [c.arguments for m in trace.assistant_messages for c in m.tool_calls]

    assert arguments(1) == arguments(1)
    assert any(arguments(1) != arguments(s) for s in (2, 3, 4))


def test_a_chosen_subset_in_a_chosen_order_several_per_round() -> None:
    provider = SchemaDrivenProvider(tools=["refund", "get_order", "absent"], per_round=2)
    trace = run_loop_sync(provider, ["go"], tools=TOOLS)
    rounds = [[c.name for c in m.tool_calls] for m in trace.assistant_messages]
    assert rounds == [["refund", "get_order"], []]
    with pytest.raises(ValueError, match="per_round must be at least 1"):
        SchemaDrivenProvider(per_round=0)


def test_tool_choice_is_honoured() -> None:
    none = run_loop_sync(SchemaDrivenProvider(), ["go"], tools=TOOLS, tool_choice="none")
    assert none.model_calls == 1 and not none.tool_results and none.final_text == "{}"
    forced = run_loop_sync(
        SchemaDrivenProvider(),
        ["go"],
        tools=TOOLS,
        tool_choice={"type": "function", "name": "refund"},
    )
    assert [r.tool_name for r in forced.tool_results] == ["refund"]
    required = run_loop_sync(SchemaDrivenProvider(), ["go"], tools=TOOLS, tool_choice="required")
    assert len(required.tool_results) == 3
    assert SchemaDrivenProvider().requests == []


def test_error_results_are_summarised_as_errors() -> None:
    def fail(args: dict[str, Any]) -> str:
        raise RuntimeError("refunds are closed")

    broken = {"spec": {"name": "refund", "parameters": REFUND_SCHEMA}, "execute": fail}
    trace = run_loop_sync(SchemaDrivenProvider(), ["go"], tools=[broken])
    assert json.loads(trace.final_text) == {"refund": {"error": "refunds are closed"}}


def test_a_schema_it_cannot_generate_for_warns_and_falls_back() -> None:
    recursive = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}},
        "required": ["root"],
    }
    impossible = {
        "type": "object",
        "properties": {"k": {"type": "integer", "minimum": 5, "maximum": 1}},
        "required": ["k"],
    }
    tools = [
        {"spec": {"name": "walk", "parameters": recursive}, "execute": lambda a: "walked"},
        {"spec": {"name": "never", "parameters": impossible}, "execute": lambda a: "x"},
        get_order,
    ]
    provider = SchemaDrivenProvider()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trace = run_loop_sync(provider, ["go"], tools=tools)
    texts = [str(w.message) for w in caught]
    assert any("tool 'walk': cannot generate arguments for keyword '$ref'" in t for t in texts)
    assert any("tool 'never' is not called" in t for t in texts)
    assert trace.termination == "completed"
    assert [r.tool_name for r in trace.tool_results] == ["walk", "get_order"]
    assert "never" in provider.skipped_tools and "walk" not in provider.skipped_tools
