"""Schema-derived tool calls: valid arguments from a tool's JSON Schema and labelled near
misses, checked against the real loop (the label must be exactly what the loop answers)."""

from __future__ import annotations

import asyncio
import warnings
from typing import Any

import pytest
from hypothesis import find, given, settings

from openprogram_testing import ScriptedProvider, run_loop
from openprogram_testing.frontends.strategies.schema import CallLabel, label_applies
from openprogram_testing.strategies import (
    ALL_LABELS,
    SchemaCall,
    schema_arguments,
    schema_calls,
    tool_model,
)
from openprogram_testing.transport.schema_values import (
    ArgumentGenerator,
    RandomSource,
    compiled_validator,
)
from openprogram_testing.transport.scripted import turn
from tests.properties._schema_tools import REFUND_SCHEMA, book_hotel, get_order, refund
from tests.properties._settings import fixed_settings

_SOME = fixed_settings(150)


@pytest.mark.parametrize("tool", [refund, book_hotel, get_order], ids=lambda t: tool_model(t).name)
def test_generated_arguments_satisfy_the_schema_the_model_sees(tool: Any) -> None:
    model = tool_model(tool)
    validator = compiled_validator(model.schema)

    @_SOME
    @given(arguments=schema_arguments(tool))
    def check(arguments: dict[str, Any]) -> None:
        assert validator.is_valid(arguments), arguments
        assert model.validate(arguments)[1] == []

    check()


@pytest.mark.parametrize("tool", [refund, book_hotel], ids=lambda t: tool_model(t).name)
@pytest.mark.parametrize("label", ALL_LABELS)
def test_each_call_gets_exactly_the_labelled_outcome_from_the_loop(
    tool: Any, label: CallLabel, event_runner: asyncio.Runner
) -> None:
    if not label_applies(label, tool_model(tool).schema):
        with pytest.raises(ValueError, match="none of the labels"):
            schema_calls(tool, labels=[label])
        assert (tool, label) == (book_hotel, "out_of_range")  # the one combination without
        return

    @settings(_SOME, max_examples=25)
    @given(generated=schema_calls(tool, labels=[label]))
    def check(generated: SchemaCall) -> None:
        assert generated.label == label
        provider = ScriptedProvider([turn(generated.scripted()), "done"])
        trace = event_runner.run(run_loop(provider, ["go"], tools=[tool]))
        (result,) = trace.tool_results
        if generated.valid:
            assert not result.is_error, result.text
        else:
            assert result.is_error and result.text == generated.expected_error
        assert generated.valid == (label == "valid")  # every near miss here is refused

    check()


def test_near_misses_are_labelled_with_the_validators_exact_text() -> None:
    wrong = find(schema_calls(refund, labels=["wrong_type"]), lambda c: True)
    assert wrong.expected_error is not None
    assert wrong.expected_error.startswith('Validation failed for tool "refund":\n  - ')
    assert "is not of type" in wrong.expected_error
    missing = find(schema_calls(book_hotel, labels=["missing_required"]), lambda c: True)
    assert missing.expected_error is not None and "Field required" in missing.expected_error
    raw = find(schema_calls(refund, labels=["not_json"]), lambda c: True)
    assert raw.arguments is None and raw.raw is not None
    assert "root: arguments are not valid JSON" in (raw.expected_error or "")
    array = find(schema_calls(get_order, labels=["not_object"]), lambda c: True)
    assert "arguments must be a JSON object, got an array" in (array.expected_error or "")


def test_valid_arguments_shrink_to_the_simplest_valid_call() -> None:
    minimal = find(schema_arguments(refund), lambda a: True)
    assert minimal == {"order_id": "ORD-0000", "amount": 0.0, "reason": "damaged"}
    # A failure that needs items shrinks to one item, the smallest allowed.
    with_items = find(schema_arguments(refund), lambda a: len(a.get("items", [])) >= 1)
    assert with_items["items"] == [1]


def test_labels_that_do_not_apply_are_not_drawn() -> None:
    with pytest.raises(ValueError, match="'get_order': none of the labels"):
        schema_calls(get_order, labels=["out_of_range", "not_in_enum"])


SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"n": {"type": "integer", "multipleOf": 5, "minimum": 1}}},
    {"type": "object", "properties": {"v": {"type": ["string", "null"]}}, "required": ["v"]},
    {"type": "object", "properties": {"t": {"type": "string", "format": "date-time"}}},
    {
        "type": "object",
        "properties": {"x": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}},
        "required": ["x"],
    },
    {
        "type": "object",
        "properties": {
            "u": {"type": "array", "items": {"enum": [1, 2, 3]}, "uniqueItems": True, "minItems": 2}
        },
        "required": ["u"],
    },
    {
        "type": "object",
        "$defs": {
            "pt": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
        },
        "properties": {"a": {"$ref": "#/$defs/pt"}, "b": {"allOf": [{"$ref": "#/$defs/pt"}]}},
        "required": ["a", "b"],
    },
    {
        "type": "object",
        "properties": {"o": {"oneOf": [{"type": "integer"}, {"type": "string", "minLength": 2}]}},
        "required": ["o"],
    },
    {
        "type": "object",
        "properties": {
            "p": {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "boolean"}],
                "minItems": 2,
            }
        },
        "required": ["p"],
    },
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=lambda s: next(iter(s["properties"])))
def test_every_supported_keyword_yields_valid_arguments(schema: dict[str, Any]) -> None:
    validator = compiled_validator(schema)
    generator = ArgumentGenerator(schema, "t")
    assert generator.gaps == ()

    @_SOME
    @given(arguments=schema_arguments(("t", schema)))
    def check(arguments: dict[str, Any]) -> None:
        assert validator.is_valid(arguments), arguments

    check()
    import random

    produced = [generator.generate(RandomSource(random.Random(i))) for i in range(30)]
    assert sum(validator.is_valid(v) for v in produced) >= 20  # the provider keeps valid ones


def test_schemas_beyond_the_generator_name_the_tool_and_the_keyword() -> None:
    recursive = {
        "type": "object",
        "$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}}}},
        "properties": {"root": {"$ref": "#/$defs/node"}},
    }
    gaps = ArgumentGenerator(recursive, "walk").gaps
    assert [(g.tool, g.keyword) for g in gaps] == [("walk", "$ref")]
    assert "recursive reference #/$defs/node" in gaps[0].message and "'walk'" in gaps[0].message
    odd = {
        "type": "object",
        "properties": {"k": {"type": "string", "not": {"const": "a"}}},
        "patternProperties": {"^x": {}},
    }
    gaps = ArgumentGenerator(odd, "odd").gaps
    assert {(g.keyword, g.path) for g in gaps} == {("patternProperties", ""), ("not", "k")}
    with pytest.warns(UserWarning) as caught:
        strategy = schema_arguments(("odd2", odd))
    messages = sorted(str(w.message) for w in caught)
    assert messages[0].startswith("tool 'odd2': cannot generate arguments for keyword 'not' at k")
    assert "keyword 'patternProperties' at the root" in messages[1]
    # Still generates: values the whole schema accepts (the 'not' is honoured by the check).
    validator = compiled_validator(odd)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")

        @_SOME
        @given(arguments=strategy)
        def check(arguments: dict[str, Any]) -> None:
            assert validator.is_valid(arguments)

        check()
        # The recursive schema still yields arguments (the optional recursion is left out).
        found = find(schema_arguments(("walk2", recursive)), lambda a: "root" in a)
        assert found == {"root": {}}


def test_refund_schema_is_what_the_model_sees() -> None:
    assert tool_model(refund).schema == REFUND_SCHEMA
    assert tool_model(("raw", REFUND_SCHEMA)).name == "raw"
