"""An agent with an MCP server, end to end on every provider API: the real adapter (its SDK's
HTTP stack) against the loopback provider emulator, the server a fake (scripted, strict) or a
live in-process SDK server.  The MCP tool reaches each API's wire under its ``{server}__{tool}``
name with its schema; the server's answer, and an ``[mcp error]`` result for a JSON-RPC error,
reach the model in the next request."""

from __future__ import annotations

import json
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from openprogram import Registry, Runtime
from openprogram.mcp import MCPConnection
from openprogram.providers import guard
from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram_testing import ProviderEmulator, call, turn
from openprogram_testing.mcp import FakeMCPServer, rpc_error
from tests.providers._google_aws import bedrock_at, gemini_at

ADAPTERS = {
    "openai_chat": lambda emu: OpenAIChatProvider(base_url=emu.openai_base_url, api_key="t"),
    "openai_responses": lambda emu: OpenAIResponsesProvider(
        base_url=emu.openai_base_url, api_key="t"
    ),
    "anthropic": lambda emu: AnthropicProvider(base_url=emu.anthropic_base_url, api_key="t"),
    "gemini": lambda emu: gemini_at(emu.base_url),
    "bedrock": lambda emu: bedrock_at(emu.base_url),
}
SEARCH_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}


@pytest.fixture(autouse=True)
def _loopback_only() -> Any:
    with guard.allow_model_requests(False):  # everything here is loopback
        yield


def live_notes() -> MCPServer:
    server = MCPServer("notes")

    @server.tool()
    def search(query: str) -> str:
        """Search the notes."""
        return f"1 note about {query}"

    return server


def _run(api: str, emu: ProviderEmulator, server: Any) -> str:
    emu.add(turn(call("notes__search", {"query": "mcp"})), "One note found.")
    runtime = Runtime(ADAPTERS[api](emu), "m", registry=Registry())
    with MCPConnection("notes", server, always_load=True) as notes:
        return str(runtime.exec("Find my notes about mcp", tools=[notes]))


def _tool_results(emu: ProviderEmulator) -> list[tuple[str, bool]]:
    request = emu.requests[1].model_request
    assert request is not None
    return [(m.text, m.is_error) for m in request.messages if m.role == "toolResult"]


def _on_the_wire(api: str, text: str, *, error: bool = False) -> tuple[str, bool]:
    """A tool result as ``api``'s wire carries it back: Gemini's ``functionResponse`` is an
    object (``{"output": ...}`` or ``{"error": ...}``); OpenAI's wires have no error flag, so
    there the text is all the model gets."""
    if api == "gemini":
        text = json.dumps({"error" if error else "output": text})
    return text, error and api not in ("openai_chat", "openai_responses")


def _offered(emu: ProviderEmulator) -> dict[str, Any]:
    request = emu.requests[0].model_request
    assert request is not None
    return {t.name: t.parameters for t in request.tools}


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_live_in_process_server(provider_emulator: ProviderEmulator, api: str) -> None:
    assert _run(api, provider_emulator, live_notes()) == "One note found."
    assert [r.api for r in provider_emulator.requests] == [api, api]
    offered = _offered(provider_emulator)
    assert list(offered) == ["notes__search"]
    assert offered["notes__search"]["properties"]["query"]["type"] == "string"
    assert offered["notes__search"]["required"] == ["query"]
    assert _tool_results(provider_emulator) == [_on_the_wire(api, "1 note about mcp")]


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_fake_server(provider_emulator: ProviderEmulator, api: str) -> None:
    fake = FakeMCPServer.from_tools_list(
        "notes", [{"name": "search", "description": "Search.", "inputSchema": SEARCH_SCHEMA}]
    )
    fake.script("search", "2 notes about mcp", arguments={"query": "mcp"})
    assert _run(api, provider_emulator, fake) == "One note found."
    fake.assert_complete()
    assert _offered(provider_emulator) == {"notes__search": SEARCH_SCHEMA}
    assert _tool_results(provider_emulator) == [_on_the_wire(api, "2 notes about mcp")]


@pytest.mark.parametrize("api", ADAPTERS)
def test_a_json_rpc_error_reaches_the_model(provider_emulator: ProviderEmulator, api: str) -> None:
    fake = FakeMCPServer.from_tools_list(
        "notes", [{"name": "search", "inputSchema": SEARCH_SCHEMA}]
    )
    fake.script("search", rpc_error(-32000, "index offline"))
    assert _run(api, provider_emulator, fake) == "One note found."
    fake.assert_complete()
    shown = "[mcp error] notes__search: MCPError: index offline (JSON-RPC error -32000)"
    assert _tool_results(provider_emulator) == [_on_the_wire(api, shown, error=True)]
