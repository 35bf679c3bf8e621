"""``FakeMCPServer``: an MCP server built from Python functions or a recorded ``tools/list``,
answering from scripts, strict about what it is asked.

It is a real MCP server (the ``mcp`` SDK's low-level ``Server``), so an agent connects to it
as to any other: in-process (``MCPConnection(name, fake)`` or ``fake.connection()``), or over
streamable HTTP on loopback (``fake.serve_http()``), which is how agents on other frameworks reach
it.  Strict like ``ScriptedProvider``: a call of a tool it does not list, with arguments other
than the script expects, or past the script of a tool with no function, is answered with an error
result that says so *and* recorded, and ``assert_complete()`` (the fixture calls it at teardown)
fails naming the call and what was expected; answers scripted and never asked for fail it too.

    fake = FakeMCPServer("files")
    fake.script("read", "hello", arguments={"path": "a.txt"})    # listed from a recording,
    fake.tool(lambda path: "x", name="stat")                       # or from a function
"""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from openprogram.functions import Function
from openprogram_testing.transport.scripted import ScriptError


class MCPScriptError(ScriptError):
    """Base class of the fake MCP server's strictness failures."""


class UnexpectedMCPCall(MCPScriptError):
    """A call the fake server was not scripted for (named, with what was expected)."""


class UnconsumedMCPResults(MCPScriptError):
    """Scripted answers that no call asked for."""


@dataclass(frozen=True, slots=True)
class MCPResult:
    """A ``tools/call`` answer: content blocks (wire dicts), ``structuredContent``, ``isError``."""

    content: Sequence[Mapping[str, Any]] = ()
    structured: Any = None
    is_error: bool = False

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"content": [dict(b) for b in self.content]}
        if self.structured is not None:
            out["structuredContent"] = self.structured
        if self.is_error:
            out["isError"] = True
        return out


@dataclass(frozen=True, slots=True)
class RPCError:
    """Answer a call with a JSON-RPC error (not a result): ``code`` and ``message``."""

    code: int
    message: str


@dataclass(frozen=True, slots=True)
class Stall:
    """Never answer the call (until the client cancels it)."""


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def image(data_b64: str, mime_type: str = "image/png") -> dict[str, Any]:
    return {"type": "image", "data": data_b64, "mimeType": mime_type}


def resource(uri: str, text_value: str, mime_type: str = "text/plain") -> dict[str, Any]:
    return {"type": "resource", "resource": {"uri": uri, "text": text_value, "mimeType": mime_type}}


def tool_error(message: str) -> MCPResult:
    """An ``isError`` result with one text block."""
    return MCPResult([text(message)], is_error=True)


def rpc_error(code: int, message: str) -> RPCError:
    return RPCError(code, message)


STALL = Stall()


@dataclass(slots=True)
class FakeCall:
    """One ``tools/call`` the fake server received, and how it ended."""

    tool: str
    arguments: dict[str, Any]
    outcome: str = "answered"
    """``answered``, ``unexpected``, ``stalled`` or ``cancelled``."""


@dataclass(slots=True)
class _Answer:
    value: Any
    arguments: dict[str, Any] | None


@dataclass(slots=True)
class _Tool:
    listing: dict[str, Any]
    fn: Callable[..., Any] | None = None
    script: deque[_Answer] = field(default_factory=deque)
    played: int = 0


class FakeMCPServer:
    """A strict MCP server for tests.  ``name`` is the name agents know it by (tool names
    ``{name}__{tool}``).  ``tools`` may hold functions (listed with the schema ``@function``
    would give them) and recorded ``tools/list`` entries (dicts with ``name``,
    ``inputSchema``...)."""

    def __init__(self, name: str = "fake", tools: Iterable[Any] = ()) -> None:
        self.name = name
        self.calls: list[FakeCall] = []
        self.failures: list[UnexpectedMCPCall] = []
        self._tools: dict[str, _Tool] = {}
        self._lock = threading.Lock()
        self._server: Any = None
        self._http: list[Any] = []
        self._connections: list[Any] = []
        for entry in tools:
            if isinstance(entry, Mapping):
                self.listed(entry)
            else:
                self.tool(entry)

    @classmethod
    def from_tools_list(cls, name: str, listing: Any) -> FakeMCPServer:
        """A fake listing exactly what a recorded ``tools/list`` result holds (``{"tools":
        [...]}`` or the list itself); answers come from ``script``."""
        tools = listing.get("tools") if isinstance(listing, Mapping) else listing
        if not isinstance(tools, list):
            raise TypeError('a recorded tools/list is {"tools": [...]} or a list of tools')
        return cls(name, tools)

    def __repr__(self) -> str:
        return f"FakeMCPServer({self.name!r}, tools={list(self._tools)})"

    # -- building -----------------------------------------------------------------------------
    def tool(
        self,
        fn: Callable[..., Any] | None = None,
        *,
        name: str | None = None,
        description: str | None = None,
        input_schema: Mapping[str, Any] | None = None,
    ) -> Any:
        """List ``fn`` as a tool (bare or as ``@fake.tool(name=...)``); its return value is the
        answer (see ``script`` for the forms) unless a scripted answer is waiting."""

        def add(target: Callable[..., Any]) -> Callable[..., Any]:
            spec = Function(target, name=name, description=description, parameters=input_schema)
            listing = {
                "name": spec.name,
                "description": spec.spec.description,
                "inputSchema": dict(spec.spec.parameters),
            }
            self._add(_Tool(listing, fn=target))
            return target

        return add(fn) if fn is not None else add

    def listed(self, listing: Mapping[str, Any]) -> None:
        """List a recorded ``tools/list`` entry as it is (its schema is not checked: a fake must
        be able to serve what a broken server serves)."""
        if not isinstance(listing.get("name"), str):
            raise TypeError(f"a listed tool needs a string 'name', got {listing!r}")
        self._add(_Tool(dict(listing)))

    def _add(self, tool: _Tool) -> None:
        with self._lock:
            self._tools[tool.listing["name"]] = tool

    def script(self, tool: str, *answers: Any, arguments: Mapping[str, Any] | None = None) -> None:
        """Queue answers for the next calls of ``tool``, one per call in order.  An answer is a
        ``str`` (one text block), a dict or list (JSON text; a dict is ``structuredContent``
        too), an ``MCPResult``, ``tool_error(...)``, ``rpc_error(code, message)``, ``STALL``, or an
        exception instance (raised, so the SDK answers an error result).  With ``arguments``,
        each of those calls must have exactly these arguments."""
        with self._lock:
            entry = self._tools.get(tool)
            if entry is None:
                raise KeyError(f"{self!r} lists no tool {tool!r}")
            for answer in answers:
                entry.script.append(_Answer(answer, dict(arguments) if arguments else None))

    # -- checking -----------------------------------------------------------------------------
    def assert_complete(self) -> None:
        """Raise the first ``UnexpectedMCPCall``, else ``UnconsumedMCPResults`` listing every
        scripted answer left."""
        __tracebackhide__ = True
        if self.failures:
            extra = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
            raise UnexpectedMCPCall(f"{self.failures[0]}{extra}")
        left = {n: len(t.script) for n, t in self._tools.items() if t.script}
        if left:
            listed = ", ".join(f"{n}: {k}" for n, k in left.items())
            raise UnconsumedMCPResults(
                f"fake MCP server {self.name!r}: scripted answers never asked for ({listed})"
            )

    # -- answering ----------------------------------------------------------------------------
    def _answer(self, tool: str, arguments: dict[str, Any]) -> tuple[FakeCall, Any]:
        """What to answer a call with (decided under the lock, run outside it)."""
        call = FakeCall(tool, arguments)
        with self._lock:
            self.calls.append(call)
            entry = self._tools.get(tool)
            if entry is None:
                return call, self._unexpected(
                    call, f"it lists no tool {tool!r} (listed: {sorted(self._tools)})"
                )
            if entry.script:
                answer = entry.script.popleft()
                entry.played += 1
                if answer.arguments is not None and answer.arguments != arguments:
                    return call, self._unexpected(
                        call, f"the script expected the arguments {_json(answer.arguments)}"
                    )
                return call, answer.value
            if entry.fn is not None:
                return call, _Run(entry.fn)
            return call, self._unexpected(
                call,
                f"its script for {tool!r} is used up ({entry.played} answer(s) played) and it "
                "has no function to run",
            )

    def _unexpected(self, call: FakeCall, expected: str) -> MCPResult:
        call.outcome = "unexpected"
        failure = UnexpectedMCPCall(
            f"fake MCP server {self.name!r} got an unexpected call {call.tool}"
            f"({_json(call.arguments)}): {expected}"
        )
        self.failures.append(failure)
        return tool_error(f"unexpected call: {failure}")

    async def _call(self, tool: str, arguments: dict[str, Any]) -> Any:
        import anyio
        import mcp_types as types
        from mcp import MCPError

        call, answer = self._answer(tool, arguments)
        try:
            if isinstance(answer, _Run):
                answer = await answer.run(arguments)
            if isinstance(answer, Stall):
                call.outcome = "stalled"
                await anyio.sleep_forever()
            if isinstance(answer, RPCError):
                raise MCPError(answer.code, answer.message)
            if isinstance(answer, BaseException):
                raise answer
        except anyio.get_cancelled_exc_class():
            call.outcome = "cancelled"
            raise
        with self._lock:
            entry = self._tools.get(tool)
            listing = entry.listing if entry is not None else {}
        return types.CallToolResult.model_validate(_wrapped(_wire(answer), answer, listing))

    def to_mcp_server(self) -> Any:
        """The SDK ``Server`` answering for this fake (built once; it reads the fake live)."""
        if self._server is not None:
            return self._server
        import mcp_types as types
        from mcp.server import Server

        async def on_list_tools(ctx: Any, params: Any) -> Any:
            with self._lock:
                listings = [t.listing for t in self._tools.values()]
            return types.ListToolsResult.model_validate({"tools": listings})

        async def on_call_tool(ctx: Any, params: Any) -> Any:
            return await self._call(params.name, dict(params.arguments or {}))

        self._server = Server(self.name, on_list_tools=on_list_tools, on_call_tool=on_call_tool)
        return self._server

    # -- serving ------------------------------------------------------------------------------
    def connection(self, **options: Any) -> Any:
        """An ``MCPConnection`` to this fake, in-process (``options`` as ``MCPConnection``'s);
        closed by ``close()``."""
        from openprogram.mcp import MCPConnection

        connection = MCPConnection(self.name, self, **options)
        self._connections.append(connection)
        return connection

    def serve_http(self) -> str:
        """Serve this fake over streamable HTTP on ``127.0.0.1`` (a free port) and return its
        URL (``http://127.0.0.1:{port}/mcp``); stopped by ``close()``."""
        from .http import LoopbackServer

        server = LoopbackServer(self.to_mcp_server())
        self._http.append(server)
        return server.start()

    def close(self) -> None:
        """Close the connections made by ``connection()`` and stop the HTTP servers."""
        for connection in self._connections:
            connection.close()
        for server in self._http:
            server.stop()
        self._connections.clear()
        self._http.clear()


class _Run:
    """A listed function to run for a call (sync ones on a worker thread)."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn

    async def run(self, arguments: dict[str, Any]) -> Any:
        import inspect

        import anyio

        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(**arguments)
        return await anyio.to_thread.run_sync(lambda: self.fn(**arguments))


def _wire(answer: Any) -> dict[str, Any]:
    """A ``CallToolResult`` (wire form) from a scripted answer or a function's return value."""
    if isinstance(answer, MCPResult):
        return answer.wire()
    if isinstance(answer, str):
        return {"content": [text(answer)]}
    if answer is None:
        return {"content": []}
    if isinstance(answer, dict):
        return {"content": [text(_json(answer))], "structuredContent": answer}
    return {"content": [text(_json(answer))]}


def _wrapped(wire: dict[str, Any], answer: Any, listing: Mapping[str, Any]) -> dict[str, Any]:
    """``wire`` with the structured content a tool listed with an output schema must carry
    (the SDK's client refuses an answer without it): a plain answer (text, a list, a number) of
    a tool whose output schema is the SDK's wrapped form, one ``result`` property, becomes
    ``{"result": answer}``, as ``MCPServer`` sends it.  Other answers are served as scripted."""
    schema = listing.get("outputSchema")
    if "structuredContent" in wire or wire.get("isError") or not isinstance(schema, Mapping):
        return wire
    properties = schema.get("properties")
    if isinstance(answer, MCPResult | dict) or answer is None:
        return wire
    if isinstance(properties, Mapping) and list(properties) == ["result"]:
        return {**wire, "structuredContent": {"result": answer}}
    return wire


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        return repr(value)


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
