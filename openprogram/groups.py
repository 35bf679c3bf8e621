"""Tool groups: tool entries that open into several tools when a run starts (an
``MCPConnection`` is one), and the toolsets that hold MCP tools.

A group is any object with an async ``menu_tools()`` returning ``AgentTool``s.  ``Runtime.exec``
opens the groups of its menu once, before anything else, so a run's menu is fixed when it starts
(the provider's tool array never changes within a run) and a group may answer differently at the
next run (an MCP server whose tool list changed).  Toolsets: ``"mcp"`` is the tools of every
server attached to the runtime (``Runtime(mcp_servers=[...])``), ``"mcp:{name}"`` those of one;
``"full"``, and the default menu of an outermost run, hold them beside the registry's tools, as
upstream exposes MCP tools by default.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Self

from ._sync import sync_twin

if TYPE_CHECKING:
    from .mcp import MCPConnection
    from .registry import Registry


class ServerOwner:
    """What owns attached MCP servers (``Runtime``): closes them with ``aclose()``/``close()``
    and at the end of a ``with``/``async with`` block; a later run connects them again."""

    mcp_servers: tuple[MCPConnection, ...] = ()

    async def aclose(self) -> None:
        """Close the attached MCP servers (``mcp_servers=``)."""
        for server in self.mcp_servers:
            await server.aclose()

    close = sync_twin(aclose, "close", """Sync twin of ``aclose``.""")

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def is_group(entry: Any) -> bool:
    return callable(getattr(entry, "menu_tools", None))


async def opened(entries: Sequence[Any]) -> list[Any]:
    """``entries`` with each tool group replaced, in place, by the tools it offers now."""
    out: list[Any] = []
    for entry in entries:
        if is_group(entry):
            out.extend(await entry.menu_tools())
        else:
            out.append(entry)
    return out


async def open_groups(
    tools: Sequence[Any] | None,
    toolset: str | None,
    servers: Sequence[MCPConnection],
    registry: Registry,
    inherits: bool,
) -> tuple[Sequence[Any] | None, str | None]:
    """``tools=``/``toolset=`` of an ``exec`` with tool groups opened: each group in ``tools``
    replaced by its tools, and the toolsets holding MCP tools (``"mcp"``, ``"mcp:{name}"``, and
    ``"full"`` or the default menu when ``servers`` are attached and the run ``inherits`` no
    menu) resolved to explicit tools."""
    if tools is not None:
        if isinstance(tools, Sequence) and not isinstance(tools, str | bytes):
            if any(is_group(t) for t in tools):
                return await opened(tools), None
        return tools, toolset
    if toolset == "mcp":
        return await opened(servers), None
    if isinstance(toolset, str) and toolset.startswith("mcp:"):
        wanted = toolset.removeprefix("mcp:")
        for server in servers:
            if server.name == wanted:
                return await server.menu_tools(), None
        attached = ", ".join(repr(s.name) for s in servers) or "none"
        raise ValueError(
            f"unknown toolset {toolset!r}: no MCP server named {wanted!r} is attached to this "
            f"runtime (attached: {attached})"
        )
    full = toolset == "full" or (toolset is None and not inherits)
    if full and servers:
        mcp_tools = await opened(servers)
        return [*registry.toolset("full"), *mcp_tools], None
    return None, toolset


def check_servers(servers: Sequence[Any]) -> tuple[Any, ...]:
    """``mcp_servers=`` as a tuple: objects with a ``name`` and ``menu_tools()``, names unique
    (the toolset ``mcp:{name}`` must name one server)."""
    if isinstance(servers, str | bytes) or not isinstance(servers, Sequence):
        raise TypeError(f"mcp_servers= takes a list of MCPConnection, got {servers!r}")
    seen: set[str] = set()
    for server in servers:
        if not is_group(server) or not isinstance(getattr(server, "name", None), str):
            raise TypeError(f"mcp_servers= takes MCPConnection objects, got {server!r}")
        if server.name in seen:
            raise ValueError(f"two MCP servers are named {server.name!r}; names must be unique")
        seen.add(server.name)
    return tuple(servers)


__all__ = ["ServerOwner", "check_servers", "is_group", "open_groups", "opened"]
