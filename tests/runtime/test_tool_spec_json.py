"""A ``ToolSpec`` (``fn.spec`` of every ``@function``) is written by the standard library's
``json`` as the tool definition it is, while the loop still reads its fields as slots."""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from openprogram import Registry, ToolSpec, function
from openprogram.tools import as_agent_tool


def _weather() -> Any:
    @function(registry=Registry())
    def weather(city: str) -> str:
        """Weather now in a city."""
        return f"sunny in {city}"

    return weather


def test_json_dumps_of_a_function_spec_is_its_definition() -> None:
    fn = _weather()
    written = json.loads(json.dumps(fn.spec))
    assert written["name"] == "weather" and written["description"] == "Weather now in a city."
    assert written["parameters"]["properties"]["city"] == {"type": "string"}
    assert set(written) == {"name", "description", "parameters"}
    assert json.loads(json.dumps([ToolSpec("a")])) == [
        {"name": "a", "description": "", "parameters": {"type": "object", "properties": {}}}
    ]


def test_attributes_and_items_never_disagree() -> None:
    spec = ToolSpec("a", "first")
    spec.description = "second"
    spec["name"] = "b"
    assert (spec.name, spec["description"]) == ("b", "second")
    assert json.loads(json.dumps(spec))["name"] == "b"
    with pytest.raises(KeyError, match="only name, description and parameters"):
        spec["extra"] = 1
    with pytest.raises(AttributeError):
        spec.extra = 1  # type: ignore[attr-defined]
    for change in (
        lambda: spec.update(name="c"),
        lambda: spec.pop("name"),
        lambda: spec.popitem(),
        lambda: spec.clear(),
        lambda: spec.setdefault("x", 1),
        lambda: spec.__delitem__("name"),
    ):
        with pytest.raises(TypeError, match="exactly name, description and parameters"):
            change()
    assert dict(spec) == {"name": "b", "description": "second", "parameters": spec.parameters}


def test_copies_pickles_and_the_model_api_keep_a_tool_spec() -> None:
    spec = ToolSpec("a", "d", {"type": "object", "properties": {"x": {"type": "integer"}}})
    for again in (copy.copy(spec), copy.deepcopy(spec), pickle.loads(pickle.dumps(spec))):
        assert type(again) is ToolSpec and again == spec and again.name == "a"
    assert copy.deepcopy(spec).parameters is not spec.parameters
    assert ToolSpec.model_validate_json(spec.model_dump_json()) == spec
    assert ToolSpec.model_validate({"name": "x"}) == ToolSpec("x")
    assert spec.model_dump(exclude={"description"}) == {"name": "a", "parameters": spec.parameters}
    assert json.loads(ToolSpec("x").model_dump_json(exclude_defaults=True)) == {"name": "x"}
    assert spec.model_copy(update={"name": "b"}) == ToolSpec("b", "d", spec.parameters)
    assert TypeAdapter(list[ToolSpec]).validate_python([{"name": "x"}]) == [ToolSpec("x")]
    with pytest.raises(ValidationError, match="zz"):
        ToolSpec.model_validate({"name": "x", "zz": 1})
    assert repr(ToolSpec("x")) == (
        "ToolSpec(name='x', description='', parameters={'type': 'object', 'properties': {}})"
    )


def test_the_loop_reads_fields_as_slots_and_finds_offered_tools_by_equality() -> None:
    # A slot is what keeps reading ``spec.name`` per offered tool per run as cheap as before.
    assert type(vars(ToolSpec)["name"]).__name__ == "member_descriptor"
    execute = str
    tool = {"spec": ToolSpec("t"), "execute": execute}
    first, second = as_agent_tool(tool), as_agent_tool(tool)
    assert as_agent_tool(tool) is second and first.spec == second.spec
    tool["spec"] = ToolSpec("t", "changed")
    assert as_agent_tool(tool).spec.description == "changed"
