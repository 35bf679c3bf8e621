"""A trace split into rounds: what arrived before each model call, the reply, and the tool
results it led to.  The HTML record and the behaviour definitions both read traces this way, so
"round" means the same thing in both (one model call and the tool batch it requested)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram.events import (
    MessageEnd,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnStart,
)
from openprogram.types import AssistantMessage, ToolResultMessage, UserMessage

if TYPE_CHECKING:
    from ..trace import LoopTrace


@dataclass(slots=True)
class Arrival:
    """A user message the loop delivered before a model call: the ``prompt``, a ``steering``
    message, a ``follow_up``, or ``user`` when the trace cannot tell which."""

    message: UserMessage
    kind: str
    event_index: int


@dataclass(slots=True)
class ToolRun:
    """One tool call of a round as it executed (or was skipped)."""

    index: int
    result: ToolResultMessage
    start_index: int | None
    end_index: int
    updates: int = 0


@dataclass(slots=True)
class Round:
    """One round: arrivals, then one model reply, then its tool batch."""

    index: int
    start_index: int
    end_index: int
    arrivals: list[Arrival] = field(default_factory=list)
    reply: AssistantMessage | None = None
    reply_index: int | None = None
    tools: list[ToolRun] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return len(self.reply.tool_calls) if self.reply is not None else 0

    @property
    def executed(self) -> list[ToolRun]:
        """The calls that ran (not skipped)."""
        return [t for t in self.tools if not t.result.skipped]

    @property
    def skipped(self) -> list[ToolRun]:
        return [t for t in self.tools if t.result.skipped]


def arrival_kind(trace: LoopTrace, message: UserMessage) -> str:
    """``prompt``, ``steering``, ``follow_up`` or ``user`` (a message of unknown origin)."""
    if trace.prompts is not None and any(p is message for p in trace.prompts):
        return "prompt"
    for delivery in trace.deliveries:
        if delivery.message is message:
            return str(delivery.kind)
    if trace.schedule is not None:
        kind = trace.schedule.kind_of(message)
        if kind is not None:
            return str(kind)
    return "user"


def split_rounds(trace: LoopTrace) -> list[Round]:
    """The rounds of ``trace`` in order (an empty list for a run that never started a round)."""
    rounds: list[Round] = []
    current: Round | None = None
    starts: dict[str, int] = {}
    updates: dict[str, int] = {}
    for i, event in enumerate(trace.events):
        if isinstance(event, TurnStart):
            current = Round(len(rounds), i, i)
            rounds.append(current)
            starts.clear()
            updates.clear()
            continue
        if current is None:
            continue
        current.end_index = i
        if isinstance(event, MessageEnd):
            message = event.message
            if isinstance(message, UserMessage):
                current.arrivals.append(Arrival(message, arrival_kind(trace, message), i))
            elif isinstance(message, AssistantMessage) and current.reply is None:
                current.reply = message
                current.reply_index = i
        elif isinstance(event, ToolExecutionStart):
            starts[event.tool_call_id] = i
        elif isinstance(event, ToolExecutionUpdate):
            updates[event.tool_call_id] = updates.get(event.tool_call_id, 0) + 1
        elif isinstance(event, ToolExecutionEnd):
            current.tools.append(
                ToolRun(
                    len(current.tools),
                    event.result,
                    starts.get(event.tool_call_id),
                    i,
                    updates.get(event.tool_call_id, 0),
                )
            )
    return rounds


def child_traces(trace: Any) -> Iterator[tuple[Any, LoopTrace]]:
    """The nested runs of a trace tree as ``(node, trace)`` pairs, whatever shape the tree
    node has (a ``LoopTrace`` itself, or a node carrying one in ``trace``); nothing for a flat
    ``LoopTrace``."""
    for child in getattr(trace, "children", None) or ():
        inner = getattr(child, "trace", child)
        if hasattr(inner, "events"):
            yield child, inner


__all__ = ["Arrival", "Round", "ToolRun", "arrival_kind", "child_traces", "split_rounds"]
