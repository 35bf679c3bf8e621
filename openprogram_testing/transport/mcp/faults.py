"""Faults at the MCP boundary: what a server does wrong, injected into its JSON-RPC traffic.

``mcp_faults(server, *faults)`` stands where the server stood (``MCPConnection(name,
mcp_faults(server, MCPToolError(call=0)))``): it connects to ``server`` (a URL, a stdio
command, ``StdioServerParameters``, an ``mcp`` SDK low-level ``Server``, a ``FakeMCPServer``,
an ``MCPCassette``) and rewrites the messages between client and server.  Doing it in the
transport's streams makes each fault the same on every transport and in a cassette's replay,
and lets the SDK's client react as it would to a real server (its own timeouts, errors,
reconnection).

Faults address the ``call``-th ``tools/call`` of the connection's life (0-based; ``tool=``
counts only the calls of that tool).  A fault whose call never came was not applied:
``assert_applied()`` (the ``mcp_faults`` users' check; the cassette fixture calls it) fails
naming it, so a fault that no longer bites cannot pass silently.
"""

from __future__ import annotations

import math
import threading
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

from .cassette import SUBSCRIPTION_ID, in_memory_transport


class MCPFaultError(AssertionError):
    """A fault was not applied (the call it addresses never came), or cannot be built."""


@dataclass(frozen=True)
class MCPFault:
    """Base of the MCP faults.  ``call``: which ``tools/call`` (0-based) it addresses, counting
    only calls of ``tool`` when given."""

    def describe(self) -> str:
        return repr(self)


@dataclass(frozen=True)
class _AtCall(MCPFault):
    call: int = 0
    tool: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.call, bool) or not isinstance(self.call, int) or self.call < 0:
            raise MCPFaultError(f"{type(self).__name__}: call must be an int >= 0")


@dataclass(frozen=True)
class MCPToolError(_AtCall):
    """The call is answered with an ``isError`` result carrying ``message``."""

    message: str = "tool failed (injected fault)"


@dataclass(frozen=True)
class MCPRpcError(_AtCall):
    """The call is answered with a JSON-RPC error (not a result)."""

    code: int = -32000
    message: str = "server error (injected fault)"


@dataclass(frozen=True)
class MCPStall(_AtCall):
    """The call's answer never arrives (the client's timeout or cancellation ends it)."""


@dataclass(frozen=True)
class MCPDisconnect(_AtCall):
    """The connection drops once the call is sent: no answer, the stream ends."""


@dataclass(frozen=True)
class MCPOversized(_AtCall):
    """The call's answer is ``chars`` characters of text."""

    chars: int = 10_000_000


@dataclass(frozen=True)
class MCPListChanged(_AtCall):
    """The server says its tool list changed, right after answering the call."""


@dataclass(frozen=True)
class MCPToolDisappears(_AtCall):
    """After answering the call, the server drops ``gone`` (default: the called tool) from its
    list, says so, and answers a later call of it with ``Unknown tool``."""

    gone: str | None = None


@dataclass(frozen=True)
class MCPSchemaDrift(MCPFault):
    """The server lists ``tool`` with ``input_schema`` in place of its own (what it lists has
    drifted from what it was built, or scripted, to be called with)."""

    tool: str = ""
    input_schema: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.tool:
            raise MCPFaultError("MCPSchemaDrift: name the tool whose schema drifts")


@dataclass(frozen=True)
class MCPCrashAtStart(MCPFault):
    """The server exits before answering anything: connecting fails."""


class _State:
    """What one faulted server has seen across its connections."""

    def __init__(self, faults: Sequence[MCPFault]) -> None:
        self.faults = list(faults)
        self.applied: set[int] = set()
        self.calls = 0
        self.calls_of: dict[str, int] = {}
        self.gone: set[str] = set()
        self.lock = threading.Lock()

    def at(self, kind: type[Any], tool: str, overall: int, of_tool: int) -> list[tuple[int, Any]]:
        out = []
        for number, fault in enumerate(self.faults):
            if isinstance(fault, kind) and isinstance(fault, _AtCall):
                index = overall if fault.tool is None else of_tool
                if (fault.tool is None or fault.tool == tool) and fault.call == index:
                    out.append((number, fault))
        return out


class MCPFaulted:
    """A server with faults injected into its traffic (see the module docstring)."""

    def __init__(self, server: Any, faults: Sequence[MCPFault]) -> None:
        for fault in faults:
            if not isinstance(fault, MCPFault):
                raise MCPFaultError(f"not an MCP fault: {fault!r}")
        self.server = server
        self.state = _State(faults)

    def __repr__(self) -> str:
        return f"mcp_faults({self.server!r}, {', '.join(map(repr, self.state.faults))})"

    def to_mcp_server(self) -> Any:
        return self._transport()

    def assert_applied(self) -> None:
        """Fail naming every fault whose call never came."""
        __tracebackhide__ = True
        left = [
            fault
            for number, fault in enumerate(self.state.faults)
            if number not in self.state.applied
        ]
        if left:
            raise MCPFaultError(
                f"MCP fault(s) never applied: {', '.join(map(repr, left))} (the run made "
                f"{self.state.calls} tools/call(s)); a fault that does not bite proves nothing"
            )

    @asynccontextmanager
    async def _transport(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio

        state = self.state
        crash = [n for n, f in enumerate(state.faults) if isinstance(f, MCPCrashAtStart)]
        if crash:
            state.applied.update(crash)
            raise ConnectionError("the server exited before answering (MCPCrashAtStart)")
        to_client, client_reads = anyio.create_memory_object_stream[Any](math.inf)
        client_writes, from_client = anyio.create_memory_object_stream[Any](math.inf)
        async with _inner(self.server) as (read, write), anyio.create_task_group() as group:
            pump = _Pump(state, to_client, write)
            group.start_soon(pump.upstream, from_client)
            group.start_soon(pump.downstream, read)
            try:
                yield client_reads, client_writes
            finally:
                group.cancel_scope.cancel()


class _Pump:
    """Moves messages both ways for one connection, applying the faults."""

    def __init__(self, state: _State, to_client: Any, to_server: Any) -> None:
        self.state = state
        self.to_client = to_client
        self.to_server = to_server
        self.pending: dict[Any, tuple[str, int, int]] = {}  # id -> (tool, overall, of tool)
        self.listing: set[Any] = set()
        self.listen: Any = None
        """The id of the client's open ``subscriptions/listen`` request: on a 2026-07-28
        connection list changes are announced on it, so an injected one names it."""

    async def _send_client(self, message: dict[str, Any]) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        await self.to_client.send(
            SessionMessage(jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **message}))
        )

    async def upstream(self, from_client: Any) -> None:
        async with from_client:
            async for item in from_client:
                message = _dump(item.message)
                method = message.get("method")
                if method == "tools/list" and "id" in message:
                    self.listing.add(message["id"])
                if method == "subscriptions/listen" and "id" in message:
                    self.listen = message["id"]
                if method == "tools/call" and "id" in message:
                    tool = str((message.get("params") or {}).get("name"))
                    with self.state.lock:
                        overall = self.state.calls
                        of_tool = self.state.calls_of.get(tool, 0)
                        self.state.calls += 1
                        self.state.calls_of[tool] = of_tool + 1
                        gone = tool in self.state.gone
                        cut = self.state.at(MCPDisconnect, tool, overall, of_tool)
                    if gone:
                        await self._send_client(
                            {
                                "id": message["id"],
                                "error": {"code": -32602, "message": f"Unknown tool: {tool}"},
                            }
                        )
                        continue
                    self.pending[message["id"]] = (tool, overall, of_tool)
                    if cut:
                        self.state.applied.update(n for n, _ in cut)
                        await self.to_server.send(item)
                        await self.to_client.aclose()  # the stream ends: connection lost
                        return
                await self.to_server.send(item)

    async def downstream(self, read: Any) -> None:
        import anyio

        try:
            await self._downstream(read)
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            return  # the client's side was closed (a disconnect fault, or the end)

    async def _downstream(self, read: Any) -> None:
        async with self.to_client:
            async for item in read:
                if isinstance(item, BaseException):
                    await self.to_client.send(item)
                    continue
                message = _dump(item.message)
                key = message.get("id")
                if key in self.listing and "result" in message:
                    self.listing.discard(key)
                    await self._send_client(self._drift(message))
                    continue
                call = self.pending.pop(key, None) if "method" not in message else None
                if call is None:
                    await self.to_client.send(item)
                    continue
                await self._answer(message, *call)

    async def _answer(self, message: dict[str, Any], tool: str, overall: int, of_tool: int) -> None:
        state = self.state
        with state.lock:
            hits = {kind: state.at(kind, tool, overall, of_tool) for kind in _ANSWER_KINDS}
        for found in hits.values():
            state.applied.update(n for n, _ in found)
        if hits[MCPStall]:
            return  # never answered
        reply: dict[str, Any] = {k: v for k, v in message.items() if k != "jsonrpc"}
        # a replaced result keeps the rest of the server's (resultType, _meta): what the
        # client's protocol version requires of a result
        base = {
            k: v
            for k, v in (reply.get("result") or {}).items()
            if k not in ("content", "isError", "structuredContent")
        }
        for _, fault in hits[MCPToolError]:
            error = {**base, "content": [_text(fault.message)], "isError": True}
            reply = {"id": reply["id"], "result": error}
        for _, fault in hits[MCPRpcError]:
            reply = {"id": reply["id"], "error": {"code": fault.code, "message": fault.message}}
        for _, fault in hits[MCPOversized]:
            big: dict[str, Any] = {**base, "content": [_text("x" * fault.chars)]}
            structured = (reply.get("result") or {}).get("structuredContent")
            if structured is not None:  # a tool with an output schema must still carry it
                big["structuredContent"] = structured
            reply = {"id": reply["id"], "result": big}
        await self._send_client(reply)
        for _, fault in hits[MCPToolDisappears]:
            with state.lock:
                state.gone.add(fault.gone or tool)
        if hits[MCPListChanged] or hits[MCPToolDisappears]:
            note: dict[str, Any] = {"method": "notifications/tools/list_changed"}
            if self.listen is not None:
                note["params"] = {"_meta": {SUBSCRIPTION_ID: self.listen}}
            await self._send_client(note)

    def _drift(self, message: dict[str, Any]) -> dict[str, Any]:
        state = self.state
        result = dict(message["result"])
        tools = []
        for listed in result.get("tools") or []:
            name = listed.get("name")
            if name in state.gone:
                continue
            for number, fault in enumerate(state.faults):
                if isinstance(fault, MCPSchemaDrift) and fault.tool == name:
                    listed = {**listed, "inputSchema": fault.input_schema}
                    state.applied.add(number)
            tools.append(listed)
        result["tools"] = tools
        return {"id": message["id"], "result": result}


_ANSWER_KINDS = (
    MCPStall,
    MCPToolError,
    MCPRpcError,
    MCPOversized,
    MCPListChanged,
    MCPToolDisappears,
)


def _text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def _dump(message: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


@asynccontextmanager
async def _inner(server: Any) -> AsyncIterator[tuple[Any, Any]]:
    """The JSON-RPC streams of ``server``: its own transport (URL, command, a cassette), or the
    SDK's in-memory transport to an in-process server."""
    if isinstance(server, list | tuple):
        from mcp import StdioServerParameters

        server = StdioServerParameters(command=server[0], args=list(server[1:]))
    from mcp import StdioServerParameters

    if isinstance(server, StdioServerParameters):
        from mcp.client.stdio import stdio_client

        async with stdio_client(server) as streams:
            yield streams
        return
    if isinstance(server, str):
        from mcp.client.streamable_http import streamable_http_client

        async with streamable_http_client(server) as streams:
            yield streams
        return
    make = getattr(server, "to_mcp_server", None)
    target = make() if callable(make) else server
    memory = in_memory_transport(target)
    if memory is not None:
        target = memory
    if hasattr(target, "__aenter__"):
        async with target as streams:
            yield streams
        return
    raise MCPFaultError(
        f"cannot inject faults into {type(server).__name__}: give a URL, a command, "
        "StdioServerParameters, an mcp SDK server, a FakeMCPServer or an MCPCassette"
    )


def mcp_faults(server: Any, *faults: MCPFault) -> MCPFaulted:
    """``server`` with ``faults`` injected into its traffic; give it to ``MCPConnection``."""
    return MCPFaulted(server, faults)


__all__ = [
    "MCPCrashAtStart",
    "MCPDisconnect",
    "MCPFault",
    "MCPFaultError",
    "MCPFaulted",
    "MCPListChanged",
    "MCPOversized",
    "MCPRpcError",
    "MCPSchemaDrift",
    "MCPStall",
    "MCPToolDisappears",
    "MCPToolError",
    "mcp_faults",
]
