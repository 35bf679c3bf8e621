"""What every framework adapter shares: the script a fake model follows and the proof a run
must produce before its time counts.

The fake models of all frameworks consult one ``Script`` per run: it decides the reply of each
model call (``tool_rounds`` rounds of ``calls_per_round`` calls of ``add``, then the final text),
stamps the time of every model call (the round boundaries used for history growth) and counts
what the tool actually received.  A framework that skipped a call, dropped arguments or lost the
final text fails ``Script.check`` with a ``BenchError`` instead of producing a fast number.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from time import perf_counter_ns, process_time_ns
from typing import Any, Literal, Protocol, get_args

CLOCKS = {"wall": perf_counter_ns, "cpu": process_time_ns}
"""``wall`` (default) is what a user waits; ``cpu`` (the process's CPU time, all threads) is
steadier on a shared, loaded machine because time spent descheduled is not counted."""
_clock = [perf_counter_ns]


def set_clock(name: str) -> None:
    """Select the clock of every later measurement (``wall`` or ``cpu``)."""
    if name not in CLOCKS:
        raise ValueError(f"unknown clock {name!r}; choose from {', '.join(CLOCKS)}")
    _clock[0] = CLOCKS[name]


def now_ns() -> int:
    return _clock[0]()


ToolKind = Literal["sync", "async", "async_yield"]
TOOL_KINDS: tuple[str, ...] = get_args(ToolKind)
"""The benchmarked tool as a plain function (``sync``) or an ``async def`` (``async``; with
``async_yield`` it awaits ``asyncio.sleep(0)`` once per call)."""

FINAL_TEXT = "done"
"""The final assistant text every run must return."""


class BenchError(AssertionError):
    """A benchmarked configuration did not run the loop it claims to (or could not run)."""


@dataclass(frozen=True, slots=True)
class PlannedCall:
    """One scripted call of ``add(a, b)``; ``id`` is unique within the run."""

    id: str
    a: int
    b: int


class Script:
    """The per-run plan every fake model follows (see the module docstring)."""

    __slots__ = (
        "calls_per_round",
        "model_calls",
        "stamps",
        "tool",
        "tool_calls",
        "tool_rounds",
        "total",
    )

    def __init__(self, tool_rounds: int, calls_per_round: int = 1, tool: ToolKind = "sync") -> None:
        if tool_rounds < 0 or calls_per_round < 1:
            raise ValueError("tool_rounds must be >= 0 and calls_per_round >= 1")
        if tool not in TOOL_KINDS:
            raise ValueError(f"tool must be one of {', '.join(TOOL_KINDS)}, got {tool!r}")
        self.tool_rounds = tool_rounds
        self.calls_per_round = calls_per_round
        self.tool: ToolKind = tool
        self.model_calls = 0
        self.stamps: list[int] = []
        self.tool_calls = 0
        self.total = 0

    def next_turn(self) -> list[PlannedCall] | None:
        """The reply to the next model call: the calls of this round, or ``None`` for the final
        text.  Stamps the call time."""
        self.stamps.append(_clock[0]())
        r = self.model_calls
        self.model_calls += 1
        if r >= self.tool_rounds:
            return None
        return [PlannedCall(f"call_{r}_{i}", r, i + 1) for i in range(self.calls_per_round)]

    def add(self, a: int, b: int) -> int:
        """The benchmarked tool body: trivial, but it counts what it received."""
        self.tool_calls += 1
        self.total += a + b
        return a + b

    async def aadd(self, a: int, b: int) -> int:
        """The ``async def`` twin of ``add`` (the usual shape of an I/O tool); with
        ``tool="async_yield"`` it also yields to the event loop once, as real I/O would, so that
        concurrent runs interleave."""
        if self.tool == "async_yield":
            await asyncio.sleep(0)
        return self.add(a, b)

    @property
    def expected_total(self) -> int:
        r, c = self.tool_rounds, self.calls_per_round
        return c * (r * (r - 1) // 2) + r * (c * (c + 1) // 2)

    def check(self, framework: str, final_text: Any) -> None:
        """Raise ``BenchError`` unless the run executed every planned call with its arguments,
        asked the model exactly once per round plus once for the final text, and returned the
        final text."""
        expected_calls = self.tool_rounds * self.calls_per_round
        problems = []
        if self.tool_calls != expected_calls:
            problems.append(f"tool called {self.tool_calls} times, expected {expected_calls}")
        if self.total != self.expected_total:
            problems.append(f"tool argument sum {self.total}, expected {self.expected_total}")
        if self.model_calls != self.tool_rounds + 1:
            problems.append(f"{self.model_calls} model calls, expected {self.tool_rounds + 1}")
        if final_text != FINAL_TEXT:
            problems.append(f"final text {final_text!r}, expected {FINAL_TEXT!r}")
        if problems:
            raise BenchError(
                f"{framework}: the loop did not run as scripted: " + "; ".join(problems)
            )


@dataclass(slots=True)
class Proof:
    """A checked run: its wall time and the model-call stamps (round boundaries)."""

    elapsed_ns: int
    stamps: list[int] = field(default_factory=list)


class Framework(Protocol):
    """What a framework adapter module provides (see ``bench.frameworks``)."""

    name: str
    label: str

    def version(self) -> str: ...

    async def run(self, script: Script) -> Any:
        """Run one loop driven by ``script`` with a tool of kind ``script.tool``; return the
        final text."""
        ...


async def timed_run(
    fw: Framework, tool_rounds: int, calls_per_round: int = 1, tool: ToolKind = "sync"
) -> Proof:
    """One complete, checked run of ``fw`` (its tool of kind ``tool``)."""
    script = Script(tool_rounds, calls_per_round, tool)
    clock = _clock[0]
    start = clock()
    final = await fw.run(script)
    elapsed = clock() - start
    script.check(fw.name, final)
    return Proof(elapsed, script.stamps)


@dataclass(slots=True)
class Summary:
    median: float
    min: float
    max: float
    n: int

    def as_dict(self) -> dict[str, float | int]:
        return {"median": self.median, "min": self.min, "max": self.max, "n": self.n}


def summarize(values: Sequence[float]) -> Summary:
    if not values:
        raise ValueError("no samples")
    return Summary(statistics.median(values), min(values), max(values), len(values))


def growth_ratio(stamps: Sequence[int], window: int = 10) -> float:
    """Mean duration of the last ``window`` tool rounds over the first ``window``.

    Round ``k`` lasts from model call ``k`` to model call ``k + 1`` (stamped by the fake model),
    so each covers one full tool round trip: reply handling, tool execution, history append and
    the next request.  The final text round is not a tool round and is left out.
    """
    rounds = [b - a for a, b in pairwise(stamps)]
    if len(rounds) < 2 * window:
        raise ValueError(f"need at least {2 * window} tool rounds, got {len(rounds)}")
    return (sum(rounds[-window:]) / window) / (sum(rounds[:window]) / window)
