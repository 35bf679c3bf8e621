"""W11 in smoke mode: the MCP rows run their checked rounds (the tool ran once per round with
the scripted arguments, the model saw its answer), and the two MCP targets are computed from
the rows as documented."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import mcp_round
from bench.common import BenchError
from bench.workloads import SMOKE
from tests.bench._bench import smoke_results


def test_w11_rows_and_targets(tmp_path: Path) -> None:
    results = smoke_results(tmp_path, "W11")
    rows = results["workloads"]["W11"]["results"]
    assert list(rows) == list(mcp_round.ROWS)
    for row in rows.values():
        assert 0 < row["min"] <= row["median"] <= row["max"] and row["n"] == 2
    python = rows["openprogram + Python tool"]["median"]
    server = rows["openprogram + MCPServer"]
    assert server["x_sdk"] == pytest.approx(
        (server["median"] - python) / rows["SDK Client -> MCPServer"]["median"]
    )
    fake = rows["openprogram + fake MCP server"]
    assert fake["x_mcpserver"] == pytest.approx(fake["median"] / server["median"])
    statuses = {t["target"]: t["status"] for t in results["targets"]}
    assert statuses["W11 fake MCP server / MCPServer, through the loop"] in ("met", "MISSED")
    assert statuses["W11 loop's MCP round over a Python tool's / the SDK call alone"] in (
        "met",
        "MISSED",
    )


def test_a_round_whose_tool_did_not_run_is_not_counted() -> None:
    counter = mcp_round._Counter()
    counter.add(0, 1)  # one of two rounds
    with pytest.raises(BenchError, match="the tool ran 1 times"):
        counter.check("row", 2)


def test_w11_refuses_a_server_answering_errors() -> None:
    from openprogram_testing.mcp import FakeMCPServer, tool_error

    fake = FakeMCPServer("calc")
    fake.listed({"name": "add", "inputSchema": {"type": "object"}})
    fake.script("add", *[tool_error("down")] * (SMOKE.warmup + SMOKE.samples) * SMOKE.w11_rounds)
    with pytest.raises(BenchError, match="answered an error"):
        mcp_round._client_samples(fake.to_mcp_server(), "row", mcp_round._Counter(), SMOKE)
