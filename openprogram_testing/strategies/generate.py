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
from typing import Any, Generic, Literal, TypeVar

from hypothesis import strategies as st

from openprogram.loop import MAX_INNER_ITERATIONS

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
# of an example.
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
_MODES: _Choice[Literal["skip", "after_batch"]] = _Choice(("skip", "after_batch"))
_MAX_ITERATIONS = _Choice((None, 1, 2, 3, 4, 5, 0, -1, 51, 100))


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
            error = ABORTED
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


_TOOL_BEHAVIOUR: _Choice[ToolBehaviour] = _Choice(("returns", "echo", "raises", "sequence"))
_SIMPLE_BEHAVIOUR: _Choice[ToolBehaviour] = _Choice(("returns", "echo", "raises"))


def _draw_outcome(draw: st.DrawFn, behaviour: ToolBehaviour) -> tuple[ToolBehaviour, Any]:
    if behaviour == "returns":
        return behaviour, _RETURN_VALUES(draw)
    if behaviour == "raises":
        return behaviour, _RAISE_MESSAGES(draw)
    return behaviour, None


@st.composite
def _gen_tool_behaviour(draw: st.DrawFn) -> tuple[ToolBehaviour, Any]:
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
        expected = predict(generated)
        if expected.model_calls < len(generated.script):
            return replace(generated, script=generated.script[: expected.model_calls])
        if expected.model_calls > len(generated.script) and pad:
            generated = replace(generated, script=(*generated.script, GenTurn(text="done")))
            continue
        return generated
    return generated
