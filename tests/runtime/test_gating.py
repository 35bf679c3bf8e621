"""The gating layers (1 to 5) as upstream's code does them, seen through what the provider is
offered; layer 6 (deferral) is in test_tool_search.py.

Counterparts of upstream's calling-unification invariants ("Layer 1 (available_if) skips
registration on False / exception") and of ``test_tool_defer.py``'s default-deferral tests.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from openprogram import Registry, Runtime, agentic_function, function
from openprogram.gating import is_available, trim_tools
from openprogram.tool_search import TOOL_SEARCH, LoadedTools, offer
from openprogram_testing import ScriptedProvider


def _offered(registry: Registry, runtime: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
    provider = ScriptedProvider(["ok"])
    assert Runtime(provider, registry=registry, **(runtime or {})).exec("hi", **kwargs) == "ok"
    return provider.requests[0].tool_names


# -- defaults ---------------------------------------------------------------------------------


def test_every_default_restricts_nothing():
    registry = Registry()

    @function(registry=registry)
    def a() -> str:
        """A."""
        return "a"

    @agentic_function(registry=registry)
    def b() -> str:
        """B."""
        return "b"

    tool = a.to_agent_tool()
    assert is_available(tool)
    assert tool.meta["defer"] is False
    assert _offered(registry) == ["a", "b"]
    assert list(trim_tools([tool])) == [tool]


# -- layer 1 ------------------------------------------------------------------------------------


def test_available_if_false_or_raising_means_never_registered():
    registry = Registry()
    calls: list[str] = []

    def no() -> bool:
        calls.append("no")
        return False

    @function(registry=registry, available_if=no)
    def hidden(x: int) -> int:
        """Hidden."""
        return x + 1

    def broken() -> bool:
        raise RuntimeError("licence server down")

    with pytest.warns(RuntimeWarning, match="licence server down"):

        @function(registry=registry, available_if=broken)
        def also_hidden() -> str:
            """Also hidden."""
            return "x"

    @function(registry=registry, available_if=lambda: True)
    def shown() -> str:
        """Shown."""
        return "y"

    assert calls == ["no"]  # evaluated once, at decoration
    assert hidden(1) == 2 and not hasattr(hidden, "to_agent_tool")  # the plain function back
    assert registry.names() == ["shown"]
    assert registry.unavailable == {"hidden", "also_hidden"}
    with pytest.raises(KeyError):
        registry.get("hidden")
    # a toolset listing an unavailable tool goes without it; an unknown one is still an error
    registry.define_toolset("some", ["hidden", "shown"])
    assert _offered(registry, toolset="some") == ["shown"]
    registry.define_toolset("typo", ["shwon"])
    with pytest.raises(ValueError, match="shwon"):
        registry.toolset("typo")
    with pytest.raises(TypeError, match="available_if= must be a callable"):
        function(registry=registry, available_if=True)  # type: ignore[call-overload]


# -- layer 2 and 2b -----------------------------------------------------------------------------


def _layered() -> Registry:
    registry = Registry()

    @function(registry=registry, toolsets=("files",))
    def read(path: str) -> str:
        """Read."""
        return path

    @function(registry=registry, toolsets=("files",), unsafe_for=("plan",))
    def write(path: str) -> str:
        """Write."""
        return path

    @function(registry=registry, toolsets=("net",), unsafe_for=("telegram",))
    def fetch(url: str) -> str:
        """Fetch."""
        return url

    @function(registry=registry, toolsets=("files",), exposed=False)
    def helper() -> str:
        """Internal."""
        return "h"

    return registry


def test_unexposed_is_in_no_registry_menu_but_a_caller_may_pass_it():
    registry = _layered()
    assert _offered(registry) == ["read", "write", "fetch"]
    assert _offered(registry, toolset="files") == ["read", "write"]
    assert _offered(registry, tools=[registry.get("helper")]) == ["helper"]
    assert registry.get("helper")() == "h"  # still Python-callable


def test_toolset_includes_expand_first_recursively_once_each_and_survive_cycles():
    registry = _layered()
    registry.define_toolset("research", ["fetch"], includes=["files"])
    registry.define_toolset("debugging", [], includes=["research", "files", "net"])
    registry.define_toolset("loop_a", ["read"], includes=["loop_b"])
    registry.define_toolset("loop_b", ["fetch"], includes=["loop_a"])
    registry.define_toolset("everything", [], includes=["full"])
    assert _offered(registry, toolset="research") == ["read", "write", "fetch"]
    assert _offered(registry, toolset="debugging") == ["read", "write", "fetch"]
    assert _offered(registry, toolset="loop_a") == ["fetch", "read"]
    assert _offered(registry, toolset="everything") == ["read", "write", "fetch"]
    registry.define_toolset("broken", [], includes=["nope"])
    with pytest.raises(ValueError, match="includes unknown toolset 'nope'"):
        registry.toolset("broken")
    with pytest.raises(TypeError, match="not a single string"):
        registry.define_toolset("x", [], includes="files")


def test_a_long_includes_chain_does_not_exhaust_the_stack():
    registry = _layered()
    for i in range(5000):
        registry.define_toolset(f"t{i}", [], includes=[f"t{i + 1}"])
    registry.define_toolset("t5000", ["read"])
    assert [f.name for f in registry.toolset("t0")] == ["read"]


# -- layer 3 --------------------------------------------------------------------------------------


def test_unsafe_for_by_source_and_plan_mode_compose():
    registry = _layered()
    assert _offered(registry, tools_source="telegram") == ["read", "write"]
    assert _offered(registry, tools_source="plan") == ["read", "fetch"]
    assert _offered(registry, tools_source=["telegram", "plan"]) == ["read"]
    assert _offered(registry, tools_source=[]) == ["read", "write", "fetch"]
    with pytest.raises(TypeError, match="source names"):
        _offered(registry, tools_source=["plan", 3])


# -- layer 4 ------------------------------------------------------------------------------------


def test_check_fn_requires_env_can_use_apply_only_with_only_available(monkeypatch):
    registry = Registry()
    monkeypatch.delenv("GATING_TEST_KEY", raising=False)

    @function(registry=registry, check_fn=lambda: False)
    def no_dependency() -> str:
        """Missing optional dependency."""
        return "x"

    @function(registry=registry, requires_env=("GATING_TEST_KEY",))
    def needs_key() -> str:
        """Needs a key."""
        return "x"

    def explode() -> bool:
        raise RuntimeError("role service down")

    @function(registry=registry, can_use=explode)
    def admin_only() -> str:
        """Admins."""
        return "x"

    @function(registry=registry, check_fn=lambda: 1, can_use=lambda: "yes")
    def fine() -> str:
        """Fine."""
        return "x"

    everything = ["no_dependency", "needs_key", "admin_only", "fine"]
    assert _offered(registry) == everything  # upstream's exec path does not check
    assert _offered(registry, only_available=True) == ["fine"]
    assert _offered(registry, {"only_available": True}) == ["fine"]
    assert _offered(registry, {"only_available": True}, only_available=False) == everything
    monkeypatch.setenv("GATING_TEST_KEY", "k")
    assert _offered(registry, only_available=True) == ["needs_key", "fine"]
    monkeypatch.setenv("GATING_TEST_KEY", "")
    assert _offered(registry, only_available=True) == ["fine"]
    with pytest.raises(TypeError, match="only_available"):
        _offered(registry, only_available="yes")
    with pytest.raises(TypeError, match="check_fn= must be a callable"):

        @function(registry=registry, check_fn=True)  # type: ignore[arg-type]
        def bad() -> str:
            """Bad."""
            return "x"


def test_availability_of_dict_and_object_tools():
    def execute(arguments: dict[str, Any]) -> str:
        return "x"

    spec = {"name": "d", "description": "", "parameters": {"type": "object"}}
    gated = {"spec": spec, "execute": execute, "requires_env": ["GATING_NEVER_SET_VAR"]}
    assert "GATING_NEVER_SET_VAR" not in os.environ
    assert _offered(Registry(), tools=[gated], only_available=True) == []
    assert _offered(Registry(), tools=[gated]) == ["d"]


# -- layer 5 ----------------------------------------------------------------------------------


def test_deny_then_allow_as_a_ceiling_then_disabled():
    registry = _layered()
    runtime = {"disabled_tools": ["fetch"]}
    assert _offered(registry, runtime) == ["read", "write"]
    assert _offered(registry, runtime, toolset="net") == []
    assert _offered(registry, runtime, tools_allow=["fetch", "read"]) == ["read"]
    assert _offered(registry, runtime, tools_deny=["read"], tools_allow=["read", "write"]) == [
        "write"
    ]
    # caller-supplied tools are the caller's choice: the disabled list is a registry setting
    assert _offered(registry, runtime, tools=[registry.get("fetch")]) == ["fetch"]
    with pytest.raises(TypeError, match="disabled_tools"):
        Runtime(ScriptedProvider([]), disabled_tools="fetch")


def test_a_nested_run_inherits_the_gated_menu():
    registry = Registry()
    seen: list[list[str]] = []

    @agentic_function(registry=registry)
    def inner(runtime: Any) -> str:
        """Inner."""
        return runtime.exec("inner")

    @function(registry=registry, unsafe_for=("plan",))
    def write() -> str:
        """Write."""
        return "w"

    from openprogram_testing import call, turn

    provider = ScriptedProvider([turn(call("inner", {})), "nested", "outer"])
    Runtime(provider, registry=registry).exec("go", tools_source="plan")
    seen = [r.tool_names for r in provider.requests]
    assert seen == [["inner"], ["inner"], ["inner"]]


# -- upstream's spellings and default deferral --------------------------------------------------


@pytest.mark.parametrize(
    ("option", "ours"),
    [("expose", "exposed"), ("tool_visible", "exposed"), ("unsafe_in", "unsafe_for")],
)
def test_upstreams_spellings_name_ours(option: str, ours: str):
    with pytest.raises(TypeError, match=f"{option}= is spelled {ours}= here"):
        function(**{option: False})


def _defaults() -> Registry:
    registry = Registry()
    for name in ("bash", "read", "scheduler", "memory_search", "send_message"):

        def body() -> str:
            return "x"

        function(registry=registry, name=name, description=f"{name} tool")(body)
    return registry


RESIDENT = ("bash", "read")


def test_resident_tools_not_deferred_and_apply_is_idempotent():
    # upstream: test_resident_tools_not_deferred, test_apply_is_idempotent
    registry = _defaults()
    first = registry.apply_default_deferral(RESIDENT)
    assert first == ["scheduler", "memory_search", "send_message"]
    assert registry.apply_default_deferral(RESIDENT) == first
    menu = [f.to_agent_tool() for f in registry.toolset("full")]
    split = offer(menu, LoadedTools())
    assert [s.name for s in split.specs] == ["bash", "read", TOOL_SEARCH]
    assert split.catalog.startswith("3 deferred tools are available")
    assert registry.apply_default_deferral([*RESIDENT, "scheduler"]) == [
        "memory_search",
        "send_message",
    ]
    assert registry.get("scheduler").to_agent_tool().meta["defer"] is False


def test_deferred_catalog_component_reflects_deferral():
    # upstream: test_deferred_catalog_component_reflects_deferral
    registry = _defaults()
    provider = ScriptedProvider(["a", "b"])
    runtime = Runtime(provider, registry=registry, system_prompt="S")
    runtime.exec("one")
    assert provider.requests[0].system_prompt == "S"
    registry.apply_default_deferral(RESIDENT)
    runtime.exec("two")
    prompt = provider.requests[1].system_prompt
    assert prompt is not None and prompt.startswith("S\n\n3 deferred tools are available")


# -- hostile input ------------------------------------------------------------------------------


def test_ten_thousand_tools_with_every_layer_and_raising_checks():
    registry = Registry()

    def explode() -> bool:
        raise ValueError("nope")

    for i in range(10_000):

        def body() -> str:
            return "x"

        function(
            registry=registry,
            name=f"tool_{i}",
            description="t",
            parameters={"type": "object", "properties": {}},
            unsafe_for=("plan",) if i % 2 else (),
            check_fn=explode if i % 3 == 0 else None,
            defer=i > 10,
            toolsets=("all",),
        )(body)
    started = time.perf_counter()
    provider = ScriptedProvider(["ok"])
    Runtime(provider, registry=registry).exec(
        "go",
        toolset="all",
        tools_source="plan",
        tools_deny=["tool_2"],
        only_available=True,
    )
    assert time.perf_counter() - started < 5
    (request,) = provider.requests
    assert request.tool_names == ["tool_4", "tool_8", "tool_10", TOOL_SEARCH]
