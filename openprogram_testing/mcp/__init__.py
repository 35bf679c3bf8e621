"""Fake MCP servers for tests (needs the ``mcp`` extra: ``pip install "openprogram-loop[mcp]"``).

See ``openprogram_testing.mcp.fake`` and docs/mcp.md.
"""

from __future__ import annotations

from .fake import (
    STALL,
    FakeCall,
    FakeMCPServer,
    MCPResult,
    MCPScriptError,
    RPCError,
    Stall,
    UnconsumedMCPResults,
    UnexpectedMCPCall,
    image,
    resource,
    rpc_error,
    text,
    tool_error,
)

__all__ = [
    "STALL",
    "FakeCall",
    "FakeMCPServer",
    "MCPResult",
    "MCPScriptError",
    "RPCError",
    "Stall",
    "UnconsumedMCPResults",
    "UnexpectedMCPCall",
    "image",
    "resource",
    "rpc_error",
    "text",
    "tool_error",
]
