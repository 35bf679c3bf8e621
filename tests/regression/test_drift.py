"""``diff OLD NEW``: what the model did differently, interaction by interaction; the exit status
fails on behaviour (tools, arguments, stop reasons), on text and usage only with --strict; an
unreadable recording is a clean error."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from openprogram_testing.cli import main
from openprogram_testing.drift import RecordingUnreadable, diff_recordings

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
    from openprogram_testing.drift import Answer, compare

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
