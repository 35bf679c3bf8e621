"""Timeline and snapshot renderings: content, normalisation, stability."""

from __future__ import annotations

from openprogram.types import Usage
from openprogram_testing import (
    ScriptedProvider,
    SteeringSchedule,
    call,
    render_snapshot,
    render_timeline,
    run_loop_sync,
    think,
    turn,
)
from openprogram_testing.judges.snapshot import TraceSnapshotExtension
from tests.harness._harness import add_tool

LOOKUP_DIGEST = "31241726d11f0ca3"
"""The schema digest of ``lookup`` below, written out: a change of the digest itself changes
every stored snapshot, so it is a format change (``SNAPSHOT_FORMAT``), never a silent one."""


def _run(
    ids: tuple[str, str], *, chunk: int | None = None, usage: int = 0, signature: str = "sig-1"
):  # type: ignore[no-untyped-def]
    def echo(args: dict) -> str:  # type: ignore[type-arg]
        return f"looked up {args['q']} for request {ids[0]}"

    lookup = {
        "spec": {
            "name": "lookup",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
        "execute": echo,
    }
    provider = ScriptedProvider(
        [
            turn(
                think("I should look this up.", signature=signature),
                "Looking.",
                call("lookup", {"q": "a"}, id=ids[0]),
                call("lookup", {"q": "b"}, id=ids[1]),
                usage=Usage(input_tokens=usage, output_tokens=usage),
            ),
            turn("Found it.", usage=Usage(input_tokens=usage + 1)),
        ],
        chunk_size=chunk,
    )
    schedule = SteeringSchedule().after_tool(0, "only the first, please").follow_up("thanks")
    provider.add("You're welcome.")
    return run_loop_sync(provider, "find a and b", tools=[lookup], schedule=schedule)


def test_snapshot_normalises_ids_usage_signatures_and_chunking() -> None:
    a = _run(
        ("toolu_01AbCdEfGhIjKlMnOp", "toolu_01QrStUvWxYzAbCdEf"),
        chunk=None,
        usage=10,
        signature="x",
    )
    b = _run(("call_9zyx", "call_8wvu"), chunk=2, usage=999, signature="completely-different")
    assert render_timeline(a) != render_timeline(b)
    snap = render_snapshot(a)
    assert snap == render_snapshot(b)
    assert snap == render_snapshot(a)  # deterministic
    assert "toolu_" not in snap and "call_9" not in snap
    assert "call call#1 lookup" in snap and "call#2" in snap
    assert 'looked up a for request call#1"' in snap  # ids inside texts are renamed too
    assert "usage" not in snap and "thinking signed" in snap


def test_snapshot_layout() -> None:
    snap = render_snapshot(_run(("c-one", "c-two")))
    assert snap.splitlines() == [
        "# openprogram trace v2: cap=50 steering_mode=skip",
        "agent_start",
        f"  sent system=none tools=[lookup] tool_choice=null schemas={LOOKUP_DIGEST}",
        "turn_start round 0",
        '  prompt "find a and b"',
        "  assistant stop=toolUse",
        '    thinking signed "I should look this up."',
        '    text "Looking."',
        '    call call#1 lookup {"q": "a"}',
        '    call call#2 lookup {"q": "b"}',
        "    stream start thinking text toolcall toolcall done",
        '  tool_execution_start call#1 lookup {"q": "a"}',
        '  tool_execution_end call#1 lookup ok "looked up a for request call#1"',
        '  tool_execution_start call#2 lookup {"q": "b"}',
        '  tool_execution_end call#2 lookup SKIPPED "Skipped due to queued user message."',
        "  turn_end 2 results",
        "turn_start round 1",
        '  steering "only the first, please"',
        "  assistant stop=stop",
        '    text "Found it."',
        "    stream start text done",
        "  turn_end 0 results",
        "turn_start round 2",
        '  follow_up "thanks"',
        "  assistant stop=stop",
        '    text "You\'re welcome."',
        "    stream start text done",
        "  turn_end 0 results",
        "agent_end termination=completed model_calls=3 messages=8 undelivered=0",
    ]


def test_long_texts_are_truncated_with_the_cut_length() -> None:
    big = {
        "spec": {"name": "big", "parameters": {"type": "object"}},
        "execute": lambda a: "x" * 1000,
    }
    trace = run_loop_sync(ScriptedProvider([turn(call("big")), "y" * 500]), "go", tools=[big])
    snap = render_snapshot(trace)
    assert '"' + "x" * 200 + '…(+800 chars)"' in snap
    assert '"' + "y" * 300 + '…(+200 chars)"' in snap
    assert "…(+880 chars)" in render_timeline(trace)


def test_volatile_values_in_texts_are_replaced() -> None:
    text = (
        "req_0123456789abcdef at 2026-11-30T04:38:01.123Z id 123e4567-e89b-12d3-a456-426614174000 "
        'took 1.25s and 30ms {"obfuscation": "Zx9q"}'
    )
    snap = render_snapshot(run_loop_sync(ScriptedProvider([text]), "hi"))
    assert (
        'text "req_<id> at <timestamp> id <uuid> took <duration> and <duration> '
        '{\\"obfuscation\\": \\"<obfuscation>\\"}"'
    ) in snap


def test_error_details_and_pending_entries_are_rendered() -> None:
    from openprogram_testing import error_turn

    schedule = SteeringSchedule().before_round(3, "never")
    trace = run_loop_sync(
        ScriptedProvider([error_turn("rate limited", status=429, retryable=True, retry_after_s=2)]),
        "hi",
        schedule=schedule,
    )
    snap = render_snapshot(trace)
    assert "# pending schedule entry: before_round(3): 'never'" in snap
    assert (
        'assistant stop=error error="rate limited" status=429 retryable=True retry_after_s=2'
        in snap
    )
    assert "agent_end termination=error" in snap


def test_timeline_is_numbered_and_colour_is_optional() -> None:
    trace = run_loop_sync(
        ScriptedProvider([turn(call("add", {"a": 1, "b": 2}, id="k1")), "3"]),
        "go",
        tools=[add_tool()],
    )
    plain = render_timeline(trace)
    lines = plain.splitlines()
    assert lines[0].startswith("#0 ") and lines[0].endswith("agent_start")
    assert any(line.startswith("#5-") and "message_update (" in line for line in lines)
    assert 'tool_execution_end k1 add ok "3"' in plain and "\x1b[" not in plain
    coloured = render_timeline(trace, color=True)
    assert "\x1b[" in coloured and "agent_start" in coloured
    assert trace.timeline() == plain and trace.snapshot_text() == render_snapshot(trace)


def test_snapshot_extension_serialises_traces_and_strings_only() -> None:
    import pytest

    trace = run_loop_sync(ScriptedProvider(["hi"]), "hello")
    ext = TraceSnapshotExtension()
    assert ext.serialize(trace) == render_snapshot(trace)
    assert ext.serialize("already text") == "already text"
    with pytest.raises(TypeError, match="trace_snapshot compares LoopTrace objects"):
        ext.serialize({"not": "a trace"})


def test_ids_that_prefix_each_other_are_renamed_exactly() -> None:
    echo = {
        "spec": {"name": "echo", "parameters": {"type": "object"}},
        "execute": lambda a: "answering call_10 and call_1",
    }
    script = [turn(*(call("echo", {"n": n}) for n in range(11))), "done"]  # ids call_0 … call_10
    snap = render_snapshot(run_loop_sync(ScriptedProvider(script), "go", tools=[echo]))
    assert "call call#11 echo" in snap
    assert '"answering call#11 and call#2"' in snap
    assert "call_" not in snap
