"""What a passing scenario does not pay for: its timeline is rendered when read (a failure, ``-v``,
a result file), ``openprogram-testing run`` attaches timelines and result JSON to the test
reports only when it will print or write them, and a tool schema's metaschema verdict is found
once per process, not once per file.  None of it changes a verdict: each test also checks the
output that needs the skipped work still has it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.core import render
from openprogram_testing.frontends.cli.commands import pytest_args
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios import checks
from openprogram_testing.scenarios import parse_scenario, run_scenario
from tests.scenarios._scenarios import ONE_TOOL_CALL

PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2}\n"
FAILING = ONE_TOOL_CALL + "expect: {final_text: goodbye}\n"


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every ``render_timeline`` call from now on."""
    calls: list[object] = []
    original = render.render_timeline

    def counting(ran: Any, *args: Any, **kwargs: Any) -> str:
        calls.append(ran)
        return original(ran, *args, **kwargs)

    import openprogram_testing.core.trace as trace_module
    import openprogram_testing.core.tree as tree_module
    import openprogram_testing.frontends.scenarios.runner as runner_module

    # every module that holds the name (imported at module level) is patched where it reads it
    for module in (render, trace_module, tree_module, runner_module):
        monkeypatch.setattr(module, "render_timeline", counting)
    return calls


def test_a_passing_scenario_renders_its_timeline_only_when_read(renders: list[object]) -> None:
    result = run_scenario(parse_scenario(PASSING, "scenario_p.yaml"))
    assert result.passed and renders == []
    assert "agent_end termination=completed" in result.timeline
    assert len(renders) == 1
    assert result.timeline and len(renders) == 1  # rendered once, then kept
    assert "agent_end" in result.to_dict()["timeline"]


def test_a_failing_scenario_shows_its_timeline(renders: list[object]) -> None:
    result = run_scenario(parse_scenario(FAILING, "scenario_f.yaml"))
    assert not result.passed
    text = result.failure_text
    assert "expect.final_text" in text and "timeline:" in text
    assert "agent_end termination=completed" in text and len(renders) == 1


def test_run_attaches_timelines_and_results_only_when_it_uses_them() -> None:
    files = [Path("s/scenario_a.yaml")]
    plain = pytest_args(files)
    assert "--openprogram-scenario-details" in plain
    assert "--openprogram-scenario-timelines" not in plain
    assert "--openprogram-scenario-results" not in plain
    both = pytest_args(files, timelines=True, results=True)
    assert "--openprogram-scenario-timelines" in both
    assert "--openprogram-scenario-results" in both


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out


def test_a_plain_run_renders_no_passing_timeline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], renders: list[object]
) -> None:
    for i in range(3):
        (tmp_path / f"scenario_p{i}.yaml").write_text(PASSING)
    code, out = _run(capsys, "run", str(tmp_path))
    assert code == 0 and "3 passed in" in out
    assert renders == []  # three passing runs, nothing asked for their timelines
    code, out = _run(capsys, "run", str(tmp_path), "-v")
    assert code == 0 and out.count("agent_end termination=completed") == 3
    assert len(renders) == 3


def test_failures_and_result_files_keep_everything(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "scenario_p.yaml").write_text(PASSING)
    (tmp_path / "scenario_f.yaml").write_text(FAILING)
    results = tmp_path / "results"
    code, out = _run(capsys, "run", str(tmp_path), "--results-dir", str(results))
    assert code == 1
    assert "expect.final_text" in out and "agent_end termination=completed" in out
    for name, passed in (("p", True), ("f", False)):
        data = json.loads((results / f"scenario_{name}.result.json").read_text())
        assert data["passed"] is passed
        assert "agent_end termination=completed" in data["timeline"]
        assert data["trace"]["events"][-1]["type"] == "agent_end"


# -- tool schemas: one metaschema walk per distinct schema in a process ---------------------------


@pytest.fixture
def metaschema_checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    from jsonschema import Draft202012Validator

    calls: list[object] = []
    original = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: type, schema: object, *args: Any, **kwargs: Any) -> None:
        calls.append(schema)
        original(cls, schema, *args, **kwargs)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(counting))
    monkeypatch.setattr(checks, "_SCHEMA_VERDICTS", {})
    return calls


def _with_schema(schema: str) -> str:
    return f"prompt: hi\ntools:\n  - {{name: t, parameters: {schema}}}\nscript: [done]\n"


def test_files_sharing_a_schema_check_it_once(metaschema_checks: list[object]) -> None:
    good = "{type: object, properties: {q: {type: string}}}"
    for i in range(5):
        parse_scenario(_with_schema(good), f"scenario_{i}.yaml")
    assert len(metaschema_checks) == 1
    parse_scenario(_with_schema("{properties: {q: {type: string}}, type: object}"), "k.yaml")
    assert len(metaschema_checks) == 1  # the same JSON document, its keys in another order
    parse_scenario(_with_schema("{type: object, properties: {r: {type: string}}}"), "r.yaml")
    assert len(metaschema_checks) == 2


def test_a_remembered_bad_schema_fails_every_file_that_has_it(
    metaschema_checks: list[object],
) -> None:
    from openprogram_testing.scenarios import ScenarioError

    bad = "{type: object, properties: {q: {type: strin}}}"
    for name in ("scenario_a.yaml", "scenario_b.yaml"):
        with pytest.raises(ScenarioError) as info:
            parse_scenario(_with_schema(bad), name)
        assert f"{name}:3:" in str(info.value) and "not a valid JSON Schema" in str(info.value)
    assert len(metaschema_checks) == 1
    # a near miss is not taken for the valid schema it resembles, nor the other way round
    parse_scenario(_with_schema("{type: object, properties: {q: {type: string}}}"), "ok.yaml")
    assert len(metaschema_checks) == 2


def test_a_schema_with_a_value_json_lacks_is_checked_each_time(
    metaschema_checks: list[object],
) -> None:
    from openprogram_testing.scenarios import ScenarioError

    dated = "{type: object, properties: {d: {type: string, minLength: 2020-01-01}}}"
    for name in ("scenario_a.yaml", "scenario_b.yaml"):
        with pytest.raises(ScenarioError, match="not a valid JSON Schema"):
            parse_scenario(_with_schema(dated), name)
    assert len(metaschema_checks) == 2  # a YAML date: never keyed by its text


def test_the_remembered_verdicts_are_bounded(
    metaschema_checks: list[object], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(checks, "SCHEMA_VERDICTS_KEPT", 3)
    for i in range(10):
        parse_scenario(_with_schema(f"{{type: object, properties: {{q{i}: {{}}}}}}"), "s.yaml")
        assert len(checks._SCHEMA_VERDICTS) <= 3
    assert len(metaschema_checks) == 10
