"""Hostile runs: a generated run plus one thing a careless program does to the loop.

``hostile_scenarios()`` draws a ``HostileScenario``: an ordinary generated run (``scenarios()``)
with one ``Hostility`` — a steering or follow-up source that raises (an ``Exception`` or a
``BaseException``) at its k-th poll, a tool that fires the run's cancel token, raises
``KeyboardInterrupt``/``SystemExit``, or returns a value that cannot become text (sync, async or
timed), or a call whose argument JSON is nested a thousand levels deep or is not an object.
``check_hostile_run`` checks the run against every loop invariant and the rules these paths
must follow: the failure is re-raised only after ``agent_end`` (``error`` for an ``Exception``
from a source, ``aborted`` for a ``BaseException``), the rest of an interrupted batch is
answered ``Cancelled`` and never runs, an unserialisable value or bad argument JSON becomes an
error result and the run goes on.  No reference-model prediction is made for these runs: the
rules are stated on the trace.

``hostile_records(record)`` draws what a hand-made run record does to ``scaffold``: the
record's JSON with one value replaced by the wrong type, a list holding null or a list nested
``RECORD_DEPTH`` levels deep.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, get_args

from hypothesis import strategies as st

from openprogram.cancel import CancelToken
from openprogram.runs import wants_poll_point
from openprogram.texts import (
    CANCELLED_TEXT,
    TOO_DEEP_TEXT,
    not_object_text,
    unserialisable_text,
)
from openprogram_testing.base.recording import add_trace_listener, remove_trace_listener
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import run_loop
from openprogram_testing.judges.invariants import check_invariants

from .checks import OutcomeMismatch
from .generate import exact_script, scenarios
from .model import GenCall, GeneratedScenario, GenTool, GenTurn

if TYPE_CHECKING:
    from openprogram_testing.core.trace import LoopTrace

HostileKind = Literal[
    "steering_raises",
    "follow_up_raises",
    "tool_cancels",
    "tool_base_exception",
    "unserialisable",
    "deep_arguments",
    "not_object_arguments",
]
HOSTILE_KINDS: tuple[HostileKind, ...] = get_args(HostileKind)
DEPTH = 3000
"""Argument JSON nesting for ``deep_arguments``: objects this deep are beyond what the JSON
parser accepts (an array a thousand deep may still parse, and is then "not an object")."""


class SourceFailure(RuntimeError):
    """Raised by a generated steering or follow-up source."""


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no text for this value")

    __repr__ = __str__


def _deep_list() -> list[Any]:
    value: list[Any] = []
    for _ in range(5000):
        value = [value]
    return value


_BAD_VALUES = {"deep": _deep_list, "unprintable": _Unprintable}


@dataclass(frozen=True)
class Hostility:
    """One hostile ingredient: ``kind``, the 0-based poll or executed call it strikes at
    (``at``), and its ``variant`` (the exception raised, or sync/async/timed for a tool, or the
    kind of bad value)."""

    kind: HostileKind
    at: int = 0
    variant: str = ""


@dataclass
class Strike:
    """What happened at run time: whether the hostility struck, the exception raised (if any)
    and the id of the tool call it struck in."""

    struck: bool = False
    raised: BaseException | None = None
    call_id: str | None = None
    tool: str | None = None


@dataclass(frozen=True)
class HostileScenario:
    """A generated run plus one ``Hostility`` (plain data; ``run_sync`` runs it)."""

    base: GeneratedScenario
    target: str | None = None  # the call whose argument text is hostile
    hostility: Hostility = Hostility("steering_raises")
    strike: Strike = field(default_factory=Strike, compare=False, repr=False)

    def _exception(self) -> BaseException:
        name = self.hostility.variant.split("-")[0]
        if name == "KeyboardInterrupt":
            return KeyboardInterrupt()
        if name == "SystemExit":
            return SystemExit(3)
        return SourceFailure(f"source failed at poll {self.hostility.at}")

    def build_schedule(self) -> Any:

        schedule = self.base.build_schedule() or SteeringSchedule()
        kind = self.hostility.kind
        if kind not in ("steering_raises", "follow_up_raises"):
            return schedule
        configure = schedule.configure
        attribute = (
            "get_steering_messages" if kind == "steering_raises" else "get_follow_up_messages"
        )

        def hostile_configure(config: Any) -> Any:
            result = configure(config)
            setattr(config, attribute, self._raising(getattr(config, attribute)))
            return result

        schedule.configure = hostile_configure  # type: ignore[method-assign]
        return schedule

    def _raising(self, source: Any) -> Any:
        polls = [0]
        takes_point = wants_poll_point(source)

        def hostile_source(point: Any = None) -> Any:
            polls[0] += 1
            if polls[0] - 1 == self.hostility.at:
                self.strike.struck = True
                self.strike.raised = self._exception()
                raise self.strike.raised
            if source is None:
                return []
            return source(point) if takes_point else source()

        return hostile_source

    def build_tools(self, cancel: CancelToken) -> list[dict[str, Any]]:
        tools = self.base.build_tools()
        kind = self.hostility.kind
        if kind not in _TOOL_KINDS:
            return tools
        executed = [0]  # counted across the tools: the hostility strikes the at-th executed call
        for tool in tools:
            name = tool["spec"]["name"]
            tool["execute"] = self._hostile_execute(tool["execute"], cancel, name, executed)
        return tools

    def _hostile_execute(
        self, original: Any, cancel: CancelToken, name: str, executed: list[int]
    ) -> Any:
        def strike(tool_call_id: str) -> Any:
            n = executed[0]
            executed[0] += 1
            if n != self.hostility.at:
                return None
            self.strike.struck = True
            self.strike.call_id = tool_call_id
            self.strike.tool = name
            kind = self.hostility.kind
            if kind == "tool_cancels":
                cancel.cancel("fired by a tool")
                return "fired"
            if kind == "tool_base_exception":
                self.strike.raised = self._exception()
                raise self.strike.raised
            return _BAD_VALUES.get(self.hostility.variant.split("-")[0], _deep_list)()

        if self.hostility.variant.endswith("async"):

            async def hostile_async(args: dict[str, Any], tool_call_id: str = "") -> Any:
                value = strike(tool_call_id)
                return value if value is not None else await original(args)

            return hostile_async

        def hostile_sync(args: dict[str, Any], tool_call_id: str = "") -> Any:
            value = strike(tool_call_id)
            if value is not None:
                return value
            return _finish_instantly(original(args))

        return hostile_sync

    async def run(self) -> tuple[LoopTrace | None, BaseException | None]:
        """The trace (captured from the trace listeners, so a re-raised failure keeps it) and
        what the run raised."""

        self.strike.__init__()  # type: ignore[misc]  # a replayed example starts afresh
        traces: list[LoopTrace] = []
        add_trace_listener(traces.append)
        cancel = CancelToken()
        timed = self.hostility.kind == "unserialisable" and self.hostility.variant.endswith("timed")
        try:
            await run_loop(
                self.base.build_provider(),
                [self.base.prompt],
                tools=self.build_tools(cancel),
                schedule=self.build_schedule(),
                max_iterations=self.base.max_iterations,
                steering_mode=self.base.steering_mode,
                tool_timeout_s=5.0 if timed else None,
                cancel=cancel,
            )
        except BaseException as exc:  # checked by check_hostile_run
            return (traces[-1] if traces else None), exc
        finally:
            remove_trace_listener(traces.append)
        return traces[-1], None

    def run_sync(self) -> tuple[LoopTrace | None, BaseException | None]:
        """``run()`` on a fresh event loop (not ``asyncio.run``: a ``KeyboardInterrupt`` from a
        tool must stay catchable here)."""
        loop = asyncio.new_event_loop()
        try:
            return loop.run_until_complete(self.run())
        finally:
            loop.close()


def _finish_instantly(coroutine: Any) -> Any:
    """The value of a coroutine that never suspends (the generated tools are async but
    instant), computed without an event loop: a sync tool runs inside the loop's own."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("a generated tool suspended")


def _with_bad_arguments(
    base: GeneratedScenario, hostility: Hostility
) -> tuple[GeneratedScenario, str | None]:
    """The ``at``-th call of the script (in order) sent with hostile argument text, and its id
    (the scripted provider numbers calls ``call_0``, ``call_1``, … in script order); a call to
    an unknown tool is left alone (it is answered "not found" whatever its arguments)."""
    deep = '{"a":' * DEPTH + "1" + "}" * DEPTH
    raw = deep if hostility.kind == "deep_arguments" else '["x", 1]'
    script: list[GenTurn] = []
    seen = 0
    target = None
    for turn in base.script:
        calls = []
        for c in turn.calls:
            if seen == hostility.at and c.kind != "unknown":
                c = GenCall(c.name, "raw", None, raw)
                target = f"call_{seen}"
            seen += 1
            calls.append(c)
        script.append(replace(turn, calls=tuple(calls)))
    return replace(base, script=tuple(script)), target


# Mostly the first poll or executed call: most runs poll or call a tool only a few times.
_AT = st.sampled_from((0, 0, 0, 1, 2))
_TOOL_KINDS = ("tool_cancels", "tool_base_exception", "unserialisable")
_VARIANTS: dict[HostileKind, tuple[str, ...]] = {
    "steering_raises": ("RuntimeError", "KeyboardInterrupt"),
    "follow_up_raises": ("RuntimeError", "SystemExit"),
    "tool_cancels": ("sync", "async"),
    "tool_base_exception": ("KeyboardInterrupt-sync", "SystemExit-async"),
    "unserialisable": ("deep-sync", "unprintable-async", "deep-timed", "unprintable-timed"),
    "deep_arguments": ("",),
    "not_object_arguments": ("",),
}


def hostile_scenarios() -> st.SearchStrategy[HostileScenario]:
    """A generated run with one hostile ingredient (see the module documentation); a tool
    hostility strikes the ``at``-th executed call, whichever tool it calls."""
    return _HOSTILE


@st.composite
def _hostile(draw: st.DrawFn) -> HostileScenario:
    kind = draw(_KINDS)
    hostility = Hostility(kind, draw(_AT), draw(st.sampled_from(_VARIANTS[kind])))
    base = draw(scenarios())
    if kind in ("deep_arguments", "not_object_arguments"):
        return HostileScenario(*_with_bad_arguments(base, hostility), hostility=hostility)
    return HostileScenario(_with_a_tool_call(base), None, hostility)


def _with_a_tool_call(base: GeneratedScenario) -> GeneratedScenario:
    """``base`` with a tool and a valid call to it first in its first turn, so a tool hostility
    has an executed call to strike (the script is made exact again)."""
    tools = base.tools or (GenTool("t0", "echo"),)
    first = base.script[0]
    if not (first.calls and first.calls[0].kind == "valid"):
        call = GenCall(tools[0].name, "valid", {"x": 0})
        first = replace(first, calls=(call, *first.calls), ending="stop")
    return exact_script(replace(base, tools=tools, script=(first, *base.script[1:])))


_KINDS = st.sampled_from(HOSTILE_KINDS)


_HOSTILE = _hostile()


def hostile_problems(
    scenario: HostileScenario, trace: LoopTrace | None, raised: BaseException | None
) -> list[str]:
    """Every rule of the hostile paths the run broke (empty: it ended cleanly)."""
    strike = scenario.strike
    kind = scenario.hostility.kind
    if trace is None:
        return [f"the run raised {raised!r} before any trace existed"]
    out: list[str] = []
    expected = strike.raised if kind != "tool_cancels" else None
    if raised is not expected:
        out.append(f"the run raised {raised!r}, expected {expected!r}")
    if strike.raised is not None:
        want = "aborted" if not isinstance(strike.raised, Exception) else "error"
        if trace.termination != want:
            out.append(
                f"termination {trace.termination!r} after {strike.raised!r}, expected {want!r}"
            )
    if kind == "tool_cancels" and strike.struck and trace.termination != "aborted":
        out.append(f"a tool fired the cancel token, termination is {trace.termination!r}")
    results = list(trace.tool_results)
    if strike.call_id is not None and kind in ("tool_cancels", "tool_base_exception"):
        ids = [r.tool_call_id for r in results]
        if strike.call_id in ids:
            after = results[ids.index(strike.call_id) + 1 :]
            same_round = [r for r in after if r.tool_call_id in _batch_of(trace, strike.call_id)]
            late = [f"{r.tool_call_id}: {r.text!r}" for r in same_round if r.text != CANCELLED_TEXT]
            if late:
                out.append(f"calls {late} after the interruption were not answered 'Cancelled'")
    if kind == "unserialisable" and strike.call_id is not None:
        result = next((r for r in results if r.tool_call_id == strike.call_id), None)
        prefix = unserialisable_text(strike.tool or "", "")
        if result is None or not (result.is_error and result.text.startswith(prefix)):
            out.append(f"an unserialisable value gave {result!r}, expected an error '{prefix}…'")
    if kind in ("deep_arguments", "not_object_arguments"):
        problem = TOO_DEEP_TEXT if kind == "deep_arguments" else not_object_text("an array")
        for r in results:
            if r.tool_call_id == scenario.target and not r.skipped and problem not in r.text:
                out.append(f"bad argument JSON answered {r.text.splitlines()[:2]!r}")
    return out


# -- hostile run records -------------------------------------------------------------------------

RECORD_VALUES: tuple[Any, ...] = (
    7,
    [None],
    None,
    "",
    "x",
    {},
    [],
    True,
    -1,
    10**30,
    1.5,
    {"$regex": 1},
)
"""What a hand-made run record puts where the report writes something else: a number for a
list (``arrivals: 7``), a list holding null for a call id, the wrong container, a boolean."""
RECORD_DEPTH = 50_000
"""How deep ``hostile_records`` nests a value it makes deep: far past any JSON parser's own
recursion limit, so only a reader that checks depth first ends cleanly."""
_DEEP = "\u2063openprogram-deep\u2063"  # stands for the deep value until the text is written


def hostile_records(record: Mapping[str, Any]) -> st.SearchStrategy[str]:
    """The JSON text of ``record`` (a ``report.record.trace_record``) with one value, at any
    path (the whole record included), replaced by one of ``RECORD_VALUES`` or by a list nested
    ``RECORD_DEPTH`` levels deep; what ``scaffold`` from a run record must refuse by position,
    never with a ``TypeError`` or a ``RecursionError``."""
    paths = _record_paths(record)
    return st.builds(
        _damaged,
        st.just(record),
        st.sampled_from(paths),
        st.sampled_from((*RECORD_VALUES, _DEEP)),
    )


def _record_paths(record: Any) -> list[tuple[Any, ...]]:
    """Every path of ``record`` (keys and list indices from the root), the root first."""
    paths: list[tuple[Any, ...]] = []
    stack: list[tuple[tuple[Any, ...], Any]] = [((), record)]
    while stack:
        path, value = stack.pop()
        paths.append(path)
        if isinstance(value, Mapping):
            stack.extend(((*path, k), v) for k, v in reversed(list(value.items())))
        elif isinstance(value, list):
            stack.extend(((*path, i), v) for i, v in reversed(list(enumerate(value))))
    return paths


def _damaged(record: Mapping[str, Any], path: tuple[Any, ...], value: Any) -> str:
    import copy
    import json

    if not path:
        data: Any = copy.deepcopy(value)
    else:
        data = copy.deepcopy(dict(record))
        parent = data
        for step in path[:-1]:
            parent = parent[step]
        parent[path[-1]] = copy.deepcopy(value)
    text = json.dumps(data)
    deep = "[" * RECORD_DEPTH + "]" * RECORD_DEPTH
    return text.replace(json.dumps(_DEEP), deep)


def _batch_of(trace: LoopTrace, call_id: str) -> set[str]:
    for message in trace.assistant_messages:
        ids = {c.id for c in message.tool_calls}
        if call_id in ids:
            return ids
    return set()


def check_hostile_run(
    scenario: HostileScenario, trace: LoopTrace | None, raised: BaseException | None
) -> None:
    """Every loop invariant, then the rules of the hostile paths (``hostile_problems``)."""

    if trace is not None:
        check_invariants(trace)
    problems = hostile_problems(scenario, trace, raised)
    if problems:
        raise OutcomeMismatch(
            f"hostile run ({scenario.hostility}) broke:\n" + "\n".join(f"  - {p}" for p in problems)
        )


__all__ = [
    "HOSTILE_KINDS",
    "RECORD_DEPTH",
    "RECORD_VALUES",
    "HostileScenario",
    "Hostility",
    "SourceFailure",
    "Strike",
    "check_hostile_run",
    "hostile_problems",
    "hostile_records",
    "hostile_scenarios",
]
