"""Nesting the interpreter cannot hold: ``Runtime(max_depth=400)`` with an async agentic function
recursing would hit Python's recursion limit long before 400 levels, and the ``RecursionError``
would be fed back to the model as a provider or tool error while the runs went on.  A nested
exec that the stack cannot hold is refused before it starts, and the refusal ends every run up
to the caller with the depth reached."""

from __future__ import annotations

import sys

import pytest

from openprogram import NestingTooDeep, Registry, Runtime, agentic_function
from openprogram.runtime import _current_depth, _current_tools
from openprogram_testing import ScriptedProvider, call, turn


def _deep_agent() -> tuple[Registry, object, list[int]]:
    registry = Registry()
    depths: list[int] = []

    @agentic_function(registry=registry)
    async def recurse(runtime: Runtime) -> str:
        """Call the model again, one layer deeper."""
        depths.append(_current_depth.get())
        try:
            return str(await runtime.aexec("deeper"))
        except Exception as exc:  # a tool that answers every error: must not swallow this one
            return f"swallowed {exc}"

    return registry, recurse, depths


async def test_nesting_the_stack_cannot_hold_ends_every_run_with_the_depth_reached() -> None:
    registry, recurse, depths = _deep_agent()
    levels = 400
    provider = ScriptedProvider([*[turn(call("recurse"))] * levels, *["up"] * levels])
    runtime = Runtime(provider, registry=registry, max_depth=levels)
    with pytest.raises(NestingTooDeep) as info:
        await runtime.aexec("go", tools=[recurse])
    error = info.value
    reached = len(depths)
    assert 1 < reached < levels and error.depth == reached and error.max_depth == levels
    assert error.recursion_limit == sys.getrecursionlimit()
    assert f"reached depth {reached} of max_depth={levels}" in str(error)
    assert "sys.setrecursionlimit" in str(error)
    # Nothing was fed back to a model: each level made its one call, none answered an error.
    assert len(provider.requests) == reached
    texts = [m.text for r in provider.requests for m in r.messages if hasattr(m, "text")]
    assert not any("recursion" in t or "swallowed" in t for t in texts)
    assert _current_tools.get() is None and _current_depth.get() == 0


async def test_nesting_the_stack_can_hold_still_runs() -> None:
    registry, recurse, depths = _deep_agent()
    levels = 40
    provider = ScriptedProvider([*[turn(call("recurse"))] * (levels - 1), *["up"] * levels])
    runtime = Runtime(provider, registry=registry, max_depth=levels)
    assert await runtime.aexec("go", tools=[recurse]) == "up"
    assert depths == list(range(1, levels))
    provider.assert_complete()
