"""Canary credentials on every recording path: credential-named headers, query parameters and
JSON body fields (request and response, JSON and SSE) never reach the file; prose that looks
like a URL or a JSON credential stays as it is; the scan before writing knows every value that
was redacted anywhere in the session."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx2
import pytest
import yaml

from openprogram_testing.cassettes import (
    REDACTED,
    CassetteError,
    CassetteLeakError,
    RedactionRules,
    Redactor,
    load_interactions,
    use_cassette,
)

HEADERS = (
    "Authorization",
    "Proxy-Authorization",
    "X-Api-Key",
    "Api-Key",
    "X-Goog-Api-Key",
    "X-Auth-Token",
    "X-Access-Token",
    "X-Amz-Security-Token",
    "X-Session-Token",
    "X-Csrf-Token",
    "X-Client-Secret",
    "X-Functions-Key",
    "Ocp-Apim-Subscription-Key",
    "X-Vault-Token",
    "X-Custom-Api-Key",
    "X-Refresh-Token",
    "X-Admin-Password",
    "X-Github-Token",
    "X-Service-Key",
    "X-Openai-Api-Key",
    "Cookie",
)
QUERY = (
    "key",
    "api_key",
    "apikey",
    "api-key",
    "token",
    "access_token",
    "auth_token",
    "api-token",
    "subscription-key",
    "sig",
    "signature",
    "X-Amz-Signature",
    "X-Amz-Credential",
    "X-Amz-Security-Token",
    "client_secret",
    "password",
    "secret",
    "refresh_token",
    "id_token",
    "session_token",
    "pwd",
)
FIELDS = (
    "api_key",
    "apiKey",
    "token",
    "access_token",
    "accessToken",
    "refresh_token",
    "id_token",
    "auth_token",
    "client_secret",
    "clientSecret",
    "secret",
    "password",
    "passwd",
    "private_key",
    "secret_key",
    "aws_secret_access_key",
    "session_token",
    "sessionToken",
    "authorization",
    "subscription_key",
    "bearer_token",
)
RESPONSE_HEADERS = ("X-Auth-Token", "Set-Cookie", "X-Amz-Security-Token", "X-Upstream-Api-Key")


def canary(kind: str, name: str) -> str:
    # not key-shaped: only the name says it is a secret
    return f"canary{kind}{name.lower().replace('-', '').replace('_', '')}value"


PROSE = (
    'Please GET /search?q=llm&key=value and explain {"password": "hunter22"}; '
    "the key insight is that token limits matter."
)


def _body() -> dict[str, Any]:
    fields = {name: canary("f", name) for name in FIELDS}
    half = len(FIELDS) // 2
    nested = dict(list(fields.items())[half:])
    return {
        "model": "m",
        "messages": [{"role": "user", "content": PROSE}],
        **dict(list(fields.items())[:half]),
        "auth": {"nested": [nested]},
        "logprobs": {"content": [{"token": "Information", "logprob": -0.1}]},
        "tool_call": {"name": "login", "args": {"password": "tool-argument-data"}},
        "usage": {"total_tokens": 12, "max_tokens": 100},
    }


class _Echo(BaseHTTPRequestHandler):
    """Echoes the request (JSON or SSE) with credential-named response fields and headers."""

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        reply = {
            "echo": request,
            "path": self.path,
            "issued": {f"{name}": canary("r", name) for name in FIELDS[:5]},
            "headers_seen": {name: self.headers.get(name) for name in HEADERS},
        }
        if self.path.startswith("/sse"):
            frames = [
                {"type": "delta", "text": PROSE},
                {"type": "session", "session_token": canary("s", "sse"), "nested": reply},
            ]
            body = "".join(f"data: {json.dumps(f)}\n\n" for f in frames).encode()
            kind = "text/event-stream"
        else:
            body = json.dumps(reply).encode()
            kind = "application/json"
        self.send_response(200)
        self.send_header("content-type", kind)
        for name in RESPONSE_HEADERS:
            value = canary("h", name)
            self.send_header(name, f"sid={value}; Path=/" if name == "Set-Cookie" else value)
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def _all_canaries() -> list[str]:
    return [
        *(canary("h", n) for n in HEADERS),
        *(canary("q", n) for n in QUERY),
        *(canary("f", n) for n in FIELDS),
        *(canary("r", n) for n in FIELDS[:5]),
        *(canary("h", n) for n in RESPONSE_HEADERS),
        canary("s", "sse"),
    ]


def _request(client: str, url: str, route: str) -> tuple[int, str]:
    """POST with canaries everywhere through ``client``: ``httpx2`` (the SDKs' transport) or
    ``requests`` (urllib3, the http.client path botocore also takes)."""
    query = urlencode({"q": "llm", **{name: canary("q", name) for name in QUERY}})
    headers = {name: canary("h", name) for name in HEADERS}
    headers["Authorization"] = "Bearer " + canary("h", "Authorization")
    headers["Cookie"] = f"theme=dark; session={canary('h', 'Cookie')}"
    if client == "requests":
        import requests

        with requests.Session() as session:
            reply = session.post(f"{url}{route}?{query}", json=_body(), headers=headers)
            return reply.status_code, reply.text
    with httpx2.Client() as http:
        answer = http.post(f"{url}{route}?{query}", json=_body(), headers=headers)
        return answer.status_code, answer.text


@pytest.mark.parametrize("client", ["httpx2", "requests"])
@pytest.mark.parametrize("route", ["/json", "/sse"])
def test_no_canary_reaches_the_file_on_any_path(
    tmp_path: Path, echo: str, route: str, client: str
) -> None:
    assert len(HEADERS) + len(QUERY) + len(FIELDS) >= 63
    path = tmp_path / "canaries.yaml"
    with use_cassette(path, record_mode="once", match_body=True):
        status, _ = _request(client, echo, route)
    assert status == 200
    text = path.read_text()
    leaked = [c for c in _all_canaries() if c in text]
    assert leaked == []
    (recorded,) = yaml.safe_load(text)["interactions"]
    request_headers = {n.lower() for n in recorded["request"]["headers"]}
    response_headers = {n.lower() for n in recorded["response"]["headers"]}
    assert not request_headers & {n.lower() for n in HEADERS}
    assert not response_headers & {n.lower() for n in RESPONSE_HEADERS}
    uri = recorded["request"]["uri"]
    assert "q=llm" in uri
    for name in QUERY:
        assert f"{urlencode({name: ''})}{REDACTED}" in uri, name
    # prose, logprob tokens and token counts are data
    body = load_interactions(path)[0]
    assert PROSE in json.loads(body["request"]["body"])["messages"][0]["content"]
    assert "Information" in body["request"]["body"]
    assert "tool-argument-data" in body["request"]["body"]  # arguments of a tool call are data
    assert '"total_tokens": 12' in body["request"]["body"]
    answer = body["response"]["body"]["string"]
    assert PROSE.replace('"', '\\"') in answer
    assert f'"access_token": "{REDACTED}"' in answer

    # the same request replays (it is redacted the same way before matching)
    with use_cassette(path, match_body=True) as replay:
        status, again = _request(client, echo, route)
    assert replay.played == [0]
    assert status == 200
    assert canary("f", "password") not in again


def test_the_scan_knows_every_value_redacted_anywhere(tmp_path: Path, echo: str) -> None:
    """A value seen only as a credential-named request field, echoed in a body the redactor
    cannot rewrite (not UTF-8), stops the write."""

    class Binary(_Echo):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            sent = json.loads(self.rfile.read(length))
            body = b"\xff\xfe" + sent["client_secret"].encode() + b"\xff"
            self.send_response(200)
            self.send_header("content-type", "application/octet-stream")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Binary)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        path = tmp_path / "leak.yaml"
        with pytest.raises(CassetteLeakError, match="response body contains a key value in use"):
            with use_cassette(path, record_mode="once"), httpx2.Client() as client:
                client.post(
                    f"http://127.0.0.1:{server.server_address[1]}/x",
                    json={"client_secret": "plain-looking-secret-42"},
                )
        assert not path.exists()
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_names_are_configurable(tmp_path: Path, echo: str) -> None:
    rules = RedactionRules(headers=(), query_params=("q",), body_fields=("model",))
    redactor = Redactor(rules)
    assert redactor.uri("https://h/p?q=llm&key=visible123") == (
        f"https://h/p?q={REDACTED}&key=visible123"
    )
    assert redactor.headers({"Authorization": "kept-as-is"}) == {"Authorization": ["kept-as-is"]}
    assert json.loads(redactor.body('{"model": "gpt", "token": "x"}')) == {
        "model": REDACTED,
        "token": "x",
    }
    path = tmp_path / "extra.yaml"
    with (
        use_cassette(
            path,
            record_mode="once",
            redact_headers=["x-tenant"],
            redact_query_params=["tenant"],
            redact_fields=["customer_ref"],
        ),
        httpx2.Client() as client,
    ):
        client.post(
            f"{echo}/json?tenant=tenant-canary-1",
            json={"customer_ref": "customer-canary-2"},
            headers={"X-Tenant": "tenant-header-canary-3"},
        )
    text = path.read_text()
    for value in ("tenant-canary-1", "customer-canary-2", "tenant-header-canary-3"):
        assert value not in text
    assert canary("h", "X-Auth-Token") not in text  # the defaults still apply


@pytest.mark.parametrize(
    "text",
    [
        "GET /search?q=llm&key=value",
        'In JSON: {"password": "hunter22", "api_key": "abc12345678"}',
        "Set the Authorization header and the X-Api-Key; token=abc is an example",
    ],
)
def test_prose_in_a_message_is_data(text: str) -> None:
    redactor = Redactor()
    body = json.dumps({"messages": [{"role": "user", "content": text}]})
    assert redactor.body(body) == body
    sse = "data: " + json.dumps({"delta": {"text": text}}) + "\n\n"
    assert redactor.body(sse) == sse
    assert redactor.leak_in(body) is None


def test_names_fold_case_dashes_and_camel_case() -> None:
    rules = RedactionRules()
    for name in ("accessToken", "Access-Token", "ACCESS_TOKEN", "access.token"):
        assert rules.is_secret_field(name), name
    for name in ("total_tokens", "max_tokens", "inputTokens", "thoughtSignature", "signature"):
        assert not rules.is_secret_field(name), name
    for name in ("x-ratelimit-remaining-tokens", "content-type", "x-request-id", "x-amz-date"):
        assert not rules.is_secret_header(name), name
    with pytest.raises(TypeError):
        RedactionRules(headers="authorization")  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match="redaction names"):
        use_cassette("x.yaml", redact_fields=[None])  # type: ignore[list-item]
    with pytest.raises(CassetteError, match="redaction must be a RedactionRules"):
        use_cassette("x.yaml", redaction={"headers": []})  # type: ignore[arg-type]
