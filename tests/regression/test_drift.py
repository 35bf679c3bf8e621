"""``diff OLD NEW``: what the model did differently, interaction by interaction; the exit status
fails on behaviour (tools, arguments, stop reasons), on text and usage only with --strict; an
unreadable recording is a clean error."""

from __future__ import annotations

import copy
import os
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.drift import RecordingUnreadable, diff_recordings

ROOT = Path(__file__).resolve().parents[2]
SHARED = Path("/work/shared/conformance/cassettes")


@pytest.fixture
def old(tmp_path: Path) -> Path:
    path = tmp_path / "old.yaml"
    shutil.copy(ROOT / "scenarios" / "cassettes" / "gemini_weather.yaml", path)
    return path


def _changed(old: Path, tmp_path: Path, before: str, after: str) -> Path:
    new = tmp_path / "new.yaml"
    text = old.read_text(encoding="utf-8")
    assert before in text
    new.write_text(text.replace(before, after), encoding="utf-8")
    return new


def test_the_same_recording_has_no_change(old: Path, capsys: pytest.CaptureFixture[str]) -> None:
    drift = diff_recordings(old, old)
    assert drift.changes == [] and len(drift.old) == 2
    assert main(["diff", str(old), str(old)]) == 0
    assert "no change in 2 interaction(s)" in capsys.readouterr().out


def test_changed_arguments_are_behaviour_and_fail(
    old: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    new = _changed(old, tmp_path, "Paris", "Rome")
    drift = diff_recordings(old, new)
    kinds = [(c.interaction, c.kind, c.behaviour) for c in drift.changes]
    assert kinds == [(0, "arguments", True), (1, "text", False)]
    assert 'args.city: expected "Paris", got "Rome"' in drift.changes[0].text
    assert main(["diff", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "interaction 0: arguments: call 0 get_weather" in out and "1 in behaviour" in out


def test_text_alone_is_drift_that_fails_only_when_strict(old: Path, tmp_path: Path) -> None:
    new = _changed(old, tmp_path, "21 C in ", "22 C in ")
    drift = diff_recordings(old, new)
    assert [c.kind for c in drift.changes] == ["text"] and not drift.behaviour_changed
    assert main(["diff", str(old), str(new)]) == 0
    assert main(["diff", str(old), str(new), "--strict"]) == 1


def test_a_missing_interaction_is_behaviour(old: Path, tmp_path: Path) -> None:
    from openprogram_testing.frontends.drift import Answer, compare

    a = Answer("stop", "hi", [], {"input": 1})
    changes = compare([a, a], [a])
    assert [(c.interaction, c.kind, c.text) for c in changes] == [(1, "missing", "only in OLD")]
    huge = Answer("stop", "hi", [("f", '{"x": ')], {"input": 10**30})
    changes = compare([a], [huge])
    assert [c.kind for c in changes] == ["tools", "usage"]


@pytest.mark.parametrize(
    ("content", "says"),
    [("not: [yaml", "cannot load"), ("interactions: []\nversion: 1\n", "")],
)
def test_an_unreadable_recording_is_a_clean_error(
    old: Path, tmp_path: Path, content: str, says: str, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    if not says:  # an empty recording: every interaction of the other is "only in"
        assert [c.kind for c in diff_recordings(old, bad).changes] == ["missing", "missing"]
        return
    with pytest.raises(RecordingUnreadable, match=says):
        diff_recordings(bad, old)
    assert main(["diff", str(bad), str(old)]) == 2
    assert says in capsys.readouterr().err
    assert main(["diff", str(tmp_path / "absent.yaml"), str(old)]) == 2


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared recordings are not on this machine")
@pytest.mark.parametrize(
    "name",
    [
        "mirascope/test_call_with_tools/openai_gpt_4o_responses/stream.yaml",
        "opentelemetry-python-contrib/botocore/test_converse_stream_with_content_tool_call.yaml",
        "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml",  # the SDK asks past the end
    ],
)
def test_a_shared_recording_against_itself(name: str) -> None:
    drift = diff_recordings(SHARED / name, SHARED / name)
    assert drift.changes == [] and drift.old


def _with_arguments(old: Path, tmp_path: Path, name: str, arguments: str) -> Path:
    """``old`` whose recorded call answers ``arguments`` (JSON text, NaN allowed)."""
    recorded = '{\\"city\\":\\"Paris\\"}'
    text = old.read_text(encoding="utf-8")
    assert recorded in text
    path = tmp_path / name
    path.write_text(text.replace(recorded, arguments.replace('"', '\\"'), 1), encoding="utf-8")
    return path


def test_every_differing_argument_of_a_call_is_reported(old: Path, tmp_path: Path) -> None:
    a = _with_arguments(old, tmp_path, "a.yaml", '{"city":"Paris","unit":"C","days":[1,2],"k":1}')
    b = _with_arguments(old, tmp_path, "b.yaml", '{"city":"Rome","unit":"F","days":[1],"n":2}')
    texts = [c.text for c in diff_recordings(a, b).changes if c.kind == "arguments"]
    assert texts == [
        'call 0 get_weather: args.city: expected "Paris", got "Rome"',
        'call 0 get_weather: args.unit: expected "C", got "F"',
        "call 0 get_weather: args.days: expected 2 item(s), got 1",
        "call 0 get_weather: args.k: only in OLD (1)",
        "call 0 get_weather: args.n: only in NEW (2)",
    ]


def test_a_recording_holding_nan_has_no_change_against_itself(
    old: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = _with_arguments(old, tmp_path, "a.yaml", '{"city":"Paris","v":NaN,"w":[NaN]}')
    assert diff_recordings(a, a).changes == []
    assert main(["diff", str(a), str(a)]) == 0
    assert "no change in 2 interaction(s)" in capsys.readouterr().out


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
def test_a_fifo_is_refused_at_once_not_waited_on(
    old: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "fifo.yaml"
    os.mkfifo(fifo)
    started = time.monotonic()
    with pytest.raises(RecordingUnreadable, match="not a regular file"):
        diff_recordings(fifo, old)
    assert main(["diff", str(old), str(fifo)]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert time.monotonic() - started < 10


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(_JSON)
def test_any_recorded_value_equals_itself(value: Any) -> None:
    from openprogram_testing.frontends.drift import argument_differences

    assert argument_differences(value, copy.deepcopy(value)) == []
    assert argument_differences({"a": value}, {"a": [value]}) != []


def test_a_value_thousands_deep_is_compared_without_recursion() -> None:
    from openprogram_testing.frontends.drift import argument_differences

    deep_a: Any = 1
    deep_b: Any = 2
    for _ in range(50_000):
        deep_a, deep_b = [deep_a], [deep_b]
    found = argument_differences(deep_a, deep_b)
    assert len(found) == 1 and found[0].endswith("expected 1, got 2")
