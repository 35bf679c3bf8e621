"""Schema-derived tool calls: arguments built from a tool's JSON Schema (the spec the model
sees), valid ones and near misses, each labelled with what the loop must do with it.

``schema_arguments(tool)`` draws schema-valid argument dicts; ``schema_calls(tool)`` draws a
``SchemaCall``: valid arguments (the loop runs the tool) or a near miss the loop must refuse
with the exact invalid-arguments text it feeds back to the model: a wrong type, a missing
required field, an unknown field, a value out of range or outside its enum, argument text that
is not JSON, or JSON that is not an object.  The labels come from jsonschema and the runtime's
own texts, not from running the loop, so a loop that validates wrongly fails against them.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Literal, get_args

from hypothesis import reject
from hypothesis import strategies as st

from openprogram.mcp.convert import listed_tools
from openprogram.texts import NOT_JSON_TEXT, not_object_text
from openprogram.tools import (
    Validator,
    as_agent_tool,
    json_schema_validator,
    validation_failed_text,
)
from openprogram_testing.transport.schema_values import ALPHABET, ArgumentGenerator, Infeasible
from openprogram_testing.transport.scripted import ScriptedCall

NearMiss = Literal[
    "wrong_type",
    "missing_required",
    "unknown_field",
    "out_of_range",
    "not_in_enum",
    "not_json",
    "not_object",
]
CallLabel = Literal["valid", NearMiss]
NEAR_MISSES: tuple[NearMiss, ...] = get_args(NearMiss)
ALL_LABELS: tuple[CallLabel, ...] = ("valid", *NEAR_MISSES)
UNKNOWN_FIELD = "unexpected_field"


@dataclass(frozen=True)
class SchemaCall:
    """One generated call of a tool: ``arguments`` (or ``raw`` argument text) and the outcome
    the loop must produce: ``expected_error`` is the exact invalid-arguments result text, or
    ``None`` when the arguments are valid and the tool must run."""

    tool: str
    label: CallLabel
    arguments: Any = None
    raw: str | None = None
    expected_error: str | None = None

    @property
    def valid(self) -> bool:
        return self.expected_error is None

    def scripted(self) -> ScriptedCall:
        """The call as the scripted provider streams it."""
        return ScriptedCall(name=self.tool, arguments=dict(self.arguments or {}), raw=self.raw)


@dataclass(frozen=True)
class ToolModel:
    """What generation needs of one tool: its name and schema (the spec the model sees), the
    compiled argument generator, and the tool's own argument validator (jsonschema for dict
    tools, pydantic for decorated functions): the loop feeds back that validator's problems."""

    name: str
    schema: dict[str, Any]
    generator: ArgumentGenerator
    validate: Validator


def tool_model(tool: Any) -> ToolModel:
    """The ``ToolModel`` of anything the loop accepts as a tool (a decorated function, a dict
    tool, an object with ``spec``/``execute``) or of a ``(name, schema)`` pair (validated as a
    dict tool with that schema would be).  Built once per tool object; a schema part the
    generator cannot honour is reported once as a warning naming the tool and the keyword."""
    key = id(tool)
    cached = _MODELS.get(key)
    if cached is not None and cached[0] is tool:
        return cached[1]
    if isinstance(tool, tuple) and len(tool) == 2 and isinstance(tool[1], Mapping):
        name, schema = str(tool[0]), dict(tool[1])
        validate = json_schema_validator(schema)
    else:
        agent_tool = as_agent_tool(tool)
        name, schema, validate = (
            agent_tool.name,
            dict(agent_tool.spec.parameters),
            agent_tool.validate,
        )
    model = ToolModel(name, schema, _generator(name, _key(schema)), validate)
    if len(_MODELS) > 256:
        _MODELS.clear()
    _MODELS[key] = (tool, model)
    return model


_MODELS: dict[int, tuple[Any, ToolModel]] = {}


def _key(schema: Mapping[str, Any]) -> str:
    return json.dumps(schema, sort_keys=True, default=str)


@lru_cache(maxsize=256)
def _generator(name: str, schema_json: str) -> ArgumentGenerator:
    generator = ArgumentGenerator(json.loads(schema_json), name)
    for gap in generator.gaps:
        warnings.warn(gap.message, stacklevel=5)
    return generator


class HypothesisSource:
    """The walker's choices as hypothesis draws (cached strategy objects), so a generated
    argument shrinks field by field towards the simplest value."""

    __slots__ = ("draw",)

    def __init__(self, draw: st.DrawFn) -> None:
        self.draw = draw

    def integer(self, lo: int, hi: int) -> int:
        return self.draw(_integers(lo, hi))

    def number(self, lo: float, hi: float) -> float:
        return self.draw(_floats(lo, hi))

    def boolean(self) -> bool:
        return self.draw(_BOOLEANS)

    def text(self, min_size: int, max_size: int) -> str:
        return self.draw(_texts(min_size, max_size))

    def regex(self, pattern: str) -> str:
        return self.draw(_regex(pattern))


_BOOLEANS = st.booleans()


@lru_cache(maxsize=512)
def _integers(lo: int, hi: int) -> st.SearchStrategy[int]:
    return st.integers(lo, hi)


@lru_cache(maxsize=256)
def _floats(lo: float, hi: float) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False, allow_infinity=False)


@lru_cache(maxsize=256)
def _texts(lo: int, hi: int) -> st.SearchStrategy[str]:
    return st.text(ALPHABET, min_size=lo, max_size=hi)


@lru_cache(maxsize=256)
def _regex(pattern: str) -> st.SearchStrategy[str]:
    return st.from_regex(pattern, fullmatch=True)


def draw_arguments(draw: st.DrawFn, generator: ArgumentGenerator) -> Any:
    """Schema-valid arguments for ``generator``'s tool, or a hypothesis rejection when the
    drawn value misses a constraint the walker cannot build in (see its gaps)."""
    try:
        value = generator.generate(HypothesisSource(draw))
    except Infeasible:
        reject()
    if not generator.is_valid(value):
        reject()
    return value


def schema_arguments(tool: Any) -> st.SearchStrategy[Any]:
    """Schema-valid argument dicts for ``tool`` (any tool form, or ``(name, schema)``)."""
    generator = tool_model(tool).generator

    @st.composite
    def arguments(draw: st.DrawFn) -> Any:
        return draw_arguments(draw, generator)

    return arguments()


def schema_calls(
    tool: Any, *, labels: Sequence[CallLabel] = ALL_LABELS
) -> st.SearchStrategy[SchemaCall]:
    """Calls of ``tool``: valid arguments first (the shrink target), then the near misses its
    schema allows (a tool without required fields has no ``missing_required``, one that accepts
    extra fields no ``unknown_field``), each labelled with the loop's exact answer."""
    model = tool_model(tool)
    possible = [label for label in labels if label_applies(label, model.schema)]
    if not possible:
        raise ValueError(f"tool {model.name!r}: none of the labels {list(labels)} applies")
    index = st.integers(0, len(possible) - 1)

    @st.composite
    def calls(draw: st.DrawFn) -> SchemaCall:
        label = possible[draw(index)]
        arguments = draw_arguments(draw, model.generator)
        return near_miss(model, label, arguments, draw)

    return calls()


def mcp_tool_calls(
    server: str, listing: Any, *, labels: Sequence[CallLabel] = ALL_LABELS
) -> st.SearchStrategy[SchemaCall]:
    """Calls of an MCP server's tools as the model would make them.  ``listing`` is the
    server's ``tools/list`` result (``{"tools": [...]}`` or the list, e.g. recorded); each tool
    is called by the name the runtime offers it under (``{server}__{tool}``) with arguments
    drawn from the schema it is offered with (normalised as ``MCPConnection`` does, and
    validated as it validates them), valid or a labelled near miss as in ``schema_calls``.
    Tools the runtime would leave off the menu are left out here too."""

    tools = listing.get("tools") if isinstance(listing, Mapping) else listing
    if not isinstance(tools, list):
        raise TypeError('an MCP tool listing is {"tools": [...]} or a list of tools')
    listed, _ = listed_tools(server, tools)
    usable = [
        (tool.name, tool.parameters)
        for tool in listed
        if any(label_applies(label, tool.parameters) for label in labels)
    ]
    if not usable:
        raise ValueError(f"MCP server {server!r}: no listed tool allows the labels {list(labels)}")
    return st.sampled_from(usable).flatmap(lambda tool: schema_calls(tool, labels=labels))


def label_applies(label: CallLabel, schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` allows the near miss ``label`` (e.g. no ``unknown_field`` when extra
    fields are accepted)."""
    properties = schema.get("properties") or {}
    if label == "missing_required":
        return bool(schema.get("required"))
    if label == "unknown_field":
        return schema.get("additionalProperties") is False
    if label == "wrong_type":
        return any(isinstance(p, Mapping) and "type" in p for p in properties.values())
    if label == "out_of_range":
        return any(_range_key(p) for p in properties.values())
    if label == "not_in_enum":
        return any(isinstance(p, Mapping) and p.get("enum") for p in properties.values())
    return True


_RANGE_KEYS = ("maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "maxLength")


def _range_key(node: Any) -> str | None:
    if not isinstance(node, Mapping):
        return None
    return next((k for k in _RANGE_KEYS if isinstance(node.get(k), (int, float))), None)


def near_miss(model: ToolModel, label: CallLabel, arguments: Any, draw: st.DrawFn) -> SchemaCall:
    """``arguments`` (valid) turned into the call ``label`` names, labelled with the outcome:
    the label says what was changed, ``expected_error`` what the loop must answer (``None``
    when the tool's validator accepts the change, e.g. a lax coercion)."""
    name, schema = model.name, model.schema
    if label == "not_json":
        raw = json.dumps(arguments)[:-1]  # a cut-off object never parses
        return SchemaCall(name, label, None, raw, _refused(name, NOT_JSON_TEXT, raw))
    if label == "not_object":
        raw = json.dumps([arguments])
        return SchemaCall(name, label, None, raw, _refused(name, not_object_text("an array"), raw))
    if label == "valid":
        return SchemaCall(name, "valid", arguments)
    mutated = dict(arguments)
    properties: Mapping[str, Any] = schema.get("properties") or {}
    if label == "missing_required":
        required = [r for r in schema.get("required") or () if r in mutated]
        del mutated[required[draw(st.integers(0, len(required) - 1))]]
    elif label == "unknown_field":
        mutated[UNKNOWN_FIELD if UNKNOWN_FIELD not in properties else UNKNOWN_FIELD + "_"] = 1
    else:
        candidates = [
            (key, sub)
            for key, sub in properties.items()
            if (label == "wrong_type" and isinstance(sub, Mapping) and "type" in sub)
            or (label == "out_of_range" and _range_key(sub))
            or (label == "not_in_enum" and isinstance(sub, Mapping) and sub.get("enum"))
        ]
        key, sub = candidates[draw(st.integers(0, len(candidates) - 1))]
        mutated[key] = _broken(label, sub)
    return SchemaCall(name, label, mutated, None, expected_error(model, mutated))


def _broken(label: CallLabel, sub: Mapping[str, Any]) -> Any:
    """A value just outside what ``sub`` accepts."""
    if label == "not_in_enum":
        return "".join(str(v) for v in sub["enum"]) + "?"
    if label == "out_of_range":
        key = _range_key(sub) or "maximum"
        if key == "maxLength":
            return "x" * (int(sub["maxLength"]) + 1)
        bound = sub[key]
        step = 1 if sub.get("type") == "integer" or isinstance(bound, int) else 0.5
        return bound + step if key in ("maximum", "exclusiveMaximum") else bound - step
    kinds = sub["type"] if isinstance(sub["type"], list) else [sub["type"]]
    for value in ("not a number", 12345, True, None, [1], {"a": 1}):
        if _json_kind(value) not in kinds and not (
            "number" in kinds and isinstance(value, int) and not isinstance(value, bool)
        ):
            return value
    return "wrong"


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null"
    return "array" if isinstance(value, list) else "object"


def expected_error(model: ToolModel, arguments: Any) -> str | None:
    """The exact invalid-arguments result the loop feeds back for ``arguments`` (``None``: the
    tool's validator accepts them and the tool must run): its problems in the runtime's text."""
    _, problems = model.validate(arguments)
    return validation_failed_text(model.name, problems, arguments) if problems else None


def _refused(name: str, problem: str, raw: str) -> str:
    return validation_failed_text(name, [("root", problem)], raw)


__all__ = [
    "ALL_LABELS",
    "NEAR_MISSES",
    "CallLabel",
    "HypothesisSource",
    "NearMiss",
    "SchemaCall",
    "ToolModel",
    "draw_arguments",
    "expected_error",
    "label_applies",
    "near_miss",
    "schema_arguments",
    "schema_calls",
    "tool_model",
]
