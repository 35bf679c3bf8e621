"""Checks a scenario needs beyond its field types, run when it is validated (so ``validate``
finds every problem that ``run`` would, without running anything).

- tool names: the script calls tools some run offers (the outermost run's declared and
  imported tools, and the menus nested runs offer, read by ``menus``), or marks
  ``unknown_tool: true``; nested runs and ``tool_choice`` name declared tools;
  ``steering[].run`` and ``expect.runs`` name runs the scenario can start;
- tool parameter schemas are valid JSON Schema (checked once per distinct schema in a
  process, so a scenario with 200,000 tools sharing a few schemas validates in linear time,
  and a suite whose files declare the same tools pays the metaschema walk once);
- ``import:`` and ``runtime:`` paths import and give what they must (see ``imports``);
- the cassette: its path stays inside the scenario's root, is a regular file other than the
  scenario itself, loads, and every interaction or frame index of a fault exists in it.

The **scenario's root** is the nearest directory above the scenario file holding a project
marker (``pyproject.toml``, ``setup.cfg``, ``setup.py``, ``pytest.ini``, ``tox.ini``, ``.git``),
else the scenario's own directory: the same for ``validate``, ``run`` and pytest collection
(whatever pytest's rootdir is), so a file gets the same verdict from each; callers of
``load_scenario`` may pass their own.  Absolute cassette paths are refused: a scenario file
travels with its project.  Whatever the path holds (a name too long for the file system, a NUL),
the answer is a message, never an ``OSError``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from openprogram.choices import CHOOSE_TOOL
from openprogram.tool_search import TOOL_SEARCH
from openprogram.tools import as_agent_tool
from openprogram_testing.base.paths import PROJECT_MARKERS, project_root
from openprogram_testing.core.steering import run_path
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.files import load_interactions
from openprogram_testing.transport.cassettes.session import recorded_response
from openprogram_testing.transport.faults import FAULT_KINDS, FaultError, GarbleToolArguments
from openprogram_testing.transport.scripted import ScriptedProvider
from openprogram_testing.transport.wire import eventstream
from openprogram_testing.transport.wire.sse import split_frames

from .imports import ImportProblem, load_runtime, load_tools
from .menus import Menus, describe, run_menus
from .model import FunctionChoice, Scenario
from .replay import adapter_problem

Loc = tuple[str | int, ...]
Found = list[tuple[Loc, str]]


def scenario_root(path: Path) -> Path:
    """The root of the project holding the scenario file ``path`` (see the module docstring)."""
    return project_root(path.resolve().parent)


def check(scenario: Scenario, import_roots: Sequence[Path] = ()) -> Found:
    """Every problem of ``scenario`` as ``(field path, message)``; records the imported tools
    on the scenario for the runner."""
    found: Found = []
    imported_names = _check_imports(scenario, import_roots, found)
    _check_names(scenario, set(scenario.stub_tool_names()) | imported_names, found)
    _check_schemas(scenario, found)
    if scenario.cassette is not None:
        _check_cassette(scenario, found)
    return found


def _check_imports(scenario: Scenario, roots: Sequence[Path], found: Found) -> set[str]:
    names: set[str] = set()
    scenario.imported_tools.clear()
    stub_names = set(scenario.stub_tool_names())
    for i, tool in enumerate(scenario.tools):
        if tool.import_ is None:
            continue
        try:
            tools = load_tools(tool.import_, roots)
        except ImportProblem as exc:
            found.append((("tools", i, "import"), str(exc)))
            continue

        for obj in tools:
            name = as_agent_tool(obj).name
            if name in names or name in stub_names:
                found.append(
                    (("tools", i, "import"), f"tool {name!r} is offered twice; names are unique")
                )
            names.add(name)
        scenario.imported_tools[i] = tools
    if scenario.runtime is not None:
        try:
            load_runtime(scenario.runtime, ScriptedProvider(), roots)
        except ImportProblem as exc:
            found.append((("runtime",), str(exc)))
    return names


def scenario_menus(scenario: Scenario) -> Menus:
    """The menu of every run the scenario can start (see ``menus``): its tools for the
    outermost run, and what the agentic tools offer their nested runs."""

    outer: dict[str, Any] = {name: None for name in scenario.stub_tool_names()}
    for tools in scenario.imported_tools.values():
        for obj in tools:
            outer[as_agent_tool(obj).name] = obj
    stubs: dict[str, set[str]] = {}
    for tool in scenario.tools:
        for outcome in [tool, *(tool.sequence or [])]:
            if outcome.agentic is not None and tool.name is not None:
                stubs.setdefault(tool.name, set()).update(outcome.agentic.tools)
    return run_menus(outer, stubs)


def _check_names(scenario: Scenario, declared: set[str], found: Found) -> None:
    listed = ", ".join(sorted(declared)) or "none"
    menus = scenario_menus(scenario)
    nested = len(menus) > 1
    offered = set().union(*(m for m in menus.values() if m is not None))
    unreadable = any(m is None for m in menus.values())
    if any(
        o.agentic is not None and o.agentic.choices
        for tool in scenario.tools
        for o in [tool, *(tool.sequence or [])]
    ):  # a forced decision offers the model its `choose` tool
        declared = declared | {CHOOSE_TOOL}
        offered.add(CHOOSE_TOOL)
    if any(t.defer for t in scenario.tools):  # a run with deferred tools offers its loader
        declared = declared | {TOOL_SEARCH}
        offered.add(TOOL_SEARCH)
    for i, entry in enumerate(scenario.script or []):
        if isinstance(entry, str):
            continue
        for j, c in enumerate(entry.calls):
            where: Loc = ("script", i, "calls", j, "name")
            if c.unknown_tool:
                if c.name in declared and not nested:
                    found.append(
                        (
                            where,
                            f"the call is marked 'unknown_tool: true' but tool {c.name!r} is "
                            "declared",
                        )
                    )
                continue  # with nested runs, the runner judges it by the run that makes it
            if c.name in offered or (nested and unreadable):
                continue
            if nested:
                message = (
                    f"the script calls tool {c.name!r}, which no run offers ({describe(menus)})"
                )
            else:
                message = (
                    f"the script calls tool {c.name!r}, which is not declared in 'tools' "
                    f"(declared: {listed})"
                )
            found.append(
                (
                    where,
                    message + "; mark the call 'unknown_tool: true' to test the \"not found\" path",
                )
            )
    _check_run_paths(scenario, menus, found)
    _check_when_tools(scenario, menus, offered | declared, unreadable, found)
    for i, tool in enumerate(scenario.tools):
        outcomes: list[tuple[Loc, Any]] = [(("tools", i), tool)]
        outcomes += [(("tools", i, "sequence", k), o) for k, o in enumerate(tool.sequence or [])]
        for loc, outcome in outcomes:
            for j, name in enumerate(outcome.agentic.tools if outcome.agentic else []):
                if name not in declared:
                    found.append(
                        (
                            (*loc, "agentic", "tools", j),
                            f"the nested run offers tool {name!r}, which is not declared in "
                            "'tools'",
                        )
                    )
    driven = scenario.schema_driven
    for j, name in enumerate(driven.tools or [] if driven is not None else []):
        if name not in declared:
            found.append(
                (
                    ("schema_driven", "tools", j),
                    f"schema_driven calls tool {name!r}, which is not declared in 'tools'",
                )
            )
    choice = scenario.options.tool_choice
    if isinstance(choice, FunctionChoice) and choice.name not in declared:
        found.append(
            (
                ("options", "tool_choice", "name"),
                f"tool_choice names tool {choice.name!r}, which is not declared in 'tools'",
            )
        )


def _check_when_tools(
    scenario: Scenario, menus: Menus, offered: set[str], unreadable: bool, found: Found
) -> None:
    """``steering[].when.tool`` names a tool its run offers (any run's, without ``run``): a
    condition on a tool nobody offers would never fire."""

    for i, entry in enumerate(scenario.steering):
        if entry.when is None:
            continue
        name = entry.when.tool
        path = run_path(entry.run)
        if entry.run is not None:
            menu = menus.get(path, set())
            if menu is None or name in menu or path not in menus:
                continue  # a menu only the code shows, or a run path reported on its own
            listed = ", ".join(sorted(menu)) or "none"
            text = f"run {entry.run} offers no tool {name!r} (it offers {listed})"
        else:
            if name in offered or unreadable:
                continue
            text = f"no run offers tool {name!r} ({describe(menus)})"
        found.append((("steering", i, "when", "tool"), text + ": the condition could never fire"))


def _check_run_paths(scenario: Scenario, menus: Menus, found: Found) -> None:
    """``steering[].run`` and ``expect.runs`` name runs the scenario can start."""

    def problem(raw: str) -> str | None:
        path = run_path(raw)
        if not path or path in menus:
            return None if path else "a run path names at least one tool"
        if any(menus.get(path[:k], set()) is None for k in range(len(path))):
            return None  # beneath a menu the code does not show: the run decides
        runs = ", ".join("/".join(p) for p in menus if p) or "none"
        return (
            f"no run at {raw!r}: a nested run is started by an agentic tool (runs this "
            f"scenario can start: {runs})"
        )

    for i, entry in enumerate(scenario.steering):
        if entry.run is not None:
            text = problem(entry.run)
            if text is not None:
                found.append((("steering", i, "run"), text))
    for key, expect in (scenario.expect.runs or {}).items():
        where: Loc = ("expect", "runs", key)
        text = problem(key)
        if text is not None:
            found.append((where, text))
        for inner in ("runs", "snapshot"):
            if inner in expect.model_fields_set:
                found.append(
                    (
                        (*where, inner),
                        f"'{inner}' belongs to the outermost run's expectations only",
                    )
                )


SCHEMA_VERDICTS_KEPT = 4_096
"""Distinct tool schemas whose metaschema verdict a process keeps (then it starts over)."""

_SCHEMA_VERDICTS: dict[str, str | None] = {}
"""Canonical JSON of a tool's parameter schema → why it is not a valid JSON Schema (``None``:
valid).  The verdict depends on the schema's JSON alone, and the metaschema walk is the
largest part of loading a small scenario, so a suite pays it once per distinct schema."""


def _check_schemas(scenario: Scenario, found: Found) -> None:
    for i, tool in enumerate(scenario.tools):
        if tool.import_ is not None:
            continue
        try:
            # sorted JSON: one key for one JSON document, whatever the order of its keys
            key: str | None = json.dumps(tool.parameters, sort_keys=True, default=_not_json)
        except _NotJSON:  # a YAML date or the like: checked as it is, never shared
            key = None
        except (TypeError, ValueError, RecursionError):
            found.append((("tools", i, "parameters"), "not a JSON Schema (not JSON data)"))
            continue
        if key is None:
            verdict = _schema_verdict(tool.parameters)
        elif key in _SCHEMA_VERDICTS:
            verdict = _SCHEMA_VERDICTS[key]
        else:
            verdict = _schema_verdict(tool.parameters)
            if len(_SCHEMA_VERDICTS) >= SCHEMA_VERDICTS_KEPT:
                _SCHEMA_VERDICTS.clear()
            _SCHEMA_VERDICTS[key] = verdict
        if verdict is not None:
            found.append((("tools", i, "parameters"), verdict))


class _NotJSON(Exception):
    """A value JSON has no type for: its verdict is not keyed by text it shares with others."""


def _not_json(value: Any) -> Any:
    raise _NotJSON


def _schema_verdict(schema: Any) -> str | None:
    """Why ``schema`` is not a valid Draft 2020-12 JSON Schema, or ``None``."""
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return f"not a valid JSON Schema: {exc.message}"
    except RecursionError:
        return "not a valid JSON Schema: nested too deeply"
    return None


def cassette_file(scenario: Scenario) -> tuple[Path | None, str | None]:
    """The cassette file, resolved and confined to the scenario's root, or why it is refused."""
    assert scenario.cassette is not None
    raw = Path(scenario.cassette.path)
    root = (scenario.root or Path.cwd()).resolve()
    if raw.is_absolute():
        return None, (
            f"absolute cassette paths are refused: give a path relative to the scenario file, "
            f"inside the scenario's root {root}"
        )
    base = scenario.path.parent if scenario.path is not None else root
    try:
        resolved = (base / raw).resolve()
        if not resolved.is_relative_to(root):
            return None, f"the cassette path leads outside the scenario's root {root}: {resolved}"
        if scenario.path is not None and resolved == scenario.path.resolve():
            return None, "the cassette path names the scenario file itself"
        if not resolved.exists():
            return None, f"cassette file not found: {resolved}"
        if not resolved.is_file():
            return None, f"the cassette path is not a regular file: {resolved}"
    except (OSError, RuntimeError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        return None, f"cannot use the cassette path: {reason}"
    return resolved, None


def _frame_fields() -> list[tuple[str, bool]]:
    """The fault keys that address frames, each with whether it may point past the last frame
    (a count, ``0..n``) or not (an index, ``0..n-1``): read from the one table of kinds."""

    fields = [(k.name, k.frames == "count") for k in FAULT_KINDS.values() if k.frames]
    return [*fields, ("after_frame", True)]


def _check_cassette(scenario: Scenario, found: Found) -> None:

    cassette = scenario.cassette
    assert cassette is not None
    problem = adapter_problem(cassette.api)
    if problem is not None:
        found.append((("cassette", "api"), problem))
    path, refused = cassette_file(scenario)
    if path is None:
        found.append((("cassette", "path"), refused or "unusable cassette path"))
        return
    try:
        interactions = load_interactions(path)
    except (CassetteError, OSError, ValueError, TypeError, UnicodeDecodeError) as exc:
        found.append((("cassette", "path"), f"cannot load the cassette: {exc}"))
        return
    if not interactions:
        found.append((("cassette", "path"), f"the cassette {path.name} has no interactions"))
        return
    frames: dict[int, int] = {}
    for k, fault in enumerate(cassette.faults):
        if fault.interaction is not None and fault.interaction >= len(interactions):
            found.append(
                (
                    ("cassette", "faults", k, "interaction"),
                    f"interaction {fault.interaction} does not exist: the cassette has "
                    f"{len(interactions)} (0-based)",
                )
            )
            continue
        targets = [fault.interaction] if fault.interaction is not None else range(len(interactions))
        if fault.garble_tool_arguments is not None:
            for t in targets:
                problem = _garble_problem(interactions[t], fault.garble_tool_arguments)
                if problem is not None:
                    found.append(
                        (
                            ("cassette", "faults", k, "garble_tool_arguments"),
                            f"interaction {t}: {problem}",
                        )
                    )
                    break
        for name, allow_end in _frame_fields():
            index = getattr(fault, name)
            if index is None or isinstance(index, bool):
                continue
            for t in targets:
                if t not in frames:
                    frames[t] = _frame_count(interactions[t])
                count = frames[t]
                top = count if allow_end else count - 1
                if index > top:
                    found.append(
                        (
                            ("cassette", "faults", k, name),
                            f"frame index {index} is past the end of interaction {t}, which has "
                            f"{count} frame(s) (0..{top})",
                        )
                    )
                    break


def _garble_problem(interaction: dict[str, Any], i: int) -> str | None:
    """Why garbling tool call ``i`` of ``interaction``'s recorded response fails (no such call,
    an API whose calls arrive whole, not a stream), found by applying the fault to a copy, as
    the replay will: the scenario is then refused at ``validate``, like a frame index past the
    end, rather than failing when it runs."""

    uri = str((interaction.get("request") or {}).get("uri", ""))
    try:
        response = recorded_response(interaction.get("response") or {}, uri, decoded=True)
        GarbleToolArguments(i).apply(response)
    except FaultError as exc:
        return str(exc)
    except Exception:  # a body the fault cannot even read: the replay reports it in context
        return None
    return None


def _frame_count(interaction: dict[str, Any]) -> int:

    body: Any = (interaction.get("response") or {}).get("body")
    if isinstance(body, dict):
        body = body.get("string", "")
    if isinstance(body, bytes) and eventstream.is_eventstream(body):  # Bedrock: its messages
        try:
            return len(list(eventstream.split_messages(body)))
        except eventstream.EventStreamError:
            return 0
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    return len(split_frames(body)) if isinstance(body, str) else 0


def check_roots(roots: Sequence[Path]) -> list[Path]:
    """Import roots as absolute paths (relative ones are relative to the working directory)."""
    return [Path(r).resolve() for r in roots]


__all__ = [
    "PROJECT_MARKERS",
    "cassette_file",
    "check",
    "check_roots",
    "scenario_menus",
    "scenario_root",
]
