"""A run is addressed by ``"a/b"`` or ``["a", "b"]``; anything else (a number, a mapping) is a
``TypeError`` that says how to name a run, not Python's "object is not iterable" or a mapping's
keys read as tool names."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Runtime
from openprogram_testing import ScriptedProvider, SteeringSchedule, capture_runs
from tests.runtime._agents import research_agent, research_script


@pytest.mark.parametrize("address", [3, 2.5, {"research": 1}, b"research", object()])
def test_a_run_address_that_is_not_a_path_is_refused_saying_how(address: Any) -> None:
    registry, tools = research_agent()
    runtime = Runtime(ScriptedProvider(research_script((1, 2))), "m", registry=registry)
    with capture_runs() as runs:
        runtime.exec("go", tools=tools)
    (tree,) = runs
    assert tree["research"].path == tree[["research"]].path == "research"
    with pytest.raises(TypeError, match=r'a run is named by "a/b" or \["a", "b"\]'):
        tree[address]
    with pytest.raises(TypeError, match="a run is named by"):
        SteeringSchedule().after_tool(0, "wait", run=address)
