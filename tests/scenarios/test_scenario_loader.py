"""The YAML scenario loader: every documented error path gives ``file:line:column: path: message``
(never a traceback), and valid files load into the expected model."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from openprogram_testing.scenarios import (
    Scenario,
    ScenarioError,
    load_scenario,
    parse_scenario,
    scenario_json_schema,
)
from tests.scenarios._scenarios import load_error

ROOT = Path(__file__).resolve().parents[2]


def error_of(text: str, name: str = "s.yaml") -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(textwrap.dedent(text).lstrip("\n"), name)
    message = str(info.value)
    assert "Traceback" not in message
    return message


def test_valid_file_loads_with_defaults(tmp_path: Path) -> None:
    path = tmp_path / "scenario_ok.yaml"
    path.write_text(
        textwrap.dedent(
            """
            prompt: hi
            tools:
              - name: add
                parameters: {type: object, properties: {a: {type: integer}}}
                returns: 3
            script:
              - hello
              - calls: [{name: add, args: {a: 1}}]
                chunk_size: 2
            """
        )
    )
    scenario = load_scenario(path)
    assert scenario.display_name == "ok"
    assert scenario.path == path.resolve()
    assert scenario.check_invariants is True
    assert scenario.options.steering_mode == "skip"
    assert [t.text for t in scenario.turns] == ["hello", None]
    assert scenario.turns[1].calls[0].args == {"a": 1}
    assert scenario.prompt_list == ["hi"]


def test_bad_indentation_is_a_yaml_syntax_error_with_position() -> None:
    message = error_of(
        """
        prompt: hi
        script:
          - text: hi
           calls: []
        """
    )
    assert message == (
        "s.yaml:4:4: YAML syntax error: expected <block end>, but found '<block mapping start>' "
        "(while parsing a block collection) — check the indentation of this line and the one before"
    )


def test_unclosed_quote_is_a_yaml_syntax_error() -> None:
    message = error_of('prompt: "hi\nscript: [x]\n')
    assert message.startswith("s.yaml:3:1: YAML syntax error: found unexpected end of stream")


def test_unknown_key_names_the_key_suggests_and_lists_allowed_keys() -> None:
    message = error_of(
        """
        prompt: hi
        script:
          - texxt: hi
        """
    )
    assert message == (
        "s.yaml:3:5: script[0].texxt: unknown key 'texxt' (did you mean 'text'?); allowed keys: "
        "thinking, text, calls, stop, error, status, retryable, retry_after, aborted, cut, chunk_size, "
        "usage"
    )


def test_unknown_top_level_key() -> None:
    message = error_of("prompt: hi\nscript: [x]\nexpectations: {}\n")
    assert message.startswith(
        "s.yaml:3:1: expectations: unknown key 'expectations' (did you mean 'expect'?); allowed keys: "
    )


def test_wrong_type_says_what_was_expected_and_what_was_given() -> None:
    message = error_of(
        """
        prompt: hi
        tools:
          - name: t
            sleep: soon
        script: [x]
        """
    )
    assert message == "s.yaml:4:12: tools[0].sleep: expected a number, got 'soon'"


def test_wrong_literal_lists_the_choices() -> None:
    message = error_of("prompt: hi\nscript: [x]\noptions: {steering_mode: skippy}\n")
    assert message == (
        "s.yaml:3:26: options.steering_mode: expected 'skip' or 'after_batch', got 'skippy'"
    )


def test_script_entry_of_the_wrong_kind_names_both_forms() -> None:
    message = error_of("prompt: hi\nscript:\n  - 3\n")
    assert message == "s.yaml:3:5: script[0]: expected a string or a turn mapping"


def test_missing_nested_field_points_at_its_mapping() -> None:
    message = error_of(
        """
        prompt: hi
        script:
          - calls:
              - {args: {}}
        """
    )
    assert message == "s.yaml:4:9: script[0].calls[0].name: missing required field 'name'"


def test_several_problems_are_all_reported_in_file_order() -> None:
    message = error_of(
        """
        prompt: hi
        script: [x]
        options: {max_iterations: many}
        expect: {termination: done}
        """
    )
    lines = message.splitlines()
    assert lines == [
        "s.yaml:3:27: options.max_iterations: expected an integer, got 'many'",
        "s.yaml:4:23: expect.termination: expected 'completed', 'max_iterations', 'error' or "
        "'aborted', got 'done'",
    ]


def test_script_calling_an_undeclared_tool_is_an_error() -> None:
    message = error_of(
        """
        prompt: hi
        tools: [{name: add}]
        script:
          - calls: [{name: ad}]
        """
    )
    assert message == (
        "s.yaml:4:20: script[0].calls[0].name: the script calls tool 'ad', which is not declared "
        "in 'tools' (declared: add); mark the call 'unknown_tool: true' to test the \"not found\" "
        "path"
    )


def test_unknown_tool_flag_allows_an_undeclared_tool_and_rejects_a_declared_one() -> None:
    ok = parse_scenario("prompt: hi\nscript:\n  - calls: [{name: nope, unknown_tool: true}]\n")
    assert ok.turns[0].calls[0].unknown_tool
    message = error_of(
        "prompt: hi\ntools: [{name: add}]\nscript:\n  - calls: [{name: add, unknown_tool: true}]\n"
    )
    assert message == (
        "s.yaml:4:20: script[0].calls[0].name: the call is marked 'unknown_tool: true' but tool "
        "'add' is declared"
    )


def test_missing_cassette_file_is_reported_with_the_resolved_path(tmp_path: Path) -> None:
    path = tmp_path / "scenario_c.yaml"
    path.write_text("prompt: hi\ncassette: {path: missing.yaml, api: anthropic}\n")
    assert load_error(path) == (
        f"{path}:2:18: cassette.path: cassette file not found: {tmp_path / 'missing.yaml'}"
    )


def test_duplicate_key() -> None:
    assert error_of("prompt: hi\nprompt: again\nscript: [x]\n") == (
        "s.yaml:2:1: prompt: duplicate key 'prompt'"
    )


def test_top_level_must_be_a_mapping_and_not_empty() -> None:
    assert error_of("- a\n") == (
        "s.yaml:1:1: expected a mapping of scenario fields at the top level, got a list"
    )
    assert error_of("").startswith("s.yaml:1:1: the file is empty")


def test_shape_rules_are_reported_at_the_enclosing_mapping() -> None:
    assert error_of("script: [x]\n") == ("s.yaml:1:1: give exactly one of 'prompt' or 'prompts'")
    assert error_of("prompt: hi\n") == (
        "s.yaml:1:1: give exactly one of 'script' (a model script), 'cassette' or 'schema_driven'"
    )
    assert error_of("prompt: hi\nscript:\n  - {error: x, stop: length}\n") == (
        "s.yaml:3:5: script[0]: a turn ends one way only, got stop, error"
    )
    assert error_of("prompt: hi\nscript:\n  - {status: 500}\n") == (
        "s.yaml:3:5: script[0]: status/retryable/retry_after need 'error: <message>'"
    )


def test_tool_behaviour_rules() -> None:
    assert error_of("prompt: hi\ntools: [{name: t, returns: 1, echo: true}]\nscript: [x]\n") == (
        "s.yaml:2:9: tools[0]: give only one of returns/raises/echo/agentic, got returns, echo"
    )
    assert (
        error_of(
            "prompt: hi\ntools: [{name: t, returns: 1, sequence: [{returns: 2}]}]\nscript: [x]\n"
        )
        == "s.yaml:2:9: tools[0]: 'sequence' replaces returns: give one or the other"
    )
    assert error_of("prompt: hi\ntools: [{name: t, raises: {type: Boom}}]\nscript: [x]\n") == (
        "s.yaml:2:27: tools[0].raises: 'Boom' is not a built-in Exception class "
        "(e.g. ValueError, RuntimeError, KeyError)"
    )
    assert error_of("prompt: hi\ntools: [{name: t}, {name: t}]\nscript: [x]\n") == (
        "s.yaml:1:1: tool names must be unique, repeated: t"
    )


def test_invalid_parameter_schema_and_forced_choice_of_unknown_tool() -> None:
    assert error_of(
        "prompt: hi\ntools: [{name: t, parameters: {type: objekt}}]\nscript: [x]\n"
    ).startswith("s.yaml:2:31: tools[0].parameters: not a valid JSON Schema: ")
    assert error_of(
        "prompt: hi\ntools: [{name: t}]\nscript: [x]\n"
        "options: {tool_choice: {type: function, name: u}}\n"
    ) == (
        "s.yaml:4:47: options.tool_choice.name: tool_choice names tool 'u', which is not "
        "declared in 'tools'"
    )


def test_steering_and_mutation_need_exactly_one_position_or_kind() -> None:
    assert error_of(
        "prompt: hi\nscript: [x]\nsteering:\n  - {message: m, after_tool: 0, before_round: 1}\n"
    ) == (
        "s.yaml:4:5: steering[0]: a steering entry needs exactly one of after_tool, after_call, "
        "before_round, when, follow_up (got after_tool, before_round)"
    )
    assert error_of(
        "prompt: hi\ncassette: {path: c.yaml, api: anthropic, faults: [{interaction: 0}]}\n"
    ).startswith("s.yaml:2:51: cassette.faults[0]: a fault has exactly one of truncate_after")


def test_invalid_regular_expression() -> None:
    assert error_of("prompt: hi\nscript: [x]\nexpect: {final_text_matches: '('}\n").startswith(
        "s.yaml:3:30: expect.final_text_matches: invalid regular expression '('"
    )


def test_missing_file(tmp_path: Path) -> None:
    assert load_error(tmp_path / "nope.yaml") == f"{tmp_path / 'nope.yaml'}:1:1: file not found"


def test_errors_expose_structured_problems() -> None:
    with pytest.raises(ScenarioError) as info:
        parse_scenario("prompt: hi\nscript: [x]\noptions: {steering_mode: 1}\n", "f.yaml")
    (problem,) = info.value.problems
    assert (problem.file, problem.line, problem.column, problem.path) == (
        "f.yaml",
        3,
        26,
        "options.steering_mode",
    )


def test_committed_json_schema_is_up_to_date() -> None:
    committed = json.loads((ROOT / "openprogram_testing" / "scenario.schema.json").read_text())
    assert committed == scenario_json_schema(), (
        "openprogram_testing/scenario.schema.json is stale: regenerate it with "
        "`openprogram-testing schema > openprogram_testing/scenario.schema.json`"
    )


def test_json_schema_accepts_the_bundled_scenarios_and_rejects_unknown_keys() -> None:
    import jsonschema
    import yaml

    validator = jsonschema.Draft202012Validator(scenario_json_schema())
    files = sorted((ROOT / "scenarios").glob("scenario_*.yaml"))
    assert files
    for f in files:
        validator.validate(yaml.safe_load(f.read_text()))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"prompt": "x", "script": ["y"], "bogus": 1})


def test_model_round_trips_through_yaml_dump(tmp_path: Path) -> None:
    """What the hypothesis strategies do: build a Scenario in code, dump it, load it back."""
    import yaml

    scenario = Scenario.model_validate(
        {
            "prompt": "p",
            "tools": [{"name": "t", "echo": True}],
            "script": [{"calls": [{"name": "t", "args": {"a": 1}}]}, "done"],
        }
    )
    path = tmp_path / "scenario_rt.yaml"
    path.write_text(yaml.safe_dump(scenario.model_dump(mode="json", exclude_defaults=True)))
    assert load_scenario(path).model_dump() == scenario.model_dump()


def test_agentic_tool_rules() -> None:
    assert error_of(
        "prompt: hi\ntools:\n  - name: a\n    agentic: {prompt: p, tools: [a, zz]}\nscript: [x]\n"
    ) == (
        "s.yaml:4:37: tools[0].agentic.tools[1]: the nested run offers tool 'zz', which is not "
        "declared in 'tools'"
    )
    assert (
        error_of("prompt: hi\ntools: [{name: a, echo: true, agentic: {prompt: p}}]\nscript: [x]\n")
        == "s.yaml:2:9: tools[0]: give only one of returns/raises/echo/agentic, got echo, agentic"
    )


def test_tab_indentation_is_a_yaml_syntax_error() -> None:
    assert error_of("prompt: hi\nscript:\n\t- x\n") == (
        "s.yaml:3:1: YAML syntax error: found character '\\t' that cannot start any token "
        "(while scanning for the next token) — indent YAML with spaces, not tabs"
    )
