"""W11: one tool round whose tool is an MCP server's, against the same round with a plain Python
tool, and the MCP call alone through the SDK's in-memory ``Client``.

Rows (µs per round; a round is one model turn calling ``add``, the call, and the next model
call; the ``SDK Client`` rows are the ``call_tool`` alone, no loop):

- ``openprogram + Python tool``: the loop with an ``@function`` tool (the floor of the others);
- ``openprogram + fake MCP server``: the loop with ``MCPConnection`` to our ``FakeMCPServer``,
  in-process;
- ``openprogram + MCPServer``: the loop with ``MCPConnection`` to the SDK's ``MCPServer``
  (FastMCP's API), in-process;
- ``SDK Client -> MCPServer`` and ``SDK Client -> fake``: ``mcp.Client(server).call_tool`` in a
  loop on one connection, what any MCP client pays per call.

Every sample is checked: the tool ran once per round with the scripted arguments, the model saw
its answer, and the run returned the final text; otherwise ``BenchError``.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable
from typing import Any

from .common import BenchError, now_ns, summarize
from .workloads import Settings

ROWS = (
    "openprogram + Python tool",
    "openprogram + fake MCP server",
    "openprogram + MCPServer",
    "SDK Client -> MCPServer",
    "SDK Client -> fake",
)


class _Counter:
    def __init__(self) -> None:
        self.calls = 0
        self.total = 0

    def add(self, a: int, b: int) -> int:
        self.calls += 1
        self.total += a + b
        return a + b

    def check(self, row: str, rounds: int) -> None:
        expected = sum(r + 1 for r in range(rounds))
        if (self.calls, self.total) != (rounds, expected):
            raise BenchError(
                f"W11 {row}: the tool ran {self.calls} times (argument sum {self.total}), "
                f"expected {rounds} ({expected})"
            )
        self.calls = self.total = 0


def _mcp_server(counter: _Counter) -> Any:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    return server


def _fake_server(counter: _Counter) -> Any:
    from openprogram_testing.mcp import FakeMCPServer

    fake = FakeMCPServer("calc")

    @fake.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    return fake


class _Loop:
    """One ``Runtime.exec`` of ``rounds`` rounds with ``tool`` offered (sync, as a program
    calls it, on a thread with no running loop)."""

    def __init__(self, row: str, tool: Any, counter: _Counter, name: str) -> None:
        self.row, self.tool, self.counter, self.name = row, tool, counter, name

    def sample(self, rounds: int) -> float:
        from openprogram import Registry, Runtime
        from openprogram_testing import ScriptedProvider, call, turn

        turns: list[Any] = [turn(call(self.name, {"a": r, "b": 1})) for r in range(rounds)]
        provider = ScriptedProvider([*turns, "done"])
        runtime = Runtime(provider, "bench", registry=Registry())
        start = now_ns()
        text = runtime.exec("go", tools=[self.tool])
        elapsed = now_ns() - start
        provider.assert_complete()
        self.counter.check(self.row, rounds)
        seen = [m.text for m in provider.requests[-1].messages if m.role == "toolResult"]
        if text != "done" or seen[-1:] != [str(rounds)]:
            raise BenchError(f"W11 {self.row}: returned {text!r}, last tool result {seen[-1:]}")
        return elapsed / rounds / 1000


def _client_samples(server: Any, row: str, counter: _Counter, cfg: Settings) -> list[float]:
    """The SDK's in-memory ``Client`` on one connection: µs per ``call_tool``."""

    async def run() -> list[float]:
        from mcp import Client

        out: list[float] = []
        failed: list[Any] = []  # raised after the Client is left (not inside its task group)
        async with Client(server) as client:
            for index in range(cfg.warmup + cfg.samples):
                gc.collect()
                start = now_ns()
                for r in range(cfg.w11_rounds):
                    result = await client.call_tool("add", {"a": r, "b": 1})
                    if result.is_error:
                        failed.append(result.content)
                        break
                elapsed = now_ns() - start
                if failed:
                    break
                counter.check(row, cfg.w11_rounds)
                if index >= cfg.warmup:
                    out.append(elapsed / cfg.w11_rounds / 1000)
        if failed:
            raise BenchError(f"W11 {row}: call_tool answered an error: {failed[0]}")
        return out

    return asyncio.run(run())


def _loop_samples(loop: _Loop, cfg: Settings) -> list[float]:
    for _ in range(cfg.warmup):
        loop.sample(cfg.w11_rounds)
    out = []
    for _ in range(cfg.samples):
        gc.collect()
        out.append(loop.sample(cfg.w11_rounds))
    return out


def _measure(cfg: Settings) -> dict[str, Any]:
    from openprogram import function
    from openprogram.mcp import MCPConnection

    counter = _Counter()

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return counter.add(a, b)

    python_add = function(add)
    fake = _fake_server(counter)
    server = _mcp_server(counter)
    # always_load: the tool is offered outright, as the Python tool is (MCP tools are otherwise
    # deferred behind tool_search, which would add a model call to every run)
    with (
        MCPConnection("calc", fake, always_load=True) as to_fake,
        MCPConnection("calc", server, always_load=True) as to_server,
    ):
        runs: dict[str, Callable[[], list[float]]] = {
            ROWS[0]: lambda: _loop_samples(_Loop(ROWS[0], python_add, counter, "add"), cfg),
            ROWS[1]: lambda: _loop_samples(_Loop(ROWS[1], to_fake, counter, "calc__add"), cfg),
            ROWS[2]: lambda: _loop_samples(_Loop(ROWS[2], to_server, counter, "calc__add"), cfg),
        }
        values = {row: run() for row, run in runs.items()}
    values[ROWS[3]] = _client_samples(server, ROWS[3], counter, cfg)
    values[ROWS[4]] = _client_samples(fake.to_mcp_server(), ROWS[4], counter, cfg)
    fake.assert_complete()
    rows = {row: summarize(v).as_dict() for row, v in values.items()}
    bare = {ROWS[1]: ROWS[4], ROWS[2]: ROWS[3]}
    python = rows[ROWS[0]]["median"]
    for row, sdk in bare.items():
        extra = rows[row]["median"] - python
        rows[row]["note"] = (
            f"+{extra:,.0f} µs over the Python tool; the SDK call alone {rows[sdk]['median']:,.0f}"
        )
    # what the loop adds to an MCP call, over the SDK's own cost of that call: the extra time
    # of the MCP round over the Python tool's round, per SDK call (1.0: nothing more)
    for row, sdk in bare.items():
        rows[row]["x_sdk"] = (rows[row]["median"] - python) / rows[sdk]["median"]
    rows[ROWS[1]]["x_mcpserver"] = rows[ROWS[1]]["median"] / rows[ROWS[2]]["median"]
    rows[ROWS[0]]["note"] = f"{cfg.w11_rounds} rounds per run"
    for row in (ROWS[3], ROWS[4]):
        rows[row]["note"] = "call_tool alone, no loop"
    return rows


async def w11(cfg: Settings) -> dict[str, Any]:
    return await asyncio.to_thread(_measure, cfg)


__all__ = ["ROWS", "w11"]
