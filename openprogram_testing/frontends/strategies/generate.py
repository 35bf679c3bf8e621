"""The hypothesis strategies: tool calls, model turns, scripts, tools, steering schedules and whole
runs (``scenarios``), all drawn as the plain data of ``model``.

What keeps them fast and well-shrinking:

- every choice ordered simplest first, so a failure shrinks to "one text turn" when it can;
- strategy objects built once and coarse draws (one draw picks a whole call), because
  hypothesis's per-draw cost dominates an example;
- no sleeps, no threads: tool behaviours are instant (return, echo, raise);
- scripts are *exact*: after drawing, the script is trimmed to the turns the run will consume
  and padded with plain text turns, so the strict scripted provider never has leftovers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from typing import Any, Generic, TypeVar

from hypothesis import strategies as st

from openprogram.loop import MAX_INNER_ITERATIONS
from openprogram.runs import STEERING_MODES, SteeringMode

from .model import GenCall, GeneratedScenario, GenSteering, GenTool, GenTurn
from .oracle import predict
from .universe import (
    ABORTED,
    ALL_ENDINGS,
    ERROR_MESSAGES,
    RAISE_MESSAGES,
    RAW_ARGUMENTS,
    RETURN_VALUES,
    SCHEMA_VIOLATIONS,
    TEXTS,
    TOOL_NAMES,
    UNKNOWN_TOOL,
    Ending,
    ToolBehaviour,
)

T = TypeVar("T")


class _Choice(Generic[T]):
    """``st.sampled_from`` for use inside composites, minus its filtering machinery: one integer
    draw indexes the options (it shrinks towards the first option, like ``sampled_from``)."""

    __slots__ = ("index", "options")

    def __init__(self, options: Sequence[T]) -> None:
        self.options = tuple(options)
        self.index = st.integers(0, len(self.options) - 1)

    def __call__(self, draw: st.DrawFn) -> T:
        return self.options[draw(self.index)]


# Strategy objects are built once (module constants, and ``lru_cache`` for the parametrised
# ones): hypothesis validates every new strategy object, which would otherwise dominate the cost
# of an example.  Each draw costs tens of microseconds, so related choices are combined into one
# draw over a list ordered simplest first (weights are repeated entries): the shrinker then
# moves one index down and reaches the simplest variant of whatever still fails.

# The turn's shape with its text: a text-only turn a quarter of the time, calls without text
# half of the time.
_SHAPE_TEXT = _Choice(
    [("text", t) for t in TEXTS]
    + [("calls", None)] * (2 * len(TEXTS))
    + [("mixed", t) for t in TEXTS]
)
_THINKING_CHUNK = tuple(
    (think, chunk) for chunk in (None, 1, 2, 3, 5, 7) for think in (None, "hmm", "let me think")
)
_ERROR_DETAILS = tuple(
    (message, status, retryable)
    for status in (None, 429, 500, 529)
    for retryable in (None, True, False)
    for message in ERROR_MESSAGES
)
# How often each ending is drawn (in blocks of every thinking/chunk variant): mostly normal
# stops, so scripts usually go on.
_ENDING_WEIGHTS: dict[Ending, int] = {"stop": 6, "length": 1, "error": 2, "aborted": 1, "cut": 1}
_Finish = tuple[Ending, Any, Any, Any, Any, Any]  # ending, error, status, retryable, think, chunk


def _finishes(ending: Ending) -> list[_Finish]:
    """Every (ending, error details, thinking, chunk size) variant of one ending, simplest first;
    an error ending walks the error details alongside the thinking/chunk variants."""
    if ending == "error":
        n = max(len(_ERROR_DETAILS), len(_THINKING_CHUNK))
        return [
            ("error", *_ERROR_DETAILS[i % len(_ERROR_DETAILS)], *_THINKING_CHUNK[i % 18])
            for i in range(n)
        ]
    error = ABORTED if ending == "aborted" else None
    block: list[_Finish] = [(ending, error, None, None, t, c) for t, c in _THINKING_CHUNK]
    return block * _ENDING_WEIGHTS[ending]


_STEERING_SLOTS: tuple[tuple[str, Any], ...] = (
    *(("after_tool", k) for k in (0, 1, 2, 3)),
    *(("before_round", r) for r in (0, 1, 2, 3)),
    ("follow_up", None),
    ("follow_up", None),
    *(("before_round", r) for r in (0, 1, 1, 2)),
    *(("after_call", (r, i)) for r in (0, 1) for i in (0, 1, 2)),
)
_STEERING_SLOT = _Choice(_STEERING_SLOTS)
# Whether the script goes on (two times in three; shrinks towards ending it).
_MORE = _Choice((False, True, True))
_OPTIONS: _Choice[tuple[int | None, SteeringMode]] = _Choice(
    [(n, mode) for n in (None, 1, 2, 3, 4, 5, 0, -1, 51, 100) for mode in STEERING_MODES]
)


def tool_calls(tool_names: Sequence[str] = TOOL_NAMES) -> st.SearchStrategy[GenCall]:
    """One tool call: valid, a schema violation, raw non-JSON arguments, or an unknown tool.
    With no tools declared every call is to an unknown tool."""
    return _tool_calls(tuple(tool_names))


@lru_cache(maxsize=64)
def _tool_calls(names: tuple[str, ...]) -> st.SearchStrategy[GenCall]:
    return st.sampled_from(_call_table(names, None))


@lru_cache(maxsize=64)
def _call_table(names: tuple[str, ...], declared: int | None) -> tuple[GenCall, ...]:
    """Every call this small universe allows, in draw order: valid calls first (grouped by tool,
    x ascending, so the shrinker moves x down monotonically; about half of the options, so most
    runs really execute tools), then schema violations, raw arguments and unknown-tool calls.

    With ``declared`` set, only the first ``declared`` of ``names`` are tools of the run: a call
    to any other name is bound to a declared one (or to an unknown tool when none is declared).
    The table then has the same length whatever the run declares, so deleting a tool while
    shrinking keeps every later draw meaning the same call."""
    calls = (
        [GenCall(n, "valid", {"x": x}) for n in names for x in range(10)]
        + [GenCall(n, "schema", dict(v)) for v in SCHEMA_VIOLATIONS for n in names]
        + [GenCall(n, "raw", None, r) for r in RAW_ARGUMENTS for n in names]
        + [GenCall(UNKNOWN_TOOL, "unknown", {"x": x}) for x in range(3)]
    )
    if declared is None or declared >= len(names):
        return tuple(calls)
    return tuple(_bind(c, names, declared) for c in calls)


def _bind(call: GenCall, names: tuple[str, ...], declared: int) -> GenCall:
    if call.kind == "unknown" or names.index(call.name) < declared:
        return call
    if declared == 0:
        return GenCall(UNKNOWN_TOOL, "unknown", {"x": 0})
    return replace(call, name=names[names.index(call.name) % declared])


def model_turns(
    tool_names: Sequence[str] = TOOL_NAMES, *, endings: Sequence[Ending] = ALL_ENDINGS
) -> st.SearchStrategy[GenTurn]:
    """One model turn: optional thinking and text, 1-3 tool calls (several = a parallel pick),
    then an ending - a normal stop, a length stop, a provider error (status, retryable), an
    aborted stop, or a stream cut before its terminal event - with an optional chunk size for
    text and argument JSON.  Simple first: a plain text turn is the shrink target."""
    return _model_turns(tuple(tool_names), tuple(endings))


@lru_cache(maxsize=64)
def _model_turns(
    names: tuple[str, ...], endings: tuple[Ending, ...], declared: int | None = None
) -> st.SearchStrategy[GenTurn]:
    table = _call_table(names, declared)
    calls_strategy = st.lists(st.integers(0, len(table) - 1), min_size=1, max_size=3)
    finish = _Choice([f for e in ALL_ENDINGS if e in endings for f in _finishes(e)])

    @st.composite
    def draw_turn(draw: st.DrawFn) -> GenTurn:
        shape, text = _SHAPE_TEXT(draw)
        calls = tuple(table[i] for i in draw(calls_strategy)) if shape != "text" else ()
        ending, error, status, retryable, thinking, chunk_size = finish(draw)
        return GenTurn(text, thinking, calls, ending, error, status, retryable, chunk_size)

    return draw_turn()


def provider_scripts(
    tool_names: Sequence[str] = TOOL_NAMES, *, min_size: int = 1, max_size: int = 5
) -> st.SearchStrategy[tuple[GenTurn, ...]]:
    """A model script: a short list of ``model_turns``.  Failing turns (error, abort, cut) are
    drawn about a third of the time, so scripts usually get past their first turn."""
    return _provider_scripts(tuple(tool_names), min_size, max_size)


@lru_cache(maxsize=64)
def _provider_scripts(
    names: tuple[str, ...], min_size: int, max_size: int
) -> st.SearchStrategy[tuple[GenTurn, ...]]:
    return st.lists(_model_turns(names, ALL_ENDINGS), min_size=min_size, max_size=max_size).map(
        tuple
    )


_SIMPLE_OUTCOMES: tuple[tuple[ToolBehaviour, Any], ...] = (
    *(("returns", v) for v in RETURN_VALUES),
    ("echo", None),
    *(("raises", m) for m in RAISE_MESSAGES),
)
_SIMPLE_OUTCOME = _Choice(_SIMPLE_OUTCOMES)
# A tool's behaviour with its value in one draw: returns (7 values), echo, raises (3 messages),
# or a sequence of two simple outcomes (e.g. fails on the first call, then works); echo and
# sequence are repeated so each kind is drawn a fair share of the time.
_ECHO: tuple[ToolBehaviour, Any] = ("echo", None)
_SEQUENCE: tuple[ToolBehaviour, Any] = ("sequence", None)
_TOOL_OUTCOME: _Choice[tuple[ToolBehaviour, Any]] = _Choice(
    [
        *(("returns", v) for v in RETURN_VALUES),
        *[_ECHO] * 4,
        *(("raises", m) for m in RAISE_MESSAGES),
        *[_SEQUENCE] * 4,
    ]
)


@st.composite
def _gen_tool_behaviour(draw: st.DrawFn) -> tuple[ToolBehaviour, Any]:
    behaviour, value = _TOOL_OUTCOME(draw)
    if behaviour == "sequence":
        return "sequence", (_SIMPLE_OUTCOME(draw), _SIMPLE_OUTCOME(draw))
    return behaviour, value


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
            kind, where = _STEERING_SLOT(draw)
            if kind == "after_tool":
                items.append(GenSteering(f"steer {i}", after_tool=where))
            elif kind == "follow_up":
                items.append(GenSteering(f"follow {i}", follow_up=True))
            elif kind == "before_round":
                items.append(GenSteering(f"steer {i}", before_round=where))
            else:
                items.append(GenSteering(f"steer {i}", after_call=where))
        return tuple(items)

    return draw_schedule()


def scenarios(*, max_turns: int = 5, max_steering: int = 3) -> st.SearchStrategy[GeneratedScenario]:
    """A whole run: tools, loop options (``max_iterations`` including out-of-range values the
    cap clamps, ``steering_mode``), steering schedule and script.

    Turns are drawn only while the run can still reach them (none after a turn that ends the
    run, none after a reply without calls when nothing is scheduled to start another round),
    then the script is made exact with the reference model:
    trimmed to the turns the run consumes and padded with text turns when it would run out, so
    a correct loop leaves the strict scripted provider with nothing unplayed and no unexpected
    call (and the YAML export of any example is a passing scenario on a correct loop)."""
    return _scenarios(max_turns, max_steering)


@lru_cache(maxsize=16)
def _scenarios(max_turns: int, max_steering: int) -> st.SearchStrategy[GeneratedScenario]:
    schedules = _steering_schedules(max_steering)

    @st.composite
    def draw_scenario(draw: st.DrawFn) -> GeneratedScenario:
        tools = draw(_GEN_TOOLS)
        steering = draw(schedules)
        turns = _model_turns(TOOL_NAMES, ALL_ENDINGS, len(tools))
        script = [draw(turns)]
        while len(script) < max_turns and _run_goes_on(script[-1], steering) and _MORE(draw):
            script.append(draw(turns))
        max_iterations, mode = _OPTIONS(draw)
        generated = GeneratedScenario(tools, tuple(script), steering, "go", max_iterations, mode)
        return exact_script(generated)

    return draw_scenario()


def _run_goes_on(turn: GenTurn, steering: tuple[GenSteering, ...]) -> bool:
    """Whether a run may ask the model again after ``turn``: not after a failed turn, and after
    a reply without calls only when steering or a follow-up can start another round."""
    if turn.ending in ("error", "aborted", "cut"):
        return False
    return bool(turn.calls or steering)


def exact_script(generated: GeneratedScenario, *, pad: bool = True) -> GeneratedScenario:
    """Trim the script to the turns the run consumes; with ``pad``, append plain text turns
    until the run no longer runs out of script (bounded by the cap)."""
    for _ in range(MAX_INNER_ITERATIONS + 1):
        expected = predict(generated)
        if expected.model_calls < len(generated.script):
            return replace(generated, script=generated.script[: expected.model_calls])
        if expected.model_calls > len(generated.script) and pad:
            generated = replace(generated, script=(*generated.script, GenTurn(text="done")))
            continue
        return generated
    return generated
