"""Deferred tools (gating layer 6) and ``tool_search``, the tool that loads them.

A deferred tool (``@function(defer=True)``; MCP tools unless their server says ``always_load``)
is on the run's menu and callable, but its schema is not in the tool array the provider is
sent.  The system prompt carries a count-only catalog line, and the model calls ``tool_search``
to load what it needs: the result carries the loaded tools' full schemas, so the model can call
them at once, in the same run.

The provider's tool array is frozen per run (``offer`` builds it once, when the run starts): a
tool loaded mid-run joins the array at the next run of the same ``Runtime``, and until then
every model call of the run is sent the same array, so the prompt cache keeps its prefix.
Upstream froze it for that reason: one ``tool_search`` per turn had cost it about half of its
cache hits.

``tool_search`` searches the run's menu only, after every other layer: it cannot load a tool
the other layers removed (upstream leaves that open on its ``exec`` path; here there is no
path where it is open).  It is never deferred.  Its arguments, scoring and messages are
upstream's (docs/tools-and-approvals.md quotes them).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from .gating import is_deferred, tool_option
from .tools import AgentTool, ToolResult, ValidationProblem
from .types import ToolSpec

TOOL_SEARCH = "tool_search"
"""The name of the loader tool a run with deferred tools is offered."""

DEFAULT_MAX_RESULTS = 5
MAX_RESULTS = 20
MAX_QUERY_TERMS = 64
"""Distinct terms of a keyword query that are scored (the rest are ignored): each term is
compared with every candidate, so a query of a million words must not cost a million scans."""

SCHEMA_PREAMBLE = (
    "Their full schemas follow. You can call these tools immediately, in "
    "THIS turn, by constructing the call from the schema below."
)
EMPTY_SELECT_TEXT = "Error: pass tool names like `select:name1,name2` or a keyword query."
EMPTY_NAMES_TEXT = "Error: pass tool names like `select:name1,name2`."
EMPTY_QUERY_TEXT = "Error: empty query."

TOOL_SEARCH_SPEC = ToolSpec(
    name=TOOL_SEARCH,
    description=(
        "Find deferred tools within the current Agent's allowed scope and "
        "load their parameter schemas. Their names and JSON Schemas are not "
        "sent at turn start. This returns a small matching set with full "
        "schemas, so you can call the tools immediately in the same turn.\n"
        "\n"
        "Query forms:\n"
        "  `select:name1,name2`  — load these exact tools by name.\n"
        "  `notebook jupyter`    — keyword search; up to 5 best matches "
        "scored against tool name / search hint / description.\n"
        "  `+slack send`         — `+`-prefixed terms HARD-filter on "
        "the name; remaining terms rank within survivors."
    ),
    parameters={
        "type": "object",
        "properties": {
            "select": {
                "type": "string",
                "description": (
                    "Either `select:name1,name2` for exact tool names, "
                    "or a free-text keyword query (space-separated, "
                    "use `+keyword` to require a term in the tool name)."
                ),
            },
            "max_results": {
                "type": "integer",
                "description": ("For keyword queries: how many top matches to load (default 5)."),
            },
        },
        "required": ["select"],
    },
)


def catalog_text(count: int) -> str:
    """The system prompt's catalog line for ``count`` deferred tools not loaded: the count
    only, no names (upstream's code; its docs describe two other forms, docs/decisions.md)."""
    if count <= 0:
        return ""
    return (
        f"{count} deferred tools are available via tool_search. "
        "Their names and schemas are not loaded. Use tool_search with "
        "descriptive keywords to find a small matching set; returned schemas "
        "can be called in the same turn."
    )


class LoadedTools:
    """The names ``tool_search`` has loaded, kept by a ``Runtime`` across its runs (upstream
    keeps one set per session).  A run reads it once, when it starts (the freeze); a load
    during the run shows in the next run's array."""

    __slots__ = ("_lock", "_names")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names: set[str] = set(names)
        self._lock = threading.Lock()

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __len__(self) -> int:
        return len(self._names)

    def __iter__(self) -> Any:
        return iter(self.snapshot())

    def __repr__(self) -> str:
        return f"LoadedTools({sorted(self._names)!r})"

    def add(self, names: Iterable[str]) -> None:
        with self._lock:
            self._names.update(names)

    def snapshot(self) -> frozenset[str]:
        with self._lock:
            return frozenset(self._names)

    def clear(self) -> None:
        """Forget every load: the next run offers deferred tools as deferred again."""
        with self._lock:
            self._names.clear()


@dataclass(slots=True)
class Offer:
    """What one run offers, decided once when it starts (read it, do not change it: the lists
    of a registry menu are shared by every run that offers the same menu).

    - ``tools``: every tool the run can call (its menu, plus ``tool_search`` when the menu has
      deferred tools);
    - ``specs``: the provider's tool array, frozen for the run: the menu's non-deferred tools,
      the deferred ones loaded before the run started, then ``tool_search``;
    - ``deferred``: the deferred tools left out of ``specs`` (the ones ``tool_search`` can load);
    - ``catalog``: the system prompt's catalog line (empty when nothing is deferred).
    """

    tools: list[AgentTool]
    specs: list[ToolSpec]
    deferred: tuple[str, ...] = ()
    catalog: str = ""

    @property
    def split(self) -> bool:
        """Whether the array differs from the menu (some tool is deferred)."""
        return bool(self.deferred) or len(self.specs) != len(self.tools)


class _Split:
    """A menu's deferral, computed once per menu object: which tools are deferred, and the
    provider array for each set of them already loaded."""

    __slots__ = ("all_specs", "arrays", "deferred", "menu")

    def __init__(self, menu: Sequence[AgentTool]) -> None:
        self.menu = menu
        self.deferred = frozenset(t.name for t in menu if is_deferred(t))
        self.all_specs = [t.spec for t in menu]
        self.arrays: dict[frozenset[str], tuple[list[ToolSpec], tuple[str, ...]]] = {}
        if self.deferred and any(t.name == TOOL_SEARCH for t in menu):
            raise ValueError(
                f"the menu has deferred tools and a tool of its own named {TOOL_SEARCH!r}: the "
                "runtime's tool_search loads deferred tools under that name; rename yours"
            )

    def array(self, loaded: frozenset[str]) -> tuple[list[ToolSpec], tuple[str, ...]]:
        """``(provider array, deferred names left out)`` with ``loaded`` already loaded."""
        hit = self.arrays.get(loaded)
        if hit is not None:
            return hit
        specs: list[ToolSpec] = []
        left_out: list[str] = []
        deferred = self.deferred
        for tool in self.menu:
            name = tool.name
            if name in deferred and name not in loaded:
                left_out.append(name)
            else:
                specs.append(tool.spec)
        specs.append(TOOL_SEARCH_SPEC)
        out = (specs, tuple(left_out))
        if len(self.arrays) > 64:
            self.arrays.clear()
        self.arrays[loaded] = out
        return out


_SPLITS: dict[int, _Split] = {}
"""``id(menu) → _Split`` for menus that are tuples (a registry's cached menus, an inherited
menu): the entry holds the menu, so its id is not reused while cached."""


def _split_of(menu: Sequence[AgentTool]) -> _Split:
    if type(menu) is tuple:
        hit = _SPLITS.get(id(menu))
        if hit is not None and hit.menu is menu:
            return hit
        split = _Split(menu)
        if len(_SPLITS) > 256:
            _SPLITS.clear()
        _SPLITS[id(menu)] = split
        return split
    return _Split(menu)


def offer(menu: Sequence[AgentTool], loaded: LoadedTools | None) -> Offer:
    """Split a gated menu into the run's callable tools and its frozen provider array.

    A menu with no deferred tool comes back as it is (no ``tool_search``, no catalog).  The
    split of a menu offered again (the same tuple: a registry's cached menu) is reused, so a
    registry of hundreds of deferred tools costs a run a few dictionary lookups."""
    split = _split_of(menu)
    if not split.deferred:
        return Offer(list(menu), split.all_specs)
    state = loaded if loaded is not None else LoadedTools()
    frozen = state.snapshot() & split.deferred
    specs, left_out = split.array(frozen)
    search = tool_search_tool(menu, state)
    return Offer([*menu, search], specs, left_out, catalog_text(len(left_out)))


def with_catalog(system_prompt: str | None, catalog: str) -> str | None:
    """The run's system prompt with the catalog line after it (unchanged without one)."""
    if not catalog:
        return system_prompt
    return f"{system_prompt}\n\n{catalog}" if system_prompt else catalog


# -- the tool ----------------------------------------------------------------------------------


def tool_search_tool(menu: Sequence[AgentTool], loaded: LoadedTools) -> AgentTool:
    """``tool_search`` for one run: it searches ``menu`` (the run's gated menu) and records
    what it loads in ``loaded``.  The index by name is built at the first search, not for
    every run."""
    index: list[dict[str, AgentTool]] = []

    def execute(arguments: dict[str, Any]) -> ToolResult:
        if not index:
            index.append({t.name: t for t in menu})
        select, max_results = _arguments(arguments)
        text, names = search(select, index[0], loaded, max_results=max_results)
        return ToolResult(
            content=text,
            details={"loaded": names},
            is_error=text.startswith("Error:"),
        )

    return AgentTool(
        spec=TOOL_SEARCH_SPEC,
        execute=execute,
        validate=_accept_any,
        meta={"defer": False, "tool_search": True},
    )


def _accept_any(arguments: dict[str, Any]) -> tuple[dict[str, Any], list[ValidationProblem]]:
    """``tool_search`` reads its own arguments leniently, as upstream's does (a missing or odd
    ``select`` is an empty one, an odd ``max_results`` the default): every argument the model
    sends ends in one of its messages, never in a schema error."""
    return arguments, []


def _arguments(arguments: Any) -> tuple[str, int]:
    if not isinstance(arguments, dict):
        arguments = {}
    raw_select = arguments.get("select")
    select = raw_select if isinstance(raw_select, str) else str(raw_select or "")
    raw_max = arguments.get("max_results")
    try:
        max_results = int(raw_max) if raw_max is not None else DEFAULT_MAX_RESULTS
    except (TypeError, ValueError, OverflowError):
        max_results = DEFAULT_MAX_RESULTS
    return select, max(1, min(max_results, MAX_RESULTS))


def search(
    select: str,
    menu: dict[str, AgentTool],
    loaded: LoadedTools,
    *,
    max_results: int = DEFAULT_MAX_RESULTS,
) -> tuple[str, list[str]]:
    """Upstream's ``tool_search``: ``(result text, names loaded by this call)``.

    ``select:a,b`` (or a payload with commas and no spaces but after them) loads by name;
    anything else is a keyword query."""
    payload = select.strip()
    if not payload:
        return EMPTY_SELECT_TEXT, []
    if payload.startswith("select:"):
        return _by_name(payload[len("select:") :].strip(), menu, loaded)
    if "," in payload and " " not in payload.replace(", ", ""):
        return _by_name(payload, menu, loaded)
    return _by_keyword(payload, menu, loaded, max_results)


def _already_text(name: str) -> str:
    return (
        f"Tool '{name}' is already loaded in this turn's tool list — "
        "call it directly instead of searching again."
    )


def _callable_now(tool: AgentTool, loaded: LoadedTools) -> bool:
    return tool.name in loaded or not is_deferred(tool)


def _schema_line(tool: AgentTool) -> str:
    spec = tool.spec
    try:
        return json.dumps(
            {
                "name": spec.name,
                "description": spec.description or "",
                "parameters": spec.parameters,
            },
            ensure_ascii=False,
            default=str,
        )
    except (TypeError, ValueError, RecursionError):
        return json.dumps(
            {"name": spec.name, "description": spec.description or "", "parameters": {}},
            ensure_ascii=False,
        )


def _functions_block(tools: Sequence[AgentTool]) -> list[str]:
    return [
        "<functions>",
        *(f"<function>{_schema_line(t)}</function>" for t in tools),
        "</functions>",
    ]


def _by_name(
    payload: str, menu: dict[str, AgentTool], loaded: LoadedTools
) -> tuple[str, list[str]]:
    requested = [n.strip() for n in payload.split(",") if n.strip()]
    if not requested:
        return EMPTY_NAMES_TEXT, []
    found: list[AgentTool] = []
    missing: list[str] = []
    lines: list[str] = []
    for name in dict.fromkeys(requested):
        tool = menu.get(name)
        if tool is None:
            missing.append(name)
        elif _callable_now(tool, loaded):
            lines.append(_already_text(name))
        else:
            found.append(tool)
    names = [t.name for t in found]
    if found:
        loaded.add(names)
        lines.extend(_functions_block(found))
    if found:
        plural = "s" if len(found) != 1 else ""
        head = f"Loaded {len(found)} deferred tool{plural}. {SCHEMA_PREAMBLE}"
    else:
        head = "Loaded 0 tools."
    if missing:
        lines.append(f"\n[warning] unknown tool name(s): {', '.join(missing)}")
    return head + "\n" + "\n".join(lines), names


def _already_callable_hint(query: str, menu: dict[str, AgentTool], loaded: LoadedTools) -> str:
    """A query that names a tool the model can already call points it there, not to 'no
    match' (upstream's hint; only tools on this run's menu count)."""
    tool = menu.get(query)
    if tool is not None:
        hits = [tool.name] if _callable_now(tool, loaded) else []
    else:
        low = query.lower()
        hits = sorted(n for n in loaded.snapshot() if n.lower() == low and n in menu)
    if not hits:
        return ""
    if len(hits) == 1:
        return _already_text(hits[0])
    quoted = ", ".join(f"'{n}'" for n in hits)
    return (
        f"Tools {quoted} are already loaded in this turn's tool list — "
        "call them directly instead of searching again."
    )


def _by_keyword(
    query: str, menu: dict[str, AgentTool], loaded: LoadedTools, max_results: int
) -> tuple[str, list[str]]:
    raw_terms = list(dict.fromkeys(query.split()))[:MAX_QUERY_TERMS]
    if not raw_terms:
        return EMPTY_QUERY_TEXT, []
    required = [t[1:].lower() for t in raw_terms if t.startswith("+") and len(t) > 1]
    weighted = [t.lower() for t in raw_terms if not t.startswith("+")]
    hint = _already_callable_hint(query.strip(), menu, loaded)
    if hint:
        return hint, []
    done = loaded.snapshot()
    scored: list[tuple[int, str, AgentTool]] = []
    for tool in menu.values():
        if tool.name in done or not is_deferred(tool):
            continue
        name = tool.name.lower()
        if not all(term in name for term in required):
            continue
        search_hint = tool_option(tool, "search_hint")
        hint_text = search_hint.lower() if isinstance(search_hint, str) else ""
        description = (tool.spec.description or "").lower()
        score = 0
        for term in weighted:
            if term in name:
                score += 10
            if term in hint_text:
                score += 5
            if term in description:
                score += 2
        if not weighted:  # a query of required terms only ranks every survivor
            score = 1
        if score > 0:
            scored.append((score, tool.name, tool))
    if not scored:
        return f"No deferred tools matched query {query!r}.", []
    scored.sort(key=lambda row: (-row[0], row[1]))
    top = [tool for _, _, tool in scored[:max_results]]
    names = [t.name for t in top]
    loaded.add(names)
    plural = "s" if len(top) != 1 else ""
    head = (
        f"Loaded {len(top)} deferred tool{plural} matching {query!r} "
        f"(scored, top {max_results} of {len(scored)} matches). {SCHEMA_PREAMBLE}"
    )
    return head + "\n" + "\n".join(_functions_block(top)), names


__all__ = [
    "DEFAULT_MAX_RESULTS",
    "MAX_RESULTS",
    "SCHEMA_PREAMBLE",
    "TOOL_SEARCH",
    "TOOL_SEARCH_SPEC",
    "LoadedTools",
    "Offer",
    "catalog_text",
    "offer",
    "search",
    "tool_search_tool",
    "with_catalog",
]
