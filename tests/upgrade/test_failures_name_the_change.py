"""Where a 0.1 spelling cannot keep working, it fails with a message that says exactly what to
change (CHANGELOG.md), and doing what it says is the whole fix."""

from __future__ import annotations

import shlex
import shutil
import textwrap
from pathlib import Path

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario, run_scenario

OLD_SCENARIO = Path(__file__).resolve().parent / "scenario_0_1"

SNAPSHOT_SCENARIO = """
prompt: hi
script: [hello]
expect: {termination: completed, snapshot: true}
"""


def test_a_scenario_snapshot_at_its_0_1_place_names_the_move(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").touch()
    scenario = tmp_path / "scenario_greets.yaml"
    scenario.write_text(SNAPSHOT_SCENARIO)
    assert run_scenario(scenario, update_snapshots=True).snapshot_written
    (now,) = (tmp_path / "__snapshots__").rglob("*.trace.txt")
    # 0.1 kept it at __snapshots__/<file stem>.txt
    old = tmp_path / "__snapshots__" / "scenario_greets.txt"
    now.rename(old)
    now.parent.rmdir()

    result = run_scenario(scenario)
    assert not result.passed
    (failure,) = result.failures
    assert f"is stored at {now} since 0.2.0 (syrupy's store)" in failure
    assert f"found it at its 0.1 place {old}: move it (git mv {old} {now})" in failure
    src, dst = shlex.split(failure.split("(git mv ", 1)[1].split(")", 1)[0])
    Path(dst).parent.mkdir(parents=True, exist_ok=True)
    Path(src).rename(dst)
    assert run_scenario(scenario).passed


def test_a_missing_snapshot_with_nothing_at_the_0_1_place_says_how_to_write_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "pyproject.toml").touch()
    scenario = tmp_path / "scenario_greets.yaml"
    scenario.write_text(SNAPSHOT_SCENARIO)
    (failure,) = run_scenario(scenario).failures
    assert "no snapshot stored at" in failure and "0.1" not in failure


FACTORY_MODULE = '''
from openprogram import function

@function
def ping() -> str:
    """Ping."""
    return "pong"

{mark}
def make_tools():
    return [ping]
'''


@pytest.mark.parametrize("marked", [False, True])
def test_an_unmarked_0_1_factory_is_refused_naming_the_mark(tmp_path: Path, marked: bool) -> None:
    (tmp_path / "pyproject.toml").touch()
    mark = "from openprogram_testing import scenario_factory\n@scenario_factory" if marked else ""
    module = f"upgrade_factories_{'marked' if marked else 'unmarked'}"  # one import each
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(FACTORY_MODULE.format(mark=mark)))
    scenario = tmp_path / "scenario_t.yaml"
    scenario.write_text(
        f"prompt: hi\ntools: [{{import: '{module}:make_tools'}}]\n"
        "script: [{calls: [{name: ping}]}, done]\n"
    )
    if marked:  # the migration the message names is the whole fix
        assert run_scenario(load_scenario(scenario, import_roots=[tmp_path])).passed
        return
    with pytest.raises(ScenarioError) as info:
        load_scenario(scenario, import_roots=[tmp_path])
    message = str(info.value)
    assert "0.1 called an unmarked function here, 0.2.0 calls only a marked one" in message
    assert "decorate it with @scenario_factory (from openprogram_testing)" in message


def test_a_0_1_follow_up_that_never_comes_fails_naming_optional(tmp_path: Path) -> None:
    # the bundled scenario 35 as 0.1 wrote it: its follow-up is never taken at the cap
    scenario = tmp_path / "scenario_35.yaml"
    scenario.write_text(
        "prompt: Quick answer please.\nscript: [Forty-two.]\n"
        "follow_ups: [Explain your answer.]\noptions: {max_iterations: 1}\n"
        "expect: {termination: completed, model_calls: 1, final_text: Forty-two.}\n"
    )
    result = run_scenario(scenario)
    assert not result.passed
    assert "optional: true" in "\n".join(result.failures)
    migrated = scenario.read_text().replace(
        "follow_ups: [Explain your answer.]",
        "steering: [{follow_up: true, message: Explain your answer., optional: true}]",
    )
    scenario.write_text(migrated)
    assert run_scenario(scenario).passed


def test_a_0_1_cassette_scenario_fails_at_tool_choice_naming_the_option(tmp_path: Path) -> None:
    # scenario 40 and its cassette as 0.1 had them: recorded without a tool_choice, which a
    # scenario now sends as "auto" (body matching compares it)
    shutil.copytree(OLD_SCENARIO, tmp_path / "project")
    (tmp_path / "project" / "pyproject.toml").touch()
    scenario = tmp_path / "project" / "scenario_40_cassette_openai_chat_weather.yaml"
    result = run_scenario(scenario)
    assert not result.passed
    text = "\n".join(result.failures)
    assert 'at $.tool_choice: recorded <missing>, got "auto"' in text
    assert "Since 0.2.0 a YAML scenario without options.tool_choice sends" in text
    assert "write options: {tool_choice: null} in the scenario" in text
    scenario.write_text(scenario.read_text() + "options: {tool_choice: null}\n")
    assert run_scenario(scenario).passed  # the option named is the whole fix


def test_the_0_1_fault_record_names_the_constructors() -> None:
    from openprogram_testing import Fault, HttpError

    with pytest.raises(
        TypeError, match=r"namespace of constructors since 0.2.0.*Fault\.http_error"
    ):
        Fault(kind="status", status_code=429)  # type: ignore[call-arg]
    assert Fault.http_error(429) == HttpError(429, headers={})  # what the message says to write
