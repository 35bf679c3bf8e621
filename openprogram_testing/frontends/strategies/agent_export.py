"""A falsifying run of the user's agent as a YAML scenario, with the real tools named by import
path (``import: package.module:attribute``).

A tool the example injected failures around cannot be imported as it is (the failure is not
the tool's): it becomes a stub with the real tool's schema whose ``sequence`` replays what each
of its executed calls gave in the run (the result text, or the failure).  Expectations are the
labels (the exact refusal text of every near miss, the failure of every injected one) and the
loop invariants, so the file fails while the bug is in and passes once it is fixed; a user
predicate cannot be written in YAML and is named in the description instead.
"""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from openprogram.tools import as_agent_tool

from .export import is_final_run, scenario_yaml, show_with_failure, write_failure_file

if TYPE_CHECKING:
    from pathlib import Path

    from openprogram_testing.core.trace import LoopTrace

    from .agent import AgentScenario


def import_path(tool: Any, known: Mapping[str, str] | None = None) -> str | None:
    """``module:attribute`` under which ``tool`` can be imported, or ``None``: ``known`` (by
    tool name) first, then the object's own ``__module__``/``__qualname__``, then a search of
    the loaded modules' globals for the very object (dict tools have no name of their own),
    starting with the module that defines its ``execute``."""
    name = as_agent_tool(tool).name
    if known and name in known:
        return known[name]
    execute = tool.get("execute") if isinstance(tool, Mapping) else getattr(tool, "execute", None)
    return object_path(tool, getattr(execute, "__module__", None))


def object_path(target: Any, home: str | None = None) -> str | None:
    """``module:attribute`` under which the very object ``target`` can be imported (a tool, a
    runtime factory), or ``None``: its own ``__module__``/``__qualname__``, then a search of the
    loaded modules' globals, starting with ``home``."""
    module = getattr(target, "__module__", None)
    qualname = getattr(target, "__qualname__", None) or getattr(target, "__name__", None)
    if isinstance(module, str) and isinstance(qualname, str) and "<" not in qualname:
        found: Any = sys.modules.get(module)
        for part in qualname.split("."):
            found = getattr(found, part, None)
        if found is target:
            return f"{module}:{qualname}"
    # ``home`` first (for a dict tool, the module that defines its ``execute``: where it is
    # usually written), then every other loaded module.
    names = [home] if isinstance(home, str) else []
    for module_name in [*names, *list(sys.modules)]:
        loaded = sys.modules.get(module_name)
        space = getattr(loaded, "__dict__", None)
        if not isinstance(space, dict) or module_name.startswith(("_pytest", "hypothesis")):
            continue
        for attribute, value in list(space.items()):
            if value is target and not attribute.startswith("__"):
                return f"{module_name}:{attribute}"
    return None


def agent_scenario_data(
    scenario: AgentScenario,
    trace: LoopTrace,
    *,
    import_paths: Mapping[str, str] | None = None,
    description: str = "",
) -> dict[str, Any]:
    """The example as scenario data (the YAML format's keys, in its order)."""
    calls = scenario.calls
    failed_tools = {c.call.tool for c in calls.values() if c.failure is not None}
    tools: list[dict[str, Any]] = []
    for tool in scenario.tools:
        agent_tool = as_agent_tool(tool)
        path = None if agent_tool.name in failed_tools else import_path(tool, import_paths)
        if path is not None:
            tools.append({"import": path})
            continue
        outcomes = []
        for result in trace.tool_results:
            planned = calls.get(result.tool_call_id)
            if result.tool_name != agent_tool.name or result.skipped or planned is None:
                continue
            if planned.call.expected_error is not None:
                continue  # refused by validation: the stub's schema refuses it too
            outcomes.append(
                {"raises": result.text} if result.is_error else {"returns": result.text}
            )
        stub: dict[str, Any] = {
            "name": agent_tool.name,
            "description": agent_tool.spec.description,
            "parameters": agent_tool.spec.parameters,
        }
        tools.append({**stub, "sequence": outcomes or [{"returns": None}]})
    script = _script(scenario, trace, failed_tools)
    steering: list[dict[str, Any]] = []
    dialogue: list[dict[str, Any]] = []
    # An entry this run never reached is optional in the file: a generated entry may point past
    # the run (a round it never had), and the replay must fail for the failure found, not for
    # "steering entry never fired".  One it reached stays required, so the replay checks it.
    fired = {d.message.text for d in trace.deliveries} | {m.text for m in trace.undelivered}
    for s in scenario.steering:
        entry: dict[str, Any]
        if s.user:
            entry = {"say": s.message}
            if s.expect is not None:
                entry["expect"] = s.expect
        elif s.follow_up:
            entry = {"message": s.message, "follow_up": True}
        elif s.when_tool is not None:
            entry = {"message": s.message, "when": {"tool": s.when_tool, "nth": s.nth}}
        elif s.after_call is not None:
            position = {"round": s.after_call[0], "index": s.after_call[1]}
            entry = {"message": s.message, "after_call": position}
        else:
            entry = {"message": s.message, "before_round": s.before_round}
        if s.message not in fired:
            entry["optional"] = True
        (dialogue if s.user else steering).append(entry)
    results = []
    for result in trace.tool_results:
        planned = calls.get(result.tool_call_id)
        want = planned.expected_error if planned is not None else None
        item: dict[str, Any] = {"name": result.tool_name, "skipped": result.skipped}
        if not result.skipped and want is not None:
            item.update(is_error=True, text=want)
        elif not result.skipped and result.tool_name not in failed_tools:
            item["is_error"] = result.is_error
        results.append(item)
    data: dict[str, Any] = {
        "name": "agent property failure",
        "description": description,
        "prompt": scenario.prompt,
        "tools": tools,
        "script": script,
    }
    if scenario.runtime is not None:
        runtime = object_path(scenario.runtime)
        if runtime is not None:
            data["runtime"] = runtime
        else:
            data["description"] = (
                f"{description} (the runtime factory cannot be imported by path: add "
                "runtime: module:attribute by hand)"
            ).strip()
    if steering:
        data["steering"] = steering
    if dialogue:
        data["simulated_user"] = dialogue
    data["options"] = {"steering_mode": scenario.steering_mode}
    data["expect"] = {"model_calls": trace.model_calls, "tool_results": results}
    return data


def _round_entry(scenario: AgentScenario, r: int) -> dict[str, Any]:
    turn_calls = []
    for i, c in enumerate(scenario.rounds[r]):
        entry: dict[str, Any] = {"name": c.call.tool, "id": scenario.call_id(r, i)}
        if c.call.raw is not None:
            entry["raw_args"] = c.call.raw
        else:
            entry["args"] = c.call.arguments
        turn_calls.append(entry)
    return {"calls": turn_calls}


def _script(scenario: AgentScenario, trace: LoopTrace, stubbed: set[str]) -> list[Any]:
    """The model script, one entry per model call the run made.  Through a runtime, the turns
    as they were served (``scenario.served``): the outer rounds and each nested run's final
    text in the order played, since the replay's nested runs take the next turns of the same
    script; a nested run started by a tool exported as a stub does not happen in the replay,
    so its turns are left out."""
    if scenario.runtime is not None and scenario.served:
        calls = scenario.calls
        script: list[Any] = []
        for served in scenario.served:
            if served.owner is not None:
                owner = calls.get(served.owner)
                if owner is None or owner.call.tool not in stubbed:
                    script.append(scenario.final_text)
            elif served.round is None:
                script.append(scenario.final_text)
            else:
                script.append(_round_entry(scenario, served.round))
        return script
    script = [
        _round_entry(scenario, r) for r in range(min(len(scenario.rounds), trace.model_calls))
    ]
    return script + [scenario.final_text] * max(0, trace.model_calls - len(scenario.rounds))


def agent_scenario_to_yaml(
    scenario: AgentScenario,
    trace: LoopTrace,
    *,
    import_paths: Mapping[str, str] | None = None,
    description: str = "",
) -> str:
    """``agent_scenario_data`` as YAML text."""
    data = agent_scenario_data(scenario, trace, import_paths=import_paths, description=description)
    return scenario_yaml(_HEADER, data)


_HEADER = (
    "# Generated by openprogram_testing.strategies.check_agent from a hypothesis example.\n"
    "# Run: openprogram-testing run <this file>\n"
)


DESCRIPTION_LIMIT = 2000
"""Most characters of the failure quoted in an exported scenario's description (cut between
words, marked with an ellipsis)."""


def save_agent_failure(
    scenario: AgentScenario,
    trace: LoopTrace,
    error: BaseException,
    import_paths: Mapping[str, str] | None = None,
) -> Path:
    """Write the example into ``failure_dir()`` (named by content) and return its path."""
    reason = textwrap.shorten(str(error), DESCRIPTION_LIMIT, placeholder=" …")
    text = agent_scenario_to_yaml(
        scenario,
        trace,
        import_paths=import_paths,
        description=f"Falsifying example of an agent property: {type(error).__name__}: {reason}",
    )
    return write_failure_file("agent", text)


@contextmanager
def report_agent_failure(
    scenario: AgentScenario, import_paths: Mapping[str, str] | None = None
) -> Iterator[None]:
    """On hypothesis's final (shrunk) failure, write the example as a YAML scenario and attach
    its path and text to the failure (the run is repeated once to record its trace)."""
    try:
        yield
    except Exception as exc:
        if is_final_run():
            trace = scenario.run_sync()
            path = save_agent_failure(scenario, trace, exc, import_paths)
            show_with_failure(
                exc, f"falsifying example written to {path}\n" + path.read_text("utf-8")
            )
        raise


__all__ = [
    "DESCRIPTION_LIMIT",
    "agent_scenario_data",
    "agent_scenario_to_yaml",
    "import_path",
    "object_path",
    "report_agent_failure",
    "save_agent_failure",
]
