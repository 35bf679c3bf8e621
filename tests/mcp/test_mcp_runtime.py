"""MCP servers as loop tools, end to end: an agent (``@agentic_function`` running
``Runtime.exec``, a scripted model) calls MCP tools on a real in-process SDK server, a stdio
subprocess, a fake server in-process and over HTTP on loopback; errors, timeouts, cancellation,
servers that crash or never answer, name collisions, list changes, toolsets and lifecycle."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import Context, MCPServer

from openprogram import CancelledRun, CancelToken, Registry, Runtime, agentic_function, function
from openprogram.mcp import MCPConnectError, MCPConnection
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.mcp import STALL, rpc_error, tool_error

SERVER_SCRIPT = str(Path(__file__).with_name("stdio_server.py"))
SLOW_START_S = 90.0
"""A stdio server imports the SDK before it answers: seconds on a loaded machine."""


def demo_server() -> MCPServer:
    server = MCPServer("demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    async def grow(ctx: Context) -> str:
        """Add the tool `extra` and announce the change."""

        def extra() -> str:
            """A tool that appears later."""
            return "extra"

        server.add_tool(extra)
        await ctx.notify_tools_changed()
        return "grown"

    return server


def agent(registry: Registry, tools: list[Any]) -> Any:
    """An agent whose body asks the model with the MCP tools given."""

    @agentic_function(registry=registry)
    def solve(task: str, runtime: Runtime) -> str:
        """Solve a task with the MCP tools."""
        return runtime.exec(task, tools=tools)

    return solve


def results(provider: ScriptedProvider, request: int = -1) -> list[Any]:
    return [m for m in provider.requests[request].messages if m.role == "toolResult"]


def test_an_agent_calls_a_real_in_process_sdk_server() -> None:
    with MCPConnection("demo", demo_server(), always_load=True) as demo:
        provider = ScriptedProvider(
            [
                turn(call("solve", {"task": "add 2 and 3"})),
                turn(call("demo__add", {"a": 2, "b": 3})),
                turn("5"),
                turn("It is 5."),
            ]
        )
        registry = Registry()
        solve = agent(registry, [demo])
        runtime = Runtime(provider, registry=registry)
        assert runtime.exec("What is 2+3?", tools=[solve]) == "It is 5."
        inner = provider.requests[1]
        offered = {t.name: t for t in inner.tools}
        assert set(offered) == {"demo__add", "demo__grow"}
        assert offered["demo__add"].description == "Add two integers."
        assert offered["demo__add"].parameters["required"] == ["a", "b"]
        (answer,) = results(provider, 2)
        assert answer.tool_name == "demo__add" and answer.text == "5" and not answer.is_error
        assert answer.details == {
            "mcp_server": "demo",
            "mcp_tool": "add",
            "structured": {"result": 5},
        }
        provider.assert_complete()


def test_a_stdio_subprocess_server_is_called_and_shut_down() -> None:
    server = MCPConnection(
        "calc", [sys.executable, SERVER_SCRIPT], connect_timeout_s=SLOW_START_S, always_load=True
    )
    provider = ScriptedProvider(
        [turn(call("calc__add", {"a": 40, "b": 2}), call("calc__shout", {"text": "hi"})), "done"]
    )
    runtime = Runtime(provider, registry=Registry())
    try:
        assert runtime.exec("go", tools=[server]) == "done"
        assert [m.text for m in results(provider)] == ["42", "HI"]
        assert server.connected
    finally:
        server.close()
    assert not server.connected


def test_a_fake_server_over_http_on_loopback(fake_mcp_server: Any) -> None:
    fake = fake_mcp_server("files")

    @fake.tool
    def read(path: str) -> str:
        """Read a file."""
        return f"contents of {path}"

    url = fake.serve_http()
    assert url.startswith("http://127.0.0.1:")
    with MCPConnection("files", url, always_load=True) as files:
        provider = ScriptedProvider([turn(call("files__read", {"path": "a.txt"})), "ok"])
        assert Runtime(provider, registry=Registry()).exec("read", tools=[files]) == "ok"
    assert [m.text for m in results(provider)] == ["contents of a.txt"]
    assert [(c.tool, c.arguments) for c in fake.calls] == [("read", {"path": "a.txt"})]


def test_errors_reach_the_model_as_error_results(fake_mcp_server: Any) -> None:
    fake = fake_mcp_server("files")
    fake.listed({"name": "stat", "inputSchema": {"type": "object"}})
    fake.script(
        "stat", tool_error("no such file"), rpc_error(-32000, "disk on fire"), ValueError("bad")
    )
    provider = ScriptedProvider([turn(*[call("files__stat", {}) for _ in range(3)]), "ok"])
    with fake.connection(always_load=True) as files:
        Runtime(provider, registry=Registry()).exec("go", tools=[files])
    errored, rpc, raised = results(provider)
    assert errored.is_error and errored.text == "no such file"
    assert rpc.is_error
    assert rpc.text == "[mcp error] files__stat: MCPError: disk on fire (JSON-RPC error -32000)"
    assert rpc.details == {"mcp_server": "files", "mcp_tool": "stat"}
    assert raised.is_error and raised.text.startswith("[mcp error] files__stat: MCPError: ")


def _wait_for(predicate: Any, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.01)
    return predicate()


def test_a_never_answering_tool_ends_in_an_error_result_and_is_cancelled_on_the_server(
    fake_mcp_server: Any,
) -> None:
    fake = fake_mcp_server("slow")
    fake.listed({"name": "wait", "inputSchema": {"type": "object"}})
    fake.script("wait", STALL)
    provider = ScriptedProvider([turn(call("slow__wait", {})), "gave up"])
    with fake.connection(always_load=True, call_timeout_s=0.5) as slow:
        slow.connect()
        started = time.monotonic()
        assert Runtime(provider, registry=Registry()).exec("go", tools=[slow]) == "gave up"
        assert time.monotonic() - started < 5
    (answer,) = results(provider)
    assert answer.is_error
    assert answer.text == "[mcp error] slow__wait: TimeoutError: no answer within 0.5s"
    assert _wait_for(lambda: fake.calls[0].outcome == "cancelled")


def test_cancelling_the_run_cancels_the_call_on_the_server(fake_mcp_server: Any) -> None:
    fake = fake_mcp_server("slow")
    fake.listed({"name": "wait", "inputSchema": {"type": "object"}})
    fake.script("wait", STALL)
    url = fake.serve_http()
    token = CancelToken()
    provider = ScriptedProvider([turn(call("slow__wait", {}))])

    def cancel_once_stalled() -> None:
        _wait_for(lambda: bool(fake.calls) and fake.calls[0].outcome == "stalled")
        token.cancel("user")

    with MCPConnection("slow", url, always_load=True) as slow:
        threading.Thread(target=cancel_once_stalled, daemon=True).start()
        with pytest.raises(CancelledRun):
            Runtime(provider, registry=Registry(), cancel=token).exec("go", tools=[slow])
    assert _wait_for(lambda: fake.calls[0].outcome == "cancelled")


@pytest.mark.parametrize(
    ("mode", "timeout", "reason"),
    [
        ("crash", SLOW_START_S, "Connection closed"),
        ("silent", 2.0, "no answer to initialize within 2s"),
        ("garbage", 2.0, "no answer to initialize within 2s"),
    ],
)
def test_a_server_that_crashes_or_never_answers_fails_at_connect_time(
    mode: str, timeout: float, reason: str
) -> None:
    server = MCPConnection(
        "broken", [sys.executable, SERVER_SCRIPT, mode], connect_timeout_s=timeout
    )
    provider = ScriptedProvider(["never asked"])
    started = time.monotonic()
    with pytest.raises(MCPConnectError, match=reason) as caught:
        Runtime(provider, registry=Registry()).exec("go", tools=[server])
    assert time.monotonic() - started < timeout + 10
    assert caught.value.server == "broken"
    assert provider.requests == []  # refused before any model call
    server.close()


def test_one_connection_serves_every_run_and_a_list_change_shows_at_the_next_run() -> None:
    with MCPConnection("demo", demo_server(), always_load=True) as demo:
        provider = ScriptedProvider(
            [turn(call("demo__grow", {})), "grown", turn(call("demo__extra", {})), "extra"]
        )
        runtime = Runtime(provider, registry=Registry())
        assert runtime.exec("grow", tools=[demo]) == "grown"
        first, after_call = provider.requests[0].tools, provider.requests[1].tools
        assert [t.name for t in first] == ["demo__add", "demo__grow"]
        assert after_call == first  # a run's menu is fixed when it starts
        assert _wait_for(lambda: demo._stale)
        assert runtime.exec("extra", tools=[demo]) == "extra"
        assert [t.name for t in provider.requests[2].tools] == [
            "demo__add",
            "demo__grow",
            "demo__extra",
        ]
        assert results(provider)[-1].text == "extra"
        assert demo.connects == 1 and demo.listings == 2


def test_toolsets_and_the_runtime_closing_its_servers(fake_mcp_server: Any) -> None:
    files, search = fake_mcp_server("files"), fake_mcp_server("search")
    files.tool(lambda path: path, name="read", description="Read.")
    search.tool(lambda query: query, name="find", description="Find.")
    registry = Registry()

    @function(registry=registry)
    def local() -> str:
        """A plain tool."""
        return "local"

    provider = ScriptedProvider(["a", "b", "c"])
    with Runtime(
        provider,
        registry=registry,
        mcp_servers=[
            files.connection(always_load=True),
            search.connection(always_load=True),
        ],
    ) as runtime:
        runtime.exec("x", toolset="mcp")
        runtime.exec("x", toolset="mcp:search")
        runtime.exec("x")
        with pytest.raises(ValueError, match=r"no MCP server named 'nope'.*'files', 'search'"):
            runtime.exec("x", toolset="mcp:nope")
        connections = runtime.mcp_servers
        assert all(c.connected for c in connections)
    assert not any(c.connected for c in connections)
    names = [[t.name for t in r.tools] for r in provider.requests]
    assert names == [
        ["files__read", "search__find"],
        ["search__find"],
        ["local", "files__read", "search__find"],
    ]


def test_name_collisions_are_errors_naming_both(fake_mcp_server: Any) -> None:
    clash = fake_mcp_server("clash")
    clash.listed({"name": "a.b", "inputSchema": {"type": "object"}})
    clash.listed({"name": "a_b", "inputSchema": {"type": "object"}})
    with (
        clash.connection(always_load=True) as server,
        pytest.raises(ValueError) as caught,
    ):
        Runtime(ScriptedProvider(), registry=Registry()).exec("x", tools=[server])
    assert str(caught.value) == (
        "MCP server 'clash' lists tools 'a.b' and 'a_b', which both become the tool name 'clash__a_b'"
    )

    files = fake_mcp_server("files")
    files.tool(lambda: "", name="read")

    @function(registry=Registry(), name="files__read")
    def impostor() -> str:
        """Same name as an MCP tool."""
        return ""

    with (
        files.connection(always_load=True) as server,
        pytest.raises(ValueError) as caught,
    ):
        Runtime(ScriptedProvider(), registry=Registry()).exec("x", tools=[server, impostor])
    message = str(caught.value)
    assert "two tools are named 'files__read' (tool 'read' of MCP server 'files' and " in message
    assert message.endswith("and <function files__read>); tool names must be unique")
    with pytest.raises(ValueError, match="two MCP servers are named 'files'"):
        Runtime(
            ScriptedProvider(),
            mcp_servers=[
                files.connection(always_load=True),
                files.connection(always_load=True),
            ],
        )


def test_hostile_listings_and_results(fake_mcp_server: Any) -> None:
    many = fake_mcp_server(
        "many", [{"name": f"t{i}", "inputSchema": {"type": "object"}} for i in range(10_000)]
    )
    with (
        many.connection(always_load=True) as server,
        pytest.raises(MCPConnectError, match="more than max_tools=1000"),
    ):
        Runtime(ScriptedProvider(), registry=Registry()).exec("x", tools=[server])
    started = time.monotonic()
    with many.connection(always_load=True, max_tools=10_000) as server:
        provider = ScriptedProvider(["ok"])
        Runtime(provider, registry=Registry()).exec("x", tools=[server])
    assert len(provider.requests[0].tools) == 10_000
    assert time.monotonic() - started < 30

    odd = fake_mcp_server("odd")
    odd.listed(
        {"name": "typo", "inputSchema": {"type": "object", "properties": {"x": {"type": 5}}}}
    )
    odd.listed(
        {"name": "fine", "inputSchema": {"type": "object", "properties": {"x": {"type": "string"}}}}
    )
    odd.script("fine", "x" * 10_000_000)
    provider = ScriptedProvider([turn(call("odd__fine", {"x": "y"})), "ok"])
    with odd.connection(always_load=True, max_result_chars=1000) as server:
        Runtime(provider, registry=Registry()).exec("x", tools=[server])
        assert [(s.remote_name, s.reason.split(":")[0]) for s in server.skipped] == [
            ("typo", "invalid JSON Schema for tool parameters")
        ]
    assert [t.name for t in provider.requests[0].tools] == ["odd__fine"]
    (answer,) = results(provider)
    assert len(answer.content[0].text) == 1000
    assert (
        answer.content[1].text
        == "[clipped: the result had 10000000 characters; the first 1000 are shown]"
    )


def test_importing_openprogram_does_not_import_the_sdk() -> None:
    code = "import sys, openprogram, openprogram.mcp; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_a_2025_era_list_changed_notification_shows_at_the_next_run() -> None:
    import mcp_types as types
    from mcp.server import Server

    listing = [{"name": "grow", "inputSchema": {"type": "object"}}]

    async def on_list_tools(ctx: Any, params: Any) -> Any:
        return types.ListToolsResult.model_validate({"tools": listing})

    async def on_call_tool(ctx: Any, params: Any) -> Any:
        listing.append({"name": "extra", "inputSchema": {"type": "object"}})
        await ctx.session.send_tool_list_changed()  # notifications/tools/list_changed
        return types.CallToolResult.model_validate({"content": [{"type": "text", "text": "ok"}]})

    server = Server("old", on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    provider = ScriptedProvider([turn(call("old__grow", {})), "grown", "after"])
    with MCPConnection("old", server, mode="legacy", always_load=True) as old:
        runtime = Runtime(provider, registry=Registry())
        runtime.exec("grow", tools=[old])
        assert _wait_for(lambda: old._stale)
        runtime.exec("again", tools=[old])
        assert old.connects == 1
    assert [t.name for t in provider.requests[1].tools] == ["old__grow"]
    assert [t.name for t in provider.requests[2].tools] == ["old__grow", "old__extra"]


def test_without_the_extra_connecting_says_what_to_install() -> None:
    code = (
        "import sys; sys.modules['mcp'] = None\n"
        "from openprogram.mcp import MCPConnection, MCPConnectError\n"
        "try:\n"
        "    MCPConnection('x', ['true']).connect()\n"
        "except MCPConnectError as exc:\n"
        "    print(exc)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == (
        "MCP server 'x': the mcp extra is not installed (mcp is missing): "
        'pip install "openprogram-loop[mcp]"'
    )


def test_a_ten_megabyte_answer_over_stdio_is_clipped() -> None:
    provider = ScriptedProvider([turn(call("big__flood", {})), "ok"])
    server = MCPConnection(
        "big",
        [sys.executable, SERVER_SCRIPT, "big"],
        connect_timeout_s=SLOW_START_S,
        always_load=True,
    )
    with server:
        Runtime(provider, registry=Registry()).exec("flood", tools=[server])
    (answer,) = results(provider)
    assert not answer.is_error and len(answer.content[0].text) == 100_000
    assert answer.content[-1].text == (
        "[clipped: the result had 10000000 characters; the first 100000 are shown]"
    )


def test_a_server_that_dies_mid_call_is_an_error_result_and_the_next_run_reconnects() -> None:
    provider = ScriptedProvider(
        [turn(call("calc__die", {})), "died", turn(call("calc__add", {"a": 1, "b": 1})), "two"]
    )
    server = MCPConnection(
        "calc", [sys.executable, SERVER_SCRIPT], connect_timeout_s=SLOW_START_S, always_load=True
    )
    runtime = Runtime(provider, registry=Registry())
    with server:
        started = time.monotonic()
        assert runtime.exec("die", tools=[server]) == "died"
        assert time.monotonic() - started < SLOW_START_S
        assert results(provider, 1)[-1].text == (
            "[mcp error] calc__die: MCPError: Connection closed (JSON-RPC error -32000)"
        )
        assert runtime.exec("add", tools=[server]) == "two"
        assert results(provider, 3)[-1].text == "2"
        assert server.connects == 2


def test_mcp_tools_are_deferred_by_default_and_tool_search_loads_them() -> None:
    # upstream: MCP tools are deferred (layer 6) unless the server config says always_load
    demo = MCPConnection("demo", demo_server())
    provider = ScriptedProvider(
        [turn(call("tool_search", {"select": "select:demo__add"})), "loaded", "next"]
    )
    runtime = Runtime(provider, registry=Registry(), system_prompt="S")
    with demo:
        assert runtime.exec("load add", tools=[demo]) == "loaded"
        assert provider.requests[0].tool_names == ["tool_search"]
        assert provider.requests[0].system_prompt == (
            "S\n\n2 deferred tools are available via tool_search. Their names and schemas are "
            "not loaded. Use tool_search with descriptive keywords to find a small matching "
            "set; returned schemas can be called in the same turn."
        )
        (found,) = results(provider, 1)
        assert found.details == {"loaded": ["demo__add"]}
        assert '"name": "demo__add"' in found.text
        assert runtime.exec("again", tools=[demo]) == "next"
        assert provider.requests[2].tool_names == ["demo__add", "tool_search"]
    always = MCPConnection("demo", demo_server(), always_load=True)
    plain = ScriptedProvider(["x"])
    with always:
        Runtime(plain, registry=Registry()).exec("all", tools=[always])
    assert plain.requests[0].tool_names == ["demo__add", "demo__grow"]
