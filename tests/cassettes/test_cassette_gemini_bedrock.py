"""Gemini (google-genai over httpx) and Bedrock (boto3/botocore over urllib3) record and replay
through the real SDKs: the API key, the ``key=`` parameter, SigV4 ``Authorization`` (key id and
signature), ``X-Amz-Security-Token`` and session tokens never reach the file, and replay matches
whatever SigV4 re-signs on every request."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import pytest

from openprogram_testing.cassettes import CassetteError, load_interactions, use_cassette
from tests.cassettes._cassette_catalog import replay_shared

SHARED_BEDROCK_STREAM = "dd-trace-py/bedrock/bedrock_converse_stream.yaml"
SHARED_GEMINI_STREAM = "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml"
BEDROCK_MODEL = "anthropic.claude-3-sonnet-20240229-v1:0"

KEY_ID = "AKIACANARYKEY0001234"
SECRET_KEY = "canary-secret-access-key-0123456789abcdef"
SESSION_TOKEN = "canary-session-token-value-4567"
GOOGLE_KEY = "canary-google-api-key-0001"  # not key-shaped: only the header name says so


@dataclass
class Canned:
    """A loopback server answering every POST with one recorded response."""

    status: int
    headers: dict[str, str]
    body: bytes
    seen: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def canned() -> Iterator[Any]:
    servers: list[ThreadingHTTPServer] = []

    def start(status: int, headers: dict[str, str], body: bytes) -> Canned:
        state = Canned(status, headers, body)

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("content-length") or 0))
                state.seen.append({"path": self.path, **dict(self.headers.items())})
                self.send_response(state.status)
                for name, value in state.headers.items():
                    self.send_header(name, value)
                self.send_header("content-length", str(len(state.body)))
                self.end_headers()
                self.wfile.write(state.body)

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        servers.append(server)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        state.url = f"http://127.0.0.1:{server.server_address[1]}"
        return state

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def _body(response: dict[str, Any]) -> bytes:
    body = response["body"]["string"]
    return body.encode() if isinstance(body, str) else body


# ---------------------------------------------------------------------------------------------
# Bedrock through boto3


def _bedrock(url: str | None, key_id: str, secret: str, token: str | None) -> Any:
    import boto3
    from botocore.config import Config

    return boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=url,
        aws_access_key_id=key_id,
        aws_secret_access_key=secret,
        aws_session_token=token,
        config=Config(retries={"max_attempts": 1}),
    )


def _events(client: Any, request: dict[str, Any]) -> list[dict[str, Any]]:
    return list(client.converse_stream(modelId=BEDROCK_MODEL, **request)["stream"])


def test_converse_stream_records_and_replays_through_boto3(
    tmp_path: Path, canned: Any, conformance_cassettes: Path
) -> None:
    (recorded,) = load_interactions(conformance_cassettes / SHARED_BEDROCK_STREAM)
    request = json.loads(recorded["request"]["body"])
    server = canned(
        200, {"content-type": "application/vnd.amazon.eventstream"}, _body(recorded["response"])
    )
    path = tmp_path / "bedrock.yaml"
    with use_cassette(path, record_mode="once", match_body=True):
        live = _events(_bedrock(server.url, KEY_ID, SECRET_KEY, SESSION_TOKEN), request)
    sent = server.seen[0]
    signature = re.search(r"Signature=([0-9a-f]+)", sent["Authorization"])
    assert signature and sent["X-Amz-Security-Token"] == SESSION_TOKEN

    text = path.read_text()
    for secret in (KEY_ID, SECRET_KEY, SESSION_TOKEN, signature.group(1), sent["Authorization"]):
        assert secret not in text
    headers = {n.lower() for n in load_interactions(path)[0]["request"]["headers"]}
    assert not headers & {"authorization", "x-amz-security-token"}
    assert "x-amz-date" in headers  # kept: not a secret, just never matched

    # Other credentials, a new date, invocation id and signature: the recording still answers.
    other = _bedrock(server.url, "AKIAOTHERKEY00005678", "another-secret-key-value", None)
    with use_cassette(path, match_body=True) as replay:
        again = _events(other, request)
    assert replay.played == [0]
    assert again == live
    assert [next(iter(e)) for e in again][-2:] == ["messageStop", "metadata"]
    assert again[-2]["messageStop"]["stopReason"] == "tool_use"
    assert len(server.seen) == 1  # replay never reached the server


def test_shared_bedrock_recordings_replay_through_boto3(conformance_cassettes: Path) -> None:
    client = _bedrock(None, KEY_ID, SECRET_KEY, None)
    (streamed,) = load_interactions(conformance_cassettes / SHARED_BEDROCK_STREAM)
    with replay_shared(conformance_cassettes / SHARED_BEDROCK_STREAM) as cassette:
        events = _events(client, json.loads(streamed["request"]["body"]))
    assert cassette.played == [0]
    tools = [e["contentBlockStart"]["start"]["toolUse"] for e in events if "contentBlockStart" in e]
    assert [t["name"] for t in tools] == ["fetch_concept"]
    assert events[-1]["metadata"]["usage"]["outputTokens"] > 0

    # pydantic-ai's dialect (responses as parsed_body), model id percent-encoded by botocore
    name = "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml"
    recorded = load_interactions(conformance_cassettes / name)
    with replay_shared(conformance_cassettes / name) as cassette:
        answers = [
            client.converse(modelId="us.amazon.nova-micro-v1:0", **json.loads(i["request"]["body"]))
            for i in recorded
        ]
    assert cassette.played == [0, 1]
    assert answers[0]["stopReason"] == "tool_use"
    assert answers[0]["output"]["message"]["content"][1]["toolUse"]["input"] == {
        "country": "France"
    }
    assert answers[1]["stopReason"] == "end_turn"

    # errors come back as botocore's ClientError with the recorded code
    from botocore.exceptions import ClientError

    name = "dd-trace-py/bedrock/bedrock_converse_error.yaml"
    (error,) = load_interactions(conformance_cassettes / name)
    model = re.search(r"/model/([^/]+)/", error["request"]["uri"])
    assert model
    with replay_shared(conformance_cassettes / name), pytest.raises(ClientError) as raised:
        client.converse(
            modelId=model.group(1).replace("%3A", ":"), **json.loads(error["request"]["body"])
        )
    assert raised.value.response["Error"]["Code"] == "ExpiredTokenException"


# ---------------------------------------------------------------------------------------------
# Gemini through google-genai


def _gemini(url: str | None, key: str) -> Any:
    from google import genai
    from google.genai import types

    options = types.HttpOptions(api_version="v1beta", base_url=url) if url else None
    return genai.Client(
        api_key=key, http_options=options or types.HttpOptions(api_version="v1beta")
    )


def _stream(client: Any) -> list[Any]:
    return list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))


async def _astream(client: Any) -> list[Any]:
    stream = await client.aio.models.generate_content_stream(
        model="gemini-2.5-flash", contents="hi"
    )
    return [chunk async for chunk in stream]


def _calls(chunks: list[Any]) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, c.args) for chunk in chunks for c in chunk.function_calls or []]


def test_gemini_records_and_replays_through_google_genai(
    tmp_path: Path, canned: Any, conformance_cassettes: Path
) -> None:
    first = load_interactions(conformance_cassettes / SHARED_GEMINI_STREAM)[0]
    server = canned(200, {"content-type": "text/event-stream"}, _body(first["response"]))
    path = tmp_path / "gemini.yaml"
    with use_cassette(path, record_mode="once"):
        live = _stream(_gemini(server.url, GOOGLE_KEY))
    assert server.seen[0]["x-goog-api-key"] == GOOGLE_KEY
    text = path.read_text()
    assert GOOGLE_KEY not in text
    assert "x-goog-api-key" not in {
        n.lower() for n in load_interactions(path)[0]["request"]["headers"]
    }
    assert len(_calls(live)) == 2

    with use_cassette(path) as replay:
        again = _stream(_gemini(server.url, "a-different-key-999"))
    assert replay.played == [0]
    assert _calls(again) == _calls(live)
    with use_cassette(path) as replay:
        again = asyncio.run(_astream(_gemini(server.url, "a-different-key-999")))
    assert _calls(again) == _calls(live)
    assert len(server.seen) == 1


def test_the_key_query_parameter_is_redacted_and_never_matched(tmp_path: Path, canned: Any) -> None:
    server = canned(200, {"content-type": "application/json"}, b'{"candidates": []}')
    route = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
    path = tmp_path / "key.yaml"
    with use_cassette(path, record_mode="once"), httpx2.Client() as client:
        client.post(f"{server.url}{route}?alt=sse&key={GOOGLE_KEY}", json={"contents": []})
    uri = load_interactions(path)[0]["request"]["uri"]
    assert uri.endswith(f"{route}?alt=sse&key=REDACTED")
    assert GOOGLE_KEY not in path.read_text()
    with use_cassette(path) as replay, httpx2.Client() as client:
        reply = client.post(
            f"{server.url}{route}?alt=sse&key=another-key-42", json={"contents": []}
        )
    assert replay.played == [0] and reply.json() == {"candidates": []}


def test_shared_gemini_recordings_replay_through_google_genai(
    conformance_cassettes: Path,
) -> None:
    client = _gemini(None, "dummy-key-123456")
    with replay_shared(conformance_cassettes / SHARED_GEMINI_STREAM) as cassette:
        calls = _stream(client)
        answer = _stream(client)
    assert cassette.played == [0, 1]
    assert [name for name, _ in _calls(calls)] == ["secret_retrieval_tool"] * 2
    assert "".join(chunk.text or "" for chunk in answer).strip()

    # an error on a stream request is one JSON document: the SDK raises its own error
    from google.genai import errors

    name = "mirascope/test_model_not_found_stream/google_gemini_2_5_flash.yaml"
    model = "this-model-does-not-exist-12345"
    with replay_shared(conformance_cassettes / name, allow_unplayed=True):
        with pytest.raises(errors.ClientError) as raised:
            list(client.models.generate_content_stream(model=model, contents="hi"))
    assert raised.value.code == 404


def test_a_replay_only_cassette_refuses_an_sdk_request_it_lacks(tmp_path: Path) -> None:
    path = tmp_path / "empty.yaml"
    path.write_text("interactions: []\nversion: 1\n")
    with pytest.raises(CassetteError, match="nothing in it has this method"):
        with use_cassette(path):
            with pytest.raises(Exception):  # noqa: B017 - the SDK wraps the mismatch its own way
                _events(_bedrock(None, KEY_ID, SECRET_KEY, None), {"messages": []})


# ---------------------------------------------------------------------------------------------
# recorded against the loopback emulator's Gemini and Bedrock endpoints


def test_both_sdks_record_against_the_emulator_and_replay_without_it(tmp_path: Path) -> None:
    from openprogram_testing.emulator import ProviderEmulator
    from openprogram_testing.transport.scripted import call, turn

    script = [turn(call("get_weather", {"city": "Paris"})), "Sunny in Paris.", "Rainy in Oslo."]
    path = tmp_path / "emulated.yaml"
    request = {"messages": [{"role": "user", "content": [{"text": "Weather in Oslo?"}]}]}
    with ProviderEmulator(script) as emulator:
        url = emulator.base_url
        with use_cassette(path, record_mode="once"):
            gemini = _gemini(url, GOOGLE_KEY)
            calls, answer = _stream(gemini), _stream(gemini)
            bedrock = _bedrock(url, KEY_ID, SECRET_KEY, SESSION_TOKEN)
            events = _events(bedrock, request)
        emulator.assert_complete()
    assert _calls(calls) == [("get_weather", {"city": "Paris"})]
    assert "".join(c.text or "" for c in answer) == "Sunny in Paris."
    text = path.read_text()
    for secret in (GOOGLE_KEY, KEY_ID, SECRET_KEY, SESSION_TOKEN):
        assert secret not in text

    # the emulator is gone; other credentials; the cassette answers all three in order
    with use_cassette(path) as replay:
        gemini = _gemini(url, "another-google-key-1")
        assert _calls(_stream(gemini)) == _calls(calls)
        assert "".join(c.text or "" for c in _stream(gemini)) == "Sunny in Paris."
        again = _events(_bedrock(url, "AKIAOTHERKEY00005678", "x" * 40, None), request)
    assert replay.played == [0, 1, 2]
    assert again == events
    text_deltas = [
        e["contentBlockDelta"]["delta"].get("text", "") for e in again if "contentBlockDelta" in e
    ]
    assert "".join(text_deltas) == "Rainy in Oslo."
