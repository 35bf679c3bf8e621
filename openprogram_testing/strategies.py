"""Hypothesis strategies for agent-loop scenarios, a reference model of the loop, and the export of
a (shrunk) failing example to a YAML scenario file (SPEC §9.6, §10).

A generated example is plain data (``GeneratedScenario``): the tools (each with a scripted
behaviour), the model script, the steering/follow-up schedule and the loop options.  It builds
the real objects (``ScriptedProvider``, tool dicts, ``SteeringSchedule``) and runs through the
real loop; ``expected_outcome()`` predicts, from the spec alone, what the run must produce
(termination, model calls, every tool result, the final text, delivered/undelivered messages),
and ``scenario_to_yaml()`` writes the example in the YAML scenario format with those predictions
as its expectations, so a failure found by hypothesis becomes a committed regression test.

Design choices that keep it fast and well-shrinking:

- tiny domains (3 tool names, one-digit ints, a handful of texts), short lists, and every choice
  ordered simplest first, so a failure shrinks to "one text turn" when it can;
- strategy objects built once and coarse draws (one draw picks a whole call), because hypothesis's
  per-draw cost dominates an example;
- no sleeps, no threads: tool behaviours are instant (return, echo, raise);
- scripts are *exact*: after drawing, the script is trimmed to the turns the run will consume
  and padded with plain text turns, so the strict scripted provider never has leftovers.

    import asyncio
    from hypothesis import given
    from openprogram_testing.strategies import check_run, report_failure, scenarios

    RUNNER = asyncio.Runner()

    @given(generated=scenarios())
    def test_loop(generated):
        with report_failure(generated):           # the shrunk failure is written as YAML
            trace = generated.run_sync(runner=RUNNER)
            check_run(generated, trace)           # §10 invariants, exact rules, prediction
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from hypothesis import settings
from hypothesis import strategies as st

from openprogram.loop import MAX_INNER_ITERATIONS
from openprogram.tools import SKIPPED_TEXT

from .scripted import ScriptedCall, ScriptedProvider, ScriptedThinking, ScriptedTurn

# -- the small universe examples are drawn from ---------------------------------------------

TOOL_NAMES = ("t0", "t1", "t2")
UNKNOWN_TOOL = "missing_tool"
X_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}
"""Every generated tool takes one integer ``x``: enough to produce valid calls, schema violations
(wrong type, missing, extra property) and echo results that depend on the input."""

SCHEMA_VIOLATIONS: tuple[dict[str, Any], ...] = ({}, {"x": "a"}, {"x": 1, "y": 2}, {"x": 1.5})
RAW_ARGUMENTS = ("{", "not json", "[1]", '{"x": 1')
TEXTS = ("ok", "done", "Hello!", "two words", "ü ✓ 日本", "")
RETURN_VALUES: tuple[Any, ...] = ("ok", 7, "", None, "multi\nline", {"v": 1}, [1, 2])
RAISE_MESSAGES = ("boom", "bad input", "division by zero")
ERROR_MESSAGES = ("overloaded", "internal error", "rate limited")

NOT_FOUND = "Tool {name} not found"
RAN_OUT = "unexpected model call"
CUT_TEXT = "stream ended without a final event"
VALIDATION_PREFIX = 'Validation failed for tool "{name}":'

ToolBehaviour = Literal["returns", "echo", "raises", "sequence"]
CallKind = Literal["valid", "schema", "raw", "unknown"]
Ending = Literal["stop", "length", "error", "aborted", "cut"]


# -- the plain-data example -------------------------------------------------------------------


@dataclass(frozen=True)
class GenTool:
    """A tool with a scripted behaviour: return ``value``, echo its arguments, raise
    ``RuntimeError(value)``, or — ``sequence`` — play the ``(behaviour, value)`` pairs in
    ``value`` one per executed call, the last one repeating (a tool that fails, then works)."""

    name: str
    behaviour: ToolBehaviour = "returns"
    value: Any = "ok"

    @property
    def outcomes(self) -> tuple[tuple[str, Any], ...]:
        """The ``(behaviour, value)`` played by successive executed calls (the last repeats)."""
        if self.behaviour == "sequence":
            return tuple(self.value)
        return ((self.behaviour, self.value),)

    def build(self) -> dict[str, Any]:
        """The tool in dict form (SPEC §6 form 2), instant; a fresh call counter per build."""
        outcomes = self.outcomes
        count = [0]

        # Async, like the tools the YAML scenario runner builds: an exported example then takes
        # the same path through the loop when it is replayed from its file.
        async def execute(args: dict[str, Any]) -> Any:
            behaviour, value = outcomes[min(count[0], len(outcomes) - 1)]
            count[0] += 1
            if behaviour == "raises":
                raise RuntimeError(value)
            if behaviour == "echo":
                return args
            return value

        return {
            "spec": {
                "name": self.name,
                "description": f"test tool {self.name}",
                "parameters": X_SCHEMA,
            },
            "execute": execute,
        }


@dataclass(frozen=True)
class GenCall:
    """A scripted tool call: ``kind`` says which path of SPEC §5 it exercises."""

    name: str
    kind: CallKind = "valid"
    args: Any = None  # a dict; kept as ``Any`` so frozen dataclasses stay hashable-agnostic
    raw: str | None = None

    def scripted(self) -> ScriptedCall:
        return ScriptedCall(name=self.name, arguments=dict(self.args or {}), raw=self.raw)


@dataclass(frozen=True)
class GenTurn:
    """One model response, streamed as thinking → text → calls, then ``ending``."""

    text: str | None = None
    thinking: str | None = None
    calls: tuple[GenCall, ...] = ()
    ending: Ending = "stop"
    error: str | None = None
    status: int | None = None
    retryable: bool | None = None
    chunk_size: int | None = None

    @property
    def kinds(self) -> set[str]:
        """Labels of what this turn exercises (used by the strategy sanity tests)."""
        out: set[str] = set()
        if self.text is not None:
            out.add("text")
        if self.thinking is not None:
            out.add("thinking")
        if len(self.calls) == 1:
            out.add("single_call")
        if len(self.calls) > 1:
            out.add("parallel_calls")
        out.update(f"call_{c.kind}" for c in self.calls)
        if self.ending != "stop":
            out.add(f"ending_{self.ending}")
        if self.chunk_size is not None:
            out.add("chunked")
        return out

    def scripted(self, chunk_size: int | None = None) -> ScriptedTurn:
        """The ``ScriptedTurn``; ``chunk_size`` overrides the turn's own chunking."""
        parts: list[Any] = []
        if self.thinking is not None:
            parts.append(ScriptedThinking(text=self.thinking))
        if self.text is not None:
            parts.append(self.text)
        parts.extend(c.scripted() for c in self.calls)
        return ScriptedTurn(
            parts=parts,
            stop="length" if self.ending == "length" else None,
            error=self.error if self.ending in ("error", "aborted") else None,
            error_status=self.status if self.ending == "error" else None,
            error_retryable=self.retryable if self.ending == "error" else None,
            aborted=self.ending == "aborted",
            cut=self.ending == "cut",
            chunk_size=chunk_size if chunk_size is not None else self.chunk_size,
        )


@dataclass(frozen=True)
class GenSteering:
    """One scheduled user message: exactly one of ``after_tool``, ``after_call`` ((round, index)),
    ``before_round`` or ``follow_up``."""

    message: str
    after_tool: int | None = None
    after_call: tuple[int, int] | None = None
    before_round: int | None = None
    follow_up: bool = False

    @property
    def kind(self) -> str:
        if self.follow_up:
            return "follow_up"
        if self.after_tool is not None:
            return "after_tool"
        if self.after_call is not None:
            return "after_call"
        return "before_round"


@dataclass(frozen=True)
class ExpectedResult:
    name: str
    is_error: bool
    skipped: bool
    text: str | None = None  # exact text, when the spec fixes it
    text_matches: str | None = None  # a regex, when only the shape is fixed (validation)


@dataclass(frozen=True)
class Expected:
    """What the spec says the run must produce (the reference model's prediction)."""

    termination: str
    model_calls: int
    tool_results: tuple[ExpectedResult, ...]
    final_text: str | None  # text of the last assistant message (None: no assistant message)
    error_text: str | None
    delivered: tuple[str, ...]  # steering/follow-up messages in delivery order
    undelivered: tuple[str, ...]
    cap: int


@dataclass(frozen=True)
class GeneratedScenario:
    """A generated loop run.  ``run()``/``run_sync()`` execute it through the real loop."""

    tools: tuple[GenTool, ...] = ()
    script: tuple[GenTurn, ...] = ()
    steering: tuple[GenSteering, ...] = ()
    prompt: str = "go"
    max_iterations: int | None = None
    steering_mode: Literal["skip", "after_batch"] = "skip"

    # -- building the real objects ----------------------------------------------------------
    def build_provider(self, chunk_size: int | None = None) -> ScriptedProvider:
        """A fresh strict ``ScriptedProvider`` (``chunk_size`` re-chunks every turn)."""
        return ScriptedProvider([t.scripted(chunk_size) for t in self.script])

    def build_tools(self) -> list[dict[str, Any]]:
        """Fresh dict-form tools (SPEC §6 form 2)."""
        return [t.build() for t in self.tools]

    def build_schedule(self) -> Any:
        """A fresh harness ``SteeringSchedule`` (``None`` when nothing is scheduled)."""
        if not self.steering:
            return None
        from .steering import SteeringSchedule

        schedule = SteeringSchedule()
        for item in self.steering:
            if item.follow_up:
                schedule.follow_up(item.message)
            elif item.after_tool is not None:
                schedule.after_tool(item.after_tool, item.message)
            elif item.after_call is not None:
                schedule.after_call(item.after_call[0], item.after_call[1], item.message)
            else:
                assert item.before_round is not None
                schedule.before_round(item.before_round, item.message)
        return schedule

    # -- running ----------------------------------------------------------------------------
    async def run(self, chunk_size: int | None = None) -> Any:
        """Run through the real loop; returns the harness ``LoopTrace``."""
        from .trace import run_loop

        return await run_loop(
            self.build_provider(chunk_size),
            [self.prompt],
            tools=self.build_tools(),
            schedule=self.build_schedule(),
            max_iterations=self.max_iterations,
            steering_mode=self.steering_mode,
        )

    def run_sync(self, chunk_size: int | None = None, *, runner: Any = None) -> Any:
        """``run()`` to completion; pass an ``asyncio.Runner`` to reuse one event loop."""
        if runner is not None:
            # The runner's loop directly: ``Runner.run`` re-installs a SIGINT handler per call,
            # a measurable share of a fast example.
            return runner.get_loop().run_until_complete(self.run(chunk_size))
        import asyncio

        return asyncio.run(self.run(chunk_size))

    # -- the oracle -------------------------------------------------------------------------
    def expected_outcome(self) -> Expected:
        return _predict(self)

    @property
    def kinds(self) -> set[str]:
        """Labels of what this example exercises (turn kinds, steering kinds, tool behaviours,
        the predicted termination, skipped/delivered/undelivered): coverage checks use them."""
        out: set[str] = set()
        for t in self.script:
            out |= t.kinds
        out.update(f"steer_{s.kind}" for s in self.steering)
        if self.max_iterations is not None:
            out.add("max_iterations")
        out.add(f"mode_{self.steering_mode}")
        behaviours = {t.name: t.behaviour for t in self.tools}
        out.update(f"tool_{b}" for b in behaviours.values())
        raising = {t.name for t in self.tools if any(b == "raises" for b, _ in t.outcomes)}
        if any(
            c.name in raising and c.kind == "valid"
            for t in self.script
            for c in t.calls
        ):
            out.add("raising_tool_called")
        expected = self.expected_outcome()
        out.add(f"termination_{expected.termination}")
        if any(r.skipped for r in expected.tool_results):
            out.add("skipped")
        if expected.delivered:
            out.add("delivered")
        if expected.undelivered:
            out.add("undelivered")
        return out


# -- the reference model ----------------------------------------------------------------------


def effective_cap(max_iterations: int | None) -> int:
    """SPEC §4: ``None`` → 50, else ``max(1, min(50, n))`` (restated, not imported: an oracle)."""
    if max_iterations is None:
        return MAX_INNER_ITERATIONS
    return max(1, min(MAX_INNER_ITERATIONS, max_iterations))


def _tool_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _predict_result(
    call: GenCall, tools: dict[str, GenTool], executed: dict[str, int]
) -> ExpectedResult:
    """The result of one call that is not skipped; ``executed`` counts each tool's ``execute``
    invocations so far (a ``sequence`` tool plays its outcomes in that order)."""
    tool = tools.get(call.name)
    if tool is None:
        return ExpectedResult(call.name, True, False, text=NOT_FOUND.format(name=call.name))
    if call.kind in ("schema", "raw"):
        return ExpectedResult(
            call.name,
            True,
            False,
            text_matches="^" + re.escape(VALIDATION_PREFIX.format(name=call.name)),
        )
    outcomes = tool.outcomes
    n = executed.get(call.name, 0)
    executed[call.name] = n + 1
    behaviour, value = outcomes[min(n, len(outcomes) - 1)]
    if behaviour == "raises":
        return ExpectedResult(call.name, True, False, text=str(value) or "RuntimeError")
    if behaviour == "echo":
        return ExpectedResult(call.name, False, False, text=_tool_text(dict(call.args or {})))
    return ExpectedResult(call.name, False, False, text=_tool_text(value))


class _ScheduleModel:
    """The steering schedule's delivery rules (SPEC §9.4), restated for the oracle:

    - ``after_tool k`` is handed over at the poll right after the k-th executed call (0-based,
      global; skipped calls are not executed) and ``after_call (r, i)`` right after call ``i`` of
      round ``r`` executed — never, if that call does not execute;
    - ``before_round r`` is handed over at the poll that precedes round ``r``: the poll after the
      prompts (r = 0) or after round r-1 — or, when steering already ends round r-1's batch (so
      the loop will not poll at its end), together with that steering, if round r is allowed;
    - follow-ups: one entry per ``get_follow_up_messages`` poll, in order.

    Messages due at the same poll come in the order they were scheduled, before-round ones last.
    """

    def __init__(self, items: Sequence[GenSteering], *, cap: int, skip_mode: bool) -> None:
        self.steering = [s for s in items if not s.follow_up]
        self.follow = [s.message for s in items if s.follow_up]
        self.handed: set[int] = set()
        self.executed = 0
        self.cap = cap
        self.skip_mode = skip_mode
        self.round_steering = False

    def _take(self, predicate: Any) -> list[str]:
        out = []
        for i, s in enumerate(self.steering):
            if i not in self.handed and predicate(s):
                self.handed.add(i)
                out.append(s.message)
        return out

    def before(self, round_index: int) -> list[str]:
        """The poll before ``round_index`` (after the prompts, or after the previous round)."""
        return self._take(lambda s: s.before_round == round_index)

    def after_call(self, round_index: int, index: int, last: bool) -> list[str]:
        """The poll after call ``index`` of round ``round_index`` executed."""
        k = self.executed
        self.executed += 1
        out = self._take(
            lambda s: s.after_tool == k or s.after_call == (round_index, index)
        )
        batch_ends = bool(out) if self.skip_mode else last
        if batch_ends and (out or self.round_steering) and round_index + 1 < self.cap:
            out += self._take(lambda s: s.before_round == round_index + 1)
        if out:
            self.round_steering = True
        return out

    def new_round(self) -> None:
        self.round_steering = False

    def poll_follow_up(self) -> list[str]:
        return [self.follow.pop(0)] if self.follow else []


def _predict(g: GeneratedScenario) -> Expected:
    """Walk the loop algorithm of SPEC §4/§5 over the example's plain data."""
    tools = {t.name: t for t in g.tools}
    cap = effective_cap(g.max_iterations)
    skip_mode = g.steering_mode == "skip"
    schedule = _ScheduleModel(g.steering, cap=cap, skip_mode=skip_mode)
    results: list[ExpectedResult] = []
    executed: dict[str, int] = {}
    delivered: list[str] = []
    undelivered: list[str] = []
    model_calls = 0
    final_text: str | None = None
    error_text: str | None = None
    termination = "completed"

    pending = schedule.before(0)
    iterations = 0
    has_more = True
    while True:  # outer loop: one pass per follow-up batch
        while has_more or pending:
            iterations += 1
            if iterations > cap:
                termination = "max_iterations"
                undelivered.extend(pending)
                break
            round_index = iterations - 1
            schedule.new_round()
            delivered.extend(pending)
            pending = []
            model_calls += 1
            if model_calls > len(g.script):
                final_text, error_text, termination = "", RAN_OUT, "error"
                break
            turn = g.script[model_calls - 1]
            final_text = "" if turn.text is None else turn.text
            if turn.ending in ("error", "aborted", "cut"):
                error_text = CUT_TEXT if turn.ending == "cut" else turn.error
                termination = "aborted" if turn.ending == "aborted" else "error"
                break
            has_more = bool(turn.calls)
            batch: list[str] = []
            for index, c in enumerate(turn.calls):
                if batch and skip_mode:
                    results.append(ExpectedResult(c.name, True, True, text=SKIPPED_TEXT))
                    continue
                results.append(_predict_result(c, tools, executed))
                batch.extend(schedule.after_call(round_index, index, index == len(turn.calls) - 1))
            if batch:
                pending = batch  # handed over in the final round: reported undelivered
            elif iterations < cap:
                pending = schedule.before(round_index + 1)
        else:
            # The model finished; follow-ups start another round if one is still allowed.
            if iterations < cap:
                follow = schedule.poll_follow_up()
                if follow:
                    pending = follow
                    continue
            termination = "completed"
        break
    return Expected(
        termination=termination,
        model_calls=model_calls,
        tool_results=tuple(results),
        final_text=final_text,
        error_text=error_text,
        delivered=tuple(delivered),
        undelivered=tuple(undelivered),
        cap=cap,
    )


# -- strategies -------------------------------------------------------------------------------

class _Choice:
    """``st.sampled_from`` for use inside composites, minus its filtering machinery: one integer
    draw indexes the options (it shrinks towards the first option, like ``sampled_from``)."""

    __slots__ = ("index", "options")

    def __init__(self, options: Sequence[Any]) -> None:
        self.options = tuple(options)
        self.index = st.integers(0, len(self.options) - 1)

    def __call__(self, draw: st.DrawFn) -> Any:
        return self.options[draw(self.index)]


# Strategy objects are built once (module constants, and ``lru_cache`` for the parametrised
# ones): hypothesis validates every new strategy object, which would otherwise dominate the cost
# of an example.
_SMALL_INT = st.integers(min_value=0, max_value=9)
# Valid calls half the time: most runs should really execute tools.
_CALL_KINDS = _Choice(("valid", "schema", "valid", "raw", "valid", "unknown"))
# Combined draws (one choice each, simplest first): the turn's shape with its text (a text-only
# turn a quarter of the time, calls without text half of the time), and its thinking with its
# chunk size.
_SHAPE_TEXT = _Choice(
    [("text", t) for t in TEXTS]
    + [("calls", None)] * (2 * len(TEXTS))
    + [("mixed", t) for t in TEXTS]
)
_THINKING_CHUNK = _Choice(
    [(think, chunk) for chunk in (None, 1, 2, 3, 5, 7) for think in (None, "hmm", "let me think")]
)
_RETURN_VALUES = _Choice(RETURN_VALUES)
_RAISE_MESSAGES = _Choice(RAISE_MESSAGES)
_STEER_KINDS = _Choice(("after_tool", "before_round", "follow_up", "before_round", "after_call"))
_TOOL_INDEX = _Choice((0, 1, 2, 3))
_ROUND = _Choice((0, 1, 2, 1, 3))
_CALL_ROUND = _Choice((0, 1))
_CALL_INDEX = _Choice((0, 1, 2))
_MODES = _Choice(("skip", "after_batch"))
_MAX_ITERATIONS = _Choice((None, 1, 2, 3, 4, 5, 0, -1, 51, 100))
ALL_ENDINGS: tuple[Ending, ...] = ("stop", "length", "error", "aborted", "cut")


def tool_calls(tool_names: Sequence[str] = TOOL_NAMES) -> st.SearchStrategy[GenCall]:
    """One tool call: valid, a schema violation, raw non-JSON arguments, or an unknown tool.
    With no tools declared every call is to an unknown tool."""
    return _tool_calls(tuple(tool_names))


@lru_cache(maxsize=64)
def _tool_calls(names: tuple[str, ...]) -> st.SearchStrategy[GenCall]:
    # Two draws per call: its kind (valid first, so calls shrink towards a valid t0 call), then
    # one of the calls of that kind this small universe allows.
    unknown = _Choice([GenCall(UNKNOWN_TOOL, "unknown", {"x": x}) for x in range(3)])
    if not names:
        return st.composite(lambda draw: unknown(draw))()
    by_kind = {
        # Grouped by tool, x ascending: the shrinker moves x down monotonically.
        "valid": _Choice([GenCall(n, "valid", {"x": x}) for n in names for x in range(10)]),
        "schema": _Choice(
            [GenCall(n, "schema", dict(v)) for v in SCHEMA_VIOLATIONS for n in names]
        ),
        "raw": _Choice([GenCall(n, "raw", None, r) for r in RAW_ARGUMENTS for n in names]),
        "unknown": unknown,
    }

    @st.composite
    def draw_call(draw: st.DrawFn) -> GenCall:
        return by_kind[_CALL_KINDS(draw)](draw)

    return draw_call()


def model_turns(
    tool_names: Sequence[str] = TOOL_NAMES, *, endings: Sequence[Ending] = ALL_ENDINGS
) -> st.SearchStrategy[GenTurn]:
    """One model turn: optional thinking and text, 1-3 tool calls (several = a parallel pick),
    then an ending - a normal stop, a length stop, a provider error (status, retryable), an
    aborted stop, or a stream cut before its terminal event - with an optional chunk size for
    text and argument JSON.  Simple first: a plain text turn is the shrink target."""
    return _model_turns(tuple(tool_names), tuple(endings))


_ERROR_DETAILS = _Choice(
    [
        (message, status, retryable)
        for status in (None, 429, 500, 529)
        for retryable in (None, True, False)
        for message in ERROR_MESSAGES
    ]
)
# How often each ending is drawn: mostly normal stops, so scripts usually go on.
_ENDING_WEIGHTS: dict[Ending, int] = {"stop": 6, "length": 1, "error": 1, "aborted": 1, "cut": 1}


@lru_cache(maxsize=64)
def _model_turns(names: tuple[str, ...], endings: tuple[Ending, ...]) -> st.SearchStrategy[GenTurn]:
    calls_strategy = st.lists(_tool_calls(names), min_size=1, max_size=3).map(tuple)
    weighted = [e for e in ALL_ENDINGS if e in endings for _ in range(_ENDING_WEIGHTS[e])]
    endings_choice = _Choice(weighted)

    @st.composite
    def draw_turn(draw: st.DrawFn) -> GenTurn:
        shape, text = _SHAPE_TEXT(draw)
        calls: tuple[GenCall, ...] = draw(calls_strategy) if shape != "text" else ()
        ending = endings_choice(draw)
        error = status = retryable = None
        if ending == "error":
            error, status, retryable = _ERROR_DETAILS(draw)
        elif ending == "aborted":
            error = "Request was aborted"
        thinking, chunk_size = _THINKING_CHUNK(draw)
        return GenTurn(
            text=text,
            thinking=thinking,
            calls=calls,
            ending=ending,
            error=error,
            status=status,
            retryable=retryable,
            chunk_size=chunk_size,
        )

    return draw_turn()


def provider_scripts(
    tool_names: Sequence[str] = TOOL_NAMES, *, min_size: int = 1, max_size: int = 5
) -> st.SearchStrategy[tuple[GenTurn, ...]]:
    """A model script: a short list of ``model_turns``.  Failing turns (error, abort, cut) are
    drawn a third of the time, so scripts usually get past their first turn."""
    return _provider_scripts(tuple(tool_names), min_size, max_size)


@lru_cache(maxsize=64)
def _provider_scripts(
    names: tuple[str, ...], min_size: int, max_size: int
) -> st.SearchStrategy[tuple[GenTurn, ...]]:
    return st.lists(_model_turns(names, ALL_ENDINGS), min_size=min_size, max_size=max_size).map(
        tuple
    )


_TOOL_BEHAVIOUR = _Choice(("returns", "echo", "raises", "sequence"))
_SIMPLE_BEHAVIOUR = _Choice(("returns", "echo", "raises"))


def _draw_outcome(draw: st.DrawFn, behaviour: str) -> tuple[str, Any]:
    if behaviour == "returns":
        return behaviour, _RETURN_VALUES(draw)
    if behaviour == "raises":
        return behaviour, _RAISE_MESSAGES(draw)
    return behaviour, None


@st.composite
def _gen_tool_behaviour(draw: st.DrawFn) -> tuple[str, Any]:
    behaviour = _TOOL_BEHAVIOUR(draw)
    if behaviour == "sequence":  # two outcomes, e.g. fails on the first call, then works
        return behaviour, tuple(_draw_outcome(draw, _SIMPLE_BEHAVIOUR(draw)) for _ in range(2))
    return _draw_outcome(draw, behaviour)


# A list (not a count plus draws), so the shrinker can delete any one tool.
_GEN_TOOLS = st.lists(_gen_tool_behaviour(), max_size=len(TOOL_NAMES)).map(
    lambda pairs: tuple(
        GenTool(TOOL_NAMES[i], behaviour, value) for i, (behaviour, value) in enumerate(pairs)
    )
)


def gen_tools() -> st.SearchStrategy[tuple[GenTool, ...]]:
    """0-3 tools named ``t0``...: returning a value, echoing their arguments, raising, or a
    sequence of two of those (one per executed call)."""
    return _GEN_TOOLS


def steering_schedules(*, max_size: int = 3) -> st.SearchStrategy[tuple[GenSteering, ...]]:
    """0-``max_size`` scheduled messages: after the k-th executed tool call, after call i of
    round r, before round r (0 = with the prompt), or a follow-up.  Messages are numbered so
    their delivery can be traced."""
    return _steering_schedules(max_size)


@lru_cache(maxsize=16)
def _steering_schedules(max_size: int) -> st.SearchStrategy[tuple[GenSteering, ...]]:
    count_strategy = st.integers(min_value=0, max_value=max_size)

    @st.composite
    def draw_schedule(draw: st.DrawFn) -> tuple[GenSteering, ...]:
        items = []
        for i in range(draw(count_strategy)):
            message = f"steer {i}"
            kind = _STEER_KINDS(draw)
            if kind == "after_tool":
                items.append(GenSteering(message, after_tool=_TOOL_INDEX(draw)))
            elif kind == "follow_up":
                items.append(GenSteering(f"follow {i}", follow_up=True))
            elif kind == "before_round":
                items.append(GenSteering(message, before_round=_ROUND(draw)))
            else:
                position = (_CALL_ROUND(draw), _CALL_INDEX(draw))
                items.append(GenSteering(message, after_call=position))
        return tuple(items)

    return draw_schedule()


def scenarios(*, max_turns: int = 5, max_steering: int = 3) -> st.SearchStrategy[GeneratedScenario]:
    """A whole run: tools, script, steering schedule and loop options (``max_iterations``
    including out-of-range values the cap clamps, ``steering_mode``).

    The script is made exact with the reference model: trimmed to the turns the run consumes
    and padded with text turns when it would run out, so a correct loop leaves the strict
    scripted provider with nothing unplayed and no unexpected call (and the YAML export of any
    example is a passing scenario on a correct loop)."""
    return _scenarios(max_turns, max_steering)


@lru_cache(maxsize=16)
def _scenarios(max_turns: int, max_steering: int) -> st.SearchStrategy[GeneratedScenario]:
    schedules = _steering_schedules(max_steering)

    @st.composite
    def draw_scenario(draw: st.DrawFn) -> GeneratedScenario:
        tools = draw(_GEN_TOOLS)
        script = draw(_provider_scripts(tuple(t.name for t in tools), 1, max_turns))
        generated = GeneratedScenario(
            tools=tools,
            script=script,
            steering=draw(schedules),
            max_iterations=_MAX_ITERATIONS(draw),
            steering_mode=_MODES(draw),
        )
        return exact_script(generated)

    return draw_scenario()


def exact_script(generated: GeneratedScenario, *, pad: bool = True) -> GeneratedScenario:
    """Trim the script to the turns the run consumes; with ``pad``, append plain text turns
    until the run no longer runs out of script (bounded by the cap)."""
    for _ in range(MAX_INNER_ITERATIONS + 1):
        expected = _predict(generated)
        if expected.model_calls < len(generated.script):
            return replace(generated, script=generated.script[: expected.model_calls])
        if expected.model_calls > len(generated.script) and pad:
            generated = replace(generated, script=(*generated.script, GenTurn(text="done")))
            continue
        return generated
    return generated


# -- checking a run against the oracle --------------------------------------------------------


class OutcomeMismatch(AssertionError):
    """The run differs from what the spec predicts for the generated scenario."""


def outcome_problems(generated: GeneratedScenario, trace: Any) -> list[str]:
    """Every difference between the run (a ``LoopTrace``) and ``expected_outcome()``, one line
    each (empty: the run is what the spec says)."""
    exp = generated.expected_outcome()
    out: list[str] = []
    if trace.termination != exp.termination:
        out.append(f"termination: expected {exp.termination!r}, got {trace.termination!r}")
    if trace.model_calls != exp.model_calls:
        out.append(f"model calls: expected {exp.model_calls}, got {trace.model_calls}")
    results = list(trace.tool_results)
    if len(results) != len(exp.tool_results):
        got = [f"{r.tool_name}{' (error)' if r.is_error else ''}" for r in results]
        out.append(f"tool results: expected {len(exp.tool_results)}, got {len(results)} {got}")
    for i, (want, got) in enumerate(zip(exp.tool_results, results, strict=False)):
        where = f"tool result {i} ({want.name})"
        if got.tool_name != want.name:
            out.append(f"{where}: name {got.tool_name!r}")
        if got.is_error != want.is_error or got.skipped != want.skipped:
            out.append(
                f"{where}: expected is_error={want.is_error} skipped={want.skipped}, "
                f"got is_error={got.is_error} skipped={got.skipped} (text {got.text!r})"
            )
        if want.text is not None and got.text != want.text:
            out.append(f"{where}: expected text {want.text!r}, got {got.text!r}")
        if want.text_matches is not None and not re.search(want.text_matches, got.text):
            out.append(f"{where}: text {got.text!r} does not match {want.text_matches!r}")
    if exp.final_text is not None and trace.final_text != exp.final_text:
        out.append(f"final text: expected {exp.final_text!r}, got {trace.final_text!r}")
    if exp.error_text is not None and (trace.error is None or exp.error_text not in trace.error):
        out.append(f"error: expected one containing {exp.error_text!r}, got {trace.error!r}")
    if exp.error_text is None and trace.error is not None:
        out.append(f"error: expected none, got {trace.error!r}")
    prompts = 1
    delivered = [m.text for m in trace.user_messages[prompts:]]
    if tuple(delivered) != exp.delivered:
        out.append(f"delivered messages: expected {list(exp.delivered)}, got {delivered}")
    undelivered = [m.text for m in trace.undelivered]
    if tuple(undelivered) != exp.undelivered:
        out.append(f"undelivered messages: expected {list(exp.undelivered)}, got {undelivered}")
    return out


def check_outcome(generated: GeneratedScenario, trace: Any) -> None:
    """Raise ``OutcomeMismatch`` listing every difference from the spec's prediction."""
    problems = outcome_problems(generated, trace)
    if problems:
        raise OutcomeMismatch(
            "the run differs from the spec's prediction:\n"
            + "\n".join(f"  - {p}" for p in problems)
        )


def check_rules(generated: GeneratedScenario, trace: Any) -> None:
    """The exact rules of SPEC §4/§5 stated directly on a trace (no reference model): model
    calls within the cap, one assistant message per call, the exact skip text (and no skip in
    ``after_batch`` mode), what each termination requires of the last message, and every handed
    over steering/follow-up message delivered xor reported undelivered."""
    cap = trace.cap
    assistants = trace.assistant_messages
    if trace.model_calls > cap:
        raise OutcomeMismatch(f"{trace.model_calls} model calls exceed the cap {cap}")
    if trace.model_calls != len(assistants):
        raise OutcomeMismatch(
            f"{trace.model_calls} model calls but {len(assistants)} assistant messages"
        )
    for result in trace.tool_results:
        if result.skipped and not (result.is_error and result.text == SKIPPED_TEXT):
            raise OutcomeMismatch(f"a skipped call needs the exact skip text: {result!r}")
        if not result.skipped and result.text == SKIPPED_TEXT:
            raise OutcomeMismatch(f"a result carries the skip text but is not skipped: {result!r}")
    if generated.steering_mode == "after_batch" and trace.skipped:
        raise OutcomeMismatch("after_batch mode never skips a call")
    last = assistants[-1] if assistants else None
    termination = trace.termination
    if termination == "completed":
        if last is None or last.stop_reason not in ("stop", "length") or last.tool_calls:
            raise OutcomeMismatch("a run completes only on a reply without tool calls")
        if trace.undelivered:
            raise OutcomeMismatch("a completed run cannot leave messages undelivered")
    elif termination == "error":
        if last is None or last.stop_reason != "error" or not last.error_message:
            raise OutcomeMismatch("termination 'error' needs a last message with an error")
    elif termination == "aborted":
        if last is None or last.stop_reason != "aborted":
            raise OutcomeMismatch("termination 'aborted' needs an aborted last message")
    elif trace.model_calls != cap:
        raise OutcomeMismatch(
            f"termination {termination!r} after {trace.model_calls} model calls (cap {cap})"
        )
    schedule = trace.schedule
    if schedule is not None:
        in_run = {id(m) for m in trace.messages}
        undelivered = {id(m) for m in trace.undelivered}
        for delivery in schedule.delivered:
            if (id(delivery.message) in in_run) == (id(delivery.message) in undelivered):
                raise OutcomeMismatch(
                    f"{delivery.message.text!r} must be delivered xor reported undelivered"
                )


def check_run(generated: GeneratedScenario, trace: Any) -> None:
    """Everything the property suite checks on one run: the §10 invariants 1-9
    (``check_invariants``), ``check_rules`` and ``check_outcome``."""
    from .assertions import check_invariants

    check_invariants(trace)
    check_rules(generated, trace)
    check_outcome(generated, trace)


# -- export to a YAML scenario ----------------------------------------------------------------


def to_scenario(
    generated: GeneratedScenario, *, name: str | None = None, description: str = ""
) -> Any:
    """The example as a ``openprogram_testing.scenarios.Scenario`` whose expectations are the
    reference model's predictions: it passes on a correct loop and fails where the run did."""
    from . import scenarios as sc

    exp = generated.expected_outcome()
    tools = []
    for t in generated.tools:
        common: dict[str, Any] = {
            "name": t.name, "description": f"test tool {t.name}", "parameters": X_SCHEMA
        }
        if t.behaviour == "sequence":
            tools.append(sc.ToolDef(**common, sequence=[_outcome(sc.Outcome, *o) for o in t.value]))
        else:
            tools.append(_outcome(sc.ToolDef, t.behaviour, t.value, **common))
    script: list[Any] = []
    for turn in generated.script:
        if turn.text is not None and turn.thinking is None and not turn.calls and (
            turn.ending == "stop" and turn.chunk_size is None
        ):
            script.append(turn.text)
            continue
        fields: dict[str, Any] = {}
        if turn.thinking is not None:
            fields["thinking"] = turn.thinking
        if turn.text is not None:
            fields["text"] = turn.text
        if turn.calls:
            fields["calls"] = [
                sc.CallDef(
                    name=c.name,
                    args=dict(c.args or {}),
                    raw_args=c.raw,
                    unknown_tool=c.kind == "unknown",
                )
                for c in turn.calls
            ]
        if turn.ending == "length":
            fields["stop"] = "length"
        elif turn.ending == "error":
            fields.update(error=turn.error, status=turn.status, retryable=turn.retryable)
        elif turn.ending == "aborted":
            fields["aborted"] = True
        elif turn.ending == "cut":
            fields["cut"] = True
        if turn.chunk_size is not None:
            fields["chunk_size"] = turn.chunk_size
        script.append(sc.TurnDef(**fields))
    steering = []
    for s in generated.steering:
        if s.follow_up:
            steering.append(sc.SteeringDef(message=s.message, follow_up=True))
        elif s.after_tool is not None:
            steering.append(sc.SteeringDef(message=s.message, after_tool=s.after_tool))
        elif s.after_call is not None:
            position = sc.CallPosition(round=s.after_call[0], index=s.after_call[1])
            steering.append(sc.SteeringDef(message=s.message, after_call=position))
        else:
            steering.append(sc.SteeringDef(message=s.message, before_round=s.before_round))
    results = [
        sc.ToolResultExpect(
            name=r.name,
            is_error=r.is_error,
            skipped=r.skipped,
            text=r.text,
            text_matches=r.text_matches,
        )
        for r in exp.tool_results
    ]
    expect = sc.Expectations(
        termination=exp.termination,  # type: ignore[arg-type]
        model_calls=exp.model_calls,
        tool_results=results,
        final_text=exp.final_text,
        error_text=exp.error_text,
        delivered=len(exp.delivered),
        undelivered=len(exp.undelivered),
    )
    return sc.Scenario(
        name=name,
        description=description,
        prompt=generated.prompt,
        tools=tools,
        script=script,
        steering=steering,
        options=sc.LoopOptions(
            max_iterations=generated.max_iterations, steering_mode=generated.steering_mode
        ),
        expect=expect,
    )


def _outcome(model: Any, behaviour: str, value: Any, **fields: Any) -> Any:
    """A scenario ``Outcome``/``ToolDef`` playing one ``(behaviour, value)``."""
    if behaviour == "echo":
        return model(**fields, echo=True)
    if behaviour == "raises":
        return model(**fields, raises=str(value))
    return model(**fields, returns=value)


def scenario_to_yaml(
    generated: GeneratedScenario, *, name: str | None = None, description: str = ""
) -> str:
    """The example as YAML scenario text (the ``openprogram_testing.scenarios`` format), with the
    spec's predictions as expectations.  ``load_scenario`` + ``run_scenario`` replay it."""
    import yaml

    scenario = to_scenario(generated, name=name, description=description)
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    tools = []
    for tool_data, tool in zip(data.get("tools", []), scenario.tools, strict=True):
        # "returns: null" is a behaviour (an empty result): keep it although it is the default.
        if "returns" in tool.model_fields_set and "returns" not in tool_data:
            tool_data["returns"] = None
        for item_data, item in zip(tool_data.get("sequence", []), tool.sequence or [], strict=True):
            if "returns" in item.model_fields_set and "returns" not in item_data:
                item_data["returns"] = None
        first = {
            k: tool_data.pop(k) for k in ("name", "description", "parameters") if k in tool_data
        }
        tools.append({**first, **tool_data})
    if tools:
        data["tools"] = tools
    data["options"] = {
        "max_iterations": generated.max_iterations,
        "steering_mode": generated.steering_mode,
    }
    ordered = {k: data[k] for k in _KEY_ORDER if k in data}
    body = yaml.safe_dump(
        ordered, sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
    )
    return _HEADER + body


_HEADER = (
    "# Generated by openprogram_testing.strategies from a hypothesis example; the expectations\n"
    "# are what SPEC §4/§5 predict for this script.  Run: openprogram-testing run <this file>\n"
)
_KEY_ORDER = (
    "name", "description", "prompt", "tools", "script", "steering", "options", "expect",
    "check_invariants",
)


def failure_dir() -> Path:
    """Where falsifying examples are written: ``$OPENPROGRAM_FAILURE_DIR`` or
    ``.hypothesis/openprogram-failures/`` (relative to the working directory)."""
    return Path(os.environ.get("OPENPROGRAM_FAILURE_DIR") or ".hypothesis/openprogram-failures")


def save_failure(generated: GeneratedScenario, error: BaseException | str | None = None) -> Path:
    """Write the example as a YAML scenario file into ``failure_dir()`` and return its path.
    The file name is derived from the content, so the same example is written once."""
    import hashlib

    reason = "" if error is None else (error if isinstance(error, str) else _first_line(error))
    text = scenario_to_yaml(
        generated,
        name="property failure",
        description=("Falsifying example found by a hypothesis property"
                     + (f": {reason}" if reason else "") + "."),
    )
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    folder = failure_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"property_failure_{digest}.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _first_line(error: BaseException) -> str:
    text = [line.strip(" -") for line in str(error).strip().splitlines() if line.strip()]
    if len(text) > 1 and text[0].endswith(":"):
        text = [f"{text[0]} {text[1]}"]
    first = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return first if len(first) <= 200 else first[:197] + "..."


class report_failure:
    """Context manager for a property body: when it raises, write the example as a YAML scenario
    (on hypothesis's final, shrunk run only — not for every shrink step), print the YAML and its
    path through ``hypothesis.note`` and attach the path to the exception."""

    def __init__(self, generated: GeneratedScenario) -> None:
        self.generated = generated

    def __enter__(self) -> GeneratedScenario:
        return self.generated

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None or not isinstance(exc, Exception) or not _is_final_run():
            return
        path = save_failure(self.generated, exc)
        message = (
            f"falsifying example written to {path}\n"
            f"reproduce: openprogram-testing run {path}  (commit it under scenarios/ as a "
            "regression test)\n" + path.read_text(encoding="utf-8")
        )
        from hypothesis import currently_in_test_context, note

        if currently_in_test_context():
            note(message)  # hypothesis attaches it to the failure it reports
        else:
            exc.add_note(message)


def _is_final_run() -> bool:
    """True on hypothesis's final replay of the shrunk example, and outside hypothesis."""
    from hypothesis import currently_in_test_context
    from hypothesis.control import current_build_context

    return not currently_in_test_context() or bool(current_build_context().is_final)


# -- hypothesis profiles ----------------------------------------------------------------------

PROFILES = ("dev", "ci", "deep")


def register_profiles() -> None:
    """Register the hypothesis profiles of the loop property suite (idempotent):

    - ``dev`` (default): 100 examples per property, quick local feedback;
    - ``ci``: derandomized (the same examples every run), no deadline, enough examples that the
      suite runs well over 1,000 scenarios in a few seconds;
    - ``deep``: 5,000 examples per property, for a hunt (``HYPOTHESIS_PROFILE=deep``).
    """
    from hypothesis import HealthCheck

    common: dict[str, Any] = dict(
        deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
    )
    settings.register_profile("dev", max_examples=100, **common)
    settings.register_profile("ci", max_examples=700, derandomize=True, database=None, **common)
    settings.register_profile("deep", max_examples=5000, **common)


def active_profile(default: str = "dev") -> str:
    """The profile to use: ``$HYPOTHESIS_PROFILE``, else ``ci`` when ``$CI`` is set, else
    ``default``.  An unknown name is a ``ValueError`` listing the known ones."""
    register_profiles()
    name = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else default)
    try:
        settings.get_profile(name)
    except Exception:
        raise ValueError(
            f"unknown HYPOTHESIS_PROFILE {name!r}: use one of {', '.join(PROFILES)}"
        ) from None
    return name


def property_settings(default: str = "dev") -> settings:
    """The active profile's settings, to decorate a property with (``@property_settings()``)
    without changing hypothesis's global default for unrelated tests."""
    return settings.get_profile(active_profile(default))


def load_profile(default: str = "dev") -> str:
    """Make the active profile (see ``active_profile``) hypothesis's global default; returns its
    name."""
    name = active_profile(default)
    settings.load_profile(name)
    return name


__all__ = [
    "PROFILES",
    "TOOL_NAMES",
    "UNKNOWN_TOOL",
    "X_SCHEMA",
    "Expected",
    "ExpectedResult",
    "GenCall",
    "GenSteering",
    "GenTool",
    "GenTurn",
    "GeneratedScenario",
    "OutcomeMismatch",
    "active_profile",
    "check_outcome",
    "check_rules",
    "check_run",
    "effective_cap",
    "exact_script",
    "failure_dir",
    "gen_tools",
    "load_profile",
    "model_turns",
    "outcome_problems",
    "property_settings",
    "provider_scripts",
    "register_profiles",
    "report_failure",
    "save_failure",
    "scenario_to_yaml",
    "scenarios",
    "steering_schedules",
    "to_scenario",
    "tool_calls",
]
