"""Hypothesis strategies from an MCP server's tool schemas: ``mcp_tool_calls`` draws calls of
the tools a recorded ``tools/list`` holds, under the names and schemas the runtime offers them
with; each is made through ``MCPConnection`` to a fake server listing them, and the outcome
must be exactly the label's: a valid call reaches the server with its arguments, a near miss
is refused by the runtime with the labelled text and never reaches the server."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given

from openprogram import Registry, Runtime
from openprogram.mcp import MCPConnection
from openprogram_testing import ScriptedProvider, turn
from openprogram_testing.mcp import FakeMCPServer
from openprogram_testing.strategies import NEAR_MISSES, SchemaCall, mcp_tool_calls
from tests.properties._settings import fixed_settings

LISTING = {
    "tools": [
        {
            "name": "search",
            "description": "Search the notes.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "minLength": 1},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 10},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
        {
            "name": "set.mode",  # a name the runtime rewrites: notes__set_mode
            "inputSchema": {
                "type": "object",
                "properties": {"mode": {"enum": ["fast", "exact"]}},
                "required": ["mode"],
                "additionalProperties": False,
            },
        },
    ]
}


@pytest.fixture(scope="module")
def notes() -> Iterator[tuple[FakeMCPServer, MCPConnection]]:
    fake = FakeMCPServer("notes")
    for listed in LISTING["tools"]:

        def echo(**arguments: Any) -> str:
            return json.dumps(arguments, sort_keys=True)

        fake.tool(echo, name=listed["name"], input_schema=listed["inputSchema"])
    with MCPConnection("notes", fake, always_load=True) as connection:
        yield fake, connection


def test_only_the_runtimes_names_are_drawn() -> None:
    names: set[str] = set()

    @fixed_settings(60)
    @given(generated=mcp_tool_calls("notes", LISTING))
    def collect(generated: SchemaCall) -> None:
        names.add(generated.tool)

    collect()
    assert names == {"notes__search", "notes__set_mode"}


def test_each_drawn_call_gets_exactly_its_outcome_through_the_connection(
    notes: tuple[FakeMCPServer, MCPConnection],
) -> None:
    fake, connection = notes
    labels_seen: set[str] = set()

    @fixed_settings(60)
    @given(generated=mcp_tool_calls("notes", LISTING))
    def check(generated: SchemaCall) -> None:
        labels_seen.add(generated.label)
        before = len(fake.calls)
        provider = ScriptedProvider([turn(generated.scripted()), "done"])
        Runtime(provider, registry=Registry()).exec("go", tools=[connection])
        (result,) = [m for m in provider.requests[1].messages if m.role == "toolResult"]
        if generated.valid:
            assert (result.text, result.is_error) == (
                json.dumps(generated.arguments, sort_keys=True),
                False,
            )
            assert len(fake.calls) == before + 1
        else:
            assert (result.text, result.is_error) == (generated.expected_error, True)
            assert len(fake.calls) == before  # refused before it reached the server

    check()
    assert "valid" in labels_seen and labels_seen & set(NEAR_MISSES)
    fake.assert_complete()


def test_a_listing_that_is_not_one_is_refused() -> None:
    with pytest.raises(TypeError, match="an MCP tool listing is"):
        mcp_tool_calls("notes", "search")
    with pytest.raises(ValueError, match="no listed tool allows"):
        mcp_tool_calls("notes", [], labels=["valid"])
