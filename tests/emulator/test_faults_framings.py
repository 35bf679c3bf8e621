"""Frame-addressed mutations on both framings, against the shared real recordings: SSE (Gemini's
CRLF data-only stream) and AWS event stream (Bedrock Converse and InvokeModel)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from openprogram_testing.cassettes import load_interactions
from openprogram_testing.transport.faults import (
    GARBLE_PREFIX,
    CrcMismatch,
    DropTerminal,
    FaultError,
    GarbleToolArguments,
    HttpError,
    InjectError,
    MalformedFrame,
    MutableResponse,
    Stall,
    TruncateAfter,
    apply_mutations,
)
from openprogram_testing.transport.wire import eventstream, sse
from tests.conftest import require_conformance_dir

EVENT_STREAMS = [
    "dd-trace-py/bedrock/bedrock_converse_stream.yaml",
    "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml",
    "chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml",
]
GEMINI = "mirascope/test_call_with_tools/google_gemini_2_5_flash/stream.yaml"


def recorded(path: str) -> MutableResponse:
    interaction = load_interactions(require_conformance_dir() / path)[0]
    response = interaction["response"]
    headers = {
        k.lower(): [v if isinstance(v, str) else v.decode() for v in vs]
        for k, vs in response["headers"].items()
    }
    body = response["body"]["string"]
    uri = interaction["request"]["uri"]
    return MutableResponse(200, "OK", headers, body, path=uri.split("://", 1)[-1].partition("/")[2])


def messages(response: MutableResponse) -> list[bytes]:
    return eventstream.split_messages(response.body_bytes())


def terminal(response: MutableResponse, frame: Any) -> bool:
    frames = response.frames("test")
    return response.is_terminal(response.wire(frames), frame)


@pytest.mark.parametrize("path", EVENT_STREAMS)
def test_truncate_at_every_frame_of_an_event_stream(path):
    """A cut at or before the last terminal frame (``metadata``: the adapters read it); later,
    the client has its whole answer and the cut is refused."""
    whole = messages(recorded(path))
    total = len(whole)
    ends = [i for i, m in enumerate(whole) if terminal(recorded(path), m)]
    for k in range(total + 1):
        for disconnect in (False, True):
            fault = TruncateAfter(k, disconnect=disconnect)
            if k > ends[-1]:
                with pytest.raises(FaultError, match=r"ends at frame \d+ of \d+ \(a terminal"):
                    apply_mutations(recorded(path), [fault])
                continue
            cut = messages(apply_mutations(recorded(path), [fault]))
            assert len(cut) == k
            assert [eventstream.decode_message(m).headers for m in cut] == [
                eventstream.decode_message(m).headers for m in whole[:k]
            ]
    with pytest.raises(FaultError, match="frame index must be"):
        apply_mutations(recorded(path), [TruncateAfter(total + 1)])


@pytest.mark.parametrize("path", EVENT_STREAMS)
def test_drop_terminal_of_an_event_stream(path):
    original = recorded(path)
    assert any(terminal(original, m) for m in messages(original))
    dropped = apply_mutations(recorded(path), [DropTerminal()])
    assert not any(terminal(dropped, m) for m in messages(dropped))
    assert 1 <= len(messages(original)) - len(messages(dropped)) <= 2
    with pytest.raises(FaultError, match="no terminal frame"):
        apply_mutations(dropped, [DropTerminal()])


@pytest.mark.parametrize("path", EVENT_STREAMS)
def test_corrupt_frame_and_crc_of_an_event_stream(path):
    bad = messages(apply_mutations(recorded(path), [MalformedFrame(1)]))[1]
    decoded = eventstream.decode_message(bad)  # well framed: CRCs match
    assert decoded.headers[":message-type"] == "event"
    with pytest.raises(ValueError):
        json.loads(decoded.payload)
    crc = messages(apply_mutations(recorded(path), [CrcMismatch(2)]))
    with pytest.raises(eventstream.EventStreamError, match="message CRC mismatch"):
        eventstream.decode_message(crc[2])
    assert crc[2][:-4] == messages(recorded(path))[2][:-4]  # the bytes are intact


def test_botocore_rejects_the_corrupted_crc():
    from botocore.eventstream import ChecksumMismatch, EventStreamBuffer

    buffer = EventStreamBuffer()
    buffer.add_data(apply_mutations(recorded(EVENT_STREAMS[0]), [CrcMismatch(0)]).body_bytes())
    with pytest.raises(ChecksumMismatch):
        list(buffer)


def test_stall_offsets_follow_event_stream_frames():
    response = apply_mutations(recorded(EVENT_STREAMS[0]), [Stall(0.5, after_frame=2)])
    first, second = messages(recorded(EVENT_STREAMS[0]))[:2]
    pieces = response.pieces()
    assert pieces[0] == (0.0, response.body_bytes()[: len(first) + len(second)])
    assert pieces[1][0] == 0.5


def test_http_error_on_an_event_stream_speaks_bedrock():
    response = apply_mutations(recorded(EVENT_STREAMS[0]), [HttpError(429)])
    assert response.status == 429 and json.loads(response.body) == {"message": "Too Many Requests"}
    assert response.header("x-amzn-ErrorType").startswith("ThrottlingException:")


def test_sse_mutations_keep_geminis_crlf_framing():
    original = recorded(GEMINI)
    frames = sse.split_frames(original.text)
    assert "\r\n" in original.text and frames
    injected = apply_mutations(recorded(GEMINI), [InjectError(0, "overloaded")])
    assert injected.text.endswith("}\r\n\r\n") and "\n\n" not in injected.text
    dropped = apply_mutations(recorded(GEMINI), [DropTerminal()])
    assert len(sse.split_frames(dropped.text)) == len(frames) - 1
    assert "finishReason" not in dropped.text
    corrupt = apply_mutations(recorded(GEMINI), [MalformedFrame(0)])
    with pytest.raises(ValueError):
        json.loads(sse.frame_data(sse.split_frames(corrupt.text)[0]) or "")
    with pytest.raises(FaultError, match="only event-stream bodies have CRCs"):
        apply_mutations(recorded(GEMINI), [CrcMismatch(0)])


@pytest.mark.parametrize("path", EVENT_STREAMS)
def test_inject_error_into_an_event_stream(path):
    response = apply_mutations(recorded(path), [InjectError(3, "overloaded")])
    cut = messages(response)
    assert len(cut) == 4 and cut[:3] == messages(recorded(path))[:3]
    last = eventstream.decode_message(cut[3])
    assert last.headers[":message-type"] == "exception"
    assert last.headers[":exception-type"] == "serviceUnavailableException"
    assert json.loads(last.payload) == {"message": "overloaded"}


def test_inject_error_into_a_gemini_stream():
    """The recording is one frame, its terminal one: the error takes its place; after it, the
    client would have stopped reading (refused)."""
    response = apply_mutations(recorded(GEMINI), [InjectError(0, "overloaded")])
    frames = sse.split_frames(response.text)
    assert len(frames) == 1 and response.text.endswith("\r\n\r\n")
    error = json.loads(sse.frame_data(frames[0]) or "")["error"]
    assert error == {"code": 503, "message": "overloaded", "status": "UNAVAILABLE"}
    for fault in (InjectError(1), TruncateAfter(1), TruncateAfter(1, disconnect=True)):
        with pytest.raises(FaultError, match=r"ends at frame 0 of 1 \(.*terminal frame\)"):
            apply_mutations(recorded(GEMINI), [fault])


def test_garble_tool_arguments_of_a_converse_stream():
    path = EVENT_STREAMS[1]  # two parallel tool uses
    response = apply_mutations(recorded(path), [GarbleToolArguments(1)])
    inputs: dict[int, str] = {}
    for raw in messages(response):
        message = eventstream.decode_message(raw)  # CRCs recomputed
        payload = json.loads(message.payload)
        use = payload.get("delta", {}).get("toolUse")
        if use is not None:
            inputs[payload["contentBlockIndex"]] = (
                inputs.get(payload["contentBlockIndex"], "") + use["input"]
            )
    first, second = (inputs[k] for k in sorted(inputs))
    json.loads(first)
    assert second.startswith(GARBLE_PREFIX)
    with pytest.raises(ValueError):
        json.loads(second)
    with pytest.raises(FaultError, match="only 2 tool call"):
        apply_mutations(recorded(path), [GarbleToolArguments(2)])
    with pytest.raises(FaultError, match="not available for gemini"):
        apply_mutations(recorded(GEMINI), [GarbleToolArguments(0)])
