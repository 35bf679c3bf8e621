"""Property tests of the city agent's own tools: the schema-driven provider calls every tool with
arguments generated from its schema, and ``check_agent`` runs generated scenarios over the real
tools (schema-derived calls and near misses, steering, failures injected around the tools),
checking the loop invariants, every labelled outcome and the agent's own rules."""

from __future__ import annotations

import json

from city_agent import WEATHER, list_cities, lookup_weather, to_fahrenheit
from hypothesis import settings

from openprogram_testing import SchemaDrivenProvider, run_loop_sync
from openprogram_testing.strategies import check_agent

TOOLS = [list_cities, lookup_weather, to_fahrenheit]


def test_every_tool_is_called_with_arguments_its_schema_accepts() -> None:
    provider = SchemaDrivenProvider(seed=1)
    trace = run_loop_sync(provider, ["What is the weather?"], tools=TOOLS)
    assert trace.termination == "completed"
    assert set(json.loads(trace.final_text)) == {"list_cities", "lookup_weather", "to_fahrenheit"}


def unknown_cities_are_reported_as_errors(trace: object) -> bool:
    asked = {
        c.id: c.arguments.get("city")
        for m in trace.assistant_messages  # type: ignore[attr-defined]
        for c in m.tool_calls
        if c.name == "lookup_weather"
    }
    return all(
        r.is_error
        for r in trace.tool_results  # type: ignore[attr-defined]
        if r.tool_call_id in asked and not r.skipped and asked[r.tool_call_id] not in WEATHER
    )


def test_the_tools_keep_the_loop_rules_and_our_own() -> None:
    check_agent(
        TOOLS,
        predicates=[unknown_cities_are_reported_as_errors],
        settings=settings(max_examples=40, database=None, derandomize=True),
    )


def test_the_agent_through_its_runtime_nested_runs_included() -> None:
    from city_agent import TOOLS as AGENT_TOOLS
    from city_agent import build_runtime

    check_agent(
        AGENT_TOOLS,
        runtime=build_runtime,
        predicates=[unknown_cities_are_reported_as_errors],
        settings=settings(max_examples=30, database=None, derandomize=True),
    )
