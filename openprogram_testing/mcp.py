"""Fake MCP servers for tests (needs the ``mcp`` extra: ``pip install "openprogram-loop[mcp]"``).

See docs/mcp.md; the parts live in ``transport/mcp/``.
"""

from __future__ import annotations

from .transport.mcp.fake import (
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
