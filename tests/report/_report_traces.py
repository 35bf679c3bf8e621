"""Small runs built for the report tests: each shows one loop behaviour (or a near miss)."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from openprogram.runtime import CHOOSE_TOOL
from openprogram_testing.base.recording import NESTED_RUN, Annotation
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import LoopTrace, run_loop_sync
from openprogram_testing.transport.scripted import (
    ScriptedProvider,
    ScriptedTurn,
    aborted_turn,
    call,
    cut_turn,
    error_turn,
    think,
    turn,
)


def tool(name: str, returns: Any = "ok", *, raises: str | None = None, sleep: float = 0) -> Any:
    async def execute(args: dict[str, Any], on_update: Any = None) -> Any:
        if name == "progress":
            on_update({"step": 1})
        if sleep:
            import asyncio

            await asyncio.sleep(sleep)
        if raises is not None:
            raise RuntimeError(raises)
        return returns

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    return {"spec": {"name": name, "parameters": schema}, "execute": execute}


TOOLS = [tool("a"), tool("b"), tool("c"), tool("boom", raises="kaboom"), tool("slow", sleep=1),
         tool("progress")]  # fmt: skip


def run(
    *turns: ScriptedTurn | str, schedule: SteeringSchedule | None = None, **kw: Any
) -> LoopTrace:
    prompts = kw.pop("prompts", "go")
    return run_loop_sync(
        ScriptedProvider(list(turns)), prompts, tools=TOOLS, schedule=schedule, **kw
    )


def batch(n: int) -> ScriptedTurn:
    return turn(*(call("abc"[i % 3]) for i in range(n)))


def steer_after(k: int) -> SteeringSchedule:
    return SteeringSchedule().after_tool(k, "change of plan")


@dataclass
class Node:
    """A trace-tree node as a tree builder would hand it over: the nested run and its call."""

    trace: LoopTrace
    tool_name: str = "summarize"
    tool_call_id: str = "call_7"


@dataclass
class Tree:
    """A trace with nested runs (``children``), the shape the report reads; each nested run is
    noted on the outer trace (``NESTED_RUN``), as a real tree's recorder notes it."""

    inner: LoopTrace
    children: list[Node] = field(default_factory=list)

    def __post_init__(self) -> None:
        for i, _node in enumerate(self.children):
            note = Annotation(len(self.inner.events), NESTED_RUN, f"run-nested-{i}")
            self.inner.annotations.append(note)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def choose_run(attempts: int) -> LoopTrace:
    """A ``choices=`` decision: the instruction, then ``attempts`` model calls."""
    instruction = f"Pick exactly one of these choices by calling the `{CHOOSE_TOOL}` tool:\n- x"
    choose = {
        "spec": {"name": CHOOSE_TOOL, "parameters": {"type": "object"}},
        "execute": lambda args: "Picked x.",
    }
    turns: list[ScriptedTurn | str] = ["I think x."] * (attempts - 1)
    turns.append(turn(call(CHOOSE_TOOL, {"choice": "x"})))
    turns.append("chosen")
    schedule = SteeringSchedule()
    if attempts > 1:  # the runtime re-asks once the first reply did not pick
        schedule.follow_up(f"You must call the `{CHOOSE_TOOL}` tool with exactly one of: x.")
    return run_loop_sync(ScriptedProvider(turns), instruction, tools=[choose], schedule=schedule)


def stamp() -> float:
    return time.perf_counter()


__all__ = [
    "Node",
    "Tree",
    "aborted_turn",
    "batch",
    "call",
    "choose_run",
    "cut_turn",
    "error_turn",
    "run",
    "steer_after",
    "think",
    "turn",
]  # fmt: skip
