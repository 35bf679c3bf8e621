"""Registry, toolsets and the trimming policy, seen through what the provider receives."""

import pytest

from openprogram import Registry, Runtime, default_registry, function
from openprogram_testing import ScriptedProvider


def _registry() -> Registry:
    registry = Registry()

    @function(registry=registry, toolsets=("files",))
    def read_file(path: str) -> str:
        """Read a file."""
        return path

    @function(registry=registry, toolsets=("files",), unsafe_for=("sms", "public"))
    def write_file(path: str, text: str) -> str:
        """Write a file."""
        return path

    @function(registry=registry, unsafe_for=("public",))
    def send_mail(to: str) -> str:
        """Send mail."""
        return to

    @function(registry=registry, exposed=False)
    def internal_debug() -> str:
        """Not offered by default."""
        return "x"

    return registry


def _offered(registry: Registry, **kwargs) -> list[str]:
    provider = ScriptedProvider(["ok"])
    assert Runtime(provider, registry=registry).exec("hi", **kwargs) == "ok"
    provider.assert_complete()
    return provider.requests[0].tool_names


def test_tools_are_on_by_default_full_exposed_registry():
    assert _offered(_registry()) == ["read_file", "write_file", "send_mail"]
    assert _offered(_registry(), toolset="full") == ["read_file", "write_file", "send_mail"]


def test_opt_out_with_toolset_none_or_empty_tools():
    assert _offered(_registry(), toolset="none") == []
    assert _offered(_registry(), tools=[]) == []


def test_user_defined_toolsets_from_decorator_and_api():
    registry = _registry()
    assert _offered(registry, toolset="files") == ["read_file", "write_file"]
    registry.define_toolset("ops", ["send_mail", registry.get("internal_debug")])
    # Exposure (layer 2) applies to every toolset; a caller-supplied menu bypasses it.
    assert _offered(registry, toolset="ops") == ["send_mail"]
    assert _offered(registry, tools=[registry.get("internal_debug")]) == ["internal_debug"]
    assert registry.toolset_names() == ["full", "none", "files", "ops"]


def test_source_allow_deny_trimming():
    registry = _registry()
    assert _offered(registry, tools_source="sms") == ["read_file", "send_mail"]
    assert _offered(registry, tools_source="public") == ["read_file"]
    assert _offered(registry, tools_source="cli") == ["read_file", "write_file", "send_mail"]
    assert _offered(registry, tools_deny=["send_mail"]) == ["read_file", "write_file"]
    assert _offered(registry, tools_allow=["send_mail", "no_such"]) == ["send_mail"]
    assert _offered(registry, toolset="files", tools_allow=["write_file"], tools_source="sms") == []
    assert (
        _offered(registry, toolset="files", tools_deny=["read_file"], tools_allow=["read_file"])
        == []
    )


def test_source_filter_applies_to_dict_and_object_tools():
    class Obj:
        spec = {"name": "obj", "description": "", "parameters": {"type": "object"}}
        unsafe_for = ("sms",)

        def execute(self, args):
            return "o"

    tools = [
        {"spec": {"name": "d"}, "execute": lambda a: "d", "unsafe_for": ["sms"]},
        {"spec": {"name": "e"}, "execute": lambda a: "e"},
        Obj(),
    ]
    assert _offered(Registry(), tools=tools, tools_source="sms") == ["e"]
    assert _offered(Registry(), tools=tools) == ["d", "e", "obj"]


def test_unknown_toolset_lists_known_ones_before_any_model_call():
    provider = ScriptedProvider()
    runtime = Runtime(provider, registry=_registry())
    with pytest.raises(ValueError) as info:
        runtime.exec("hi", toolset="fils")
    assert str(info.value) == "unknown toolset 'fils'; known toolsets: full, none, files"
    assert provider.requests == []


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (42, "invalid tool entry 42"),
        ("read_file", "invalid tool entry 'read_file'"),
        ({"spec": {"name": "x"}}, "needs both 'spec' and 'execute'"),
        ({"spec": {"name": "x"}, "execute": 3}, "'execute' of tool dict"),
        (lambda: None, "invalid tool entry <function"),
    ],
)
def test_invalid_tool_entries_raise_type_error_before_any_model_call(entry, message):
    provider = ScriptedProvider()
    with pytest.raises(TypeError, match=message.replace("(", r"\(")):
        Runtime(provider, registry=Registry()).exec("hi", tools=[entry])
    assert provider.requests == []


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"tools": [], "toolset": "none"}, ValueError, "pass tools= or toolset=, not both"),
        ({"toolset": ["files"]}, TypeError, "toolset= takes a toolset name"),
        ({"tools": "read_file"}, TypeError, "tools= must be a list of tools"),
        ({"tools_allow": "read_file"}, TypeError, "tools_allow takes a list"),
        ({"tools_deny": [1]}, TypeError, "tools_deny must list tool names"),
    ],
)
def test_bad_menu_arguments(kwargs, error, message):
    provider = ScriptedProvider()
    with pytest.raises(error, match=message):
        Runtime(provider, registry=_registry()).exec("hi", **kwargs)
    assert provider.requests == []


def test_duplicate_tool_names_are_rejected():
    registry = _registry()
    tools = [registry.get("read_file"), {"spec": {"name": "read_file"}, "execute": print}]
    provider = ScriptedProvider()
    with pytest.raises(ValueError, match="two tools are named 'read_file'"):
        Runtime(provider, registry=registry).exec("hi", tools=tools)
    assert provider.requests == []


def test_registry_api():
    registry = _registry()
    assert registry.names() == ["read_file", "write_file", "send_mail", "internal_debug"]
    assert "send_mail" in registry and len(registry) == 4

    @function(registry=registry, description="v2")
    def send_mail(to: str) -> str:
        return to

    assert registry.get("send_mail") is send_mail
    assert registry.names()[-1] == "send_mail"
    registry.unregister("internal_debug")
    with pytest.raises(KeyError, match="no registered tool named 'internal_debug'"):
        registry.get("internal_debug")
    with pytest.raises(ValueError, match="'full' is built in"):
        registry.define_toolset("full", [])
    registry.define_toolset("broken", ["ghost"])
    with pytest.raises(
        ValueError, match="toolset 'broken' names tool\\(s\\) that are not registered: ghost"
    ):
        registry.toolset("broken")
    with pytest.raises(TypeError, match="not a single string"):
        registry.define_toolset("x", "read_file")


def test_decorators_use_the_shared_default_registry():
    @function
    def _op_registry_probe_tool(a: int) -> int:
        return a

    try:
        assert default_registry.get("_op_registry_probe_tool") is _op_registry_probe_tool
    finally:
        default_registry.unregister("_op_registry_probe_tool")
