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

import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

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
    "RaiseSpec",
    "Scenario",
    "SteeringDef",
    "ToolDef",
    "ToolResultExpect",
    "TurnDef",
]
