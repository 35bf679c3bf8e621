"""MCP servers as loop tools (the optional extra ``mcp``: ``pip install "openprogram-loop[mcp]"``).

    from openprogram.mcp import MCPConnection

    files = MCPConnection("files", ["python", "files_server.py"])
    runtime.exec("List my notes", tools=[files])   # tools named files__{tool}

Importing this package does not import the ``mcp`` SDK; connecting does.  See docs/mcp.md.
"""

from __future__ import annotations

from .config import DEFAULT_CONFIG_PATH, MCPConfigError, load_mcp_servers
from .connection import (
    DEFAULT_CALL_TIMEOUT_S,
    DEFAULT_CONNECT_TIMEOUT_S,
    DEFAULT_MAX_RESULT_CHARS,
    DEFAULT_MAX_TOOLS,
    MCPConnectError,
    MCPConnection,
)
from .convert import ERROR_PREFIX, SkippedTool, convert_result, mcp_tool_name, normalize_schema

__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_CONFIG_PATH",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TOOLS",
    "ERROR_PREFIX",
    "MCPConfigError",
    "MCPConnectError",
    "MCPConnection",
    "SkippedTool",
    "convert_result",
    "load_mcp_servers",
    "mcp_tool_name",
    "normalize_schema",
]
