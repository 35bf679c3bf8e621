"""Deferred tools (layer 6), ``tool_search`` and the per-run freeze of the provider's tool array.

Counterparts of upstream's ``tests/unit/context/test_tool_defer.py`` (each test says which),
driven through ``Runtime.exec`` with a provider that records what every model call was sent
and plays a fixed script: the scripted provider of the harness refuses a call to a tool the
array does not list, which is the point of the same-run path tested here.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from openprogram import Registry, Runtime, function
from openprogram.events import AssistantMessageEvent
from openprogram.providers.base import Context, MessageBuilder, StreamOptions
from openprogram.tool_search import (
    MAX_RESULTS,
    SCHEMA_PREAMBLE,
    TOOL_SEARCH,
    LoadedTools,
    catalog_text,
    offer,
    search,
    tool_search_tool,
)
from openprogram.tools import as_agent_tool
from openprogram.types import ToolResultMessage

Step = str | list[tuple[str, dict[str, Any]]]


class Recording:
    """Plays ``script`` (a text, or a list of ``(tool, arguments)`` calls, per model call) and
    records what each call was sent: the system prompt, the tool array, the messages."""

    def __init__(self, script: list[Step]) -> None:
        self.script = list(script)
        self.sent: list[tuple[str | None, list[str], list[Any]]] = []

    async def stream(
        self, model: str, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.sent.append(
            (context.system_prompt, [t.name for t in context.tools], list(context.messages))
        )
        step = self.script.pop(0)
        builder = MessageBuilder(model)
        yield builder.start()
        if isinstance(step, str):
            index, event = builder.text_start()
            yield event
            yield builder.text_delta(index, step)
            yield builder.text_end(index)
        else:
            for n, (name, arguments) in enumerate(step):
                index, event = builder.toolcall_start(f"c{len(self.sent)}-{n}", name)
                yield event
                yield builder.toolcall_end(index, arguments)
        yield builder.done()

    def arrays(self) -> list[list[str]]:
        return [tools for _, tools, _ in self.sent]


def results(messages: list[Any]) -> list[ToolResultMessage]:
    return [m for m in messages if isinstance(m, ToolResultMessage)]


def _registry() -> Registry:
    registry = Registry()

    @function(registry=registry)
    def bash(command: str) -> str:
        """Run a shell command."""
        return f"ran {command}"

    @function(registry=registry, defer=True)
    def cron(schedule: str) -> str:
        """Schedule a recurring job."""
        return f"scheduled {schedule}"

    @function(registry=registry, defer=True, search_hint="calendar reminders")
    def scheduler(when: str) -> str:
        """Plan a one-off job."""
        return f"planned {when}"

    @function(registry=registry, defer=True)
    def send_message(to: str) -> str:
        """Message another agent."""
        return f"sent to {to}"

    return registry


def _run(script: list[Step], registry: Registry | None = None, **kwargs: Any) -> Recording:
    provider = Recording(script)
    Runtime(provider, registry=registry or _registry(), **kwargs).exec("go")
    return provider


# -- the array, the catalog and the freeze ----------------------------------------------------


def test_deferred_tools_stay_out_of_the_array_and_tool_search_is_offered():
    # upstream: test_resident_tools_not_deferred, and "tool_search itself is never deferred"
    provider = _run(["done"])
    assert provider.arrays() == [["bash", TOOL_SEARCH]]


def test_the_catalog_line_counts_deferred_tools_and_names_none():
    # upstream: test_deferred_defaults_appear_in_catalog_line
    provider = Recording(["done"])
    Runtime(provider, registry=_registry(), system_prompt="You help.").exec("go")
    prompt = provider.sent[0][0]
    assert prompt is not None and prompt.startswith("You help.\n\n")
    catalog = prompt.split("\n\n", 1)[1]
    assert catalog.startswith("3 deferred tools are available")
    assert catalog == catalog_text(3)
    assert not any(name in catalog for name in ("cron", "scheduler", "send_message"))


def test_no_deferred_tool_means_no_tool_search_and_no_catalog():
    registry = Registry()

    @function(registry=registry)
    def only() -> str:
        """Only tool."""
        return "x"

    provider = Recording(["done"])
    Runtime(provider, registry=registry, system_prompt="P").exec("go")
    assert provider.sent[0][:2] == ("P", ["only"])


def test_tool_search_loads_by_name_and_the_schema_is_usable_in_the_same_run():
    # upstream: test_tool_search_loads_a_deferred_default,
    # test_tool_search_returns_the_schema_for_same_turn_use,
    # test_frozen_but_unlisted_tool_still_dispatches
    provider = _run(
        [
            [(TOOL_SEARCH, {"select": "select:cron"})],
            [("cron", {"schedule": "hourly"})],
            "done",
        ]
    )
    found, called = results(provider.sent[2][2])
    text = found.content[0].text
    assert text.startswith(f"Loaded 1 deferred tool. {SCHEMA_PREAMBLE}")
    assert "THIS turn" in text and "next turn" not in text
    schema = text.split("<function>")[1].split("</function>")[0]
    assert json.loads(schema)["name"] == "cron"
    assert json.loads(schema)["parameters"]["required"] == ["schedule"]
    assert found.details == {"loaded": ["cron"]} and not found.is_error
    assert called.content[0].text == "scheduled hourly" and not called.is_error


def test_tools_array_frozen_within_a_run_and_the_loaded_tool_joins_at_the_next_run():
    # upstream: test_tools_array_frozen_within_a_turn, test_frozen_tool_enters_array_on_the_next_turn
    provider = Recording(
        [
            [(TOOL_SEARCH, {"select": "cron"})],
            [("cron", {"schedule": "daily"})],
            "first done",
            "second done",
        ]
    )
    runtime = Runtime(provider, registry=_registry(), system_prompt="P")
    runtime.exec("one")
    arrays = provider.arrays()
    assert arrays == [["bash", TOOL_SEARCH]] * 3
    prompts = {prompt for prompt, _, _ in provider.sent}
    assert len(prompts) == 1  # the catalog line is frozen with the array
    assert "cron" in runtime.loaded_tools
    assert runtime.last_run is not None
    assert runtime.last_run.run.deferred == ("cron", "scheduler", "send_message")
    runtime.exec("two")
    assert provider.arrays()[3] == ["bash", "cron", TOOL_SEARCH]
    assert runtime.last_run.run.deferred == ("scheduler", "send_message")
    assert provider.sent[3][0] == "P\n\n" + catalog_text(2)
    runtime.loaded_tools.clear()
    assert offer(
        [f.to_agent_tool() for f in _registry().toolset("full")], runtime.loaded_tools
    ).deferred == ("cron", "scheduler", "send_message")


def test_a_deferred_tool_is_never_in_the_array_before_it_was_loaded():
    provider = _run(
        [
            [(TOOL_SEARCH, {"select": "scheduler,send_message"})],
            [("send_message", {"to": "b"})],
            "done",
        ]
    )
    for _, array, _ in provider.sent:
        assert not {"cron", "scheduler", "send_message"} & set(array)


# -- tool_search's contract ----------------------------------------------------------------------


def _state(*loaded: str) -> tuple[dict[str, Any], LoadedTools]:
    return {f.name: f.to_agent_tool() for f in _registry().toolset("full")}, LoadedTools(loaded)


def test_by_name_unknown_and_already_loaded():
    menu, loaded = _state()
    text, names = search("select:cron,ghost,bash", menu, loaded)
    assert names == ["cron"] and "cron" in loaded
    assert text.startswith("Loaded 1 deferred tool. ")
    assert (
        "Tool 'bash' is already loaded in this turn's tool list — call it directly instead of "
        "searching again." in text
    )
    assert text.endswith("\n[warning] unknown tool name(s): ghost")
    again, names = search("select:cron", menu, loaded)
    assert names == [] and again.startswith("Loaded 0 tools.\nTool 'cron' is already loaded")


def test_a_tool_outside_the_runs_menu_is_unknown_not_already_loaded():
    # upstream's difference F: it answers "already loaded" for a registered tool outside the run
    menu, loaded = _state()
    del menu["bash"]
    text, _ = search("select:bash", menu, loaded)
    assert text == "Loaded 0 tools.\n\n[warning] unknown tool name(s): bash"


def test_tool_search_already_loaded_keyword_points_to_direct_call():
    menu, loaded = _state("cron")
    text, names = search("cron", menu, loaded)
    assert names == [] and text.startswith("Tool 'cron' is already loaded in this turn's")
    text, _ = search("bash", menu, loaded)
    assert text.startswith("Tool 'bash' is already loaded")


def test_tool_search_true_miss_still_says_no_match():
    menu, loaded = _state()
    assert search("kubernetes", menu, loaded) == (
        "No deferred tools matched query 'kubernetes'.",
        [],
    )


def test_keyword_scoring_name_hint_description_and_required_terms():
    menu, loaded = _state()
    # "job": description of cron (+2) and scheduler (+2): a tie, broken alphabetically
    text, names = search("job", menu, LoadedTools(), max_results=1)
    assert names == ["cron"]
    assert "(scored, top 1 of 2 matches)" in text
    # "calendar": scheduler's search hint (+5) only
    assert search("calendar", menu, LoadedTools())[1] == ["scheduler"]
    # "+sched job": hard filter on the name, then scored
    assert search("+sched job", menu, LoadedTools())[1] == ["scheduler"]
    # "+send": required terms only rank every survivor
    assert search("+send", menu, loaded)[1] == ["send_message"]
    # a name match (+10) outranks a description match
    assert search("message job", menu, LoadedTools())[1][0] == "send_message"


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({}, "Error: pass tool names like `select:name1,name2` or a keyword query."),
        ({"select": "   "}, "Error: pass tool names like `select:name1,name2` or a keyword query."),
        ({"select": None}, "Error: pass tool names like `select:name1,name2` or a keyword query."),
        ({"select": "select: , "}, "Error: pass tool names like `select:name1,name2`."),
        ({"select": 12345}, "No deferred tools matched query '12345'."),
        ({"select": ["cron"]}, "No deferred tools matched query \"['cron']\"."),
    ],
)
def test_bad_arguments_end_in_upstreams_messages(arguments: dict[str, Any], expected: str):
    provider = _run([[(TOOL_SEARCH, arguments)], "done"])
    (result,) = results(provider.sent[1][2])
    assert result.content[0].text == expected
    assert result.is_error == expected.startswith("Error:")


@pytest.mark.parametrize(
    ("max_results", "expected"),
    [(None, 5), ("x", 5), ([], 5), (0, 1), (-4, 1), (2, 2), (10**100, MAX_RESULTS), (2.9, 2)],
)
def test_max_results_defaults_to_5_and_is_clamped_to_1_20(max_results: Any, expected: int):
    tools = [
        as_agent_tool(
            {
                "spec": {"name": f"t{i:02}", "description": "widget", "parameters": {}},
                "execute": lambda arguments: "x",
                "defer": True,
            }
        )
        for i in range(30)
    ]
    arguments: dict[str, Any] = {"select": "widget"}
    if max_results is not None:
        arguments["max_results"] = max_results
    result = tool_search_tool(tools, LoadedTools()).execute(arguments)
    assert len(result.details["loaded"]) == expected


def test_a_menu_with_its_own_tool_search_and_deferred_tools_is_refused():
    registry = _registry()

    @function(registry=registry, name=TOOL_SEARCH)
    def mine(select: str) -> str:
        """Mine."""
        return select

    with pytest.raises(ValueError, match="rename yours"):
        Runtime(Recording(["x"]), registry=registry).exec("go")


def test_tool_search_cannot_load_a_tool_other_layers_removed():
    provider = _run(
        [[(TOOL_SEARCH, {"select": "select:cron,scheduler"})], "done"],
        disabled_tools=["cron"],
    )
    (found,) = results(provider.sent[1][2])
    assert found.details == {"loaded": ["scheduler"]}
    assert "unknown tool name(s): cron" in found.content[0].text
    denied = Recording([[(TOOL_SEARCH, {"select": "job"})], "done"])
    Runtime(denied, registry=_registry()).exec("go", tools_deny=["cron"])
    (found,) = results(denied.sent[1][2])
    assert found.details == {"loaded": ["scheduler"]}


def test_ten_thousand_deferred_tools_and_a_huge_query_stay_fast():
    import time

    menu = {
        f"tool_{i}": as_agent_tool(
            {
                "spec": {"name": f"tool_{i}", "description": f"does thing {i}", "parameters": {}},
                "execute": lambda arguments: "x",
                "defer": True,
            }
        )
        for i in range(10_000)
    }
    started = time.perf_counter()
    text, names = search("thing " * 100_000 + "tool_9999", menu, LoadedTools())
    assert time.perf_counter() - started < 5
    assert names[0] == "tool_9999"
    text, names = search("select:" + ",".join(menu), menu, LoadedTools())
    assert len(names) == 10_000
