"""``MCPConnection``: one MCP server, connected once, its tools offered to every run.

Why a thread of its own: the SDK's ``Client`` holds anyio task groups that must be entered and
left by one task on one event loop, while runs come from anywhere (``Runtime.exec`` on the calling
thread's loop, ``aexec`` on the caller's, tool bodies on helper threads).  So each connection
keeps a supervisor task on a private event loop in a daemon thread (as upstream keeps one per
server); every request is handed to that loop and awaited from the caller's loop.  The caller
owns the time limits: a call that gets no answer in ``call_timeout_s`` ends in an error result
even if the server (or an in-process server blocking its loop) never answers, and the request
is cancelled on the server's side, as it is when the run is cancelled.

``import openprogram.mcp`` does not import the ``mcp`` SDK: it is imported on the connection's
thread when it first connects.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import threading
import weakref
from collections.abc import Coroutine, Mapping
from typing import Any, Literal, TypeVar

from ..tools import AgentTool, ToolResult, json_schema_validator
from ..types import ToolSpec
from .convert import (
    ListedTool,
    SkippedTool,
    check_server_name,
    convert_result,
    error_text,
    listed_tools,
)

T = TypeVar("T")

DEFAULT_CONNECT_TIMEOUT_S = 10.0
DEFAULT_CALL_TIMEOUT_S = 60.0
DEFAULT_MAX_RESULT_CHARS = 100_000
DEFAULT_MAX_TOOLS = 1000
_MAX_PAGES = 1000
_CLOSE_GRACE_S = 5.0
"""How long ``close`` waits for the server to shut down (a stdio server is sent EOF, then
terminated by the SDK) before leaving the daemon thread behind."""


class MCPConnectError(ConnectionError):
    """A server could not be connected, or its tool list read: it crashed, never answered
    ``initialize`` within ``connect_timeout_s``, or answered something unusable.  Carries the
    ``server`` name and the ``reason``."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server!r}: {reason}")


_OPEN: weakref.WeakSet[MCPConnection] = weakref.WeakSet()


@atexit.register
def _close_open_connections() -> None:
    """A connection left open at exit is closed, so no server subprocess outlives the program."""
    for connection in list(_OPEN):
        connection.close()


class MCPConnection:
    """An MCP server as a group of loop tools named ``{name}__{tool}``.

    ``server`` is what to connect to: an ``http(s)://`` URL (streamable HTTP; ``headers`` are
    sent with every request), a command as a list of strings (a stdio subprocess; ``env`` is
    added to the SDK's default environment, ``cwd`` is its working directory), an in-process
    server object of the ``mcp`` SDK (``mcp.server.Server`` or ``MCPServer``), any other object
    the SDK's ``Client`` accepts (``StdioServerParameters``, a transport), or an object with a
    ``to_mcp_server()`` method returning one of those.  ``mode="legacy"`` forces the
    ``initialize`` handshake of 2025-era servers (the default ``"auto"`` asks the server first and
    falls back to it).

    Offer it as a tool entry (``runtime.exec(..., tools=[connection])``) or attach it to a
    ``Runtime(mcp_servers=[...])`` for the toolsets ``mcp`` and ``mcp:{name}``.  It connects on
    first use (or ``connect()``), keeps one connection for every later run, re-reads the tool
    list at the next run after the server says it changed, and closes with ``close()`` / ``async
    with`` / the ``Runtime`` it is attached to.  Tools whose schema is unusable are left out and
    listed in ``skipped``.
    """

    def __init__(
        self,
        name: str,
        server: Any,
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        headers: Mapping[str, str] | None = None,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        call_timeout_s: float = DEFAULT_CALL_TIMEOUT_S,
        max_result_chars: int = DEFAULT_MAX_RESULT_CHARS,
        max_tools: int = DEFAULT_MAX_TOOLS,
        always_load: bool = False,
        mode: Literal["auto", "legacy"] = "auto",
    ) -> None:
        self.name = check_server_name(name)
        if isinstance(server, str) and not server.startswith(("http://", "https://")):
            raise TypeError(
                f"MCP server {name!r}: a string is a streamable-HTTP URL (http:// or https://); "
                f"give a command as a list of strings, got {server!r}"
            )
        if isinstance(server, list | tuple) and (
            not server or not all(isinstance(part, str) for part in server)
        ):
            raise TypeError(f"MCP server {name!r}: a command is a non-empty list of strings")
        for label, value in (
            ("connect_timeout_s", connect_timeout_s),
            ("call_timeout_s", call_timeout_s),
        ):
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise ValueError(f"{label} must be a number > 0, got {value!r}")
        if mode not in ("auto", "legacy"):
            raise ValueError(f"mode must be 'auto' or 'legacy', got {mode!r}")
        for label, count in (("max_result_chars", max_result_chars), ("max_tools", max_tools)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"{label} must be an int >= 1, got {count!r}")
        self.server = server
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.headers = dict(headers) if headers is not None else None
        self.connect_timeout_s = float(connect_timeout_s)
        self.call_timeout_s = float(call_timeout_s)
        self.max_result_chars = max_result_chars
        self.max_tools = max_tools
        self.always_load = always_load
        self.mode = mode
        self.skipped: tuple[SkippedTool, ...] = ()
        """Listed tools left off the menu at the last listing, each with its reason."""
        self.connects = 0
        """How many times a connection was made (one for every run until it is closed or
        lost)."""
        self.listings = 0
        """How many times the tool list was read (once, then after each change)."""
        self._lock = threading.Lock()
        self._session: _Session | None = None
        self._tools: list[AgentTool] | None = None
        self._stale = True

    def __repr__(self) -> str:
        return f"MCPConnection({self.name!r})"

    # -- lifecycle ----------------------------------------------------------------------------
    @property
    def connected(self) -> bool:
        session = self._session
        return session is not None and session.alive

    async def aconnect(self) -> None:
        """Connect now (a no-op when connected); ``MCPConnectError`` when the server crashes or
        does not answer ``initialize`` within ``connect_timeout_s``."""
        await asyncio.wrap_future(self._connect_future())

    def connect(self) -> None:
        """Sync twin of ``aconnect``; safe on any thread, with or without a running loop."""
        self._connect_future().result()

    def _connect_future(self) -> concurrent.futures.Future[None]:
        with self._lock:
            session = self._session
            if session is None or session.ended:
                session = self._session = _Session(self)
                self._stale = True
                _OPEN.add(self)
            return session.ready_within(self.connect_timeout_s)

    async def aclose(self) -> None:
        """Close the connection (a stdio server is shut down).  A later run connects again."""
        await asyncio.get_running_loop().run_in_executor(None, self.close)

    def close(self) -> None:
        """Sync twin of ``aclose``."""
        with self._lock:
            session, self._session = self._session, None
            self._tools = None
        _OPEN.discard(self)
        if session is not None:
            session.close()

    async def __aenter__(self) -> MCPConnection:
        await self.aconnect()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def __enter__(self) -> MCPConnection:
        self.connect()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- tools --------------------------------------------------------------------------------
    async def menu_tools(self) -> list[AgentTool]:
        """The tools a run starting now is offered: listed at the first run and again after the
        server said its list changed (a run's menu never changes while it runs)."""
        await self.aconnect()
        session = self._session
        if self._tools is not None and not self._stale:
            return self._tools
        if session is None:  # closed meanwhile
            raise MCPConnectError(self.name, "the connection was closed")
        self._stale = False
        try:
            raw = await session.run(session.list_tools(self.max_tools), self.connect_timeout_s)
        except MCPConnectError:
            self._stale = True
            raise
        except Exception as exc:  # a listing the SDK refused, a lost connection, a timeout
            self._stale = True
            if _closed(exc):
                self._forget(session)
            raise MCPConnectError(self.name, f"tools/list failed: {_reason(exc)}") from exc
        except BaseException:
            self._stale = True
            raise
        self.listings += 1
        listed, skipped = listed_tools(self.name, raw)
        self.skipped = tuple(skipped)
        tools = [self._agent_tool(t) for t in listed]
        self._tools = tools
        return tools

    def _forget(self, session: _Session | None) -> None:
        """The server went away under ``session`` (a stdio server that exited, an HTTP server
        that closed the session): drop it, so the next run connects again, and shut it down off
        the caller's loop."""
        with self._lock:
            if session is None or self._session is not session:
                return
            self._session = None
            self._stale = True
        threading.Thread(target=session.close, daemon=True).start()

    def tools_changed(self) -> None:
        """Re-read the tool list at the next run (the server sent ``list_changed``)."""
        self._stale = True

    def _agent_tool(self, listed: ListedTool) -> AgentTool:
        name, remote = listed.name, listed.remote_name

        async def execute(arguments: dict[str, Any]) -> ToolResult:
            return await self.call(remote, arguments, name=name)

        return AgentTool(
            spec=ToolSpec(name=name, description=listed.description, parameters=listed.parameters),
            execute=execute,
            validate=json_schema_validator(listed.parameters),
            is_async=True,
            source=self,
            meta={
                "mcp_server": self.name,
                "mcp_tool": remote,
                "toolsets": ("mcp", f"mcp:{self.name}"),
                "always_load": self.always_load or listed.always_load,
                # Layer 6: deferred unless the server's config or the tool's own ``_meta``
                # says to load it always (upstream's default for MCP tools).
                "defer": not (self.always_load or listed.always_load),
                "search_hint": listed.search_hint,
            },
        )

    async def call(
        self, remote: str, arguments: Mapping[str, Any], *, name: str | None = None
    ) -> ToolResult:
        """Call the server's tool ``remote``; every failure (no connection, a JSON-RPC error, no
        answer in ``call_timeout_s``) is an error result ``[mcp error] {name}: {Type}: {why}``.
        Cancelling the awaiting task cancels the request on the server."""
        label = name or f"{self.name}__{remote}"
        session = None
        try:
            await self.aconnect()
            session = self._session
            if session is None:
                raise MCPConnectError(self.name, "the connection was closed")
            raw = await session.run(
                session.call_tool(remote, dict(arguments)),
                self.call_timeout_s,
                what=f"no answer within {self.call_timeout_s:g}s",
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            if _closed(exc):
                self._forget(session)
            return ToolResult(
                content=error_text(label, *_described(exc)),
                details={"mcp_server": self.name, "mcp_tool": remote},
                is_error=True,
            )
        return convert_result(self.name, remote, raw, self.max_result_chars)


class _Lost(Exception):
    """The connection ended while a request was waiting for its answer."""


def _described(exc: Exception) -> tuple[str, str]:
    """``(type name, message)`` an error result shows: the SDK's ``MCPError`` (a JSON-RPC error
    answer) as its message and code, anything else as ``str(exc)``."""
    kind = type(exc).__name__
    message = getattr(exc, "message", None)
    if kind == "MCPError" and isinstance(message, str):
        return kind, f"{message} (JSON-RPC error {getattr(exc, 'code', None)})"
    return kind, str(exc) or "(no message)"


class _Session:
    """One connection's thread, loop and supervisor task (a new one after each close)."""

    def __init__(self, owner: MCPConnection) -> None:
        self.owner = owner
        self.name = owner.name
        self.loop = asyncio.new_event_loop()
        self.ready: concurrent.futures.Future[None] = concurrent.futures.Future()
        self.client: Any = None
        self.ended = False
        self.lost: BaseException | None = None
        self._closing: asyncio.Event | None = None
        self._supervisor: asyncio.Task[None] | None = None
        self._thread = threading.Thread(
            target=self._serve, name=f"openprogram-mcp-{owner.name}", daemon=True
        )
        self._thread.start()

    @property
    def alive(self) -> bool:
        return self.ready.done() and self.ready.exception() is None and not self.ended

    def ready_within(self, timeout: float) -> concurrent.futures.Future[None]:
        """``ready``, failed with ``MCPConnectError`` if not connected within ``timeout``."""
        if self.ready.done():
            return self.ready
        timer = threading.Timer(timeout, self._give_up, (timeout,))
        timer.daemon = True
        timer.start()
        self.ready.add_done_callback(lambda _: timer.cancel())
        return self.ready

    def _give_up(self, timeout: float) -> None:
        reason = f"no answer to initialize within {timeout:g}s (connect_timeout_s)"
        if _settle(self.ready, MCPConnectError(self.name, reason)):
            self.close()

    def _serve(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_until_complete(self._supervise())
        finally:
            self.ended = True
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.wait(pending, timeout=_CLOSE_GRACE_S))
            self.loop.close()

    async def _supervise(self) -> None:
        self._closing = asyncio.Event()
        self._supervisor = asyncio.current_task()
        try:
            try:
                from mcp import Client
            except ImportError as exc:
                raise MCPConnectError(
                    self.name,
                    f"the mcp extra is not installed ({exc.name} is missing): "
                    'pip install "openprogram-loop[mcp]"',
                ) from None
            target = _client_target(self.owner)
            client = Client(
                target, message_handler=self._on_message, cache=None, mode=self.owner.mode
            )
            async with client:
                self.client = client
                self.owner.connects += 1
                if not _settle(self.ready, None):
                    return  # given up on meanwhile
                listening = asyncio.create_task(self._listen(client))
                try:
                    await self._closing.wait()
                finally:
                    listening.cancel()
                    await asyncio.gather(listening, return_exceptions=True)
        except asyncio.CancelledError:
            _settle(self.ready, MCPConnectError(self.name, "the connection was closed"))
        except BaseException as exc:
            if not _settle(self.ready, MCPConnectError(self.name, _reason(exc))):
                self.lost = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            self.client = None
            self.owner.tools_changed()

    async def _listen(self, client: Any) -> None:
        """Mark the tool list stale on each change event: on a 2026-07-28 connection a server
        announces changes only on a ``subscriptions/listen`` stream (older ones send
        ``notifications/tools/list_changed``, seen by ``_on_message``).  A server that has no
        such stream (or an older protocol) is simply not listened to."""
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self.owner.tools_changed()
        except Exception:  # no stream: list changes then come as notifications, if at all
            return

    async def _on_message(self, message: Any) -> None:
        method = getattr(message, "method", None)
        if method == "notifications/tools/list_changed":
            self.owner.tools_changed()

    def close(self) -> None:
        """Ask the supervisor to leave the ``Client`` (shutting the server down) and wait for
        the thread, at most ``_CLOSE_GRACE_S``."""
        if not self.loop.is_closed():
            try:
                self.loop.call_soon_threadsafe(self._stop)
            except RuntimeError:  # the loop closed meanwhile
                pass
        if threading.current_thread() is not self._thread:
            self._thread.join(_CLOSE_GRACE_S)

    def _stop(self) -> None:
        # Connected: leave the ``Client`` the graceful way.  Still connecting: cancel the
        # handshake (an event would only be looked at after it).
        if self.client is not None and self._closing is not None:
            self._closing.set()
        elif self._supervisor is not None:
            self._supervisor.cancel()

    async def run(self, coro: Coroutine[Any, Any, T], timeout: float, *, what: str = "") -> T:
        """Run ``coro`` on this session's loop, awaited from the caller's loop for at most
        ``timeout`` seconds (then cancelled there, which cancels the request)."""
        try:
            future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        except RuntimeError:  # the loop has closed
            coro.close()
            raise _Lost(f"the connection to {self.name!r} has ended") from None
        wrapped = asyncio.wrap_future(future)
        try:
            return await asyncio.wait_for(wrapped, timeout)
        except TimeoutError:
            raise TimeoutError(what or f"no answer within {timeout:g}s") from None
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise
            reason = f": {_reason(self.lost)}" if self.lost is not None else ""
            raise _Lost(f"the connection to {self.name!r} ended{reason}") from None

    async def list_tools(self, max_tools: int) -> list[dict[str, Any]]:
        client = self._client()
        tools: list[dict[str, Any]] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await client.list_tools(cursor=cursor)
            tools.extend(t.model_dump(mode="json", by_alias=True) for t in page.tools)
            if len(tools) > max_tools:
                raise MCPConnectError(
                    self.name,
                    f"lists more than max_tools={max_tools} tools (raise max_tools= to offer "
                    "them all)",
                )
            cursor = page.next_cursor
            if cursor is None:
                return tools
        raise MCPConnectError(self.name, f"tools/list did not end after {_MAX_PAGES} pages")

    async def call_tool(self, remote: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result = await self._client().call_tool(remote, arguments)
        dumped: dict[str, Any] = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        return dumped

    def _client(self) -> Any:
        if self.client is None:
            raise _Lost(f"the connection to {self.name!r} has ended")
        return self.client


def _client_target(owner: MCPConnection) -> Any:
    """What the SDK's ``Client`` connects to, from what the user gave."""
    server = owner.server
    make = getattr(server, "to_mcp_server", None)
    if callable(make):
        server = make()
    if isinstance(server, str):
        if not owner.headers:
            return server
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        # the SDK's own defaults for MCP (30 s to connect and write, 300 s to read a stream)
        timeout = httpx2.Timeout(30.0, read=300.0)
        client = httpx2.AsyncClient(headers=owner.headers, timeout=timeout)
        return streamable_http_client(server, http_client=client)
    from mcp import StdioServerParameters
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if isinstance(server, list | tuple):
        return StdioServerParameters(
            command=server[0], args=list(server[1:]), env=owner.env, cwd=owner.cwd
        )
    if isinstance(server, Server | MCPServer | StdioServerParameters) or (
        hasattr(server, "__aenter__") and hasattr(server, "__aexit__")
    ):
        return server
    raise TypeError(
        f"{type(server).__name__} is not an MCP server: expected a URL, a command (a list of "
        "strings), an mcp SDK server (Server, MCPServer), StdioServerParameters, a transport, "
        "or an object with to_mcp_server()"
    )


def _closed(exc: Exception) -> bool:
    """Whether ``exc`` says the connection itself is gone (the SDK's ``CONNECTION_CLOSED``
    error, or a session whose loop has ended)."""
    if isinstance(exc, _Lost):
        return True
    if type(exc).__name__ != "MCPError":
        return False
    from mcp_types import CONNECTION_CLOSED

    return getattr(exc, "code", None) == CONNECTION_CLOSED


def _reason(exc: BaseException) -> str:
    """A short, flat account of a connection failure: anyio's exception groups are unwrapped
    to the first real cause."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MCPConnectError):
        return exc.reason
    text = str(exc) or "(no message)"
    return f"{type(exc).__name__}: {text}"


def _settle(future: concurrent.futures.Future[None], outcome: BaseException | None) -> bool:
    """Settle ``future`` once; ``False`` if it was settled already."""
    try:
        if outcome is None:
            future.set_result(None)
        else:
            future.set_exception(outcome)
    except concurrent.futures.InvalidStateError:
        return False
    return True


__all__ = [
    "DEFAULT_CALL_TIMEOUT_S",
    "DEFAULT_CONNECT_TIMEOUT_S",
    "DEFAULT_MAX_RESULT_CHARS",
    "DEFAULT_MAX_TOOLS",
    "MCPConnectError",
    "MCPConnection",
]
