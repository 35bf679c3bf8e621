"""Traces of real recorded provider streams (conformance cassettes, replayed offline): the loop
invariants hold and the snapshot is stable, whatever the byte chunking of the recording."""

from __future__ import annotations

from pathlib import Path

from openprogram_testing import SteeringSchedule, check_invariants, render_snapshot, run_loop_sync

CASSETTE = "mirascope/test_call_with_tools/openai_gpt_4o_completions/stream.yaml"
SECRETS = {"mellon": "Welcome to Moria!", "radiance": "Life before Death"}
TOOL = {
    "spec": {
        "name": "secret_retrieval_tool",
        "description": "A tool that requires a password to retrieve a secret.",
        "parameters": {
            "type": "object",
            "properties": {"password": {"type": "string"}},
            "required": ["password"],
        },
    },
    "execute": lambda args: SECRETS.get(args["password"], "Invalid password!"),
}


def _replay(folder: Path, mutations=(), schedule=None):  # type: ignore[no-untyped-def]
    from openprogram.providers.openai_chat import OpenAIChatProvider
    from tests.cassettes._cassette_catalog import replay_shared

    with replay_shared(folder / CASSETTE, allow_unplayed=True, mutations=mutations):
        return run_loop_sync(
            OpenAIChatProvider(api_key="test"),
            "Please retrieve the secrets associated with each of these passwords: mellon,radiance",
            system_prompt="Use parallel tool calling.",
            model="gpt-4o",
            tools=[TOOL],
            schedule=schedule,
        )


def test_recorded_parallel_calls_satisfy_invariants_and_snapshot_stably(
    conformance_cassettes: Path,
) -> None:
    from openprogram_testing.transport.faults import Rechunk

    plain = _replay(conformance_cassettes)
    check_invariants(plain)
    assert [c.name for c in plain.tool_calls] == ["secret_retrieval_tool"] * 2
    assert plain.termination == "completed" and plain.model_calls == 2
    snap = render_snapshot(plain)
    assert "call_" not in snap and "call#1" in snap and "call#2" in snap
    assert "obfuscation" not in snap and "chatcmpl" not in snap

    rechunked = _replay(conformance_cassettes, mutations=[Rechunk(seed=7, max_size=5)])
    check_invariants(rechunked)
    assert [m.model_dump() for m in rechunked.messages] == [m.model_dump() for m in plain.messages]
    assert render_snapshot(rechunked) == snap


def test_recorded_stream_with_steering_after_the_first_call(conformance_cassettes: Path) -> None:
    schedule = SteeringSchedule().after_tool(0, "Only the first one, please.")
    trace = _replay(conformance_cassettes, schedule=schedule)
    check_invariants(trace)
    assert [r.skipped for r in trace.tool_results] == [False, True]
    assert trace.user_messages[-1].text == "Only the first one, please."
