"""Frame helpers and fault mutations, on small bodies and on every shared streaming recording."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram_testing.transport.faults import (
    GARBLE_PREFIX,
    DropTerminal,
    FaultError,
    GarbleToolArguments,
    HttpError,
    InjectError,
    MalformedFrame,
    MutableResponse,
    Rechunk,
    Stall,
    TruncateAfter,
    apply_mutations,
    detect_api,
    frame_data,
    frame_event,
    join_frames,
    split_frames,
)
from tests.cassettes._cassette_catalog import STREAMING, body_text, ids, interactions

BODY = 'event: a\ndata: {"n":1}\n\nevent: b\ndata: {"n":2}\n\ndata: [DONE]\n\n'


def response(body: str | bytes, path: str | None = None) -> MutableResponse:
    return MutableResponse(200, "OK", {"content-type": ["text/event-stream"]}, body, path=path)


def test_split_and_join_frames() -> None:
    frames = split_frames(BODY)
    assert frames == ['event: a\ndata: {"n":1}', 'event: b\ndata: {"n":2}', "data: [DONE]"]
    assert join_frames(frames) == BODY
    assert split_frames(BODY.replace("\n", "\r\n")) == frames
    assert split_frames(BODY.replace("\n", "\r")) == frames
    assert split_frames("data: 1\n\n\n\ndata: 2") == ["data: 1", "data: 2"]
    assert split_frames("") == []
    assert frame_event(frames[0]) == "a" and frame_data(frames[0]) == '{"n":1}'
    assert frame_data("data: line1\ndata: line2") == "line1\nline2"
    assert frame_event("data: x") is None and frame_data("event: y") is None


@given(st.lists(st.text(alphabet='abc: {}"', min_size=1).filter(lambda s: s.strip()), max_size=6))
def test_join_then_split_round_trips(lines: list[str]) -> None:
    frames = ["data: " + line.strip() for line in lines]
    assert split_frames(join_frames(frames)) == frames


def test_truncate_drop_corrupt() -> None:
    r = apply_mutations(response(BODY), [TruncateAfter(1)])
    assert split_frames(r.text) == ['event: a\ndata: {"n":1}']
    assert apply_mutations(response(BODY), [TruncateAfter(0)]).text == ""
    assert (
        apply_mutations(response(BODY), [TruncateAfter(2)]).text == BODY[: BODY.index("data: [D")]
    )
    with pytest.raises(FaultError, match=r"ends at frame 2 of 3 \(a terminal frame\)"):
        apply_mutations(response(BODY), [TruncateAfter(3)])  # the whole body: no cut at all
    assert apply_mutations(response(BODY), [TruncateAfter(2, disconnect=True)]).disconnect
    assert "[DONE]" not in apply_mutations(response(BODY), [DropTerminal()]).text
    corrupted = split_frames(apply_mutations(response(BODY), [MalformedFrame(1)]).text)
    assert corrupted[0] == 'event: a\ndata: {"n":1}' and frame_event(corrupted[1]) == "b"
    with pytest.raises(ValueError):
        json.loads(frame_data(corrupted[1]) or "")


def test_bad_frame_indices_and_bodies_are_clear_errors() -> None:
    with pytest.raises(
        FaultError,
        match=r"TruncateAfter\(n=9, disconnect=False\): frame index "
        r"must be 0..3; the body has 3 frames",
    ):
        apply_mutations(response(BODY), [TruncateAfter(9)])
    with pytest.raises(FaultError, match=r"MalformedFrame\(n=3\): frame index must be 0..2"):
        apply_mutations(response(BODY), [MalformedFrame(3)])
    with pytest.raises(FaultError, match="needs a streamed \\(SSE\\) body"):
        apply_mutations(response('{"a": 1}'), [DropTerminal()])
    with pytest.raises(FaultError, match="has no terminal frame to drop"):
        apply_mutations(response("data: {}\n\n"), [DropTerminal()])
    with pytest.raises(FaultError, match="exactly one of sizes"):
        Rechunk()
    with pytest.raises(FaultError, match="sizes must be positive"):
        Rechunk(sizes=[0])
    with pytest.raises(FaultError, match="is not a fault mutation"):
        apply_mutations(response(BODY), ["drop"])  # type: ignore[list-item]
    with pytest.raises(FaultError, match="status must be an HTTP error code"):
        apply_mutations(response(BODY), [HttpError(200)])


def test_http_error_replaces_the_response_in_the_api_shape() -> None:
    r = apply_mutations(response(BODY, "/v1/messages"), [HttpError(529), Stall(1.0)])
    assert (r.status, r.reason) == (529, "Overloaded")
    assert json.loads(r.text) == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert r.stalls == []  # nothing to stall: the error is the whole response
    r = apply_mutations(
        response(BODY, "/v1/chat/completions"), [HttpError(429, {"retry-after": "2"})]
    )
    assert r.header("retry-after") == "2" and r.header("content-type") == "application/json"
    assert json.loads(r.text)["error"]["code"] == "rate_limit_exceeded"
    r = apply_mutations(response(BODY), [HttpError(400, body="plain")])
    assert r.text == "plain"


def test_stall_and_rechunk_shape_how_the_body_is_served() -> None:
    r = apply_mutations(response(BODY), [Rechunk(sizes=[5]), Stall(0.5, after_frame=1)])
    pieces = r.pieces()
    assert b"".join(chunk for _, chunk in pieces) == BODY.encode()
    assert all(len(chunk) <= 5 for _, chunk in pieces)
    cut = len('event: a\ndata: {"n":1}\n\n')
    served = 0
    for delay, chunk in pieces:
        assert delay == (0.5 if served == cut else 0.0)
        served += len(chunk)
    seeded = [Rechunk(seed=7).boundaries(300), Rechunk(seed=7).boundaries(300)]
    assert seeded[0] == seeded[1] and seeded[0][-1] == 300
    unfinished = BODY.replace("data: [DONE]\n\n", "")  # no terminal frame: the client waits
    stalled = apply_mutations(response(unfinished), [Stall(0.2, after_frame=2)])
    assert stalled.pieces()[-1] == (0.2, b"")
    with pytest.raises(FaultError, match=r"ends at frame 2 of 3 \(its last terminal frame\)"):
        apply_mutations(response(BODY), [Stall(0.2, after_frame=3)])  # after [DONE]: unseen
    assert apply_mutations(response(b'{"a": 1}'), [Stall(0.1)]).pieces() == [(0.1, b'{"a": 1}')]
    with pytest.raises(FaultError, match="needs a streamed"):
        apply_mutations(response(b'{"a": 1}'), [Stall(0.1, after_frame=1)])


def test_content_length_follows_the_mutated_body() -> None:
    r = MutableResponse(200, "OK", {"Content-Length": [str(len(BODY))]}, BODY)
    apply_mutations(r, [TruncateAfter(1)])
    assert r.header("content-length") == str(len(r.body_bytes()))


@pytest.mark.parametrize("recording", STREAMING, ids=ids(STREAMING))
def test_mutations_on_every_shared_stream(conformance_cassettes: Path, recording) -> None:  # type: ignore[no-untyped-def]
    for index, interaction in enumerate(interactions(conformance_cassettes, recording)):
        body = body_text(interaction["response"])
        frames = split_frames(body)
        path = interaction["request"]["uri"].split("?")[0].removeprefix("https://api.openai.com")
        api = detect_api(frames)
        assert (
            api == recording.api == detect_api([], path.removeprefix("https://api.anthropic.com"))
        )
        assert join_frames(frames) == body  # recorded bodies are canonical
        dropped = split_frames(apply_mutations(response(body), [DropTerminal()]).text)
        # one terminal frame; on Chat also the chunk with finish_reason (what ends a message)
        finishes = sum(map(_has_finish, frames)) if api == "openai_chat" else 0
        assert len(dropped) == len(frames) - 1 - finishes
        for at in (0, len(frames) // 2):
            injected = split_frames(apply_mutations(response(body), [InjectError(at, "boom")]).text)
            assert len(injected) == at + 1 and "boom" in injected[-1]
            if api != "openai_chat":
                assert frame_event(injected[-1]) == "error"
            else:
                assert json.loads(frame_data(injected[-1]) or "")["error"]["message"] == "boom"
        _check_garbling(api, body, where=f"{recording.name}#{index}")


def _has_finish(frame: str) -> bool:
    """A Chat chunk that carries a ``finish_reason``."""
    data = frame_data(frame)
    if not data or data == "[DONE]":
        return False
    return any(c.get("finish_reason") for c in json.loads(data).get("choices") or [])


def _arguments(api: str, body: str) -> list[str]:
    """The concatenated argument fragments of each tool call, in stream order."""
    calls: dict[object, str] = {}
    for frame in split_frames(body):
        data = frame_data(frame)
        if not data or data == "[DONE]":
            continue
        p = json.loads(data)
        if api == "openai_chat":
            for choice in p.get("choices") or []:
                for frag in (choice.get("delta") or {}).get("tool_calls") or []:
                    key = frag["index"]
                    calls[key] = calls.get(key, "") + (
                        (frag.get("function") or {}).get("arguments") or ""
                    )
        elif api == "openai_responses":
            if p["type"] == "response.output_item.added" and p["item"]["type"] == "function_call":
                calls[p["item"]["id"]] = ""
            elif p["type"] == "response.function_call_arguments.delta":
                calls[p["item_id"]] += p["delta"]
        elif p["type"] == "content_block_start" and p["content_block"]["type"] == "tool_use":
            calls[p["index"]] = ""
        elif p["type"] == "content_block_delta" and p["delta"]["type"] == "input_json_delta":
            calls[p["index"]] += p["delta"]["partial_json"]
    return list(calls.values())


def _check_garbling(api: str, body: str, where: str) -> None:
    original = _arguments(api, body)
    for i in range(len(original)):
        garbled = _arguments(api, apply_mutations(response(body), [GarbleToolArguments(i)]).text)
        assert garbled[i] == GARBLE_PREFIX + original[i], where
        with pytest.raises(ValueError):
            json.loads(garbled[i])
        assert garbled[:i] + garbled[i + 1 :] == original[:i] + original[i + 1 :], where
        if api == "openai_responses":  # the frames repeating the full arguments agree
            mutated = apply_mutations(response(body), [GarbleToolArguments(i)]).text
            repeated = [
                json.loads(frame_data(f) or "{}")
                for f in split_frames(mutated)
                if frame_event(f)
                in ("response.function_call_arguments.done", "response.output_item.done")
            ]
            full = [r.get("arguments", r.get("item", {}).get("arguments")) for r in repeated]
            assert full.count(GARBLE_PREFIX + original[i]) == 2, where
            completed = next(
                json.loads(frame_data(f) or "{}")
                for f in split_frames(mutated)
                if frame_event(f) == "response.completed"
            )
            arguments = [
                o["arguments"] for o in completed["response"]["output"] if "arguments" in o
            ]
            assert arguments.count(GARBLE_PREFIX + original[i]) == 1, where
    with pytest.raises(FaultError, match=f"has only {len(original)} tool call"):
        apply_mutations(response(body), [GarbleToolArguments(len(original))])
