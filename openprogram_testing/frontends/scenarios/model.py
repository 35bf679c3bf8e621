"""The scenario model: what a YAML scenario file may say, as pydantic models.

The model is the stable exchange format of the harness (the hypothesis strategies emit it too):
fields are only ever added, never renamed.  Checks that need nothing but the values live here
(one behaviour per tool, one ending per turn, regexes that compile, event tokens that parse);
checks that look at files or import code live in ``checks``.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    PrivateAttr,
    field_validator,
    model_validator,
)

from openprogram.events import ApprovalOutcome
from openprogram.providers.wire import WireAPI
from openprogram.runs import SteeringMode
from openprogram_testing.base import deprecated
from openprogram_testing.core.matchers import arguments_matcher
from openprogram_testing.core.spans import span_tree_entries
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.matching import JsonPath

from .events import parse_event_token
from .expect_models import Strict, TrajectoryExpect, UsageExpect
from .fault_defs import FaultDef

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
    return any(
        fnmatch(path.name, g) or fnmatch(full, g) or fnmatch(full, "*/" + g) for g in extra_globs
    )


def scenario_stem(path: Path) -> str:
    """The file name without ``scenario_`` / ``.scenario.yaml`` decoration."""
    name = path.name
    for suffix in (".scenario.yaml", ".scenario.yml", ".yaml", ".yml"):
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    return name.removeprefix("scenario_")


def compile_regex(pattern: str) -> Any:
    """Compile with the ``regex`` engine (the one the runner matches with, under a time limit).
    A pattern that does not compile is a ``ValueError`` naming it."""
    import regex

    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None
    except (RecursionError, OverflowError, MemoryError):
        raise ValueError(f"regular expression {pattern!r} is too large to compile") from None


def _regex(pattern: str) -> str:
    compile_regex(pattern)
    return pattern


Regex = Annotated[str, AfterValidator(_regex)]
"""A regular expression, compiled when the scenario is validated."""

ImportPath = Annotated[
    str,
    Field(pattern=r"^[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*$"),
]
"""``package.module:attribute`` (the attribute may be dotted: ``module:Class.method``)."""

EventToken = Annotated[str, AfterValidator(parse_event_token)]


# -- tools ------------------------------------------------------------------------------------


class RaiseSpec(Strict):
    """The tool raises ``type(message)``.  ``type`` is a built-in ``Exception`` subclass name."""

    message: str = ""
    type: str = "RuntimeError"

    @model_validator(mode="after")
    def _known_exception(self) -> RaiseSpec:
        exception_type(self.type)
        return self


def exception_type(name: str) -> type[Exception]:
    import builtins

    found = getattr(builtins, name, None)
    if not (isinstance(found, type) and issubclass(found, Exception)):
        raise ValueError(
            f"{name!r} is not a built-in Exception class (e.g. ValueError, RuntimeError, KeyError)"
        )
    return found


class AgenticDef(Strict):
    """The tool is an agentic function: its body runs a nested ``Runtime.aexec`` on the *same*
    provider (so the nested rounds consume the next turns of the same model script) and returns
    the nested run's final text.  ``prompt`` is a ``str.format`` template over the call's
    arguments; ``tools`` names scenario tools offered to the nested run (default: none)."""

    prompt: str
    tools: list[str] = Field(default_factory=list)
    max_iterations: int | None = None
    choices: list[str] | None = Field(default=None, min_length=1)
    """Labels of a forced decision after the nested work (``Runtime.exec(choices=...)``): the
    tool then returns the picked label, and the script plays the model's ``choose`` call(s)."""


class Outcome(Strict):
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
        given: list[str] = [n for n in ("returns", "raises") if n in self.model_fields_set]
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
    """A tool: its spec and its behaviour, or a real tool named by import path.

    A stub: ``name`` (+ ``description``, ``parameters``) and one behaviour; ``sequence`` gives one
    outcome per call instead (the last outcome repeats once the sequence is used up).  With no
    behaviour at all the tool returns ``null`` (an empty text result).

    An import: ``import: package.module:attribute`` names an ``@function`` /
    ``@agentic_function``, a tool object or dict, a list of them, or a factory (a callable with
    no required parameters) returning one of those.  It takes no other key.
    """

    name: str | None = Field(default=None, min_length=1)
    description: str = ""
    parameters: dict[str, Any] = Field(default_factory=lambda: {"type": "object", "properties": {}})
    sequence: list[Outcome] | None = None
    import_: ImportPath | None = Field(default=None, alias="import")
    requires_approval: bool | str = False
    """Every call waits for the scenario's ``approvals`` (a string: the reason the reviewer
    is shown)."""
    defer: bool = False
    """Deferred (gating layer 6): on the run's menu, but its schema stays out of the tool array
    until the model loads it with ``tool_search`` (the run goes through ``Runtime.exec``)."""
    search_hint: str | None = None
    """A phrase ``tool_search`` scores (+5 a term)."""

    @model_validator(mode="after")
    def _sequence_alone(self) -> ToolDef:
        if self.import_ is not None:
            others = sorted(n for n in self.model_fields_set if n != "import_")
            if others:
                raise ValueError(
                    f"an imported tool takes only 'import', got also {', '.join(others)}"
                )
            return self
        if self.name is None:
            raise ValueError("a tool needs 'name' (a stub) or 'import' (a real tool)")
        if self.sequence is not None:
            clash = [
                n
                for n in ("returns", "raises", "echo", "agentic", "sleep", "updates", "is_error")
                if n in self.model_fields_set
            ]
            if clash:
                raise ValueError(f"'sequence' replaces {', '.join(clash)}: give one or the other")
            if not self.sequence:
                raise ValueError("'sequence' needs at least one outcome")
        return self


# -- the model script -------------------------------------------------------------------------


class CallDef(Strict):
    """A tool call in a model turn.  ``args`` are JSON-encoded; ``raw_args`` is sent verbatim
    instead (e.g. invalid JSON).  A call to a tool the scenario does not declare is a load error
    unless ``unknown_tool: true`` says the test wants the "not found" path; "declared" means
    offered by the run that makes the call (a nested run of an agentic function offers its
    own menu)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] = Field(default_factory=dict)
    raw_args: str | None = None
    id: str | None = None
    unknown_tool: bool = False


class TurnUsage(Strict):
    """The token counts the model reports for one turn (what ``expect.usage`` sums)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_write_tokens: int = Field(default=0, ge=0)


class TurnDef(Strict):
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
    usage: TurnUsage | None = None

    @model_validator(mode="after")
    def _one_ending(self) -> TurnDef:
        endings = [
            n
            for n, on in (
                ("stop", self.stop is not None),
                ("error", self.error is not None),
                ("aborted", self.aborted),
                ("cut", self.cut),
            )
            if on
        ]
        if len(endings) > 1:
            raise ValueError(f"a turn ends one way only, got {', '.join(endings)}")
        if self.error is None and (
            self.status is not None or self.retryable is not None or self.retry_after is not None
        ):
            raise ValueError("status/retryable/retry_after need 'error: <message>'")
        return self


# -- cassettes --------------------------------------------------------------------------------


class CassetteRef(Strict):
    """Replay a recorded cassette through a real adapter instead of a model script.  ``path`` is
    relative to the scenario file and must stay inside the scenario's root (see
    ``checks.scenario_root``); ``api`` picks the adapter.  ``match_body`` (default on): each
    model call must send the recorded body, but for ``ignore_paths`` (JSON paths); turn it off
    for a recording another client made.  ``fallback`` (off unless given): turns, written as
    ``script`` writes them, that answer in order the model calls the cassette holds no answer
    for (after a fault, or any drift), each marked ``served from script`` on the run; turns
    never used fail the scenario (all of them always, else unless ``allow_unplayed``)."""

    path: str = Field(min_length=1)
    api: WireAPI
    faults: list[FaultDef] = Field(default_factory=list)
    match_body: bool = True
    ignore_paths: list[str] = Field(default_factory=list)
    allow_unplayed: bool = False
    fallback: list[str | TurnDef] = Field(default_factory=list)

    @property
    def fallback_turns(self) -> list[TurnDef]:
        """The fallback with plain strings expanded to text turns."""
        return [TurnDef(text=t) if isinstance(t, str) else t for t in self.fallback]

    @field_validator("ignore_paths")
    @classmethod
    def _json_paths(cls, paths: list[str]) -> list[str]:

        for path in paths:
            try:
                JsonPath.parse(path)
            except CassetteError as exc:
                raise ValueError(str(exc)) from None
        return paths


class SchemaDrivenDef(Strict):
    """The model is ``SchemaDrivenProvider``: it calls the offered tools with arguments made
    from their JSON Schemas (``tools``: a subset, in that order; ``per_round`` calls per
    response), then replies with a summary of the results.  ``seed`` makes it repeatable."""

    seed: int | str = 0
    tools: list[str] | None = None
    per_round: int = Field(default=1, ge=1)
    chunk_size: int | None = Field(default=None, ge=1)


# -- steering ---------------------------------------------------------------------------------


class CallPosition(Strict):
    round: int = Field(ge=0)
    index: int = Field(ge=0)


class WhenDef(Strict):
    """A steering condition: right after the ``nth`` (1-based) executed call of ``tool`` whose
    arguments fit ``args`` (the listed keys; values may be ``{$regex: ...}``,
    ``{$approx: ..., $abs: ...}`` or ``{$literal: ...}``, as in ``expect.trajectory``; any
    other ``$`` key is refused)."""

    tool: str = Field(min_length=1)
    args: dict[str, Any] | None = None
    nth: int = Field(default=1, ge=1)

    @field_validator("args")
    @classmethod
    def _matchers(cls, args: dict[str, Any] | None) -> dict[str, Any] | None:
        if args is not None:
            arguments_matcher(args)  # a bad pattern, tolerance or operator fails here, positioned
        return args


class SteeringDef(Strict):
    """One scheduled user message: exactly one of ``after_tool`` (global 0-based index of executed
    calls), ``after_call`` (call ``index`` of round ``round``), ``before_round`` (0 = with the
    prompt), ``when`` (a condition on the calls the run makes) or ``follow_up: true``.  ``run``
    targets a nested run by the path of tool names that led to it (``plan_trip/compare_options``),
    as ``SteeringSchedule``'s ``run=`` does; the default is the outermost run.  An entry no run
    reaches fails the scenario unless ``optional: true``."""

    message: str
    run: str | None = Field(default=None, min_length=1)
    after_tool: int | None = Field(default=None, ge=0)
    after_call: CallPosition | None = None
    before_round: int | None = Field(default=None, ge=0)
    when: WhenDef | None = None
    follow_up: bool = False
    optional: bool = False

    @model_validator(mode="after")
    def _one_position(self) -> SteeringDef:
        positions = ("after_tool", "after_call", "before_round", "when")
        given = [n for n in positions if getattr(self, n) is not None]
        if self.follow_up:
            given.append("follow_up")
        if len(given) != 1:
            raise ValueError(
                "a steering entry needs exactly one of after_tool, after_call, before_round, "
                "when, follow_up" + (f" (got {', '.join(given)})" if given else "")
            )
        return self


class ApprovalDef(Strict):
    """One scripted reviewer decision: exactly one of ``approve: true``, ``deny: <message>`` or
    ``modify: {arguments}``, for the requests that fit ``tool`` (+ ``args``, matched as in
    ``when``, and ``nth``) or ``when`` (the steering condition form); neither: any request.
    ``times``: how many requests it answers (``null``: every one).  An entry never asked fails
    the scenario unless ``optional: true``; a request no entry fits fails it too."""

    approve: Literal[True] | None = None
    deny: str | None = None
    modify: dict[str, Any] | None = None
    tool: str | None = Field(default=None, min_length=1)
    args: dict[str, Any] | None = None
    nth: int = Field(default=1, ge=1)
    when: WhenDef | None = None
    times: int | None = Field(default=1, ge=1)
    optional: bool = False

    @model_validator(mode="after")
    def _one_decision(self) -> ApprovalDef:
        given = [n for n in ("approve", "deny", "modify") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "an approvals entry needs exactly one of approve, deny, modify"
                + (f" (got {', '.join(given)})" if given else "")
            )
        if self.tool is None and (self.args is not None or "nth" in self.model_fields_set):
            raise ValueError("args and nth belong to a tool: give 'tool' too")
        if self.tool is not None and self.when is not None:
            raise ValueError("give 'tool' (with args, nth) or 'when', not both")
        if self.args is not None:
            arguments_matcher(self.args)
        return self


class ApprovalExpect(Strict):
    """One expected approval decision (``expect.approvals``): its ``outcome`` and, optionally,
    the ``tool``."""

    outcome: ApprovalOutcome
    tool: str | None = None


class UserLineDef(Strict):
    """One line of the simulated user: what it ``say``s when the model finishes, if the agent's
    reply fits ``expect`` (a regular expression searched in the reply's text; a reply that does
    not fit fails the scenario naming both).  ``optional: true``: the run may end before it."""

    say: str
    expect: Regex | None = None
    optional: bool = False

    @field_validator("say")
    @classmethod
    def _says_something(cls, say: str) -> str:
        if not say.strip():
            raise ValueError("a simulated user's line says something")
        return say


# -- options and expectations -----------------------------------------------------------------


class FunctionChoice(Strict):
    type: Literal["function"]
    name: str


class LoopOptions(Strict):
    max_iterations: int | None = None
    tool_choice: Literal["auto", "required", "none"] | FunctionChoice | None = None
    """Unset: ``"auto"``, which ``Runtime.exec`` sends too, so a scenario sends the request
    the application sends for the same agent (and replays cassettes recorded through it);
    ``null`` sends none (what a bare ``agent_loop`` run sends)."""
    parallel_tool_calls: bool | None = None
    steering_mode: SteeringMode = "skip"
    tool_timeout_s: float | None = Field(default=None, gt=0)
    model: str = "test-model"
    time_limit_s: float | None = Field(default=None, gt=0)
    """The run's wall-clock limit (default: the runner's, 60 s); past it the scenario fails."""


class ToolResultExpect(Strict):
    """One expected tool result (results are compared in order, and their number must match)."""

    name: str | None = None
    is_error: bool | None = None
    skipped: bool | None = None
    text: str | None = None
    text_matches: Regex | None = None


class Expectations(Strict):
    """What the run must produce.  Every field is optional; only given ones are checked.

    ``events`` is the compact event order (see ``event_tokens``); ``request_roles`` lists, per
    model call, the roles of the history it received; ``delivered`` counts steering/follow-up
    messages delivered; ``undelivered`` counts those reported undelivered."""

    termination: Literal["completed", "max_iterations", "error", "aborted"] | None = None
    model_calls: int | None = Field(default=None, ge=0)
    tool_results: list[ToolResultExpect] | None = None
    final_text: str | None = None
    final_text_matches: Regex | None = None
    error_text: str | None = None
    undelivered: int | None = Field(default=None, ge=0)
    delivered: int | None = Field(default=None, ge=0)
    events: list[EventToken] | None = None
    request_roles: list[list[Literal["user", "assistant", "toolResult"]]] | None = None
    snapshot: bool = False
    trajectory: TrajectoryExpect | None = None
    """The tool calls the model made (see ``expect_models.TrajectoryExpect``)."""
    usage: UsageExpect | None = None
    """Token, model-call and cost budgets (see ``expect_models.UsageExpect``)."""
    approvals: list[ApprovalExpect] | None = None
    """The run's approval decisions, in call order (``assert_approvals``)."""
    spans: list[str | dict[str, list[Any]]] | None = None
    """The OpenTelemetry span tree of the scenario's runs, by span name, in start order: a
    span without children is its name, one with children ``{name: [children...]}`` (the
    ``otel_spans`` tree; needs the otlp extra).  Outermost expectations only."""
    runs: dict[str, Expectations] | None = None
    """Expectations of nested runs, by the tool path that led to each (``plan_trip`` or
    ``plan_trip/compare_options``; the first run at that path, as ``tree[path]``), made of the
    same keys; ``runs`` and ``snapshot`` belong to the outermost run only."""

    @field_validator("spans")
    @classmethod
    def _span_tree(cls, value: Any) -> Any:
        if value is not None:
            span_tree_entries(value, "spans")
        return value


# -- the scenario -----------------------------------------------------------------------------


class Scenario(Strict):
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
    schema_driven: SchemaDrivenDef | None = None
    steering: list[SteeringDef] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
    simulated_user: list[str | UserLineDef] = Field(default_factory=list)
    """A scripted user answering the agent each time the model finishes, one line per answer
    (a plain string answers whatever the agent said); after the ``follow_ups``."""
    approvals: list[ApprovalDef] = Field(default_factory=list)
    """The scripted reviewer of the run's approval requests (see ``ApprovalDef``)."""
    options: LoopOptions = Field(default_factory=LoopOptions)
    expect: Expectations = Field(default_factory=Expectations)
    check_invariants: bool = True
    usefixtures: list[Annotated[str, Field(pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")]] = Field(
        default_factory=list
    )
    """pytest fixtures set up around the run (besides the autouse ones in scope), as
    ``@pytest.mark.usefixtures`` does for a test function; ignored outside pytest."""
    runtime: ImportPath | None = None
    """A factory ``f(provider)`` returning a configured ``Runtime``: agentic functions run
    their nested runs on it, and its system prompt, tool timeout and steering mode are the
    defaults of this run."""

    _path: Path | None = PrivateAttr(default=None)
    _root: Path | None = PrivateAttr(default=None)
    _imported: dict[int, list[Any]] = PrivateAttr(default_factory=dict)

    @field_validator("simulated_user")
    @classmethod
    def _lines_say_something(cls, lines: list[str | UserLineDef]) -> list[str | UserLineDef]:
        empty = [k for k, line in enumerate(lines) if isinstance(line, str) and not line.strip()]
        if empty:
            raise ValueError(f"line {empty[0]} is empty: a simulated user's line says something")
        return lines

    @model_validator(mode="after")
    def _shape(self) -> Scenario:
        if (self.prompt is None) == (self.prompts is None):
            raise ValueError("give exactly one of 'prompt' or 'prompts'")
        if self.prompts is not None and not self.prompts:
            raise ValueError("'prompts' needs at least one prompt")
        models = [self.script, self.cassette, self.schema_driven]
        if sum(m is not None for m in models) != 1:
            raise ValueError(
                "give exactly one of 'script' (a model script), 'cassette' or 'schema_driven'"
            )
        counts = Counter(t.name for t in self.tools if t.name is not None)
        dupes = sorted(n for n, k in counts.items() if k > 1)
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
    def root(self) -> Path | None:
        """The directory cassette paths must stay inside (set by the loader)."""
        return self._root

    @property
    def imported_tools(self) -> dict[int, list[Any]]:
        """The real tools behind ``import:`` entries, by index in ``tools`` (set by the
        loader's checks; empty for a scenario built in code and not checked)."""
        return self._imported

    @property
    def display_name(self) -> str:
        """``name``, else the file name without ``scenario_`` / ``.scenario.yaml`` decoration."""
        if self.name:
            return self.name
        if self._path is None:
            return "scenario"
        return scenario_stem(self._path)

    @property
    def cassette_path(self) -> Path | None:
        """The cassette file, relative to the scenario file (not yet checked against the
        root: ``checks`` does that)."""
        if self.cassette is None:
            return None
        path = Path(self.cassette.path)
        if not path.is_absolute() and self._path is not None:
            path = self._path.parent / path
        return path

    def stub_tool_names(self) -> list[str]:
        """Names of the stub tools (imported tools are named by their objects)."""
        return [t.name for t in self.tools if t.name is not None]


MODEL_NAMES = {
    "TurnDef": "a turn mapping",
    "RaiseSpec": "a mapping with 'message' and 'type'",
    "FunctionChoice": "a mapping {type: function, name: ...}",
    "CallPosition": "a mapping {round, index}",
    "TrajectoryCall": "a mapping {name, args}",
    "UserLineDef": "a mapping {say, expect}",
}
"""Model names pydantic uses as union-branch tags, and how a message names them."""


def __getattr__(name: str) -> Any:
    if name != "Mutation":  # 0.1's name of FaultDef, kept until 0.3
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

    deprecated.warn("scenarios.Mutation", "scenarios.FaultDef", deprecated.caller_stacklevel())
    return FaultDef
