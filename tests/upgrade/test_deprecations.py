"""What 0.2.0 renamed or re-shaped keeps its 0.1 meaning for one minor release, with a
``DeprecationWarning`` naming the replacement (see CHANGELOG.md), and the new spelling never
warns."""

from __future__ import annotations

import copy
import json
import pickle
import warnings
from pathlib import Path

import pytest

from openprogram import Runtime
from openprogram_testing import ScriptedProvider, TraceTree, run_exec_sync, run_loop_sync
from openprogram_testing.core.steering import RunAddress
from tests.runtime._agents import research_agent, research_script
from tests.scenarios._scenarios import ONE_TOOL_CALL


def _tree() -> TraceTree:
    registry, tools = research_agent()
    provider = ScriptedProvider(research_script((1, 2)))
    return run_exec_sync(Runtime(provider, "m", registry=registry), "go", tools=tools)


# -- a run's path: the string "a/b" since 0.2.0, the tuple ("a", "b") in 0.1 -----------------


def test_a_path_compared_with_its_0_1_tuple_is_equal_and_warns() -> None:
    node = _tree()["research"]
    with pytest.warns(DeprecationWarning, match=r"use \.steps"):
        assert node.path == ("research",)
    with pytest.warns(DeprecationWarning, match=r"compare it with 'research'"):
        assert ("research",) == node.path  # reflected: the tuple asks the path
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert node.path == ["research"]
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert node.trace.path == ("research",)  # the run's LoopTrace holds the same path
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert _tree().path == ()  # the outermost run
    bare = run_loop_sync(ScriptedProvider(["hi"]), "go")  # a bare loop run is an outermost run
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert bare.path == ()


def test_a_path_compared_with_another_tuple_is_unequal_and_warns() -> None:
    node = _tree()["research"]
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert node.path != ("other",)
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert not (node.path == ("research", "add"))
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert node.path != ("r", "e", "s", "e", "a", "r", "c", "h")  # never its characters


def test_iterating_a_path_gives_the_tool_names_and_warns() -> None:
    path = RunAddress("plan/survey")
    with pytest.warns(DeprecationWarning, match=r"iterated .*use \.steps \(\('plan', 'survey'\)\)"):
        assert "/".join(path) == "plan/survey"  # 0.1 code building the string
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        assert list(path) == ["plan", "survey"]
    with pytest.warns(DeprecationWarning, match=r"\.steps"):
        first, second = path
    assert (first, second) == ("plan", "survey")


def test_the_warning_points_at_the_callers_line() -> None:
    node = _tree()["research"]
    with pytest.warns(DeprecationWarning) as record:
        _ = node.path == ("research",)
    assert record[0].filename == __file__


def test_the_string_form_never_warns() -> None:
    tree = _tree()
    node = tree["research"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert node.path == "research" and "research" == node.path
        assert node.path != "research/add" and tree.path == ""
        assert node.steps == ("research",) and node.path.steps == ("research",)
        assert [n.path for n in tree.walk()] == ["", "research"]
        assert all(tree[n.path] is n for n in tree.walk())
        assert hash(node.path) == hash("research") and {node.path: 1}["research"] == 1
        assert {"research": 1}[node.path] == 1
        assert f"run {node.path}" == "run research" and node.path.split("/") == ["research"]
        assert json.dumps({node.path: [node.path]}) == '{"research": ["research"]}'
        assert type(str(node.path)) is str and len(node.path) == len("research")
        assert node.path[:3] == "res" and node.path.startswith("res") and "sea" in node.path
        assert pickle.loads(pickle.dumps(node.path)) == "research"
        assert copy.deepcopy(node.path) == "research"
        assert bool(tree.path) is False and bool(node.path) is True
        assert node.path != 3 and node.path is not None


# -- openprogram-testing record --provider: --api since 0.2.0 ---------------------------------


def _record(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    from openprogram_testing.frontends.cli.main import main

    code = main(["record", *args])
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_record_provider_still_records_and_warns_naming_api(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram_testing import ProviderEmulator, call, turn

    source = tmp_path / "scenario_src.yaml"
    source.write_text(ONE_TOOL_CALL)
    cassette = tmp_path / "recorded.yaml"
    with ProviderEmulator([turn(call("t", {})), "done"]) as emulator:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-live-test-0123456789abcdef")
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        with pytest.warns(DeprecationWarning, match="use --api openai_chat"):
            code, out, err = _record(
                capsys, str(source), "--out", str(cassette), "--provider", "openai"
            )
        emulator.assert_complete()
    assert code == 0, out + err
    assert "--provider is deprecated since 0.2.0 and goes in 0.3: use --api openai_chat" in err
    assert "(2 model call(s), termination completed)" in out
    assert "/v1/chat/completions" in cassette.read_text()
    assert "sk-live-test" not in cassette.read_text()


def test_record_provider_names_what_to_write_when_it_cannot_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "scenario_src.yaml"
    source.write_text(ONE_TOOL_CALL)
    code, _, err = _record(capsys, str(source), "--out", "c.yaml", "--provider", "openia")
    assert code == 2
    assert "--provider is --api since 0.2.0, and 'openia' names no recordable API" in err
    assert "use --api with one of openai_chat, openai_responses, anthropic" in " ".join(err.split())
    code, _, err = _record(
        capsys, str(source), "--out", "c.yaml", "--provider", "anthropic", "--api", "gemini"
    )
    assert code == 2
    assert "--provider anthropic and --api gemini disagree; give --api alone" in " ".join(
        err.split()
    )
    assert not (tmp_path / "c.yaml").exists()


# -- renamed keywords: the assertion helpers' and renderers' trace= is subject= ------------


def test_the_helpers_take_0_1_trace_keyword_and_warn_naming_subject() -> None:
    from openprogram_testing import (
        assert_final_text,
        assert_model_calls,
        assert_recovered,
        assert_skipped,
        assert_terminated,
        assert_tool_results,
        call,
        render_snapshot,
        render_timeline,
        run_loop_sync,
        turn,
    )

    # a call of a tool not offered fails, the model recovers and answers
    provider = ScriptedProvider([turn(call("nope", {}, unknown=True)), "hello"])
    trace = run_loop_sync(provider, "hi")
    calls = [
        (assert_terminated, {"termination": "completed"}),
        (assert_model_calls, {"n": 2}),
        (assert_skipped, {"ids_or_names": []}),
        (assert_recovered, {}),
        (assert_tool_results, {"expected": [{"name": "nope", "is_error": True}]}),
        (assert_final_text, {"text": "hello"}),
    ]
    for helper, rest in calls:
        with pytest.warns(DeprecationWarning, match=rf"write {helper.__name__}\(subject=\.\.\.\)"):
            helper(trace=trace, **rest)
    # and still judges: the old keyword reaches the same check, failing where it should
    with pytest.warns(DeprecationWarning, match=r"subject="), pytest.raises(AssertionError):
        assert_final_text(trace=trace, text="goodbye")
    with pytest.warns(DeprecationWarning, match=r"render_snapshot\(subject=\.\.\.\)"):
        assert render_snapshot(trace=trace) == render_snapshot(trace)
    with pytest.warns(DeprecationWarning, match=r"render_timeline\(subject=\.\.\.\)"):
        assert render_timeline(trace=trace) == render_timeline(trace)
    with pytest.raises(TypeError, match=r"got trace= and subject=; give subject= alone"):
        assert_terminated(trace=trace, subject=trace, termination="completed")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert_terminated(trace, "completed")
        assert_terminated(subject=trace, termination="completed")
        trace.timeline()


def test_observe_with_the_0_1_single_event_still_feeds_conditions() -> None:
    from openprogram import AgentContext, LoopConfig, agent_loop
    from openprogram_testing import SteeringSchedule, call, turn

    def lookup(args: dict[str, object]) -> str:
        return "found"

    tool = {
        "spec": {"name": "lookup", "description": "Look up.", "parameters": {"type": "object"}},
        "execute": lookup,
    }
    provider = ScriptedProvider([turn(call("lookup", {})), "done"])
    schedule = SteeringSchedule().when("lookup", "that is enough")
    config = schedule.configure(LoopConfig(provider=provider))

    async def run() -> None:
        async for event in agent_loop("go", AgentContext(tools=[tool]), config):
            schedule.observe(event)  # 0.1's spelling

    import asyncio

    with pytest.warns(DeprecationWarning, match=r"write observe\(None, event\)"):
        asyncio.run(run())
    assert [d.message.text for d in schedule.delivered] == ["that is enough"]
    schedule.assert_complete()
