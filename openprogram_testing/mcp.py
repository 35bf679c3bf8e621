"""Testing agents that use MCP servers: fake servers, cassettes of a server's traffic, and
faults at the MCP boundary (needs the ``mcp`` extra: ``pip install "openprogram-loop[mcp]"``).

See docs/mcp.md; the parts live in ``transport/mcp/``.
"""

from __future__ import annotations

from .transport.mcp.cassette import (
    MCPCassette,
    MCPCassetteError,
    MCPCassetteLeakError,
    MCPCassetteMiss,
    MCPInteraction,
    load_mcp_cassette,
)
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
from .transport.mcp.faults import (
    MCPCrashAtStart,
    MCPDisconnect,
    MCPFault,
    MCPFaulted,
    MCPFaultError,
    MCPListChanged,
    MCPOversized,
    MCPRpcError,
    MCPSchemaDrift,
    MCPStall,
    MCPToolDisappears,
    MCPToolError,
    mcp_faults,
)

__all__ = [
    "STALL",
    "FakeCall",
    "FakeMCPServer",
    "MCPCassette",
    "MCPCassetteError",
    "MCPCassetteLeakError",
    "MCPCassetteMiss",
    "MCPCrashAtStart",
    "MCPDisconnect",
    "MCPFault",
    "MCPFaultError",
    "MCPFaulted",
    "MCPInteraction",
    "MCPListChanged",
    "MCPOversized",
    "MCPResult",
    "MCPRpcError",
    "MCPSchemaDrift",
    "MCPScriptError",
    "MCPStall",
    "MCPToolDisappears",
    "MCPToolError",
    "RPCError",
    "Stall",
    "UnconsumedMCPResults",
    "UnexpectedMCPCall",
    "image",
    "load_mcp_cassette",
    "mcp_faults",
    "resource",
    "rpc_error",
    "text",
    "tool_error",
]
