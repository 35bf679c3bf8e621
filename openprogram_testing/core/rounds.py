"""One reading of a trace: its rounds, and where each user message came from.

Every view of a run reads it through this module, so they cannot disagree: the invariant checks,
the timeline and the snapshot (``render``), the HTML record and the behaviour counts
(``report``), and the trace tree working out a run's prompts.

- ``split_rounds(trace)`` decides the round boundaries: a round starts at each ``turn_start``,
  and also where the events would otherwise put two model calls into one round or a message
  outside any round (a malformed trace: the checks report it, the views still show it).
- ``message_origin(trace, message)`` decides where a user message came from: the run's
  ``prompt``, ``steering`` or a ``follow_up`` handed to the loop (by a schedule or by
  ``Runtime.steer``/``follow_up``), or ``user`` when the trace cannot tell.

Messages are matched by identity: the loop delivers the very objects it was handed, and two
equal texts (the same steering sent twice) are still two deliveries.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from openprogram.events import (
    AgentEvent,
    MessageEnd,
    ToolApprovalEnd,
    ToolApprovalStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from openprogram.types import AssistantMessage, ToolCall, ToolResultMessage, UserMessage

Origin: TypeAlias = Literal["prompt", "steering", "follow_up", "user"]
"""Where a user message came from (``user``: the trace cannot tell)."""


class _Handed(Protocol):
    @property
    def message(self) -> UserMessage: ...
    @property
    def kind(self) -> str: ...


class ScheduleReading(Protocol):
    """What reading a trace asks of its steering schedule: which kind (steering or follow-up)
    a handed-over message was."""

    def kind_of(self, message: UserMessage) -> str | None: ...


class ReadableTrace(Protocol):
    """What this module reads of a trace (``LoopTrace`` satisfies it): a protocol, so the
    renderers that ``trace`` itself imports can use it without an import cycle."""

    @property
    def events(self) -> Sequence[AgentEvent]: ...
    @property
    def prompts(self) -> Sequence[UserMessage] | None: ...
    @property
    def deliveries(self) -> Sequence[_Handed]: ...
    @property
    def schedule(self) -> ScheduleReading | None: ...


class Origins:
    """The origin of every user message of one trace, looked up in constant time (built once
    per reading, so a long run is not rescanned per message)."""

    __slots__ = ("_kinds", "_schedule")

    def __init__(self, trace: ReadableTrace) -> None:
        kinds: dict[int, Origin] = {}
        for delivery in trace.deliveries:
            kinds.setdefault(id(delivery.message), _origin(delivery.kind))
        for prompt in trace.prompts or ():
            kinds[id(prompt)] = "prompt"
        self._kinds = kinds
        self._schedule = trace.schedule

    def of(self, message: UserMessage) -> Origin:
        kind = self._kinds.get(id(message))
        if kind is not None:
            return kind
        if self._schedule is not None:  # handed over by a schedule reused across runs
            handed = self._schedule.kind_of(message)
            if handed is not None:
                return _origin(handed)
        return "user"


def message_origin(trace: ReadableTrace, message: UserMessage) -> Origin:
    """``prompt``, ``steering``, ``follow_up`` or ``user`` (a message of unknown origin)."""
    return Origins(trace).of(message)


def _origin(kind: str) -> Origin:
    return "follow_up" if kind == "follow_up" else "steering"


@dataclass(slots=True)
class Arrival:
    """A user message delivered in a round (before its model call, in a well-formed trace)."""

    message: UserMessage
    origin: Origin
    event_index: int


@dataclass(slots=True)
class Posted:
    """A tool result the run appended to the history (its ``message_end``)."""

    message: ToolResultMessage
    event_index: int


@dataclass(slots=True)
class ToolRun:
    """One tool call of a round as it executed (or was skipped): its ``tool_execution_end``."""

    index: int
    result: ToolResultMessage
    start_index: int | None
    end_index: int
    updates: int = 0
    asked: ToolApprovalStart | None = None
    """The call's approval request (``None``: nobody was asked)."""
    decided: ToolApprovalEnd | None = None
    """The decision on it (``None``: nobody was asked, or no decision came)."""


@dataclass(slots=True)
class Round:
    """One round: arrivals, one model reply, then its tool batch.

    ``first_index``/``last_index`` are the first and last events that belong to it (up to the
    next round's first); ``turn_start``/``turn_end`` the event numbers of its turn events
    (``None`` when the trace lacks them) and ``end_results`` what ``turn_end`` listed.
    """

    index: int
    first_index: int
    last_index: int
    turn_start: int | None = None
    turn_end: int | None = None
    end_results: list[ToolResultMessage] | None = None
    arrivals: list[Arrival] = field(default_factory=list)
    reply: AssistantMessage | None = None
    reply_index: int | None = None
    results: list[Posted] = field(default_factory=list)
    tools: list[ToolRun] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        """The reply ended ``error``/``aborted`` (its calls never run)."""
        m = self.reply
        return m is not None and m.stop_reason in ("error", "aborted")

    @property
    def calls(self) -> list[ToolCall]:
        """The calls the reply requested that the loop must answer (none for a failed reply)."""
        m = self.reply
        return m.tool_calls if m is not None and not self.failed else []

    @property
    def executed(self) -> list[ToolRun]:
        """The calls that ran (not skipped)."""
        return [t for t in self.tools if not t.result.skipped]

    @property
    def skipped(self) -> list[ToolRun]:
        return [t for t in self.tools if t.result.skipped]


def split_rounds(trace: ReadableTrace) -> list[Round]:
    """The rounds of ``trace`` in order (an empty list for a run that never started one)."""
    origins = Origins(trace)
    rounds: list[Round] = []
    current: Round | None = None
    starts: dict[str, int] = {}
    updates: dict[str, int] = {}
    asked: dict[str, ToolApprovalStart] = {}
    decided: dict[str, ToolApprovalEnd] = {}
    for i, event in enumerate(trace.events):
        kind = type(event)
        if kind is TurnStart:
            current = Round(len(rounds), i, i, turn_start=i)
            rounds.append(current)
            starts.clear()
            updates.clear()
            asked.clear()
            decided.clear()
            continue
        if kind is MessageEnd:
            assert isinstance(event, MessageEnd)
            message = event.message
            # A message outside any round, or a second model call in one: a round of its own.
            if current is None or (
                isinstance(message, AssistantMessage) and current.reply is not None
            ):
                current = Round(len(rounds), i, i)
                rounds.append(current)
            current.last_index = i
            if isinstance(message, UserMessage):
                current.arrivals.append(Arrival(message, origins.of(message), i))
            elif isinstance(message, AssistantMessage):
                current.reply = message
                current.reply_index = i
            elif isinstance(message, ToolResultMessage):
                current.results.append(Posted(message, i))
            continue
        if current is None:
            continue
        current.last_index = i
        if kind is TurnEnd:
            assert isinstance(event, TurnEnd)
            current.turn_end = i
            current.end_results = list(event.tool_results)
        elif kind is ToolExecutionStart:
            assert isinstance(event, ToolExecutionStart)
            starts[event.tool_call_id] = i
        elif kind is ToolExecutionUpdate:
            assert isinstance(event, ToolExecutionUpdate)
            updates[event.tool_call_id] = updates.get(event.tool_call_id, 0) + 1
        elif kind is ToolExecutionEnd:
            assert isinstance(event, ToolExecutionEnd)
            call_id = event.tool_call_id
            current.tools.append(
                ToolRun(
                    len(current.tools),
                    event.result,
                    starts.get(call_id),
                    i,
                    updates.get(call_id, 0),
                    asked.get(call_id),
                    decided.get(call_id),
                )
            )
        elif kind is ToolApprovalStart:
            assert isinstance(event, ToolApprovalStart)
            asked[event.tool_call_id] = event
        elif kind is ToolApprovalEnd:
            assert isinstance(event, ToolApprovalEnd)
            decided[event.tool_call_id] = event
    return rounds


def opening_prompts(trace: ReadableTrace) -> list[UserMessage]:
    """The user messages that open round 0 before its model call and were not handed over:
    the run's prompts, for a trace recorded without them (a ``Runtime`` run)."""
    rounds = split_rounds(trace)
    if not rounds:
        return []
    first = rounds[0]
    before = first.reply_index if first.reply_index is not None else len(trace.events)
    return [a.message for a in first.arrivals if a.event_index < before and a.origin == "user"]


def child_traces(trace: Any) -> Iterator[tuple[Any, Any]]:
    """The nested runs of a trace tree as ``(node, trace)`` pairs, whatever shape the tree
    node has (a ``LoopTrace`` itself, or a node carrying one in ``trace``); nothing for a flat
    ``LoopTrace``."""
    for child in getattr(trace, "children", None) or ():
        inner = getattr(child, "trace", child)
        if hasattr(inner, "events"):
            yield child, inner


__all__ = [
    "Arrival",
    "Origin",
    "Origins",
    "Posted",
    "ReadableTrace",
    "Round",
    "ScheduleReading",
    "ToolRun",
    "child_traces",
    "message_origin",
    "opening_prompts",
    "split_rounds",
]
