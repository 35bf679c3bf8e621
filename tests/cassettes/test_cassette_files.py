"""Every accepted file shape loads and replays (vcrpy YAML, pydantic-ai's ``parsed_body``
dialect, HAR 1.2); every shared recording loads; anything else is a ``CassetteError`` naming the
shapes expected."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing.cassettes import (
    EXPECTED_SHAPES,
    CassetteError,
    load_interactions,
    use_cassette,
)
from openprogram_testing.core.trace import run_loop
from tests.cassettes._cassette_catalog import RECORDINGS, WITHOUT_ADAPTER
from tests.cassettes.test_cassette_playback import chat_stream, tool_stream

CHAT_URI = "https://api.openai.com/v1/chat/completions"


def _shared(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*.yaml"))


def test_every_shared_recording_loads(conformance_cassettes: Path) -> None:
    names = _shared(conformance_cassettes)
    assert set(names) == {r.name for r in RECORDINGS} | set(WITHOUT_ADAPTER)
    assert len(names) >= 31
    for name in names:
        loaded = load_interactions(conformance_cassettes / name)
        assert loaded, name
        for item in loaded:
            request, response = item["request"], item["response"]
            assert isinstance(request["uri"], str) and request["uri"].startswith("http"), name
            assert isinstance(request["body"], str | bytes | type(None)), name
            assert all(
                isinstance(v, str) for values in request["headers"].values() for v in values
            ), name  # botocore's !!binary header values are text
            assert isinstance(response["status"]["code"], int), name
            body = response["body"]["string"]
            assert isinstance(body, str | bytes) and body, name
            size = len(body.encode() if isinstance(body, str) else body)
            for header, values in response["headers"].items():
                if header.lower() == "content-length":
                    assert values == [str(size)], name  # what is served is what is announced


def test_pydantic_ai_parsed_body_becomes_the_json_body(conformance_cassettes: Path) -> None:
    bedrock = load_interactions(
        conformance_cassettes / "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml"
    )
    answer = json.loads(bedrock[0]["response"]["body"]["string"])
    assert answer["stopReason"] == "tool_use"
    assert answer["output"]["message"]["content"][1]["toolUse"]["name"] == "get_capital"
    assert bedrock[0]["response"]["headers"]["content-length"] == [
        str(len(bedrock[0]["response"]["body"]["string"].encode()))
    ]
    google = load_interactions(
        conformance_cassettes
        / "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml"
    )
    request = json.loads(google[0]["request"]["body"])
    assert request["contents"][0]["parts"][0]["text"].startswith("What is the capital")


def test_pydantic_ai_files_replay(conformance_cassettes: Path) -> None:
    """vcrpy alone raises a bare TypeError on these files; here they replay in order."""
    name = "pydantic-ai/test_google/test_google_streaming_tool_call_thought_signature.yaml"
    recorded = load_interactions(conformance_cassettes / name)
    with use_cassette(conformance_cassettes / name, match_body=True) as cassette:
        with httpx2.Client() as client:
            for item in recorded:
                reply = client.post(
                    item["request"]["uri"],
                    content=item["request"]["body"],
                    headers={"content-type": "application/json"},
                )
                assert reply.status_code == 200
                assert reply.text == item["response"]["body"]["string"]
                assert reply.text.startswith("data: ")
    assert cassette.played == [0, 1]


def _har(entries: list[dict[str, Any]]) -> str:
    return json.dumps({"log": {"version": "1.2", "creator": {"name": "t"}, "entries": entries}})


def _entry(text: str, *, encoding: str | None = None, headers: list[Any] | None = None) -> Any:
    content: dict[str, Any] = {"size": len(text), "mimeType": "text/event-stream", "text": text}
    if encoding:
        content["encoding"] = encoding
    return {
        "startedDateTime": "2026-01-01T00:00:00Z",
        "time": 1,
        "request": {
            "method": "POST",
            "url": CHAT_URI,
            "httpVersion": "HTTP/2",
            "headers": [{"name": ":authority", "value": "api.openai.com"}],
            "queryString": [],
            "postData": {"mimeType": "application/json", "text": '{"stream": true}'},
        },
        "response": {
            "status": 200,
            "statusText": "",
            "httpVersion": "HTTP/2",
            "headers": headers
            or [
                {"name": "content-type", "value": "text/event-stream"},
                {"name": "content-encoding", "value": "gzip"},  # stale: HAR text is decoded
            ],
            "content": content,
        },
    }


async def test_a_har_file_replays_a_tool_loop_through_the_sdk(tmp_path: Path) -> None:
    path = tmp_path / "loop.har"
    second = base64.b64encode(chat_stream("The sum is 5.").encode()).decode()
    path.write_text(
        _har([_entry(tool_stream('{"a": 2, "b": 3}')), _entry(second, encoding="base64")])
    )
    add = {
        "spec": {"name": "add", "parameters": {"type": "object", "properties": {}}},
        "execute": lambda arguments: str(arguments["a"] + arguments["b"]),
    }
    # the entries are written by hand with a placeholder request body: this test is about
    # reading HAR, so body matching is off
    with use_cassette(path, match_body=False) as cassette:
        trace = await run_loop(OpenAIChatProvider(api_key="unused"), "2+3?", tools=[add])
    assert cassette.played == [0, 1]
    assert trace.termination == "completed", trace.error
    assert trace.final_text == "The sum is 5."
    assert [c.arguments for c in trace.tool_calls] == [{"a": 2, "b": 3}]
    assert not trace.tool_results[0].is_error
    loaded = load_interactions(path)
    assert "content-encoding" not in loaded[0]["response"]["headers"]
    assert loaded[0]["request"]["headers"] == {}  # HTTP/2 pseudo-headers are not headers


def test_a_har_body_that_really_is_gzip_keeps_its_encoding(tmp_path: Path) -> None:
    raw = gzip.compress(b'{"ok": true}')
    headers = [{"name": "Content-Encoding", "value": "gzip"}]
    entry = _entry(base64.b64encode(raw).decode(), encoding="base64", headers=headers)
    path = tmp_path / "zipped.har"
    path.write_text(_har([entry]))
    with use_cassette(path), httpx2.Client() as client:
        assert client.post(CHAT_URI, content=b'{"stream": true}').json() == {"ok": True}


def test_recording_into_a_har_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="HAR files are replayed, never recorded into"):
        use_cassette(tmp_path / "x.har", record_mode="once")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[1, 2, 3]", "not a known cassette shape"),
        ('{"foo": 1}', "not a known cassette shape"),
        ("just a sentence", "not a known cassette shape"),
        ("interactions: {a: 1}", "not a known cassette shape"),
        ('{"log": {"entries": {}}}', "log.entries must be a list"),
        ('{"log": {"entries": [1]}}', "entry 0 is not an object"),
        ('{"log": {"entries": [{"request": {}, "response": {}}]}}', "request lacks method/url"),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/"},'
            ' "response": {"status": "200"}}]}}',
            "lacks a numeric status",
        ),
        (
            '{"log": {"entries": [{"request": {"method": "GET", "url": "http://h/"},'
            ' "response": {"status": 200, "content": {"text": "%%", "encoding": "base64"}}}]}}',
            "not valid base64",
        ),
        ("interactions: [1]", "lacks request/response"),
        ("interactions: [{request: {uri: x}, response: {status: 200}}]", r"lacks \['method'\]"),
        (
            "interactions: [{request: {method: GET, uri: 'http://h'}, response: {status: x}}]",
            "status must be a code",
        ),
        (
            "interactions: [{request: {method: GET, uri: 'http://h', headers: [1]},"
            " response: {status: 200}}]",
            "headers must be a mapping",
        ),
        (
            "interactions: [{request: {method: GET, uri: 'http://h', body: {a: 1}},"
            " response: {status: 200}}]",
            "request body must be text or bytes",
        ),
        ("interactions: [\n", "is not valid YAML"),
        ("[" * 5000 + "]" * 5000, "nested too deeply"),
    ],
)
def test_a_file_of_no_known_shape_names_the_shapes_expected(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "odd.yaml"
    path.write_text(text)
    with pytest.raises(CassetteError, match=message) as raised:
        load_interactions(path)
    if "known cassette shape" in message:
        assert EXPECTED_SHAPES in str(raised.value)
    with pytest.raises(CassetteError):
        with use_cassette(path):
            pass


def test_unreadable_paths_are_cassette_errors(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="not found"):
        load_interactions(tmp_path / "missing.yaml")
    with pytest.raises(CassetteError, match="is a directory"):
        load_interactions(tmp_path)
    (tmp_path / "bin.yaml").write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(CassetteError, match="not UTF-8"):
        load_interactions(tmp_path / "bin.yaml")
