"""The harness reads MCP calls like any other tool call: a run through an MCP server (here the
fake) is a trace tree whose calls carry the server in their name (``{server}__{tool}``) and in
their result's details; ``when:`` steering fires on an MCP call and skips the rest of its batch
before it reaches the server; trajectory matching and the runner's invariants read the calls,
and a trajectory that does not fit fails naming the call."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Registry, Runtime
from openprogram_testing import assert_skipped, assert_trajectory, call, turn
from openprogram_testing.judges.trajectory import TrajectoryMismatch


def test_when_steering_trajectories_and_traces_read_mcp_calls(
    fake_mcp_server: Any, scripted_provider: Any, steering: Any, exec_runner: Any
) -> None:
    notes = fake_mcp_server("notes")

    @notes.tool
    def search(query: str) -> str:
        """Search the notes."""
        return f"found {query}"

    @notes.tool
    def delete(note: str) -> str:
        """Delete a note."""
        return "deleted"

    scripted_provider.add(
        turn(call("notes__search", {"query": "old"}), call("notes__delete", {"note": "n1"})),
        "Stopped.",
    )
    steering.when("notes__search", "Do not delete anything.")
    with notes.connection(always_load=True) as connection:
        tree = exec_runner(
            Runtime(scripted_provider, registry=Registry()), "clean up", tools=[connection]
        )
    made = [("notes__search", {"query": "old"}), ("notes__delete", {"note": "n1"})]
    assert_trajectory(tree, made)
    assert_skipped(tree, ["notes__delete"])
    assert [(c.tool, c.arguments) for c in notes.calls] == [("search", {"query": "old"})]
    (searched, skipped) = tree.trace.tool_results
    assert searched.details["mcp_server"] == "notes" and searched.details["mcp_tool"] == "search"
    assert "notes__search" in tree.trace.timeline()
    assert scripted_provider.requests[1].messages[-1].text == "Do not delete anything."
    with pytest.raises(TrajectoryMismatch, match="notes__search"):
        assert_trajectory(tree, [("notes__search", {"query": "new"}), made[1]])
