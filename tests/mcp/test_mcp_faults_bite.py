"""The MCP fault meta-test: every MCP fault kind bites on every transport (in-process, stdio,
HTTP) and in a cassette's replay.

The kinds are read from the fault module itself (every ``MCPFault`` subclass), so a new kind
fails here until it has an example below and bites.  For each kind x transport, the same two
runs on one connection (``add`` called in each) are made unfaulted and faulted; the faulted
runs' observable outcome (tools offered, tool results, connects, listings, a connect error)
must differ.  A fault whose call never comes is refused by ``assert_applied()``."""

from __future__ import annotations

import inspect
import sys
import time
from typing import Any

import pytest

from openprogram import Registry, Runtime
from openprogram.mcp import MCPConnectError, MCPConnection
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.mcp import (
    FakeMCPServer,
    MCPCassette,
    MCPCrashAtStart,
    MCPDisconnect,
    MCPFault,
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
from openprogram_testing.transport.mcp import faults as mcp_fault_kinds
from tests.mcp.test_mcp_runtime import SERVER_SCRIPT, SLOW_START_S

KINDS = sorted(
    (
        cls
        for cls in vars(mcp_fault_kinds).values()
        if inspect.isclass(cls)
        and issubclass(cls, MCPFault)
        and cls is not MCPFault
        and not cls.__name__.startswith("_")
    ),
    key=lambda cls: cls.__name__,
)

EXAMPLES: dict[type[MCPFault], MCPFault] = {
    MCPToolError: MCPToolError(call=0, message="disk full"),
    MCPRpcError: MCPRpcError(call=1, code=-32001, message="quota exceeded"),
    MCPStall: MCPStall(call=0),
    MCPDisconnect: MCPDisconnect(call=0),
    MCPOversized: MCPOversized(call=0, chars=2_000_000),
    MCPListChanged: MCPListChanged(call=0),
    MCPToolDisappears: MCPToolDisappears(call=0, gone="shout"),
    MCPSchemaDrift: MCPSchemaDrift(
        tool="add",
        input_schema={
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
        },
    ),
    MCPCrashAtStart: MCPCrashAtStart(),
}
TRANSPORTS = ["in-process", "http", "stdio", "cassette"]


def _fake() -> FakeMCPServer:
    fake = FakeMCPServer("calc")

    @fake.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @fake.tool
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    return fake


def _outcome(server: Any) -> dict[str, Any]:
    """Two runs on one connection, each calling ``add``: what an observer of the agent sees."""
    provider = ScriptedProvider(
        [
            turn(call("calc__add", {"a": 2, "b": 3})),
            "first",
            turn(call("calc__add", {"a": 4, "b": 5})),
            "second",
        ]
    )
    runtime = Runtime(provider, registry=Registry())
    connection = MCPConnection(
        "calc", server, always_load=True, call_timeout_s=1.0, connect_timeout_s=SLOW_START_S
    )
    seen: dict[str, Any] = {}
    try:
        runtime.exec("one", tools=[connection])
        time.sleep(0.3)  # a list change announced after the call lands before the next run
        runtime.exec("two", tools=[connection])
    except MCPConnectError as exc:
        seen["connect_error"] = exc.reason
    finally:
        connection.close()
    seen["offered"] = [
        sorted((t.name, str(t.parameters.get("required"))) for t in r.tools)
        for r in provider.requests
    ]
    seen["results"] = [  # each request's newest message: the result of the round before it
        (m.text[:120], len(m.text), m.is_error)
        for r in provider.requests
        for m in r.messages[-1:]
        if m.role == "toolResult"
    ]
    seen["connects"], seen["listings"] = connection.connects, connection.listings
    return seen


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """transport -> a maker of the server to fault (a fresh one per run) and its baseline."""
    folder = tmp_path_factory.mktemp("mcp-faults")
    recording = folder / "calc.json"
    with MCPCassette(recording, _fake(), mode="all") as cassette:
        _outcome(cassette)
    made: list[FakeMCPServer] = []

    def http() -> str:
        fake = _fake()
        made.append(fake)
        return fake.serve_http()

    makers = {
        "in-process": _fake,
        "http": http,
        "stdio": lambda: [sys.executable, SERVER_SCRIPT],
        "cassette": lambda: MCPCassette(recording, allow_unplayed=True),
    }
    baselines = {name: _outcome(make()) for name, make in makers.items()}
    yield makers, baselines
    for fake in made:
        fake.close()


def test_every_fault_kind_has_an_example() -> None:
    assert KINDS and set(KINDS) == set(EXAMPLES), (
        "an MCP fault kind without an example here: add one that bites"
    )


@pytest.mark.parametrize("transport", TRANSPORTS)
@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.__name__)
def test_every_mcp_fault_bites(servers: Any, kind: type[MCPFault], transport: str) -> None:
    makers, baselines = servers
    faulted = mcp_faults(makers[transport](), EXAMPLES[kind])
    outcome = _outcome(faulted)
    faulted.assert_applied()
    assert outcome != baselines[transport], f"{EXAMPLES[kind]!r} did not bite over {transport}"


def test_the_faults_show_what_they_say(servers: Any) -> None:
    """Over the in-process fake: each fault's effect as the agent sees it."""
    makers, baseline = servers[0], servers[1]["in-process"]
    assert baseline["results"] == [("5", 1, False), ("9", 1, False)]
    seen = {kind: _outcome(mcp_faults(makers["in-process"](), f)) for kind, f in EXAMPLES.items()}
    assert seen[MCPToolError]["results"][0] == ("disk full", 9, True)
    assert seen[MCPRpcError]["results"][1][0] == (
        "[mcp error] calc__add: MCPError: quota exceeded (JSON-RPC error -32001)"
    )
    assert "TimeoutError: no answer within 1s" in seen[MCPStall]["results"][0][0]
    assert "Connection closed" in seen[MCPDisconnect]["results"][0][0]
    assert seen[MCPDisconnect]["connects"] == 2  # the next run connected again
    assert seen[MCPOversized]["results"][0][2] is False
    assert seen[MCPOversized]["results"][0][1] < 200_000  # clipped (max_result_chars)
    assert seen[MCPListChanged]["listings"] == 2
    assert [n for n, _ in seen[MCPToolDisappears]["offered"][2]] == ["calc__add"]
    assert seen[MCPSchemaDrift]["offered"][0][0] == ("calc__add", "['x']")
    assert seen[MCPSchemaDrift]["results"][0][2] is True  # the call no longer fits the schema
    assert "MCPCrashAtStart" in seen[MCPCrashAtStart]["connect_error"]


def test_a_fault_whose_call_never_comes_is_refused() -> None:
    faulted = mcp_faults(_fake(), MCPToolError(call=5))
    _outcome(faulted)
    with pytest.raises(MCPFaultError, match=r"never applied: MCPToolError\(call=5"):
        faulted.assert_applied()


def test_bad_faults_are_refused_when_built() -> None:
    with pytest.raises(MCPFaultError, match="call must be an int >= 0"):
        MCPToolError(call=-1)
    with pytest.raises(MCPFaultError, match="not an MCP fault"):
        mcp_faults(_fake(), "stall")  # type: ignore[arg-type]
    with pytest.raises(MCPFaultError, match="name the tool"):
        MCPSchemaDrift()


def test_an_sdk_server_in_process_is_faulted_over_loopback_http() -> None:
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("calc")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    faulted = mcp_faults(server, MCPToolError(call=1, message="overflow"))
    outcome = _outcome(faulted)
    faulted.assert_applied()
    assert outcome["results"] == [("5", 1, False), ("overflow", 8, True)]


def test_an_unsupported_server_is_refused_naming_what_works() -> None:
    outcome = _outcome(mcp_faults(object(), MCPStall()))
    assert "cannot inject faults into object" in outcome["connect_error"]
