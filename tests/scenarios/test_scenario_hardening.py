"""Hostile scenario files end in a positioned error or a clean failure: alias bombs, deep
nesting, cassette paths outside the project, indices past the end of a cassette, regexes that
backtrack forever, event tokens split by a flow list, and very many tools."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios import checks
from openprogram_testing.scenarios import ScenarioError, load_scenario, parse_scenario, run_scenario
from tests.scenarios._scenarios import load_error

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
CASSETTES = ROOT / "scenarios" / "cassettes"

BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    + "prompt: hi\nscript: [x]\ntools:\n  - name: t\n    returns: *i\n"
)


def in_subprocess(code: str, timeout: float = 60) -> str:
    """Run ``code`` in a fresh interpreter (a hang fails the test instead of the run)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


# -- aliases and depth -----------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_at_the_alias_quickly(tmp_path: Path) -> None:
    path = tmp_path / "scenario_bomb.yaml"
    path.write_text(BOMB)
    assert len(BOMB) < 1700
    out = in_subprocess(
        "import time; from openprogram_testing.scenarios import load_scenario, ScenarioError\n"
        "t = time.perf_counter()\n"
        f"try: load_scenario({str(path)!r})\n"
        "except ScenarioError as e: print(e); print(time.perf_counter() - t)\n",
        timeout=60,
    )
    message, seconds = out.strip().rsplit("\n", 1)
    assert message.startswith(f"{path}:")
    assert "aliases expand this document by more than 100,000 nodes" in message
    assert float(seconds) < 5


def test_a_recursive_alias_is_refused() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario("prompt: hi\nscript: [x]\ntools: &t [{name: a, returns: *t}]\n", "s.yaml")
    assert str(info.value) == (
        "s.yaml:3:31: alias *t refers to a node that contains it (a recursive structure)"
    )


def test_aliases_that_share_values_still_load() -> None:
    scenario = parse_scenario(
        "schema: &s {type: object, properties: {a: {type: integer}}}\n"
        if False
        else textwrap.dedent(
            """
            prompt: hi
            tools:
              - {name: a, parameters: &s {type: object, properties: {q: {type: string}}}}
              - {name: b, parameters: *s}
            script: [done]
            """
        ),
        "s.yaml",
    )
    assert scenario.tools[0].parameters == scenario.tools[1].parameters


@pytest.mark.parametrize("style", ["flow", "block"])
def test_nesting_beyond_the_limit_is_a_positioned_error_not_a_recursion_error(
    style: str,
) -> None:
    depth = 1500
    if style == "flow":
        value = "[" * depth + "]" * depth
        text = f"prompt: hi\nscript: [x]\ntools: [{{name: t, returns: {value}}}]\n"
        where = "s.yaml:3:"
    else:
        text = "prompt: hi\nscript: [x]\nx:\n" + "".join(
            "  " * i + f"k{i}:\n" for i in range(1, depth)
        )
        where = "s.yaml:"
    with pytest.raises(ScenarioError) as info:
        parse_scenario(text, "s.yaml")
    message = str(info.value)
    assert message.startswith(where)
    assert "nesting deeper than 100 levels" in message


def test_a_bad_file_does_not_stop_the_good_ones_under_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makefile(".yaml", scenario_bomb=BOMB)
    pytester.makefile(".yaml", scenario_deep="prompt: hi\nscript: " + "[" * 2000 + "]" * 2000)
    pytester.makefile(".yaml", scenario_good="prompt: hi\nscript: [hello]\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*scenario_bomb.yaml:*: aliases expand this document*"])
    result.stdout.fnmatch_lines(["*scenario_deep.yaml:2:*: nesting deeper than 100 levels*"])
    assert "RecursionError" not in result.stdout.str()
    assert "Traceback" not in result.stdout.str()


# -- cassette paths and indices --------------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A project: a marker file, scenarios/ and a cassette under cassettes/."""
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "cassettes").mkdir()
    shutil.copy(CASSETTES / "openai_chat_text.yaml", tmp_path / "cassettes" / "text.yaml")
    return tmp_path


def cassette_scenario(project: Path, path: str, faults: str = "") -> Path:
    scenario = project / "scenarios" / "scenario_c.yaml"
    extra = f"\n  faults: {faults}" if faults else ""
    # these scenarios are about where a cassette may live, not what is asked: bodies are not matched
    text = (
        f"prompt: hi\ncassette:\n  path: {path}\n  api: openai_chat{extra}\n  match_body: false\n"
    )
    scenario.write_text(text)
    return scenario


def test_a_cassette_inside_the_project_root_loads(project: Path) -> None:
    scenario = load_scenario(cassette_scenario(project, "../cassettes/text.yaml"))
    assert scenario.root == project.resolve()
    result = run_scenario(scenario)
    assert result.passed, result.failure_text


@pytest.mark.parametrize(
    ("path", "message"),
    [
        (
            "../../../../../../../../etc/passwd",
            "the cassette path leads outside the scenario's root",
        ),
        ("/proc/self/environ", "absolute cassette paths are refused"),
        ("/etc/passwd", "absolute cassette paths are refused"),
        ("scenario_c.yaml", "the cassette path names the scenario file itself"),
        ("../cassettes", "the cassette path is not a regular file"),
        ("../cassettes/missing.yaml", "cassette file not found"),
    ],
)
def test_cassette_paths_are_confined_to_the_root(project: Path, path: str, message: str) -> None:
    scenario = cassette_scenario(project, path)
    error = load_error(scenario)
    assert error.startswith(f"{scenario}:3:9: cassette.path: {message}"), error


def test_a_symlink_out_of_the_root_is_refused(
    project: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    outside = tmp_path_factory.mktemp("outside") / "secret.yaml"
    outside.write_text("interactions: []\n")
    (project / "cassettes" / "link.yaml").symlink_to(outside)
    error = load_error(cassette_scenario(project, "../cassettes/link.yaml"))
    assert "the cassette path leads outside the scenario's root" in error


def test_an_explicit_root_confines_further(project: Path) -> None:
    scenario = cassette_scenario(project, "../cassettes/text.yaml")
    error = load_error(scenario, root=project / "scenarios")
    assert "leads outside the scenario's root" in error


def test_a_file_that_is_not_a_cassette_is_a_load_error(project: Path) -> None:
    (project / "cassettes" / "junk.yaml").write_text("just: data\n")
    error = load_error(cassette_scenario(project, "../cassettes/junk.yaml"))
    assert ":3:9: cassette.path: cannot load the cassette" in error


@pytest.mark.parametrize(
    ("fault", "where", "message"),
    [
        ("[{drop_terminal: true, interaction: 3}]", "interaction", "interaction 3 does not exist"),
        ("[{truncate_after: 999}]", "truncate_after", "frame index 999 is past the end"),
        ("[{malformed_frame: 999, interaction: 0}]", "malformed_frame", "frame index 999"),
        ("[{inject_error: 500}]", "inject_error", "frame index 500"),
        ("[{stall: 0.1, after_frame: 77}]", "after_frame", "frame index 77"),
    ],
)
def test_fault_indices_are_checked_against_the_cassette(
    project: Path, fault: str, where: str, message: str
) -> None:
    error = load_error(cassette_scenario(project, "../cassettes/text.yaml", fault))
    assert ":5:" in error and f"cassette.faults[0].{where}: {message}" in error, error


@pytest.mark.parametrize(
    ("cassette", "api", "fault", "message"),
    [
        ("anthropic_weather", "anthropic", "[{garble_tool_arguments: 0, interaction: 1}]",
         "interaction 1: GarbleToolArguments(i=0): the anthropic stream has only 0 tool call(s)"),
        ("anthropic_weather", "anthropic", "[{garble_tool_arguments: 1, interaction: 0}]",
         "interaction 0: GarbleToolArguments(i=1): the anthropic stream has only 1 tool call(s)"),
        ("anthropic_weather", "anthropic", "[{garble_tool_arguments: 0}]",  # every interaction
         "interaction 1: GarbleToolArguments(i=0): the anthropic stream has only 0 tool call(s)"),
        ("gemini_weather", "gemini", "[{garble_tool_arguments: 0, interaction: 0}]",
         "not available for gemini streams"),
        ("openai_chat_text", "openai_chat", "[{garble_tool_arguments: 0, interaction: 0}]",
         "the openai_chat stream has only 0 tool call(s)"),
    ],
)  # fmt: skip
def test_a_garbled_call_that_is_not_there_is_refused_at_validate(
    project: Path, cassette: str, api: str, fault: str, message: str, capsys: Any
) -> None:
    shutil.copy(CASSETTES / f"{cassette}.yaml", project / "cassettes" / "tools.yaml")
    scenario = cassette_scenario(project, "../cassettes/tools.yaml", fault)
    scenario.write_text(scenario.read_text().replace("api: openai_chat", f"api: {api}"))
    error = load_error(scenario)
    assert ":5:36: cassette.faults[0].garble_tool_arguments: " in error, error
    assert message in error
    assert main(["validate", str(scenario)]) == 1
    assert message in capsys.readouterr().out


def test_a_garbled_call_that_is_there_validates(project: Path) -> None:
    shutil.copy(CASSETTES / "anthropic_weather.yaml", project / "cassettes" / "tools.yaml")
    scenario = cassette_scenario(
        project, "../cassettes/tools.yaml", "[{garble_tool_arguments: 0, interaction: 0}]"
    )
    scenario.write_text(scenario.read_text().replace("api: openai_chat", "api: anthropic"))
    assert load_scenario(scenario).cassette is not None


def test_the_last_frame_index_is_accepted(project: Path) -> None:
    from openprogram_testing.cassettes import load_interactions
    from openprogram_testing.transport.wire.sse import split_frames

    body = load_interactions(project / "cassettes" / "text.yaml")[0]["response"]["body"]
    text = body["string"] if isinstance(body, dict) else body
    n = len(split_frames(text if isinstance(text, str) else text.decode()))
    load_scenario(
        cassette_scenario(project, "../cassettes/text.yaml", f"[{{truncate_after: {n}}}]")
    )
    error = load_error(
        cassette_scenario(project, "../cassettes/text.yaml", f"[{{malformed_frame: {n}}}]")
    )
    assert f"has {n} frame(s) (0..{n - 1})" in error


# -- regexes and the time limit --------------------------------------------------------------------


def test_a_catastrophic_regex_fails_the_scenario_by_name_within_its_time_limit() -> None:
    text = "a" * 40 + "b"
    scenario = parse_scenario(
        f"name: backtracking\nprompt: hi\nscript: ['{text}']\n"
        "options: {time_limit_s: 1}\nexpect: {final_text_matches: '^(a|aa)+$'}\n",
        "s.yaml",
    )
    started = time.perf_counter()
    result = run_scenario(scenario)
    assert time.perf_counter() - started < 10
    assert not result.passed
    assert result.failure_text.startswith("scenario 'backtracking' failed")
    assert result.failures == [
        "expect.final_text_matches: the regular expression '^(a|aa)+$' did not finish within "
        "the scenario's time limit (catastrophic backtracking?); simplify it"
    ]


@pytest.mark.parametrize("mode", ["strict", "unordered"])
def test_the_regexes_of_a_trajectory_are_bounded_by_the_scenario_time_limit(mode: str) -> None:
    """100 calls, each matched (in the end) by a pattern that takes ~0.25 s: 25 s one search
    at a time, each within its own 5 s; the scenario's 2 s bound them all."""
    calls = ", ".join("{name: t, args: {s: " + "a" * 24 + "b}}" for _ in range(100))
    expected = ", ".join("{name: t, args: {s: {$regex: '(a|aa)+c|b'}}}" for _ in range(100))
    scenario = parse_scenario(
        f"name: slow_trajectory\nprompt: hi\ntools: [{{name: t, returns: ok}}]\n"
        f"script: [{{calls: [{calls}]}}, done]\noptions: {{time_limit_s: 2}}\n"
        f"expect: {{trajectory: {{mode: {mode}, calls: [{expected}]}}}}\n",
        "s.yaml",
    )
    started = time.perf_counter()
    result = run_scenario(scenario)
    assert time.perf_counter() - started < 8
    assert result.failures == [
        "expect.trajectory: the regular expression '(a|aa)+c|b' did not finish within the "
        "scenario's time limit (catastrophic backtracking?); simplify it"
    ]


def test_a_fast_trajectory_regex_is_unaffected_by_the_time_limit() -> None:
    scenario = parse_scenario(
        "prompt: hi\ntools: [{name: t, returns: ok}]\n"
        "script: [{calls: [{name: t, args: {s: Oslo}}]}, done]\noptions: {time_limit_s: 2}\n"
        "expect: {trajectory: {calls: [{name: t, args: {s: {$regex: '^Os'}}}]}}\n",
        "s.yaml",
    )
    assert run_scenario(scenario).passed


def test_a_run_past_its_time_limit_fails_by_name() -> None:
    scenario = parse_scenario(
        "name: slow\nprompt: hi\ntools: [{name: t, sleep: 30}]\n"
        "script: [{calls: [{name: t}]}, done]\n",
        "s.yaml",
    )
    started = time.perf_counter()
    result = run_scenario(scenario, time_limit_s=0.3)
    assert time.perf_counter() - started < 5
    assert result.failures == [
        "the run did not finish within the time limit of 0.3 s (options.time_limit_s)"
    ]
    assert "scenario 'slow' failed" in result.failure_text


def test_the_time_limit_ini_option_applies_under_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\n"
        "openprogram_scenario_time_limit = 0.3\n"
    )
    pytester.makefile(
        ".yaml",
        scenario_slow="prompt: hi\ntools: [{name: t, sleep: 30}]\n"
        "script: [{calls: [{name: t}]}, done]\n",
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the run did not finish within the time limit of 0.3 s*"])


def test_regexes_are_compiled_at_validate_time() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(
            "prompt: hi\nscript: [x]\nexpect:\n  tool_results: [{text_matches: 'a{2,1}'}]\n",
            "s.yaml",
        )
    assert str(info.value).startswith(
        "s.yaml:4:33: expect.tool_results[0].text_matches: invalid regular expression 'a{2,1}'"
    )


# -- event tokens ------------------------------------------------------------------------------------


SKIPPED = """
prompt: refund order 7
tools: [{name: lookup, returns: found}, {name: refund, returns: done}]
steering: [{after_tool: 0, message: stop}]
script:
  - calls: [{name: lookup}, {name: refund}]
  - ok
expect:
  events: [agent_start, turn_start, ms(U), me(U), ms(A), upd, me(A), tool_start(lookup),
           tool_end(lookup), ms(R), me(R), tool_start(refund), tool_end(refund, skipped), ms(R), me(R), turn_end,
           turn_start, ms(S), me(S), ms(A), upd, me(A), turn_end, agent_end(completed)]
"""


def test_a_flow_list_keeps_a_token_with_a_comma_whole() -> None:
    scenario = parse_scenario(SKIPPED, "s.yaml")
    assert scenario.expect.events is not None
    assert "tool_end(refund, skipped)" in scenario.expect.events
    result = run_scenario(scenario)
    assert result.passed, result.failure_text


@pytest.mark.parametrize(
    ("token", "message"),
    [
        ("tool_ned(x)", "unknown event token 'tool_ned(x)'"),
        ("agent_end(done)", "agent_end takes one of completed, max_iterations, error, aborted"),
        ("ms(Q)", "ms(X) takes one letter of U (prompt)"),
        ("tool_end(x, broken)", "tool_end takes a tool name and optionally 'error' or 'skipped'"),
        ("'tool_end(x'", "not an event token: 'tool_end(x' (unbalanced parentheses"),
        ("turnstart", "unknown event token 'turnstart'"),
    ],
)
def test_event_tokens_are_checked_at_load_with_their_position(token: str, message: str) -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(
            f"prompt: hi\nscript: [x]\nexpect:\n  events: [agent_start, {token}]\n", "s.yaml"
        )
    assert str(info.value).startswith(f"s.yaml:4:25: expect.events[1]: {message}"), str(info.value)


def test_token_spelling_is_canonical() -> None:
    scenario = parse_scenario(
        "prompt: hi\nscript: [x]\nexpect:\n  events: ['tool_end( a ,skipped )', ' upd ']\n",
        "s.yaml",
    )
    assert scenario.expect.events == ["tool_end(a, skipped)", "upd"]


# -- many tools ------------------------------------------------------------------------------------


def test_schemas_are_checked_once_per_distinct_schema(monkeypatch: pytest.MonkeyPatch) -> None:
    from jsonschema import Draft202012Validator

    calls: list[object] = []
    original = Draft202012Validator.check_schema.__func__  # type: ignore[attr-defined]

    def counting(cls: type, schema: object) -> None:
        calls.append(schema)
        original(cls, schema)

    monkeypatch.setattr(Draft202012Validator, "check_schema", classmethod(counting))
    monkeypatch.setattr(checks, "_SCHEMA_VERDICTS", {})  # none remembered from other tests
    tools = "".join(
        f"  - {{name: t{i}, parameters: {{type: object, properties: {{q{i % 3}: {{type: string}}}}}}}}\n"
        for i in range(3000)
    )
    parse_scenario(f"prompt: hi\nscript: [x]\ntools:\n{tools}", "s.yaml")
    assert len(calls) == 3


def test_agentic_choices_must_name_at_least_one_label(tmp_path: Path) -> None:
    path = tmp_path / "scenario_c.yaml"
    path.write_text(
        "prompt: hi\ntools:\n  - {name: d, agentic: {prompt: go, choices: []}}\nscript: [done]\n"
    )
    with pytest.raises(ScenarioError, match=r"scenario_c.yaml:3:\d+: .*choices"):
        load_scenario(path)
