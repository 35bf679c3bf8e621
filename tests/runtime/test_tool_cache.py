"""Tools offered again (the same objects) are not normalised again, and a changed tool is."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from openprogram import AgentContext, LoopConfig, agent_loop
from openprogram import tools as tools_module
from openprogram.tools import as_agent_tool, normalize_tools
from openprogram_testing import ScriptedProvider, call, turn
from tests.runtime._loop import add_tool


class _ObjectTool:
    def __init__(self) -> None:
        self.spec = {"name": "obj", "description": "An object tool.", "parameters": {}}

    def execute(self, arguments: dict[str, Any]) -> str:
        return "ok"


def test_the_same_tool_objects_give_the_same_agent_tools() -> None:
    tool, obj = add_tool(), _ObjectTool()
    normalize_tools([tool, obj])  # offered once: built, nothing copied yet
    first = normalize_tools([tool, obj])  # offered again: built again, its spec copied
    for _ in range(3):
        again = normalize_tools([tool, obj])
        assert again[0] is first[0]
        # a bound method is a new object on every attribute access: it must still hit
        assert again[1] is first[1]


def test_a_tool_offered_once_costs_no_copy_of_its_spec(monkeypatch: pytest.MonkeyPatch) -> None:
    copies: list[object] = []
    real = tools_module.copy.deepcopy
    monkeypatch.setattr(tools_module.copy, "deepcopy", lambda v: copies.append(v) or real(v))
    fresh = [add_tool() for _ in range(5)]  # a program that builds its tools for every run
    for tool in fresh:
        normalize_tools([tool])
    assert copies == []
    normalize_tools([fresh[0]])
    assert copies == [fresh[0]["spec"]]


def _one_of_a_list(tool: Any) -> Any:
    return normalize_tools([tool])[0]


NORMALISERS = pytest.mark.parametrize(
    "normalise", [as_agent_tool, _one_of_a_list], ids=["as_agent_tool", "normalize_tools"]
)
"""A tool list takes a shorter path for dict tools offered again: both must see changes."""


@NORMALISERS
def test_a_spec_changed_in_place_is_normalised_again(normalise: Callable[[Any], Any]) -> None:
    tool = add_tool()
    normalise(tool)  # the first offer takes no copy of the spec
    before = normalise(tool)
    assert normalise(tool) is before
    tool["spec"]["description"] = "Add two numbers."
    tool["spec"]["parameters"]["properties"]["a"]["type"] = "number"
    after = normalise(tool)
    assert after is not before
    assert after.spec.description == "Add two numbers."
    assert after.validate({"a": 1.5, "b": 2})[1] == []
    assert before.validate({"a": 1.5, "b": 2})[1] != []  # the old one kept the old schema


@NORMALISERS
def test_a_new_execute_or_a_new_name_is_normalised_again(normalise: Callable[[Any], Any]) -> None:
    tool = add_tool()
    before = normalise(tool)
    tool["execute"] = lambda args: 0
    assert normalise(tool).execute is tool["execute"]
    tool["spec"] = {**tool["spec"], "name": "plus"}
    assert normalise(tool).name == "plus"
    obj = _ObjectTool()
    first = normalise(obj)
    obj.spec = {**obj.spec, "name": "renamed"}
    assert normalise(obj).name == "renamed" and first.name == "obj"
    assert before.name == "add"


def test_the_same_cached_tool_twice_in_one_list_is_a_duplicate_name() -> None:
    tool = add_tool()
    normalize_tools([tool])
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        normalize_tools([tool, add_tool()])
    with pytest.raises(ValueError, match="two tools are named 'add'"):
        normalize_tools([tool, tool])


def test_the_cache_is_bounded() -> None:
    for _ in range(tools_module._OFFERED_MAX + 10):
        as_agent_tool(add_tool())
    assert len(tools_module._OFFERED) <= tools_module._OFFERED_MAX


def test_a_changed_tool_is_what_the_next_run_offers_and_runs() -> None:
    tool = add_tool()

    async def run() -> tuple[str, list[str]]:
        provider = ScriptedProvider([turn(call("add", {"a": 2, "b": 3})), "done"])
        stream = agent_loop("go", AgentContext(tools=[tool]), LoopConfig(provider=provider))
        messages = await stream
        return messages[2].text, [t.description for t in provider.requests[0].tools]

    assert asyncio.run(run()) == ("5", ["Add two integers."])
    tool["spec"]["description"] = "Multiply two integers."
    tool["execute"] = lambda args: args["a"] * args["b"]
    assert asyncio.run(run()) == ("6", ["Multiply two integers."])


class _RaisingEq(dict):  # type: ignore[type-arg]
    def __eq__(self, other: object) -> bool:
        raise RuntimeError("no comparing me")

    __hash__ = None  # type: ignore[assignment]


@NORMALISERS
def test_a_spec_whose_comparison_raises_is_still_normalised(
    normalise: Callable[[Any], Any],
) -> None:
    tool = {"spec": _RaisingEq(name="odd", description="", parameters={}), "execute": str}
    assert normalise(tool).name == "odd"
    assert normalise(tool).name == "odd"  # the cached entry cannot be compared: rebuilt


class _Uncopyable:
    def __deepcopy__(self, memo: object) -> object:
        raise RuntimeError("no copying me")


@NORMALISERS
def test_a_spec_that_cannot_be_copied_is_normalised_every_time(
    normalise: Callable[[Any], Any],
) -> None:
    tool = add_tool()
    tool["spec"]["parameters"]["x-extra"] = _Uncopyable()
    built = [normalise(tool) for _ in range(3)]  # the second offer's copy raises: not cached
    assert all(b.name == "add" for b in built)
    assert built[2] is not built[1]
    assert built[2].validate({"a": 1, "b": 2})[1] == []
