"""MCP cassettes: a server's JSON-RPC traffic recorded once (in-process, stdio, HTTP) and replayed
with no server; identical calls replayed in recorded order; a miss answered with an error naming
the closest recorded call and the first difference, and failing the test; unplayed answers
failing it; secrets redacted as in provider cassettes; list changes replayed; hostile files
refused with a clear error."""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer

from openprogram import Registry, Runtime
from openprogram.mcp import MCPConnection
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.mcp import (
    MCPCassette,
    MCPCassetteError,
    MCPCassetteMiss,
    load_mcp_cassette,
)
from tests.mcp.test_mcp_runtime import SERVER_SCRIPT, SLOW_START_S, demo_server

SECRET = "sk-live-0123456789abcdef0123"


def counting_server(counts: list[int]) -> MCPServer:
    """``count(step)`` answers how many times it was called: identical calls differ."""
    server = MCPServer("counter")

    @server.tool()
    def count(step: int = 1) -> str:
        """Count the calls."""
        counts.append(step)
        return f"call {len(counts)}"

    return server


def run(server: Any, name: str, *calls: tuple[str, dict[str, Any]], **options: Any) -> list[Any]:
    """One exec whose model calls each of ``calls`` in turn; the tool results it saw."""
    turns: list[Any] = [turn(call(f"{name}__{tool}", args)) for tool, args in calls]
    provider = ScriptedProvider([*turns, "done"])
    with MCPConnection(name, server, always_load=True, **options) as connection:
        assert Runtime(provider, registry=Registry()).exec("go", tools=[connection]) == "done"
    return [(m.text, m.is_error) for m in provider.requests[-1].messages if m.role == "toolResult"]


def test_recorded_in_process_then_replayed_with_no_server(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    counts: list[int] = []
    calls = [("count", {"step": 1}), ("count", {"step": 1}), ("count", {"step": 2})]
    with MCPCassette(path, counting_server(counts), mode="once") as recording:
        assert recording.recording
        live = run(recording, "counter", *calls)
    assert live == [("call 1", False), ("call 2", False), ("call 3", False)]
    assert counts == [1, 1, 2]
    document = json.loads(path.read_text())
    assert document["format"] == "openprogram-mcp-cassette" and document["version"] == 1
    methods = [i["method"] for i in document["interactions"]]
    assert methods.count("tools/call") == 3 and "tools/list" in methods

    replay = MCPCassette(path, mode="once")  # the file exists: replayed, no server given
    assert not replay.recording
    assert run(replay, "counter", *calls) == live  # identical calls in their recorded order
    replay.assert_complete()
    assert counts == [1, 1, 2]  # the server was never reached


def test_a_stdio_server_recorded_then_replayed(tmp_path: Path) -> None:
    path = tmp_path / "calc.json"
    command = [sys.executable, SERVER_SCRIPT]
    calls = [("add", {"a": 40, "b": 2}), ("shout", {"text": "hi"})]
    with MCPCassette(path, command, mode="once") as recording:
        live = run(recording, "calc", *calls, connect_timeout_s=SLOW_START_S)
    assert live == [("42", False), ("HI", False)]
    replay = MCPCassette(path)  # mode none: replay only
    started = time.monotonic()
    assert run(replay, "calc", *calls) == live
    assert time.monotonic() - started < SLOW_START_S / 3  # no subprocess to start
    replay.assert_complete()


def test_a_miss_is_an_error_result_and_fails_naming_the_closest_call(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    with MCPCassette(path, counting_server([]), mode="all") as recording:
        run(recording, "counter", ("count", {"step": 1}))
    replay = MCPCassette(path)
    ((text, is_error),) = run(replay, "counter", ("count", {"step": 7}))
    assert is_error and text.startswith("[mcp error] counter__count: MCPError: MCP cassette")
    with pytest.raises(MCPCassetteMiss) as miss:
        replay.assert_complete()
    message = str(miss.value)
    assert 'no recorded call matches tools/call {"arguments": {"step": 7}' in message
    assert 'the closest recorded call is tools/call {"arguments": {"step": 1}' in message
    assert "first difference at $.params.arguments.step: recorded 1, sent 7" in message


def test_a_call_repeated_more_often_than_recorded_is_a_miss(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    with MCPCassette(path, counting_server([]), mode="all") as recording:
        run(recording, "counter", ("count", {"step": 1}))
    replay = MCPCassette(path)
    results = run(replay, "counter", ("count", {"step": 1}), ("count", {"step": 1}))
    assert results[0] == ("call 1", False) and results[1][1]
    with pytest.raises(MCPCassetteMiss, match=r"all 1 recorded call\(s\) with these params"):
        replay.assert_complete()


def test_recorded_answers_never_asked_for_fail(tmp_path: Path) -> None:
    path = tmp_path / "counter.json"
    with MCPCassette(path, counting_server([]), mode="all") as recording:
        run(recording, "counter", ("count", {"step": 1}), ("count", {"step": 2}))
    replay = MCPCassette(path)
    run(replay, "counter", ("count", {"step": 1}))
    with pytest.raises(MCPCassetteError, match=r"1 recorded call\(s\) never made: tools/call"):
        replay.assert_complete()
    MCPCassette(path, allow_unplayed=True).assert_complete()  # opted out


def test_no_secret_reaches_the_file(fake_mcp_server: Any, tmp_path: Path) -> None:
    """A key in the HTTP headers and in the answer, a value given to redact in the arguments:
    the file holds none of them, and the redacted recording still replays (the live request
    is redacted the same way before it is matched).  Arguments are otherwise kept, as in
    provider cassettes: they are what the agent acts on."""
    fake = fake_mcp_server("vault")

    @fake.tool
    def lookup(note: str) -> str:
        """Echo what it was given."""
        return f"{note}: key {SECRET}"

    path = tmp_path / "vault.json"
    headers = {"Authorization": f"Bearer {SECRET}"}
    codename = "project-codename-aurora"
    with MCPCassette(
        path, fake.serve_http(), mode="all", headers=headers, redact_values=[codename]
    ) as recording:
        live = run(recording, "vault", ("lookup", {"note": codename}), headers=headers)
    assert live == [(f"{codename}: key {SECRET}", False)]
    text = path.read_text()
    assert SECRET not in text and codename not in text
    assert '"note": "REDACTED"' in text and "REDACTED: key REDACTED" in text
    replay = MCPCassette(path, headers=headers, redact_values=[codename])
    assert run(replay, "vault", ("lookup", {"note": codename})) == [
        ("REDACTED: key REDACTED", False)
    ]
    replay.assert_complete()


def test_a_list_change_is_replayed(tmp_path: Path) -> None:
    """The server adds a tool and says so mid-run; replayed, the notification comes back
    after the same call and the next run lists the new tool."""
    path = tmp_path / "demo.json"

    def two_runs(server: Any) -> tuple[list[str], list[str]]:
        provider = ScriptedProvider([turn(call("demo__grow", {})), "grown", "listed"])
        with MCPConnection("demo", server, always_load=True) as demo:
            runtime = Runtime(provider, registry=Registry())
            runtime.exec("grow", tools=[demo])
            deadline = time.monotonic() + 10
            while not demo._stale and time.monotonic() < deadline:
                time.sleep(0.01)
            runtime.exec("again", tools=[demo])
        return [t.name for t in provider.requests[0].tools], [
            t.name for t in provider.requests[2].tools
        ]

    with MCPCassette(path, demo_server(), mode="all") as recording:
        live = two_runs(recording)
    assert live == (["demo__add", "demo__grow"], ["demo__add", "demo__grow", "demo__extra"])
    replay = MCPCassette(path)
    assert two_runs(replay) == live
    replay.assert_complete()


def test_modes_that_cannot_work_are_refused(tmp_path: Path) -> None:
    missing = tmp_path / "missing.json"
    with pytest.raises(MCPCassetteError, match=r"new_episodes.*re-record with 'all'"):
        MCPCassette(missing, mode="new_episodes")
    with pytest.raises(MCPCassetteError, match="needs the server to record from"):
        MCPCassette(missing, mode="once")
    with pytest.raises(MCPCassetteError, match=r"does not exist.*--openprogram-record-mode=once"):
        MCPCassette(missing)


def _write(path: Path, document: Any) -> Path:
    path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


GOOD = {"format": "openprogram-mcp-cassette", "version": 1, "interactions": []}


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("not json {", "is not JSON"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ({"interactions": []}, 'no "format"'),
        ({**GOOD, "version": 9}, "version 9, this release reads version 1"),
        ({**GOOD, "interactions": {}}, "'interactions' must be a list"),
        ({**GOOD, "interactions": [{"params": {}}]}, "interaction 0: needs a string 'method'"),
        (
            {**GOOD, "interactions": [{"method": "tools/call", "response": {"x": 1}}]},
            "'response' must be null or hold one of result, error",
        ),
        (
            {**GOOD, "interactions": [{"method": "m", "response": {"error": "nope"}}]},
            "interaction 0: not a JSON-RPC answer",
        ),
        (
            {**GOOD, "interactions": [{"method": "m", "response": None, "notifications": [1]}]},
            "'notifications' must be a list",
        ),
    ],
)
def test_hostile_cassettes_are_refused_clearly(tmp_path: Path, document: Any, message: str) -> None:
    path = _write(tmp_path / "hostile.json", document)
    with pytest.raises(MCPCassetteError, match=message.replace("(", r"\(").replace(")", r"\)")):
        load_mcp_cassette(path)


def test_an_oversized_or_special_file_is_refused_without_reading_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram_testing.transport.mcp import cassette as module

    monkeypatch.setattr(module, "MAX_FILE_BYTES", 100)
    big = _write(tmp_path / "big.json", {**GOOD, "pad": "x" * 200})
    with pytest.raises(MCPCassetteError, match="larger than 100 bytes"):
        load_mcp_cassette(big)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    done: list[BaseException] = []

    def load() -> None:
        try:
            load_mcp_cassette(fifo)
        except BaseException as exc:
            done.append(exc)

    worker = threading.Thread(target=load, daemon=True)
    worker.start()
    worker.join(10)
    assert done and isinstance(done[0], MCPCassetteError), "a FIFO must not hang the load"
    assert "not a regular file" in str(done[0])


def test_a_ten_megabyte_answer_is_recorded_and_replayed_clipped(tmp_path: Path) -> None:
    """Hostile size through a cassette: the 10 MB answer is stored whole and replayed, and the
    agent gets it clipped to ``max_result_chars`` both times."""
    server = MCPServer("big")

    @server.tool()
    def flood() -> str:
        """Answer ten megabytes of text."""
        return "x" * 10_000_000

    path = tmp_path / "big.json"
    with MCPCassette(path, server, mode="all") as recording:
        ((live, live_error),) = run(recording, "big", ("flood", {}))
    assert path.stat().st_size > 10_000_000
    replay = MCPCassette(path)
    started = time.monotonic()
    ((replayed, replayed_error),) = run(replay, "big", ("flood", {}))
    assert time.monotonic() - started < 30
    replay.assert_complete()
    assert replayed == live and not live_error and not replayed_error
    assert len(live) < 200_000 and "[clipped: the result had 10000000 characters" in live


def test_a_call_the_recording_never_answered_ends_at_the_timeout(tmp_path: Path) -> None:
    """A recorded request with no answer (``"response": null``) is not answered on replay
    either: the connection's call timeout ends it, nothing hangs."""
    path = tmp_path / "counter.json"
    with MCPCassette(path, counting_server([]), mode="all") as recording:
        run(recording, "counter", ("count", {"step": 1}))
    document = json.loads(path.read_text())
    (recorded_call,) = [i for i in document["interactions"] if i["method"] == "tools/call"]
    recorded_call["response"] = None
    path.write_text(json.dumps(document))
    started = time.monotonic()
    ((text, is_error),) = run(
        MCPCassette(path), "counter", ("count", {"step": 1}), call_timeout_s=0.5
    )
    assert is_error and "TimeoutError: no answer within 0.5s" in text
    assert time.monotonic() - started < 20
