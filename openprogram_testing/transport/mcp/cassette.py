"""MCP cassettes: a server's JSON-RPC traffic recorded once, replayed with no server.

An ``MCPCassette`` stands where the server stood: ``MCPConnection("files", cassette)`` (it has
``to_mcp_server()``, so it goes wherever a server goes).  Recording, it connects to the real
server (a URL, a stdio command, an in-process SDK server or a ``FakeMCPServer``, the last two
served over streamable HTTP on loopback so the traffic is real JSON-RPC) and taps the SDK
transport's two streams; replaying, it *is* the transport and answers from the file.

Why at the transport: every MCP client, ours and other frameworks', speaks JSON-RPC messages
over a pair of streams, so one tap sees every transport the same way, and the SDK's own session
logic (handshake, ids, cancellation) runs unchanged against the replay.

Matching (the rules seen working elsewhere): a request matches a recorded one on its method and
its params normalised (``_meta``, which carries progress tokens, protocol and client versions,
is left out; ids are never compared); identical requests replay their recordings in recorded
order; a request nothing matches is answered with a JSON-RPC error saying why (so the run goes
on, as the fake server's strictness does) and fails the test at ``assert_complete()`` with the
closest recorded call and the first difference.  Recorded messages are redacted as provider
cassettes are (``Redactor``: credential-named fields, key shapes, the values given, the
connection's header and environment values), and a file that would still hold a secret is not
written.
"""

from __future__ import annotations

import json
import math
import os
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..cassettes.errors import CassetteError, CassetteLeakError
from ..cassettes.matching import first_json_difference, show
from ..cassettes.redaction import Redactor

FORMAT = "openprogram-mcp-cassette"
VERSION = 1
MAX_FILE_BYTES = 64 * 1024 * 1024
"""A cassette larger than this is refused before it is parsed (as provider cassettes are)."""
MCP_RECORD_MODES = ("none", "once", "all")
"""``none`` replays (a missing file is an error), ``once`` records when the file is missing and
replays otherwise, ``all`` records over it.  vcrpy's ``new_episodes`` has no MCP meaning here:
a server's answers depend on its earlier calls, so mixing a recording with new calls could
replay a state the server never had; it is refused."""
MISS_CODE = -32603
"""The JSON-RPC error code a request no recording matches is answered with (internal error)."""


class MCPCassetteError(CassetteError):
    """An MCP cassette cannot be used as asked (a missing or malformed file, a mode it does not
    have, unplayed calls)."""


class MCPCassetteMiss(MCPCassetteError):
    """A request no recorded call matches: names the request, the closest recorded call and
    the first difference."""


class MCPCassetteLeakError(CassetteLeakError, MCPCassetteError):
    """A secret would have been written to an MCP cassette; nothing was written."""


@dataclass(slots=True)
class MCPInteraction:
    """One recorded request, its answer (``{"result": ...}``, ``{"error": ...}``, or ``None``
    when the server never answered it), and the notifications the server sent after it."""

    method: str
    params: Any
    response: dict[str, Any] | None
    notifications: list[dict[str, Any]] = field(default_factory=list)
    played: bool = False

    def wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"method": self.method}
        if self.params is not None:
            out["params"] = self.params
        out["response"] = self.response
        if self.notifications:
            out["notifications"] = self.notifications
        return out


def normalised(params: Any) -> Any:
    """What a request's params are compared on: without ``_meta`` (progress tokens, protocol
    version, client info and capabilities: what differs between two identical calls)."""
    if isinstance(params, Mapping):
        return {k: v for k, v in params.items() if k != "_meta"}
    return params


def _key(method: str, params: Any) -> str:
    return method + " " + json.dumps(normalised(params), sort_keys=True, ensure_ascii=False)


def _describe(method: str, params: Any) -> str:
    text = json.dumps(normalised(params), ensure_ascii=False, sort_keys=True)
    if len(text) > 200:
        text = text[:197] + "..."
    return f"{method} {text}"


class MCPCassette:
    """An MCP server's recorded traffic, standing in for the server.

    ``path``: the cassette file (JSON).  ``server``: what to record from (a URL, a command as a
    list of strings, ``StdioServerParameters``, an in-process ``mcp`` SDK server, or an object
    with ``to_mcp_server()`` such as ``FakeMCPServer``); needed only to record.  ``mode``: one of
    ``MCP_RECORD_MODES``.  ``headers``, ``env`` and ``cwd`` are given to the server as
    ``MCPConnection`` gives them, and their values are redacted (with ``redact_values``)
    wherever they appear.  ``allow_unplayed``: recorded answers left unplayed do not fail
    ``assert_complete()``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        server: Any = None,
        *,
        mode: str = "none",
        headers: Mapping[str, str] | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        redact_values: Sequence[str] = (),
        allow_unplayed: bool = False,
    ) -> None:
        if mode not in MCP_RECORD_MODES:
            hint = " (re-record with 'all')" if mode == "new_episodes" else ""
            raise MCPCassetteError(
                f"MCP cassette {path}: record mode {mode!r} is not one of "
                f"{', '.join(MCP_RECORD_MODES)}{hint}"
            )
        self.path = Path(path)
        self.server = server
        self.mode = mode
        self.headers = dict(headers or {})
        self.env = dict(env or {})
        self.cwd = cwd
        self.allow_unplayed = allow_unplayed
        self.recording = mode == "all" or (mode == "once" and not self.path.exists())
        if self.recording and server is None:
            raise MCPCassetteError(
                f"MCP cassette {self.path}: recording ({mode!r}"
                + (", and the file does not exist" if mode == "once" else "")
                + ") needs the server to record from: MCPCassette(path, server)"
            )
        self.failures: list[MCPCassetteMiss] = []
        self.interactions: list[MCPInteraction] = []
        self._redactor = Redactor(
            values=[*redact_values, *self.headers.values(), *self.env.values()]
        )
        self._lock = threading.Lock()
        self._index: dict[str, list[int]] = {}
        self._refused: list[str] = []
        self._saved = False
        if not self.recording:
            self.interactions = load_mcp_cassette(self.path)
            for number, interaction in enumerate(self.interactions):
                key = _key(interaction.method, interaction.params)
                self._index.setdefault(key, []).append(number)

    def __repr__(self) -> str:
        what = "recording" if self.recording else "replaying"
        return f"MCPCassette({str(self.path)!r}, {what})"

    # -- the transport ------------------------------------------------------------------------
    def to_mcp_server(self) -> Any:
        """A transport for the SDK's ``Client`` (a new one per connection): the tapped real
        server while recording, the replay otherwise."""
        return self._recording() if self.recording else self._replaying()

    @asynccontextmanager
    async def _recording(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio

        tap = _Recorder(self)
        inner, loopback = await anyio.to_thread.run_sync(_inner_transport, self)
        try:
            async with inner as (read, write):
                yield _Tapped(read, tap.from_server), _Tapped(write, tap.from_client)
        finally:
            if loopback is not None:
                loopback.stop()

    @asynccontextmanager
    async def _replaying(self) -> AsyncIterator[tuple[Any, Any]]:
        import anyio

        to_client, client_reads = anyio.create_memory_object_stream[Any](math.inf)
        client_writes, from_client = anyio.create_memory_object_stream[Any](math.inf)
        async with anyio.create_task_group() as group:
            group.start_soon(self._answer, from_client, to_client)
            try:
                yield client_reads, client_writes
            finally:
                group.cancel_scope.cancel()

    async def _answer(self, from_client: Any, to_client: Any) -> None:
        from mcp.shared.message import SessionMessage
        from mcp_types import jsonrpc_message_adapter

        async with from_client, to_client:
            listen: list[Any] = []
            async for item in from_client:
                message = _dump(item.message)
                if "method" not in message or "id" not in message:
                    continue  # notifications and answers from the client need no answer
                if message["method"] == "subscriptions/listen":
                    listen.append(message["id"])
                for reply in self._replay(message):
                    if listen:
                        reply = _for_subscription(reply, listen[-1])
                    wire = jsonrpc_message_adapter.validate_python(reply)
                    await to_client.send(SessionMessage(wire))

    def _replay(self, message: dict[str, Any]) -> list[dict[str, Any]]:
        """The messages answering one request: its recorded answer (with this request's id)
        and the notifications recorded after it, or a JSON-RPC error for a miss."""
        method = str(message["method"])
        params = self._redacted(message.get("params"))
        with self._lock:
            found = self._take(method, params)
            if found is None:
                miss = MCPCassetteMiss(self._miss(method, params))
                self.failures.append(miss)
                return [
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": MISS_CODE, "message": str(miss)},
                    }
                ]
        out = []
        if found.response is not None:
            out.append({"jsonrpc": "2.0", "id": message["id"], **found.response})
        out.extend({"jsonrpc": "2.0", **n} for n in found.notifications)
        return out

    def _take(self, method: str, params: Any) -> MCPInteraction | None:
        for number in self._index.get(_key(method, params), ()):
            interaction = self.interactions[number]
            if not interaction.played:
                interaction.played = True
                return interaction
        return None

    def _miss(self, method: str, params: Any) -> str:
        sent = _describe(method, params)
        head = f"MCP cassette {self.path}: no recorded call matches {sent}"
        same = [i for i in self.interactions if i.method == method]
        if not same:
            methods = sorted({i.method for i in self.interactions})
            return f"{head}; it recorded no {method} (recorded: {', '.join(methods) or 'nothing'})"
        exact = [i for i in same if _key(i.method, i.params) == _key(method, params)]
        if exact:
            return (
                f"{head}: all {len(exact)} recorded call(s) with these params were played "
                "(the call was repeated more often than when it was recorded)"
            )
        actual = normalised(params)
        best: tuple[tuple[int, int], MCPInteraction, tuple[str, Any, Any]] | None = None
        for interaction in same:
            diff = first_json_difference(normalised(interaction.params), actual, "$.params")
            if diff is None:
                continue
            score = (int(interaction.played), -diff[0].count(".") - diff[0].count("["))
            if best is None or score < best[0]:
                best = (score, interaction, diff)
        assert best is not None
        _, closest, (where, recorded, got) = best
        return (
            f"{head}; the closest recorded call is {_describe(closest.method, closest.params)}"
            f"{' (played already)' if closest.played else ''}, first difference at {where}: "
            f"recorded {show(recorded)}, sent {show(got)}"
        )

    # -- redaction and recording --------------------------------------------------------------
    def _redacted(self, value: Any) -> Any:
        if value is None:
            return None
        return json.loads(self._redactor.body(json.dumps(value, ensure_ascii=False)))

    def _record_request(self, method: str, params: Any) -> MCPInteraction:
        interaction = MCPInteraction(method, self._redacted(params), None)
        with self._lock:
            self.interactions.append(interaction)
        return interaction

    def _refuse(self, reason: str) -> None:
        with self._lock:
            self._refused.append(reason)

    # -- checking and saving ------------------------------------------------------------------
    def assert_complete(self) -> None:
        """Raise the first miss (``MCPCassetteMiss``), else ``MCPCassetteError`` listing the
        recorded answers no request asked for (unless ``allow_unplayed``)."""
        __tracebackhide__ = True
        if self.failures:
            extra = f" (and {len(self.failures) - 1} more)" if len(self.failures) > 1 else ""
            raise MCPCassetteMiss(f"{self.failures[0]}{extra}")
        if self.recording or self.allow_unplayed:
            return
        left = [i for i in self.interactions if not i.played and i.response is not None]
        if left:
            listed = "; ".join(_describe(i.method, i.params) for i in left[:5])
            more = f" (and {len(left) - 5} more)" if len(left) > 5 else ""
            raise MCPCassetteError(
                f"MCP cassette {self.path}: {len(left)} recorded call(s) never made: "
                f"{listed}{more} (allow_unplayed=True if that is expected)"
            )

    def save(self) -> None:
        """Write what was recorded (recording only; once).  Refused, writing nothing, when a
        secret is left in it or the server asked the client something a cassette cannot
        replay."""
        if not self.recording or self._saved:
            return
        self._saved = True
        if self._refused:
            raise MCPCassetteError(f"MCP cassette {self.path} not written: {self._refused[0]}")
        document = {
            "format": FORMAT,
            "version": VERSION,
            "interactions": [i.wire() for i in self.interactions],
        }
        text = json.dumps(document, indent=1, ensure_ascii=False) + "\n"
        leak = self._redactor.leak_in(text)
        if leak is not None:
            raise MCPCassetteLeakError(f"MCP cassette {self.path} not written: it holds {leak}")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(text, encoding="utf-8")

    def close(self) -> None:
        """Save a recording."""
        self.save()

    def __enter__(self) -> MCPCassette:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Recorder:
    """Pairs requests with their answers by id and keeps server notifications with the latest
    request, for one connection."""

    def __init__(self, cassette: MCPCassette) -> None:
        self.cassette = cassette
        self.pending: dict[Any, MCPInteraction] = {}
        self.latest: MCPInteraction | None = None
        self.listen: MCPInteraction | None = None

    def from_client(self, item: Any) -> None:
        message = _dump(item.message)
        if "method" in message and "id" in message:
            interaction = self.cassette._record_request(
                str(message["method"]), message.get("params")
            )
            self.pending[message["id"]] = interaction
            self.latest = interaction
            if interaction.method == "subscriptions/listen":
                self.listen = interaction

    def from_server(self, item: Any) -> None:
        if isinstance(item, BaseException):
            return
        message = _dump(item.message)
        if "method" in message:
            if "id" in message:  # the server asks the client (sampling, roots, elicitation)
                self.cassette._refuse(
                    f"the server sent the request {message['method']}, which an MCP cassette "
                    "cannot replay (only the client's requests are recorded)"
                )
                return
            owner = self.latest
            if message["method"] == "notifications/subscriptions/acknowledged":
                owner = self.listen or owner  # replayed when the listen request is
            if owner is not None:
                note = {k: v for k, v in message.items() if k != "jsonrpc"}
                owner.notifications.append(self.cassette._redacted(note))
            return
        interaction = self.pending.pop(message.get("id"), None)
        if interaction is not None:
            answer = {k: v for k, v in message.items() if k in ("result", "error")}
            interaction.response = self.cassette._redacted(answer)


class _Tapped:
    """One of the transport's streams, every item shown to ``tap`` on its way through."""

    def __init__(self, inner: Any, tap: Any) -> None:
        self.inner = inner
        self.tap = tap

    async def send(self, item: Any) -> None:
        self.tap(item)
        await self.inner.send(item)

    async def receive(self) -> Any:
        item = await self.inner.receive()
        self.tap(item)
        return item

    async def aclose(self) -> None:
        await self.inner.aclose()

    def __aiter__(self) -> _Tapped:
        return self

    async def __anext__(self) -> Any:
        item = await self.inner.__anext__()
        self.tap(item)
        return item

    async def __aenter__(self) -> _Tapped:
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self.inner.__aexit__(*exc)


def _inner_transport(cassette: MCPCassette) -> tuple[Any, Any]:
    """The real server's transport to record through, and the loopback HTTP server serving an
    in-process one (stopped after)."""
    server = cassette.server
    if isinstance(server, list | tuple):
        from mcp import StdioServerParameters

        server = StdioServerParameters(
            command=server[0], args=list(server[1:]), env=cassette.env or None, cwd=cassette.cwd
        )
    from mcp import StdioServerParameters

    if isinstance(server, StdioServerParameters):
        from mcp.client.stdio import stdio_client

        return stdio_client(server), None
    if isinstance(server, str):
        from mcp.client.streamable_http import streamable_http_client

        if not cassette.headers:
            return streamable_http_client(server), None
        import httpx2

        client = httpx2.AsyncClient(
            headers=cassette.headers, timeout=httpx2.Timeout(30.0, read=300.0)
        )
        return streamable_http_client(server, http_client=client), None
    make = getattr(server, "to_mcp_server", None)
    if callable(make):
        server = make()
    memory = in_memory_transport(server)
    if memory is None:
        raise MCPCassetteError(
            f"MCP cassette {cassette.path}: cannot record from {type(server).__name__} (give a "
            "URL, a command, StdioServerParameters, an mcp SDK server or a FakeMCPServer)"
        )
    return memory, None


def in_memory_transport(server: Any) -> Any:
    """The SDK's in-memory JSON-RPC transport to an in-process server (``Server`` or
    ``MCPServer``), or ``None`` for anything else.  Not the SDK client's own in-process path,
    which exchanges no JSON-RPC messages at all (see docs/decisions.md), and not loopback HTTP,
    whose requests a provider cassette recording beside it would record too."""
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer

    if not isinstance(server, Server | MCPServer):
        return None
    from mcp.client._memory import InMemoryTransport  # private: listed in docs/decisions.md

    return InMemoryTransport(server)


SUBSCRIPTION_ID = "io.modelcontextprotocol/subscriptionId"
"""Where a 2026-07-28 notification names its ``subscriptions/listen`` request.  The SDK
numbers those requests per process (``listen-N``), so a replay puts the live request's id in
place of the recorded one."""


def _for_subscription(reply: dict[str, Any], listen: Any) -> dict[str, Any]:
    params = reply.get("params")
    if "method" not in reply or not isinstance(params, dict):
        return reply
    meta = params.get("_meta")
    if not isinstance(meta, dict) or SUBSCRIPTION_ID not in meta:
        return reply
    return {**reply, "params": {**params, "_meta": {**meta, SUBSCRIPTION_ID: listen}}}


def _dump(message: Any) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(mode="json", by_alias=True, exclude_none=True)
    return dumped


# -- the file -------------------------------------------------------------------------------


def load_mcp_cassette(path: str | os.PathLike[str]) -> list[MCPInteraction]:
    """The interactions of the MCP cassette at ``path``; ``MCPCassetteError`` naming the file
    (and the interaction and field) for anything that is not one."""
    path = Path(path)
    try:
        data = _read_regular(path, MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise MCPCassetteError(
            f"MCP cassette {path} does not exist (record it with "
            "--openprogram-record-mode=once, or mode='once')"
        ) from None
    except OSError as exc:
        raise MCPCassetteError(f"MCP cassette {path} cannot be read: {exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise MCPCassetteError(f"MCP cassette {path} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        document = json.loads(data.decode("utf-8"))
    except RecursionError:
        raise MCPCassetteError(f"MCP cassette {path} is nested too deeply") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise MCPCassetteError(f"MCP cassette {path} is not JSON: {exc}") from None
    return parse_mcp_cassette(document, path)


def _read_regular(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file at ``path``, opened without blocking: a FIFO
    or a device named as a cassette is refused where a plain ``open`` would wait forever."""
    import stat

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(f"{path} is not a regular file")
        return handle.read(limit)


def parse_mcp_cassette(document: Any, path: Path) -> list[MCPInteraction]:
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise MCPCassetteError(
            f'MCP cassette {path} is not one (no "format": "{FORMAT}" at its top)'
        )
    if document.get("version") != VERSION:
        raise MCPCassetteError(
            f"MCP cassette {path}: version {document.get('version')!r}, this release reads "
            f"version {VERSION}"
        )
    items = document.get("interactions")
    if not isinstance(items, list):
        raise MCPCassetteError(f"MCP cassette {path}: 'interactions' must be a list")
    out = []
    for number, item in enumerate(items):
        out.append(_interaction(item, f"MCP cassette {path}, interaction {number}"))
    return out


def _interaction(item: Any, where: str) -> MCPInteraction:
    from mcp_types import jsonrpc_message_adapter
    from pydantic import ValidationError

    if not isinstance(item, dict) or not isinstance(item.get("method"), str):
        raise MCPCassetteError(f"{where}: needs a string 'method'")
    params = item.get("params")
    if params is not None and not isinstance(params, dict | list):
        raise MCPCassetteError(f"{where}: 'params' must be an object")
    response = item.get("response")
    if response is not None and (
        not isinstance(response, dict) or len(set(response) & {"result", "error"}) != 1
    ):
        raise MCPCassetteError(f"{where}: 'response' must be null or hold one of result, error")
    notifications = item.get("notifications", [])
    if not isinstance(notifications, list) or not all(
        isinstance(n, dict) and isinstance(n.get("method"), str) for n in notifications
    ):
        raise MCPCassetteError(f"{where}: 'notifications' must be a list of {{method, params}}")
    try:  # what replay will send must be JSON-RPC the client can read
        if response is not None:
            jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", "id": 0, **response})
        for note in notifications:
            jsonrpc_message_adapter.validate_python({"jsonrpc": "2.0", **note})
    except (ValidationError, RecursionError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise MCPCassetteError(f"{where}: not a JSON-RPC answer ({first})") from None
    return MCPInteraction(item["method"], params, response, list(notifications))


__all__ = [
    "FORMAT",
    "MCP_RECORD_MODES",
    "VERSION",
    "MCPCassette",
    "MCPCassetteError",
    "MCPCassetteLeakError",
    "MCPCassetteMiss",
    "MCPInteraction",
    "load_mcp_cassette",
    "normalised",
    "parse_mcp_cassette",
]
