"""Agents on other frameworks reach the fake MCP server as a real one, over streamable HTTP on
loopback: openai-agents' own MCP client lists its tools, calls them, and its unexpected call
fails the fake's check naming it."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram_testing.mcp import UnexpectedMCPCall


def test_openai_agents_mcp_client_against_the_fake(fake_mcp_server: Any) -> None:
    from agents.mcp import MCPServerStreamableHttp

    fake = fake_mcp_server("files")

    @fake.tool
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    fake.listed({"name": "stat", "inputSchema": {"type": "object"}})
    url = fake.serve_http()

    async def use() -> tuple[list[str], Any, Any]:
        async with MCPServerStreamableHttp(params={"url": url}, name="files") as server:
            tools = [t.name for t in await server.list_tools()]
            answered = await server.call_tool("read", {"path": "a.txt"})
            refused = await server.call_tool("stat", {})
            return tools, answered, refused

    tools, answered, refused = asyncio.run(use())
    assert tools == ["read", "stat"]
    assert [b.text for b in answered.content] == ["contents of a.txt"] and not answered.is_error
    assert refused.is_error
    with pytest.raises(UnexpectedMCPCall, match=r"unexpected call stat\(\{\}\)"):
        fake.assert_complete()
    fake.failures.clear()  # shown above; the fixture's own check would fail the test again
