"""Recording for real: against the loopback provider emulator (official SDKs, real adapters, full
loop) and a tiny stdlib server; replay with the server gone gives the identical result; canary
credentials never reach the file; the file is readable and replays byte for byte."""

from __future__ import annotations

import gzip
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from openprogram.providers.anthropic import AnthropicProvider
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram.providers.openai_responses import OpenAIResponsesProvider
from openprogram_testing.cassettes import (
    CassetteError,
    CassetteLeakError,
    CassetteMismatch,
    load_interactions,
    use_cassette,
)
from openprogram_testing.core.trace import run_loop
from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.transport.scripted import call, turn

CANARY_KEY = "sk-canary-KEY-0123456789abcdefghij"
CANARY_ORG = "org-CanaryOrganisation0123456789"
CANARY_PASSWORD = "canary-userinfo-pw-42"
CANARY_QUERY = "canary-query-token-77"
CANARIES = (CANARY_KEY, CANARY_ORG, CANARY_PASSWORD, CANARY_QUERY)

WEATHER = {
    "spec": {
        "name": "get_weather",
        "description": "The weather in a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "execute": lambda arguments: f"sunny in {arguments['city']}",
}

PROMPT = (
    f"What is the weather in Paris? (my key is {CANARY_KEY}, org {CANARY_ORG}; the key insight is that "
    "token limits matter)"
)


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://user:{CANARY_PASSWORD}@")


def _provider(api: str, urls: tuple[str, str]) -> Any:
    """An adapter with canary credentials everywhere; ``urls`` = (openai, anthropic) base URL."""
    query = {"key": CANARY_QUERY}
    if api == "anthropic":
        return AnthropicProvider(
            api_key=CANARY_KEY,
            base_url=_with_userinfo(urls[1]),
            default_query=query,
            default_headers={"anthropic-organization-id": CANARY_ORG},
        )
    cls = OpenAIChatProvider if api == "openai_chat" else OpenAIResponsesProvider
    return cls(
        api_key=CANARY_KEY,
        organization=CANARY_ORG,
        project="proj_canaryProject0123456789ab",
        base_url=_with_userinfo(urls[0]),
        default_query=query,
    )


@pytest.mark.parametrize("api", ["openai_chat", "openai_responses", "anthropic"])
async def test_record_against_the_emulator_then_replay_with_it_stopped(
    tmp_path: Path, api: str
) -> None:
    path = tmp_path / f"{api}.yaml"
    script = [turn(call("get_weather", {"city": "Paris"})), "It is sunny in Paris."]
    with ProviderEmulator(script) as emulator:
        urls = (emulator.openai_base_url, emulator.anthropic_base_url)
        with use_cassette(path, record_mode="once") as recording:
            recorded = await run_loop(_provider(api, urls), PROMPT, tools=[WEATHER])
        emulator.assert_complete()
    assert recorded.termination == "completed"
    assert recorded.final_text == "It is sunny in Paris."
    assert recording.interactions == 2

    # The server is gone: the same URLs now lead nowhere, the cassette answers.
    with use_cassette(path) as replay:
        replayed = await run_loop(_provider(api, urls), PROMPT, tools=[WEATHER])
    assert replay.played == [0, 1]
    assert replayed.messages == recorded.messages
    assert [type(e).__name__ for e in replayed.events] == [
        type(e).__name__ for e in recorded.events
    ]

    text = path.read_text()
    for canary in CANARIES:
        assert canary not in text, canary
    assert "proj_canaryProject" not in text
    assert "REDACTED" in text
    assert "the key insight is that token limits matter" in text  # prose untouched
    for interaction in yaml.safe_load(text)["interactions"]:
        names = {n.lower() for n in interaction["request"]["headers"]}
        assert not names & {"authorization", "x-api-key", "openai-organization", "cookie"}
        assert "REDACTED@" in interaction["request"]["uri"]
        assert "key=REDACTED" in interaction["request"]["uri"]


async def test_a_replay_only_cassette_refuses_new_requests(tmp_path: Path) -> None:
    path = tmp_path / "once.yaml"
    with ProviderEmulator(["first"]) as emulator:
        provider = OpenAIChatProvider(api_key="dummy-key", base_url=emulator.openai_base_url)
        with use_cassette(path, record_mode="once"):
            assert (await run_loop(provider, "hi")).final_text == "first"
        # once + existing file = replay only: a second request is not recorded
        with pytest.raises(CassetteError, match="all 1 recorded interaction"):
            with use_cassette(path, record_mode="once"):
                assert (await run_loop(provider, "hi")).final_text == "first"
                second = await run_loop(provider, "hi")
                assert second.termination == "error"
                assert "CassetteMismatch" in (second.error or "") or "all 1" in (second.error or "")
        emulator.assert_complete()


async def test_new_episodes_appends_and_all_rerecords(tmp_path: Path) -> None:
    path = tmp_path / "modes.yaml"
    with ProviderEmulator(["one", "two", "three"]) as emulator:
        provider = OpenAIChatProvider(api_key="dummy-key", base_url=emulator.openai_base_url)
        with use_cassette(path, record_mode="once"):
            await run_loop(provider, "hi")
        with use_cassette(path, record_mode="new_episodes"):
            assert (await run_loop(provider, "hi")).final_text == "one"  # replayed
            assert (await run_loop(provider, "hi")).final_text == "two"  # recorded
        assert len(load_interactions(path)) == 2
        with use_cassette(path, record_mode="all"):
            assert (await run_loop(provider, "hi")).final_text == "three"  # never replays
        emulator.assert_complete()
    assert len(load_interactions(path)) == 1  # re-recorded: replaces what it matched
    with use_cassette(path) as replay:
        assert (await run_loop(provider, "hi")).final_text == "three"
    assert replay.played == [0]


# ---------------------------------------------------------------------------------------------
# a tiny stdlib server for byte-level checks


class _Server:
    def __init__(self, routes: dict[str, tuple[int, dict[str, str], bytes]]) -> None:
        routes_ = routes
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                self.rfile.read(length)
                hits.append(self.path)
                status, headers, body = routes_[self.path.split("?")[0]]
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server_factory() -> Iterator[Any]:
    servers: list[_Server] = []

    def make(routes: dict[str, tuple[int, dict[str, str], bytes]]) -> _Server:
        servers.append(_Server(routes))
        return servers[-1]

    yield make
    for server in servers:
        server.close()


def test_json_is_stored_pretty_and_replayed_byte_for_byte(
    tmp_path: Path, server_factory: Any
) -> None:
    compact = b'{"id":"x1","text":"caf\\u00e9 \\u2014 ok","items":[1,2,{"a":null}]}'
    raw_gzip = gzip.compress(b'{"zipped":true,"n":[1,2,3]}')
    sse = b'event: message_start\ndata: {"type":"message_start"}\n\ndata: [DONE]\n\n'
    server = server_factory(
        {
            "/json": (200, {"content-type": "application/json"}, compact),
            "/gzip": (
                200,
                {"content-type": "application/json", "content-encoding": "gzip"},
                raw_gzip,
            ),
            "/sse": (200, {"content-type": "text/event-stream"}, sse),
        }
    )
    path = tmp_path / "bytes.yaml"
    with use_cassette(path, record_mode="once"), httpx2.Client() as client:
        live = {
            p: client.post(server.url + p, json={"q": 1}).content
            for p in ("/json", "/gzip", "/sse")
        }
    server.close()
    text = path.read_text()
    assert '  "text": "café — ok"' in text.replace("\\u00e9", "é")  # pretty, indented
    assert "data: [DONE]" in text and "|" in text  # SSE as block text
    assert "!!binary" not in text  # gzip decoded at record time
    with use_cassette(path) as replay, httpx2.Client() as client:
        again = {
            p: client.post(server.url + p, json={"q": 1}).content
            for p in ("/json", "/gzip", "/sse")
        }
    assert again == live
    assert again["/json"] == compact
    assert again["/gzip"] == gzip.decompress(raw_gzip)
    assert replay.played == [0, 1, 2]


def test_a_secret_the_redactor_cannot_see_fails_the_recording(
    tmp_path: Path, server_factory: Any
) -> None:
    """A non-UTF-8 body cannot be rewritten; the scan before writing still finds the key."""
    body = b"\xff\xfe binary " + CANARY_KEY.encode() + b" \xff"
    server = server_factory({"/blob": (200, {"content-type": "application/octet-stream"}, body)})
    path = tmp_path / "leak.yaml"
    unpatched = httpx2.HTTPTransport.handle_request
    with pytest.raises(CassetteLeakError, match=r"interaction 0 response body contains a key"):
        with use_cassette(path, record_mode="once"), httpx2.Client() as client:
            client.post(server.url + "/blob", content=b"x")
    assert not path.exists()
    assert httpx2.HTTPTransport.handle_request is unpatched  # vcrpy's patches are gone


def test_redact_values_and_the_env_key_are_removed_verbatim(
    tmp_path: Path, server_factory: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    env_key = "plain-env-secret-value-123"  # not key-shaped: only known because it is in use
    extra = "another-custom-secret-999"
    monkeypatch.setenv("ANTHROPIC_API_KEY", env_key)
    payload = json.dumps({"echo": [env_key, extra], "note": "the key insight"}).encode()
    server = server_factory({"/echo": (200, {"content-type": "application/json"}, payload)})
    path = tmp_path / "verbatim.yaml"
    with use_cassette(path, record_mode="once", redact_values=[extra]), httpx2.Client() as c:
        c.post(server.url + "/echo", json={"k": env_key, "e": extra})
    text = path.read_text()
    assert env_key not in text and extra not in text
    assert "the key insight" in text
    assert json.loads(load_interactions(path)[0]["response"]["body"]["string"])["echo"] == [
        "REDACTED",
        "REDACTED",
    ]


def test_replay_never_reaches_the_network(tmp_path: Path, server_factory: Any) -> None:
    server = server_factory({"/a": (200, {"content-type": "application/json"}, b"{}")})
    path = tmp_path / "net.yaml"
    with use_cassette(path, record_mode="once"), httpx2.Client() as client:
        client.post(server.url + "/a")
    with pytest.raises(CassetteError, match="nothing in it has this method"):
        with use_cassette(path, allow_unplayed=True), httpx2.Client() as client:
            with pytest.raises(CassetteMismatch):
                client.post(server.url + "/elsewhere")
    assert server.hits == ["/a"]
