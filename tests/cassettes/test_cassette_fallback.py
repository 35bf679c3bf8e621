"""``fallback=``: scripted turns answer what a replayed cassette does not hold (after a fault or
any drift), asked for only, marked wherever the run is shown, and never a silent pass."""

from __future__ import annotations

from pathlib import Path

import pytest

from openprogram_testing import call, turn
from openprogram_testing.cassettes import CassetteError
from openprogram_testing.core.trace import run_loop
from openprogram_testing.transport.faults import HttpError
from tests.cassettes.test_cassette_playback import chat, chat_stream, interaction, replay, write

HTTP_503 = {0: [HttpError(503)]}


@pytest.fixture
def hello(tmp_path: Path) -> Path:
    return write(tmp_path / "hello.yaml", interaction(chat_stream("Hello there")))


async def test_without_a_fallback_the_retry_after_a_fault_fails_loudly(hello: Path) -> None:
    with pytest.raises(CassetteError, match="already played"):
        with replay(hello, mutations=HTTP_503):
            trace = await run_loop(chat(max_retries=1), "hi")
            assert trace.termination == "error"


async def test_the_retry_after_a_fault_is_answered_from_the_script_and_marked(
    hello: Path,
) -> None:
    with replay(hello, mutations=HTTP_503, fallback=["From the script."]) as cassette:
        trace = await run_loop(chat(max_retries=1), "hi")
    assert trace.termination == "completed" and trace.final_text == "From the script."
    assert cassette.played == [0]
    [served] = cassette.served_from_script
    assert served.startswith("served from script: fallback turn 0 answered POST /v1/chat/")
    assert "already played" in served  # why the cassette could not answer
    assert [a.text for a in trace.annotations if a.kind == "script"] == [served]
    timeline = trace.timeline()
    assert "served from script: fallback turn 0" in timeline
    assert "served from script: fallback turn 0" in trace.snapshot_text()


async def test_fallback_turns_carry_tool_calls_through_the_real_adapter(hello: Path) -> None:
    fallback = [turn(call("add", {"a": 1, "b": 2})), "3, from the script."]
    add = {"spec": {"name": "add"}, "execute": lambda args: args["a"] + args["b"]}
    with replay(hello, mutations=HTTP_503, fallback=fallback) as cassette:
        trace = await run_loop(chat(max_retries=1), "hi", tools=[add])
    assert [r.text for r in trace.tool_results] == ["3"] and trace.final_text.startswith("3,")
    assert len(cassette.served_from_script) == 2


async def test_a_fallback_never_used_fails_even_with_allow_unplayed(hello: Path) -> None:
    for options in ({}, {"allow_unplayed": True}):
        with pytest.raises(
            CassetteError, match=r"fallback script \(1 turn\(s\)\) answered nothing"
        ):
            with replay(hello, fallback=["never asked"], **options):
                assert (await run_loop(chat(), "hi")).final_text == "Hello there"


async def test_fallback_turns_left_over_fail_unless_allowed(hello: Path) -> None:
    with pytest.raises(CassetteError, match="never requested"):
        with replay(hello, mutations=HTTP_503, fallback=["one", "two"]):
            await run_loop(chat(max_retries=1), "hi")
    with replay(hello, mutations=HTTP_503, fallback=["one", "two"], allow_unplayed=True):
        assert (await run_loop(chat(max_retries=1), "hi")).final_text == "one"


async def test_past_the_last_fallback_turn_a_request_is_a_mismatch_again(hello: Path) -> None:
    with pytest.raises(CassetteError, match="already played"):
        with replay(hello, mutations=HTTP_503, fallback=["one"]):
            assert (await run_loop(chat(max_retries=1), "hi")).final_text == "one"
            assert (await run_loop(chat(), "again")).termination == "error"


def test_a_fallback_is_refused_when_recording_or_malformed(tmp_path: Path) -> None:
    with pytest.raises(CassetteError, match="cannot be combined with recording"):
        replay(tmp_path / "new.yaml", record_mode="once", fallback=["x"])
    with pytest.raises(CassetteError, match="list of scripted turns"):
        replay(tmp_path / "new.yaml", fallback="x")  # type: ignore[arg-type]
    with pytest.raises(CassetteError, match="fallback"):
        replay(tmp_path / "new.yaml", fallback=[object()])


async def test_a_traffic_observer_sees_the_fallback_turn_and_changes_nothing(hello: Path) -> None:
    """An exchange listener (what ``--openprogram-html``/``--records`` install) used to make the
    fallback read the address of an emulator that never listens: the answer became
    ``RuntimeError: the emulator is not started`` and the run failed only when observed.  Now
    the fallback announces its own exchange (source ``script``) and the run is the same."""
    from openprogram_testing.base.recording import (
        HttpExchange,
        add_exchange_listener,
        remove_exchange_listener,
    )

    seen: list[HttpExchange] = []
    add_exchange_listener(seen.append)
    try:
        with replay(hello, mutations=HTTP_503, fallback=["From the script."]):
            trace = await run_loop(chat(max_retries=1), "hi")
    finally:
        remove_exchange_listener(seen.append)
    assert trace.termination == "completed" and trace.final_text == "From the script."
    assert [(x.source, x.index, x.status) for x in seen] == [
        ("cassette", 0, 503),
        ("script", 0, 200),
    ]
    script = seen[1]
    assert script.method == "POST" and script.url.endswith("/v1/chat/completions")
    assert b"From the script." in script.response_body
    assert b'"messages"' in script.request_body


async def test_the_timeline_shows_a_cassettes_fault_and_interactions_as_the_report_does(
    hello: Path,
) -> None:
    from openprogram_testing.report import trace_record

    with replay(hello, mutations=HTTP_503, fallback=["From the script."]):
        trace = await run_loop(chat(max_retries=1), "hi")
    timeline = trace.timeline()
    assert "! fault injected: HttpError(" in timeline and "on interaction 0" in timeline
    assert "~ cassette interaction 0: " in timeline
    notes = [n for r in trace_record(trace)["rounds"] for n in r["notes"]]
    assert [n["kind"] for n in notes] == ["cassette", "fault", "script"]
    for note in notes:
        assert note["text"][:200] in timeline
    # the snapshot keeps the answers from the script only (its mutations show in the run)
    snapshot = trace.snapshot_text()
    assert "served from script" in snapshot and "fault injected" not in snapshot
