"""Agents on other frameworks reach the fake MCP server as a real one, over streamable HTTP on
loopback: openai-agents' MCP client and agent, and pydantic-ai's ``MCPToolset`` under its agent,
list the fake's tools, call them in a run whose model is the provider emulator, see the fake's
answers, and an unexpected call fails the fake's check naming it."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram_testing import ProviderEmulator, call, turn
from openprogram_testing.mcp import FakeMCPServer, UnexpectedMCPCall
from tests.frameworks._frameworks import need, results

agents = need("agents")
openai = need("openai")
agents.set_tracing_disabled(True)


def _files(fake_mcp_server: Any) -> tuple[FakeMCPServer, str]:
    """A fake ``files`` server listing ``read`` (a function) and ``stat`` (a recorded listing,
    no answers scripted), served over HTTP."""
    fake = fake_mcp_server("files")

    @fake.tool
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    fake.listed({"name": "stat", "inputSchema": {"type": "object"}})
    return fake, fake.serve_http()


def _shown_and_cleared(fake: FakeMCPServer, pattern: str) -> None:
    """The fake's check fails naming the unexpected call; cleared afterwards, since the
    fixture's own check at teardown would fail the test again for what was just shown."""
    with pytest.raises(UnexpectedMCPCall, match=pattern):
        fake.assert_complete()
    fake.failures.clear()


def test_openai_agents_mcp_client_against_the_fake(fake_mcp_server: Any) -> None:
    import asyncio

    from agents.mcp import MCPServerStreamableHttp

    fake, url = _files(fake_mcp_server)

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
    _shown_and_cleared(fake, r"unexpected call stat\(\{\}\)")


SCRIPT = [
    turn(call("read", {"path": "a.txt"})),
    turn(call("stat", {})),
    "a.txt holds its contents.",
]
"""The model reads a file through the server, then calls ``stat``, which the fake was not
scripted for, then answers."""


async def test_openai_agents_agent_runs_the_fakes_tools(
    fake_mcp_server: Any, provider_emulator: ProviderEmulator
) -> None:
    from agents.mcp import MCPServerStreamableHttp

    fake, url = _files(fake_mcp_server)
    provider_emulator.add(*SCRIPT)
    client = openai.AsyncOpenAI(
        base_url=provider_emulator.openai_base_url, api_key="t", max_retries=0
    )
    model = agents.OpenAIChatCompletionsModel(model="m", openai_client=client)
    async with MCPServerStreamableHttp(params={"url": url}, name="files") as server:
        agent = agents.Agent(name="reader", model=model, mcp_servers=[server])
        result = await agents.Runner.run(agent, "What is in a.txt?")
    assert result.final_output == "a.txt holds its contents."
    offered = provider_emulator.requests[0].model_request.tools
    assert sorted(t.name for t in offered) == ["read", "stat"]
    assert results(provider_emulator, 1) == ["contents of a.txt"]
    assert "unexpected call" in results(provider_emulator, 2)[-1]
    assert [(c.tool, c.outcome) for c in fake.calls] == [
        ("read", "answered"),
        ("stat", "unexpected"),
    ]
    _shown_and_cleared(fake, r"unexpected call stat\(\{\}\)")


async def test_pydantic_ai_mcp_toolset_runs_the_fakes_tools(
    fake_mcp_server: Any, provider_emulator: ProviderEmulator
) -> None:
    pydantic_ai = need("pydantic_ai")
    from pydantic_ai.mcp import MCPToolset

    from tests.frameworks.test_pydantic_ai import chat

    fake, url = _files(fake_mcp_server)
    provider_emulator.add(*SCRIPT)
    agent = pydantic_ai.Agent(chat(provider_emulator.openai_base_url), toolsets=[MCPToolset(url)])
    async with agent:
        result = await agent.run("What is in a.txt?")
    assert result.output == "a.txt holds its contents."
    offered = provider_emulator.requests[0].model_request.tools
    assert sorted(t.name for t in offered) == ["read", "stat"]
    assert results(provider_emulator, 1) == ["contents of a.txt"]
    assert "unexpected call" in results(provider_emulator, 2)[-1]
    assert [(c.tool, c.outcome) for c in fake.calls] == [
        ("read", "answered"),
        ("stat", "unexpected"),
    ]
    _shown_and_cleared(fake, r"unexpected call stat\(\{\}\)")
