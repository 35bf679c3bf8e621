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

import difflib
import re
import types
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, model_validator

SCHEMA_VERSION = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


# -- tools ------------------------------------------------------------------------------------


class RaiseSpec(_Strict):
    """The tool raises ``type(message)``.  ``type`` is a built-in ``Exception`` subclass name."""

    message: str = ""
    type: str = "RuntimeError"


class Outcome(_Strict):
    """What one tool call does: exactly one of ``returns``, ``raises``, ``echo``; ``sleep`` first
    (seconds; combine with ``tool_timeout_s`` to test timeouts), ``updates`` are emitted through
    ``on_update`` before the result, ``is_error`` marks a returned value as an error result."""

    returns: Any = None
    raises: str | RaiseSpec | None = None
    echo: bool = False
    sleep: float | None = Field(default=None, ge=0)
    updates: list[Any] = Field(default_factory=list)
    is_error: bool = False

    @model_validator(mode="after")
    def _one_behaviour(self) -> Outcome:
        given = [n for n in ("returns", "raises") if n in self.model_fields_set]
        if self.echo:
            given.append("echo")
        if len(given) > 1:
            raise ValueError(f"give only one of returns/raises/echo, got {', '.join(given)}")
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
                n for n in ("returns", "raises", "echo", "sleep", "updates", "is_error")
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
    """A frame-addressed fault applied to the recorded SSE bodies at playback (exactly one key)."""

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
        root = yaml.compose(text, Loader=yaml.SafeLoader)
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
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:  # e.g. an unknown tag, found only while constructing
        raise ScenarioError([_yaml_problem(file, exc)]) from None
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


def _yaml_problem(file: str, exc: Any) -> Problem:
    mark = exc.problem_mark or exc.context_mark
    line, col = (mark.line + 1, mark.column + 1) if mark is not None else (1, 1)
    problem = exc.problem or "invalid YAML"
    context = f" ({exc.context})" if exc.context else ""
    hint = ""
    if "mapping values are not allowed" in problem or "expected <block end>" in problem:
        hint = " — check the indentation of this line and the one before"
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


_MODEL_NAMES = {
    "TurnDef": "a turn mapping",
    "RaiseSpec": "a mapping with 'message' and 'type'",
    "FunctionChoice": "a mapping {type: function, name: ...}",
    "CallPosition": "a mapping {round, index}",
}


__all__ = [
    "SCHEMA_VERSION",
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
    "SteeringDef",
    "ToolDef",
    "ToolResultExpect",
    "TurnDef",
    "load_scenario",
    "parse_scenario",
    "scenario_stem",
]
