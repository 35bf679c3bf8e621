"""YAML scenarios (SPEC §9.7): one file describes a whole loop run and what must come out of it.

A scenario holds the tools (JSON Schema parameters plus a scripted *behaviour*), the prompt(s),
the model script **or** a cassette reference, a steering/follow-up schedule, loop options and the
expectations.  ``load_scenario(path)`` validates a file with the pydantic ``Scenario`` model and
reports problems as ``file:line:column: field.path: message`` (never a traceback): the YAML is
composed into a node tree first, so every pydantic error location is mapped back to the mark of
the node it names.  ``run_scenario(scenario)`` runs it through the real loop and returns a
``ScenarioResult`` whose ``failure_text`` says which expectation failed, followed by the timeline.

The model is the stable exchange format of the harness (hypothesis strategies emit it too):
fields are only ever added, never renamed.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import re
import time
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

SCHEMA_VERSION = 1

SCENARIO_PATTERNS = ("scenario_*.yaml", "scenario_*.yml", "*.scenario.yaml", "*.scenario.yml")
"""File names collected as scenarios from directories (CLI ``run``/``validate``, pytest)."""


def is_scenario_file(path: Path, extra_globs: tuple[str, ...] | list[str] = ()) -> bool:
    """Does ``path`` follow the naming convention (or match one of ``extra_globs``, tried
    against the file name and the full path)?"""
    from fnmatch import fnmatch

    if any(fnmatch(path.name, pattern) for pattern in SCENARIO_PATTERNS):
        return True
    full = path.as_posix()
    return any(fnmatch(path.name, g) or fnmatch(full, g) or fnmatch(full, "*/" + g)
               for g in extra_globs)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- tools ------------------------------------------------------------------------------------


class RaiseSpec(_Strict):
    """The tool raises ``type(message)``.  ``type`` is a built-in ``Exception`` subclass name."""

    message: str = ""
    type: str = "RuntimeError"

    @model_validator(mode="after")
    def _known_exception(self) -> RaiseSpec:
        _exception_type(self.type)
        return self


def _exception_type(name: str) -> type[Exception]:
    import builtins

    found = getattr(builtins, name, None)
    if not (isinstance(found, type) and issubclass(found, Exception)):
        raise ValueError(
            f"{name!r} is not a built-in Exception class (e.g. ValueError, RuntimeError, KeyError)"
        )
    return found


class AgenticDef(_Strict):
    """The tool is an agentic function: its body runs a nested ``Runtime.aexec`` on the *same*
    provider (so the nested rounds consume the next turns of the same model script) and returns
    the nested run's final text.  ``prompt`` is a ``str.format`` template over the call's
    arguments; ``tools`` names scenario tools offered to the nested run (default: none)."""

    prompt: str
    tools: list[str] = Field(default_factory=list)
    max_iterations: int | None = None


class Outcome(_Strict):
    """What one tool call does: exactly one of ``returns``, ``raises``, ``echo``, ``agentic``;
    ``sleep`` first (seconds; combine with ``tool_timeout_s`` to test timeouts), ``updates`` are
    emitted through ``on_update`` before the result, ``is_error`` marks a returned value as an
    error result."""

    returns: Any = None
    raises: str | RaiseSpec | None = None
    echo: bool = False
    agentic: AgenticDef | None = None
    sleep: float | None = Field(default=None, ge=0)
    updates: list[Any] = Field(default_factory=list)
    is_error: bool = False

    @model_validator(mode="after")
    def _one_behaviour(self) -> Outcome:
        given = [n for n in ("returns", "raises") if n in self.model_fields_set]
        if self.echo:
            given.append("echo")
        if self.agentic is not None:
            given.append("agentic")
        if len(given) > 1:
            raise ValueError(
                f"give only one of returns/raises/echo/agentic, got {', '.join(given)}"
            )
        return self


class ToolDef(Outcome):
    """A tool: its spec and its behaviour.  ``sequence`` gives one outcome per call instead
    (the last outcome repeats once the sequence is used up).  With no behaviour at all the tool
    returns ``null`` (an empty text result)."""

    name: str = Field(min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )
    sequence: list[Outcome] | None = None

    @model_validator(mode="after")
    def _sequence_alone(self) -> ToolDef:
        if self.sequence is not None:
            clash = [
                n for n in ("returns", "raises", "echo", "agentic", "sleep", "updates", "is_error")
                if n in self.model_fields_set
            ]
            if clash:
                raise ValueError(f"'sequence' replaces {', '.join(clash)}: give one or the other")
            if not self.sequence:
                raise ValueError("'sequence' needs at least one outcome")
        return self


# -- the model script -------------------------------------------------------------------------


class CallDef(_Strict):
    """A tool call in a model turn.  ``args`` are JSON-encoded; ``raw_args`` is sent verbatim
    instead (e.g. invalid JSON).  A call to a tool the scenario does not declare is a load error
    unless ``unknown_tool: true`` says the test wants the "not found" path."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    raw_args: str | None = None
    id: str | None = None
    unknown_tool: bool = False


class TurnDef(_Strict):
    """One model response, streamed as thinking → text → calls.

    - ``stop: length`` ends with a length stop (default: ``toolUse`` with calls, else ``stop``);
    - ``error`` (+ ``status``/``retryable``/``retry_after``) ends with a provider error event;
    - ``aborted: true`` ends with an aborted stop; ``cut: true`` ends without a terminal event;
    - ``chunk_size`` splits text/argument JSON into deltas of that many characters.
    """

    thinking: str | None = None
    text: str | None = None
    calls: list[CallDef] = Field(default_factory=list)
    stop: Literal["stop", "length", "toolUse"] | None = None
    error: str | None = None
    status: int | None = Field(default=None, ge=100, le=599)
    retryable: bool | None = None
    retry_after: float | None = Field(default=None, ge=0)
    aborted: bool = False
    cut: bool = False
    chunk_size: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _one_ending(self) -> TurnDef:
        endings = [
            n for n, on in (
                ("stop", self.stop is not None),
                ("error", self.error is not None),
                ("aborted", self.aborted),
                ("cut", self.cut),
            ) if on
        ]
        if len(endings) > 1:
            raise ValueError(f"a turn ends one way only, got {', '.join(endings)}")
        if self.error is None and (
            self.status is not None or self.retryable is not None or self.retry_after is not None
        ):
            raise ValueError("status/retryable/retry_after need 'error: <message>'")
        return self


# -- cassettes --------------------------------------------------------------------------------


class Mutation(_Strict):
    """A frame-addressed fault applied to the recorded SSE bodies at playback: exactly one
    kind key; ``interaction`` (0-based) limits it to one recorded response (default: all)."""

    truncate_after: int | None = Field(default=None, ge=0)
    drop_terminal: bool | None = None
    corrupt_frame: int | None = Field(default=None, ge=0)
    garble_tool_arguments: int | None = Field(default=None, ge=0)
    http_error: int | None = Field(default=None, ge=400, le=599)
    headers: dict[str, str] | None = None
    inject_error: int | None = Field(default=None, ge=0)
    stall: float | None = Field(default=None, ge=0)
    after_frame: int | None = Field(default=None, ge=0)
    rechunk: list[int] | int | None = None
    interaction: int | None = Field(default=None, ge=0)

    @model_validator(mode="after")
    def _exactly_one(self) -> Mutation:
        kinds = [
            n for n in (
                "truncate_after", "drop_terminal", "corrupt_frame", "garble_tool_arguments",
                "http_error", "inject_error", "stall", "rechunk",
            ) if getattr(self, n) is not None
        ]
        if len(kinds) != 1:
            raise ValueError(
                "a mutation has exactly one of truncate_after, drop_terminal, corrupt_frame, "
                "garble_tool_arguments, http_error, inject_error, stall, rechunk"
                + (f" (got {', '.join(kinds)})" if kinds else "")
            )
        if self.headers is not None and self.http_error is None:
            raise ValueError("'headers' belongs to 'http_error'")
        if self.after_frame is not None and self.stall is None:
            raise ValueError("'after_frame' belongs to 'stall'")
        return self


class CassetteRef(_Strict):
    """Replay a recorded cassette through a real adapter instead of a model script.  ``path`` is
    relative to the scenario file; ``api`` picks the adapter."""

    path: str = Field(min_length=1)
    api: Literal["openai_chat", "openai_responses", "anthropic"]
    faults: list[Mutation] = Field(default_factory=list)
    match_body: bool = False
    allow_unplayed: bool = False


# -- steering ---------------------------------------------------------------------------------


class CallPosition(_Strict):
    round: int = Field(ge=0)
    index: int = Field(ge=0)


class SteeringDef(_Strict):
    """One scheduled user message: exactly one of ``after_tool`` (global 0-based index of executed
    calls), ``after_call`` (call ``index`` of round ``round``), ``before_round`` (0 = with the
    prompt) or ``follow_up: true``."""

    message: str
    after_tool: int | None = Field(default=None, ge=0)
    after_call: CallPosition | None = None
    before_round: int | None = Field(default=None, ge=0)
    follow_up: bool = False

    @model_validator(mode="after")
    def _one_position(self) -> SteeringDef:
        positions = ("after_tool", "after_call", "before_round")
        given = [n for n in positions if getattr(self, n) is not None]
        if self.follow_up:
            given.append("follow_up")
        if len(given) != 1:
            raise ValueError(
                "a steering entry needs exactly one of after_tool, after_call, before_round, "
                "follow_up" + (f" (got {', '.join(given)})" if given else "")
            )
        return self


# -- options and expectations -----------------------------------------------------------------


class FunctionChoice(_Strict):
    type: Literal["function"]
    name: str


class LoopOptions(_Strict):
    max_iterations: int | None = None
    tool_choice: Literal["auto", "required", "none"] | FunctionChoice | None = None
    parallel_tool_calls: bool | None = None
    steering_mode: Literal["skip", "after_batch"] = "skip"
    tool_timeout_s: float | None = Field(default=None, gt=0)
    model: str = "test-model"


class ToolResultExpect(_Strict):
    """One expected tool result (results are compared in order, and their number must match)."""

    name: str | None = None
    is_error: bool | None = None
    skipped: bool | None = None
    text: str | None = None
    text_matches: str | None = None

    @model_validator(mode="after")
    def _regex_compiles(self) -> ToolResultExpect:
        _check_regex(self.text_matches)
        return self


class Expectations(_Strict):
    """What the run must produce.  Every field is optional; only given ones are checked.

    ``events`` is the compact event order (see ``event_tokens``); ``request_roles`` lists, per
    model call, the roles of the history it received; ``delivered`` counts steering/follow-up
    messages delivered; ``undelivered`` counts those reported undelivered."""

    termination: Literal["completed", "max_iterations", "error", "aborted"] | None = None
    model_calls: int | None = Field(default=None, ge=0)
    tool_results: list[ToolResultExpect] | None = None
    final_text: str | None = None
    final_text_matches: str | None = None
    error_text: str | None = None
    undelivered: int | None = Field(default=None, ge=0)
    delivered: int | None = Field(default=None, ge=0)
    events: list[str] | None = None
    request_roles: list[list[Literal["user", "assistant", "toolResult"]]] | None = None
    snapshot: bool = False

    @model_validator(mode="after")
    def _regex_compiles(self) -> Expectations:
        _check_regex(self.final_text_matches)
        return self


def _check_regex(pattern: str | None) -> None:
    if pattern is None:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None


# -- the scenario -----------------------------------------------------------------------------


class Scenario(_Strict):
    """A whole scenario file.  Give ``prompt`` or ``prompts``, and ``script`` or ``cassette``.

    A script entry is a plain string (a text-only reply) or a ``TurnDef`` mapping.
    """

    name: str | None = None
    description: str = ""
    system_prompt: str | None = None
    prompt: str | None = None
    prompts: list[str] | None = None
    tools: list[ToolDef] = Field(default_factory=list)
    script: list[str | TurnDef] | None = None
    cassette: CassetteRef | None = None
    steering: list[SteeringDef] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    options: LoopOptions = Field(default_factory=LoopOptions)
    expect: Expectations = Field(default_factory=Expectations)
    check_invariants: bool = True

    _path: Path | None = PrivateAttr(default=None)

    @model_validator(mode="after")
    def _shape(self) -> Scenario:
        if (self.prompt is None) == (self.prompts is None):
            raise ValueError("give exactly one of 'prompt' or 'prompts'")
        if self.prompts is not None and not self.prompts:
            raise ValueError("'prompts' needs at least one prompt")
        if (self.script is None) == (self.cassette is None):
            raise ValueError("give exactly one of 'script' (a model script) or 'cassette'")
        names = [t.name for t in self.tools]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"tool names must be unique, repeated: {', '.join(dupes)}")
        return self

    @property
    def prompt_list(self) -> list[str]:
        return [self.prompt] if self.prompt is not None else list(self.prompts or [])

    @property
    def turns(self) -> list[TurnDef]:
        """The script with plain strings expanded to text turns."""
        return [TurnDef(text=t) if isinstance(t, str) else t for t in self.script or []]

    @property
    def path(self) -> Path | None:
        """The file the scenario was loaded from (``None`` when built in code)."""
        return self._path

    @property
    def display_name(self) -> str:
        """``name``, else the file name without ``scenario_`` / ``.scenario.yaml`` decoration."""
        if self.name:
            return self.name
        if self._path is None:
            return "scenario"
        return scenario_stem(self._path)

    def semantic_problems(self) -> list[tuple[tuple[str | int, ...], str]]:
        """Problems the field types cannot express, as ``(field path, message)``: calls to
        undeclared tools, a forced ``tool_choice`` naming no declared tool, invalid parameter
        schemas, a missing cassette file."""
        problems: list[tuple[tuple[str | int, ...], str]] = []
        declared = [t.name for t in self.tools]
        for i, entry in enumerate(self.script or []):
            if isinstance(entry, str):
                continue
            for j, c in enumerate(entry.calls):
                where: tuple[str | int, ...] = ("script", i, "calls", j, "name")
                if c.name not in declared and not c.unknown_tool:
                    problems.append((where, (
                        f"the script calls tool {c.name!r}, which is not declared in 'tools' "
                        f"(declared: {', '.join(declared) or 'none'}); mark the call "
                        "'unknown_tool: true' to test the \"not found\" path"
                    )))
                elif c.name in declared and c.unknown_tool:
                    problems.append((where, (
                        f"the call is marked 'unknown_tool: true' but tool {c.name!r} is declared"
                    )))
        for i, tool in enumerate(self.tools):
            outcomes = [(("tools", i), tool)] + [
                (("tools", i, "sequence", k), o) for k, o in enumerate(tool.sequence or [])
            ]
            for loc, outcome in outcomes:
                for j, name in enumerate(outcome.agentic.tools if outcome.agentic else []):
                    if name not in declared:
                        problems.append(((*loc, "agentic", "tools", j), (
                            f"the nested run offers tool {name!r}, which is not declared in "
                            "'tools'"
                        )))
        choice = self.options.tool_choice
        if isinstance(choice, FunctionChoice) and choice.name not in declared:
            problems.append((("options", "tool_choice", "name"), (
                f"tool_choice names tool {choice.name!r}, which is not declared in 'tools'"
            )))
        from jsonschema import Draft202012Validator
        from jsonschema.exceptions import SchemaError

        for i, tool in enumerate(self.tools):
            try:
                Draft202012Validator.check_schema(tool.parameters)
            except SchemaError as exc:
                problems.append(
                    (("tools", i, "parameters"), f"not a valid JSON Schema: {exc.message}")
                )
        if self.cassette is not None:
            cassette = self.cassette_path
            if cassette is not None and not cassette.is_file():
                problems.append((("cassette", "path"), f"cassette file not found: {cassette}"))
        return problems

    @property
    def cassette_path(self) -> Path | None:
        """The cassette file, resolved relative to the scenario file."""
        if self.cassette is None:
            return None
        path = Path(self.cassette.path)
        if not path.is_absolute() and self._path is not None:
            path = self._path.parent / path
        return path


def scenario_stem(path: Path) -> str:
    name = path.name
    for suffix in (".scenario.yaml", ".scenario.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.removeprefix("scenario_")


# -- loading with positions -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Problem:
    """One problem of a scenario file, with its 1-based position."""

    file: str
    line: int
    column: int
    path: str
    message: str

    def __str__(self) -> str:
        where = f"{self.path}: " if self.path else ""
        return f"{self.file}:{self.line}:{self.column}: {where}{self.message}"


class ScenarioError(Exception):
    """A scenario file is unusable.  ``str()`` lists every problem as
    ``file:line:column: field.path: message``."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("\n".join(str(p) for p in problems))


def load_scenario(path: str | Path) -> Scenario:
    """Read and validate one scenario file; raise ``ScenarioError`` with positions."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ScenarioError([Problem(str(path), 1, 1, "", "file not found")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        problem = Problem(str(path), 1, 1, "", f"cannot read the file: {exc}")
        raise ScenarioError([problem]) from None
    return parse_scenario(text, path)


def parse_scenario(text: str, path: str | Path = "<scenario>") -> Scenario:
    """Validate scenario YAML ``text``; ``path`` names it in messages and anchors relative
    cassette paths."""
    import yaml

    path = Path(path)
    file = str(path)
    try:
        root, data = _parse_yaml(text)
    except yaml.MarkedYAMLError as exc:
        raise ScenarioError([_yaml_problem(file, exc)]) from None
    except yaml.YAMLError as exc:
        raise ScenarioError([Problem(file, 1, 1, "", f"YAML error: {exc}")]) from None
    if root is None:
        raise ScenarioError([Problem(file, 1, 1, "", "the file is empty: expected a mapping "
                                     "with 'prompt', 'script' or 'cassette', 'expect', …")])
    if not isinstance(root, yaml.MappingNode):
        line, col = _pos(root)
        raise ScenarioError([Problem(file, line, col, "", (
            f"expected a mapping of scenario fields at the top level, got {_node_kind(root)}"
        ))])
    duplicates = _duplicate_keys(root, ())
    if duplicates:
        raise ScenarioError([
            Problem(file, *_pos(node), _dotted(loc), f"duplicate key {loc[-1]!r}")
            for loc, node in duplicates
        ])
    try:
        scenario = Scenario.model_validate(data)
    except ValidationError as exc:
        raise ScenarioError(_validation_problems(file, root, exc)) from None
    scenario._path = path.resolve() if path.name != "<scenario>" else None
    semantic = scenario.semantic_problems()
    if semantic:
        problems = []
        for loc, message in semantic:
            node, _ = _node_at(root, loc)
            problems.append(Problem(file, *_pos(node), _dotted(loc), message))
        raise ScenarioError(problems)
    return scenario


def _parse_yaml(text: str) -> tuple[Any, Any]:
    """The node tree (for positions) and the data, from one parse.  libyaml's loader is used
    when available (fast); a file it rejects is parsed again with the pure-Python loader so
    syntax errors read the same everywhere."""
    import yaml

    def parse(loader_class: Any) -> tuple[Any, Any]:
        loader = loader_class(text)
        try:
            node = loader.get_single_node()
            return node, (loader.construct_document(node) if node is not None else None)
        finally:
            loader.dispose()

    fast = getattr(yaml, "CSafeLoader", None)
    if fast is not None:
        try:
            return parse(fast)
        except yaml.YAMLError:
            pass
    return parse(yaml.SafeLoader)


def _yaml_problem(file: str, exc: Any) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = ""
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        hint = " — check the indentation of this line and the one before"
    elif "'\\t'" in problem:
        hint = " — indent YAML with spaces, not tabs"
    return Problem(file, line, col, "", f"YAML syntax error: {problem}{context}{hint}")


def _pos(node: Any) -> tuple[int, int]:
    mark = node.start_mark
    return mark.line + 1, mark.column + 1


def _node_kind(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.MappingNode):
        return "a mapping"
    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the scalar {node.value!r}"


def _duplicate_keys(node: Any, loc: tuple[Any, ...]) -> list[tuple[tuple[Any, ...], Any]]:
    import yaml

    found: list[tuple[tuple[Any, ...], Any]] = []
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key, value in node.value:
            k = key.value if isinstance(key, yaml.ScalarNode) else None
            if k is not None and k in seen:
                found.append(((*loc, k), key))
            if k is not None:
                seen.add(k)
            found.extend(_duplicate_keys(value, (*loc, k)))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            found.extend(_duplicate_keys(item, (*loc, i)))
    return found


def _node_at(root: Any, loc: tuple[Any, ...]) -> tuple[Any, list[Any]]:
    """The deepest node ``loc`` reaches, and the part of ``loc`` that named real nodes (union
    tags such as ``'TurnDef'`` and keys of missing fields are skipped)."""
    import yaml

    node = root
    resolved: list[Any] = []
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            for key, value in node.value:
                if isinstance(key, yaml.ScalarNode) and key.value == part:
                    node = value
                    resolved.append(part)
                    break
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            if 0 <= part < len(node.value):
                node = node.value[part]
                resolved.append(part)
    return node, resolved


def _key_node(root: Any, loc: tuple[Any, ...]) -> Any:
    """The key node of the last element of ``loc`` (for unknown keys: point at the key)."""
    import yaml

    parent, _ = _node_at(root, loc[:-1])
    if isinstance(parent, yaml.MappingNode):
        for key, _value in parent.value:
            if isinstance(key, yaml.ScalarNode) and key.value == loc[-1]:
                return key
    return parent


def _dotted(loc: tuple[Any, ...] | list[Any]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


_FRIENDLY = {
    "string_type": "expected a string",
    "int_type": "expected an integer",
    "int_parsing": "expected an integer",
    "int_from_float": "expected an integer, got a number with a fraction",
    "float_type": "expected a number",
    "float_parsing": "expected a number",
    "bool_type": "expected true or false",
    "bool_parsing": "expected true or false",
    "list_type": "expected a list",
    "dict_type": "expected a mapping",
    "model_type": "expected a mapping",
    "model_attributes_type": "expected a mapping",
}


def _validation_problems(file: str, root: Any, exc: ValidationError) -> list[Problem]:
    import yaml

    entries: list[tuple[tuple[Any, ...], list[Any], Any, Any, str]] = []
    for err in exc.errors():
        loc = tuple(err["loc"])
        node, resolved = _node_at(root, loc)
        # Did the error come from a union branch?  Then the first unresolved string is its tag.
        tag_index = _union_tag_index(root, loc)
        branch = loc[tag_index] if tag_index is not None else None
        message = _message(err, loc, node)
        if err["type"] == "extra_forbidden":
            node = _key_node(root, loc)
            resolved = list(loc)
        entries.append((loc, resolved, branch, node, message))

    # Union noise: for a mapping, keep the errors of the model branch; for a scalar, merge the
    # branches' complaints into one "expected one of" line.
    by_point: dict[tuple[Any, ...], list[int]] = {}
    for i, (loc, _resolved, branch, _node, _msg) in enumerate(entries):
        if branch is not None:
            point = loc[: loc.index(branch)]
            by_point.setdefault(point, []).append(i)
    drop: set[int] = set()
    merged: dict[int, str] = {}
    for point, indices in by_point.items():
        node, _ = _node_at(root, point)
        is_mapping = isinstance(node, yaml.MappingNode)
        model_like = [i for i in indices if _is_model_tag(entries[i][2])]
        scalar_like = [i for i in indices if not _is_model_tag(entries[i][2])]
        if is_mapping and model_like:
            drop.update(scalar_like)
            # Several model branches: keep the one whose errors go deepest (the intended one).
            branches = {entries[i][2] for i in model_like}
            if len(branches) > 1:
                best = max(branches, key=lambda b: max(
                    len(entries[i][0]) for i in model_like if entries[i][2] == b))
                drop.update(i for i in model_like if entries[i][2] != best)
        elif not is_mapping and scalar_like:
            at_point = [i for i in indices if len(entries[i][0]) == len(point) + 1]
            if len(at_point) > 1:
                names = [_expected_name(entries[i][2]) for i in at_point]
                merged[at_point[0]] = "expected " + " or ".join(dict.fromkeys(names))
                drop.update(at_point[1:])
    problems: list[Problem] = []
    seen: set[tuple[int, int, str, str]] = set()
    for i, (loc, _resolved, branch, node, message) in enumerate(entries):
        if i in drop:
            continue
        message = merged.get(i, message)
        clean = tuple(p for p in loc if p != branch)
        line, col = _pos(node)
        key = (line, col, _dotted(clean), message)
        if key in seen:
            continue
        seen.add(key)
        problems.append(Problem(file, line, col, _dotted(clean), message))
    problems.sort(key=lambda p: (p.line, p.column))
    return problems


def _union_tag_index(root: Any, loc: tuple[Any, ...]) -> int | None:
    """Index in ``loc`` of a pydantic union-branch tag (a string that names no field)."""
    current: Any = Scenario
    for i, part in enumerate(loc):
        current = _unwrap_optional(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else Any
            continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            if field is None:
                return None  # an unknown key: extra_forbidden, not a tag
            current = field.annotation
            continue
        members = _union_members(current)
        if members:
            for m in members:
                if _tag_names(m, part):
                    current = m
                    break
            return i
        return None
    return None


def _unwrap_optional(tp: Any) -> Any:
    members = _union_members(tp)
    if members:
        rest = [m for m in members if m is not type(None)]
        if len(rest) == 1:
            return rest[0]
    return tp


def _union_members(tp: Any) -> tuple[Any, ...]:
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return typing.get_args(tp)
    return ()


def _tag_names(member: Any, tag: str) -> bool:
    name = getattr(member, "__name__", str(member))
    return name in tag


def _is_model_tag(tag: Any) -> bool:
    if not isinstance(tag, str):
        return False
    return any(n in tag for n in _MODEL_NAMES)


def _expected_name(tag: Any) -> str:
    if not isinstance(tag, str):
        return "a value"
    if tag == "str":
        return "a string"
    if tag.startswith("literal["):
        return "one of " + tag[len("literal[") : -1].replace("'", "").replace(",", ", ")
    for name, what in _MODEL_NAMES.items():
        if name in tag:
            return what
    return tag


def _message(err: dict[str, Any], loc: tuple[Any, ...], node: Any) -> str:
    import yaml

    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = _allowed_keys(loc[:-1])
        key = loc[-1]
        hint = ""
        if allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            hint += f"; allowed keys: {', '.join(allowed)}"
        return f"unknown key {key!r}{hint}"
    if kind == "missing":
        return f"missing required field {loc[-1]!r}"
    if kind == "value_error":
        msg = str(err.get("msg", ""))
        return msg.removeprefix("Value error, ")
    if kind == "literal_error":
        expected = err.get("ctx", {}).get("expected", "")
        got = node.value if isinstance(node, yaml.ScalarNode) else _node_kind(node)
        return f"expected {expected}, got {got!r}"
    base = _FRIENDLY.get(kind)
    if base is not None:
        return f"{base}, got {_describe_node(node)}"
    return str(err.get("msg", kind))


def _describe_node(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.ScalarNode):
        return repr(node.value)
    return _node_kind(node)


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    """Field names of the model that sits at ``loc`` (union tags pick the branch)."""
    current: Any = Scenario
    for part in loc:
        current = _unwrap_optional(current)
        if isinstance(part, int):
            args = typing.get_args(current)
            current = args[0] if args else Any
            continue
        members = _union_members(current)
        if members:
            picked = [m for m in members if _tag_names(m, part)]
            if picked:
                current = picked[0]
                continue
        if isinstance(current, type) and issubclass(current, BaseModel):
            field = current.model_fields.get(part)
            if field is None:
                return []
            current = field.annotation
            continue
        return []
    current = _unwrap_optional(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    members = [
        m for m in _union_members(current) if isinstance(m, type) and issubclass(m, BaseModel)
    ]
    return list(members[0].model_fields) if len(members) == 1 else []


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format (published as ``scenario.schema.json``)."""
    schema = Scenario.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://openprogram.dev/schemas/scenario.schema.json",
        "title": "OpenProgram loop scenario",
        **{k: v for k, v in schema.items() if k != "title"},
    }


# -- running ----------------------------------------------------------------------------------


@dataclass(slots=True)
class ScenarioResult:
    """The outcome of one scenario: ``passed``, the failed expectations (``failures``), the trace
    and its rendered timeline.  ``failure_text`` is what test reports show."""

    name: str
    path: str | None
    passed: bool
    failures: list[str] = field(default_factory=list)
    trace: Any = None
    timeline: str = ""
    duration_s: float = 0.0
    snapshot_written: bool = False

    @property
    def failure_text(self) -> str:
        if self.passed:
            return ""
        lines = [f"scenario {self.name!r} failed" + (f" ({self.path})" if self.path else "")]
        lines.extend(f"  - {f}" for f in self.failures)
        if self.timeline:
            lines += ["", "timeline:", self.timeline]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what ``openprogram-testing run --results-dir`` writes and ``show`` reads)."""
        from openprogram.events import AgentEnd

        events = []
        if self.trace is not None:
            events = [e.model_dump(mode="json") for e in self.trace.events]
        end = next(
            (e for e in reversed(self.trace.events) if isinstance(e, AgentEnd)), None
        ) if self.trace is not None else None
        return {
            "kind": "openprogram-scenario-result",
            "name": self.name,
            "path": self.path,
            "passed": self.passed,
            "failures": list(self.failures),
            "duration_s": round(self.duration_s, 4),
            "timeline": self.timeline,
            "trace": {
                "events": events,
                "cap": getattr(self.trace, "cap", None),
                "steering_mode": getattr(self.trace, "steering_mode", "skip"),
                "termination": end.termination if end is not None else None,
            },
        }


def run_scenario(
    scenario: Scenario | str | Path, *, update_snapshots: bool = False
) -> ScenarioResult:
    """Run a scenario (or load and run a file) through the real loop and check it.  Never
    raises for a failing expectation; a broken scenario file raises ``ScenarioError``."""
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    coro = arun_scenario(scenario, update_snapshots=update_snapshots)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    # Called from inside a running event loop: run on a helper thread with its own loop.
    import concurrent.futures
    import contextvars

    ctx = contextvars.copy_context()
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(ctx.run, asyncio.run, coro).result()


async def arun_scenario(scenario: Scenario, *, update_snapshots: bool = False) -> ScenarioResult:
    """The async twin of ``run_scenario``."""
    started = time.perf_counter()
    name = scenario.display_name
    path = str(scenario.path) if scenario.path is not None else None
    try:
        trace, provider, failures = await _execute(scenario)
    except Exception as exc:
        return ScenarioResult(
            name, path, False, [f"the run raised {type(exc).__name__}: {exc}"],
            duration_s=time.perf_counter() - started,
        )
    from .trace import render_timeline

    if provider is not None:
        try:
            provider.assert_complete()
        except AssertionError as exc:
            failures.append(f"model script: {exc}")
    failures.extend(check_expectations(scenario, trace))
    if scenario.check_invariants:
        from .invariants import check_invariants

        try:
            check_invariants(trace)
        except AssertionError as exc:
            text = str(exc).split("\n\nrun timeline:\n")[0]  # the timeline is shown below
            failures.append(text if text.startswith("loop invariant") else f"invariant: {text}")
    written = False
    if scenario.expect.snapshot:
        problem, written = _check_snapshot(scenario, trace, update_snapshots)
        if problem:
            failures.append(problem)
    return ScenarioResult(
        name=name,
        path=path,
        passed=not failures,
        failures=failures,
        trace=trace,
        timeline=render_timeline(trace),
        duration_s=time.perf_counter() - started,
        snapshot_written=written,
    )


async def _execute(scenario: Scenario) -> tuple[Any, Any, list[str]]:
    """Run the loop; returns the trace, the scripted provider (``None`` for cassettes) and
    failures found while running (a cassette left with unplayed interactions)."""
    from .trace import run_loop

    options = scenario.options
    choice: Any = options.tool_choice
    if isinstance(choice, FunctionChoice):
        choice = {"type": "function", "name": choice.name}
    kwargs: dict[str, Any] = dict(
        schedule=build_schedule(scenario),
        system_prompt=scenario.system_prompt,
        max_iterations=options.max_iterations,
        tool_choice=choice,
        parallel_tool_calls=options.parallel_tool_calls,
        steering_mode=options.steering_mode,
        tool_timeout_s=options.tool_timeout_s,
    )
    if scenario.cassette is None:
        provider = build_provider(scenario)
        tools = build_tools(scenario, provider, options.model)
        trace = await run_loop(
            provider, scenario.prompt_list, model=options.model, tools=tools, **kwargs
        )
        return trace, provider, []
    from .cassettes import CassetteError, use_cassette

    cassette = scenario.cassette
    cassette_path = scenario.cassette_path
    assert cassette_path is not None
    adapter, model, count = _cassette_adapter(cassette.api, cassette_path, options.model)
    mutations: Any = [_build_mutation(m) for m in cassette.faults if m.interaction is None]
    if any(m.interaction is not None for m in cassette.faults):
        # Address single interactions: every interaction gets the global mutations, then its own.
        per: dict[int, list[Any]] = {i: list(mutations) for i in range(count)}
        for m in cassette.faults:
            if m.interaction is not None:
                if m.interaction >= count:
                    raise ValueError(
                        f"a fault addresses interaction {m.interaction}, but the cassette has "
                        f"{count} (0-based)"
                    )
                per[m.interaction].append(_build_mutation(m))
        mutations = per
    trace = None
    try:
        with use_cassette(
            cassette_path,
            match_body=cassette.match_body,
            allow_unplayed=cassette.allow_unplayed,
            mutations=mutations,
        ):
            tools = build_tools(scenario, adapter, model)
            trace = await run_loop(
                adapter, scenario.prompt_list, model=model, tools=tools, **kwargs
            )
    except CassetteError as exc:
        if trace is None:
            raise
        return trace, None, [f"cassette: {exc}"]  # raised when the cassette closed
    return trace, None, []


_ABORTED = "Request was aborted"


def build_provider(scenario: Scenario) -> Any:
    """The strict ``ScriptedProvider`` playing the scenario's model script."""
    from .scripted import ScriptedProvider, ScriptedTurn, call, think

    turns = []
    for t in scenario.turns:
        parts: list[Any] = []
        if t.thinking is not None:
            parts.append(think(t.thinking))
        if t.text is not None:
            parts.append(t.text)
        parts.extend(call(c.name, c.args, id=c.id, raw=c.raw_args) for c in t.calls)
        turns.append(ScriptedTurn(
            parts=parts,
            stop=t.stop,
            error=t.error if t.error is not None else (_ABORTED if t.aborted else None),
            error_status=t.status,
            error_retryable=t.retryable,
            error_retry_after_s=t.retry_after,
            aborted=t.aborted,
            cut=t.cut,
            chunk_size=t.chunk_size,
        ))
    return ScriptedProvider(turns)


def build_schedule(scenario: Scenario) -> Any:
    """The ``SteeringSchedule`` of ``steering`` and ``follow_ups`` (``None`` if both are empty)."""
    if not scenario.steering and not scenario.follow_ups:
        return None
    from .steering import SteeringSchedule

    schedule = SteeringSchedule()
    for entry in scenario.steering:
        if entry.after_tool is not None:
            schedule.after_tool(entry.after_tool, entry.message)
        elif entry.after_call is not None:
            schedule.after_call(entry.after_call.round, entry.after_call.index, entry.message)
        elif entry.before_round is not None:
            schedule.before_round(entry.before_round, entry.message)
        else:
            schedule.follow_up(entry.message)
    for message in scenario.follow_ups:
        schedule.follow_up(message)
    return schedule


def build_tools(scenario: Scenario, provider: Any = None, model: str = "test-model") -> list[Any]:
    """The scenario's tools as dict-form tools.  ``provider``/``model`` serve ``agentic`` tools
    (their nested runs); without a provider an agentic tool fails when called."""
    built: dict[str, dict[str, Any]] = {}
    for defn in scenario.tools:
        built[defn.name] = _build_tool(defn, provider, model, built)
    return list(built.values())


def _build_tool(
    defn: ToolDef,
    provider: Any = None,
    model: str = "test-model",
    others: dict[str, dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """A dict-form tool whose ``execute`` plays the declared behaviour."""
    from openprogram.tools import ToolResult, to_json_text

    outcomes: list[Outcome] = list(defn.sequence) if defn.sequence else [defn]
    count = 0

    async def execute(arguments: dict[str, Any], on_update: Any = None) -> Any:
        nonlocal count
        outcome = outcomes[min(count, len(outcomes) - 1)]
        count += 1
        for update in outcome.updates:
            on_update(update)
        if outcome.sleep:
            await asyncio.sleep(outcome.sleep)
        if outcome.raises is not None:
            spec = outcome.raises
            if isinstance(spec, str):
                raise RuntimeError(spec)
            raise _exception_type(spec.type)(spec.message) if spec.message else _exception_type(
                spec.type
            )()
        if outcome.agentic is not None:
            value = await _run_nested(outcome.agentic, arguments, provider, model, others or {})
        else:
            value = arguments if outcome.echo else outcome.returns
        if outcome.is_error:
            text = value if isinstance(value, str) else "" if value is None else to_json_text(value)
            return ToolResult(content=text, is_error=True)
        return value

    execute.__name__ = f"scenario_tool_{defn.name}"
    return {
        "spec": {"name": defn.name, "description": defn.description, "parameters": defn.parameters},
        "execute": execute,
    }


async def _run_nested(
    agentic: AgenticDef,
    arguments: dict[str, Any],
    provider: Any,
    model: str,
    tools: dict[str, dict[str, Any]],
) -> Any:
    """The body of an ``agentic`` tool: a nested ``Runtime.aexec`` on the same provider."""
    if provider is None:
        raise RuntimeError("an agentic tool needs the scenario's provider")
    from openprogram.runtime import Runtime

    try:
        content = agentic.prompt.format(**arguments)
    except (KeyError, IndexError) as exc:
        raise ValueError(f"the agentic prompt needs the argument {exc}") from None
    runtime = Runtime(provider, model=model)
    return await runtime.aexec(
        content,
        tools=[tools[name] for name in agentic.tools],
        max_iterations=agentic.max_iterations,
    )


def _build_mutation(m: Mutation) -> Any:
    from . import faults

    if m.truncate_after is not None:
        return faults.TruncateAfter(m.truncate_after)
    if m.drop_terminal:
        return faults.DropTerminal()
    if m.corrupt_frame is not None:
        return faults.CorruptFrame(m.corrupt_frame)
    if m.garble_tool_arguments is not None:
        return faults.GarbleToolArguments(m.garble_tool_arguments)
    if m.http_error is not None:
        return faults.HttpError(m.http_error, headers=m.headers)
    if m.inject_error is not None:
        return faults.InjectError(m.inject_error)
    if m.stall is not None:
        return faults.Stall(m.stall, after_frame=m.after_frame or 0)
    if isinstance(m.rechunk, list):
        return faults.Rechunk(sizes=m.rechunk)
    return faults.Rechunk(seed=m.rechunk)


_ENDPOINTS = {
    "openai_chat": "/chat/completions",
    "openai_responses": "/responses",
    "anthropic": "/v1/messages",
}


def _cassette_adapter(api: str, path: Path, default_model: str) -> tuple[Any, str, int]:
    """The real adapter for ``api``, pointed at the host the cassette was recorded against (so
    replay matches), the model named in the first recorded request, and the number of
    interactions."""
    from .cassettes import load_interactions

    interactions = load_interactions(path)
    if not interactions:
        raise ValueError(f"cassette {path} has no interactions")
    request = interactions[0]["request"]
    uri = str(request["uri"])
    endpoint = _ENDPOINTS[api]
    base_url = uri.split("?", 1)[0]
    if not base_url.endswith(endpoint):
        raise ValueError(
            f"cassette {path} was recorded against {uri}, not the {api} endpoint ({endpoint})"
        )
    base_url = base_url[: -len(endpoint)]
    model = default_model
    body = request.get("body")
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    try:
        model = json.loads(body).get("model") or default_model
    except (TypeError, ValueError, AttributeError):
        pass
    count = len(interactions)
    if api == "openai_chat":
        from openprogram.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(api_key="sk-replay", base_url=base_url), model, count
    if api == "openai_responses":
        from openprogram.providers.openai_responses import OpenAIResponsesProvider

        return OpenAIResponsesProvider(api_key="sk-replay", base_url=base_url), model, count
    from openprogram.providers.anthropic import AnthropicProvider

    return AnthropicProvider(api_key="sk-ant-replay", base_url=base_url), model, count


# -- expectations -----------------------------------------------------------------------------


def event_tokens(trace: Any) -> list[str]:
    """The compact event order used by ``expect.events`` (SPEC §4's notation).

    ``agent_start``, ``turn_start``, ``turn_end``, ``agent_end(<termination>)``;
    ``ms(X)``/``me(X)`` for message start/end with X = ``U`` (prompt), ``S`` (steering),
    ``F`` (follow-up), ``A`` (assistant), ``R`` (tool result); ``upd`` for a run of message updates;
    ``tool_start(name)``, ``tool_update(name)``, ``tool_end(name)`` (``tool_end(name, error)`` for
    an error result, ``tool_end(name, skipped)`` for a skipped call).
    """
    letters: dict[int, str] = {id(m): "U" for m in getattr(trace, "prompts", None) or []}
    schedule = getattr(trace, "schedule", None)
    for d in getattr(schedule, "delivered", None) or []:
        letters[id(d.message)] = "F" if d.kind == "follow_up" else "S"
    tokens: list[str] = []
    first_turn = True
    for event in trace.events:
        kind = event.type
        if kind == "message_update":
            if not tokens or tokens[-1] != "upd":
                tokens.append("upd")
            continue
        if kind in ("message_start", "message_end"):
            message = event.message
            role = message.role
            if role == "assistant":
                letter = "A"
            elif role == "toolResult":
                letter = "R"
            else:
                letter = letters.get(id(message)) or ("U" if first_turn else "S")
            tokens.append(f"{'ms' if kind == 'message_start' else 'me'}({letter})")
            continue
        if kind in ("turn_start", "turn_end"):
            first_turn = first_turn and kind == "turn_start"
            tokens.append(kind)
        elif kind == "agent_start":
            tokens.append(kind)
        elif kind == "agent_end":
            tokens.append(f"agent_end({event.termination})")
        elif kind == "tool_execution_start":
            tokens.append(f"tool_start({event.tool_name})")
        elif kind == "tool_execution_update":
            tokens.append(f"tool_update({event.tool_name})")
        elif kind == "tool_execution_end":
            flag = ", skipped" if event.result.skipped else ", error" if event.is_error else ""
            tokens.append(f"tool_end({event.tool_name}{flag})")
    return tokens


def check_expectations(scenario: Scenario, trace: Any) -> list[str]:
    """Every failed expectation as one readable line (empty list: all met)."""
    exp = scenario.expect
    out: list[str] = []
    if exp.termination is not None and trace.termination != exp.termination:
        out.append(f"expect.termination: expected {exp.termination!r}, got {trace.termination!r}")
    if exp.model_calls is not None and trace.model_calls != exp.model_calls:
        out.append(f"expect.model_calls: expected {exp.model_calls}, got {trace.model_calls}")
    if exp.tool_results is not None:
        out.extend(_check_tool_results(exp.tool_results, list(trace.tool_results)))
    final = trace.final_text
    if exp.final_text is not None and final != exp.final_text:
        out.append(_text_mismatch("expect.final_text", exp.final_text, final))
    if exp.final_text_matches is not None and not re.search(exp.final_text_matches, final or ""):
        out.append(
            f"expect.final_text_matches: {exp.final_text_matches!r} does not match {final!r}"
        )
    if exp.error_text is not None:
        errors = [m.error_message for m in trace.assistant_messages if m.error_message]
        got = errors[-1] if errors else None
        if got is None or exp.error_text not in got:
            out.append(f"expect.error_text: expected an error containing {exp.error_text!r}, "
                       f"got {got!r}")
    if exp.undelivered is not None and len(trace.undelivered) != exp.undelivered:
        texts = [m.text for m in trace.undelivered]
        out.append(f"expect.undelivered: expected {exp.undelivered}, got {len(texts)} {texts!r}")
    if exp.delivered is not None:
        schedule = trace.schedule
        got_n = len(schedule.delivered) if schedule is not None else 0
        got_n -= len(trace.undelivered)
        if got_n != exp.delivered:
            out.append(f"expect.delivered: expected {exp.delivered}, got {got_n}")
    if exp.events is not None:
        tokens = event_tokens(trace)
        if tokens != exp.events:
            out.append("expect.events: the event order differs\n" + _diff(exp.events, tokens))
    if exp.request_roles is not None:
        requests = trace.requests
        if requests is None:
            out.append("expect.request_roles: this run does not record requests (cassette)")
        else:
            got_roles = [[m.role for m in r.messages] for r in requests]
            if got_roles != exp.request_roles:
                out.append(
                    f"expect.request_roles: expected {exp.request_roles}, got {got_roles}"
                )
    return out


def _check_tool_results(expected: list[ToolResultExpect], results: list[Any]) -> list[str]:
    out: list[str] = []
    if len(expected) != len(results):
        got = ", ".join(f"{r.tool_name}{' (error)' if r.is_error else ''}" for r in results)
        out.append(
            f"expect.tool_results: expected {len(expected)} result(s), got {len(results)}: "
            f"[{got}]"
        )
    for i, (want, got) in enumerate(zip(expected, results, strict=False)):
        where = f"expect.tool_results[{i}]"
        if want.name is not None and got.tool_name != want.name:
            out.append(f"{where}.name: expected {want.name!r}, got {got.tool_name!r}")
        if want.is_error is not None and got.is_error != want.is_error:
            out.append(f"{where}.is_error: expected {want.is_error}, got {got.is_error} "
                       f"(text {got.text!r})")
        if want.skipped is not None and got.skipped != want.skipped:
            out.append(f"{where}.skipped: expected {want.skipped}, got {got.skipped}")
        if want.text is not None and got.text != want.text:
            out.append(_text_mismatch(f"{where}.text", want.text, got.text))
        if want.text_matches is not None and not re.search(want.text_matches, got.text):
            out.append(f"{where}.text_matches: {want.text_matches!r} does not match {got.text!r}")
    return out


def _text_mismatch(where: str, expected: str, got: str) -> str:
    if "\n" not in expected and "\n" not in got:
        return f"{where}: expected {expected!r}, got {got!r}"
    return f"{where}: the text differs\n" + _diff(expected.splitlines(), got.splitlines())


def _diff(expected: list[str], got: list[str]) -> str:
    lines = difflib.unified_diff(expected, got, "expected", "got", lineterm="", n=2)
    return "\n".join("    " + line for line in lines)


def snapshot_path(scenario: Scenario) -> Path | None:
    """``<scenario dir>/__snapshots__/<file stem>.txt``."""
    if scenario.path is None:
        return None
    stem = scenario.path.name
    for suffix in (".yaml", ".yml"):
        stem = stem.removesuffix(suffix)
    return scenario.path.parent / "__snapshots__" / f"{stem}.txt"


def _check_snapshot(scenario: Scenario, trace: Any, update: bool) -> tuple[str | None, bool]:
    from .trace import render_snapshot

    target = snapshot_path(scenario)
    if target is None:
        return "expect.snapshot: a scenario built in code has no file to keep it beside", False
    text = render_snapshot(trace)
    if not text.endswith("\n"):
        text += "\n"
    if target.is_file():
        stored = target.read_text(encoding="utf-8")
        if stored == text:
            return None, False
        if not update:
            diff = difflib.unified_diff(
                stored.splitlines(), text.splitlines(), "stored", "this run", lineterm="", n=2
            )
            return (
                f"expect.snapshot: the trace differs from {target} "
                "(run with --update-snapshots to accept):\n" + "\n".join("    " + d for d in diff)
            ), False
    elif not update:
        return (
            f"expect.snapshot: no snapshot stored at {target}; run with --update-snapshots "
            "to write it"
        ), False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return None, True


_MODEL_NAMES = {
    "TurnDef": "a turn mapping",
    "RaiseSpec": "a mapping with 'message' and 'type'",
    "FunctionChoice": "a mapping {type: function, name: ...}",
    "CallPosition": "a mapping {round, index}",
}


__all__ = [
    "SCENARIO_PATTERNS",
    "SCHEMA_VERSION",
    "AgenticDef",
    "CallDef",
    "CallPosition",
    "CassetteRef",
    "Expectations",
    "FunctionChoice",
    "LoopOptions",
    "Mutation",
    "Outcome",
    "Problem",
    "RaiseSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "SteeringDef",
    "ToolDef",
    "ToolResultExpect",
    "TurnDef",
    "arun_scenario",
    "build_provider",
    "build_schedule",
    "build_tools",
    "check_expectations",
    "event_tokens",
    "is_scenario_file",
    "load_scenario",
    "parse_scenario",
    "run_scenario",
    "scenario_json_schema",
    "scenario_stem",
    "snapshot_path",
]
