"""Deterministic steering and follow-up injection.

A ``SteeringSchedule`` says *when* user messages reach a running loop::

    schedule = (
        SteeringSchedule()
        .after_tool(1, "stop, use the cache instead")   # after the 2nd executed tool call
        .before_round(2, "remember: metric units")       # queued for the start of round 2
        .follow_up("now summarise")                      # when the model would finish
    )
    trace = await run_loop(provider, "go", tools=[...], schedule=schedule)

It answers the loop's ``get_steering_messages`` / ``get_follow_up_messages`` polls.  To know
*which* poll it is answering, it watches the run's events (``observe``; ``run_loop`` feeds it):
the core loop (``openprogram.loop``) polls steering

- once after the prompts (before round 0): the last event seen is the prompt's ``message_end``
  (or ``turn_start`` when there is no prompt);
- after every executed tool call: the last event is the result's ``message_end``;
- after every round when another round is possible (``iterations < cap``) and the batch did not
  already hand back steering: the last event is ``turn_end``;

and polls follow-ups when the model finished and another round is possible.  Skipped calls are
never followed by a poll, so ``after_tool(k)`` counts executed calls only.

Rounds and call indices are 0-based.  A schedule is meant for one run; ``delivered`` lists what
it handed to the loop (a message handed over in the run's final round may still end up in the
run's ``undelivered`` list — the loop reports it, it is never lost) and ``pending`` lists the
entries the run never reached.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from openprogram.events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    MessageEnd,
    ToolExecutionEnd,
    TurnEnd,
    TurnStart,
)
from openprogram.loop import LoopConfig, effective_cap
from openprogram.types import AssistantMessage, ToolResultMessage, UserMessage

MessageLike: TypeAlias = str | UserMessage
"""A scheduled message: a plain string becomes ``UserMessage(content=...)``."""

EntryKind: TypeAlias = Literal["after_tool", "after_call", "before_round", "follow_up"]
DeliveryKind: TypeAlias = Literal["steering", "follow_up"]

_Source: TypeAlias = Callable[
    [], "Awaitable[Sequence[UserMessage | str]] | Sequence[UserMessage | str]"
]


@dataclass(slots=True, eq=False)
class ScheduleEntry:
    """One scheduled injection.  ``describe()`` gives ``after_tool(1)``-style text for reports."""

    kind: EntryKind
    messages: list[UserMessage]
    tool: int | None = None
    round: int | None = None
    index: int | None = None

    def describe(self) -> str:
        if self.kind == "after_tool":
            where = f"after_tool({self.tool})"
        elif self.kind == "after_call":
            where = f"after_call(round={self.round}, index={self.index})"
        elif self.kind == "before_round":
            where = f"before_round({self.round})"
        else:
            where = "follow_up"
        texts = ", ".join(repr(_short(m.text)) for m in self.messages)
        return f"{where}: {texts}"


@dataclass(frozen=True, slots=True)
class Delivery:
    """A message the schedule handed to the loop.

    - ``kind``: ``"steering"`` (answered ``get_steering_messages``) or ``"follow_up"``.
    - ``after_tool``: global 0-based index of the executed call after which it was handed over
      (``None`` for before-round steering and follow-ups); ``call_index`` is that call's index in
      its round.
    - ``round``: the 0-based round at whose start the loop delivers it (round 0 = with the prompt).
    - ``entry``: the schedule entry that produced it (``None`` for messages of a hook that was
      already installed in the config and is chained by ``configure``).
    """

    message: UserMessage
    kind: DeliveryKind
    after_tool: int | None
    round: int
    call_index: int | None = None
    entry: ScheduleEntry | None = None


@dataclass(slots=True)
class _State:
    """What the schedule has seen of the current run."""

    started: bool = False
    round: int = -1
    executed: int = 0  # executed (non-skipped) tool calls so far, whole run
    call_in_round: int = 0  # tool results seen in the current round (skipped ones included)
    batch_size: int = 0  # tool calls of the current round's assistant message
    last: str = ""  # kind of the last observed event that matters for polls
    round_steering: bool = False  # steering was handed over during the current batch


class SteeringSchedule:
    """Deliver user messages at chosen points of a loop run (see the module docstring).

    Builder methods return ``self`` so entries chain.  Several entries due at the same poll are
    delivered together, in the order they were added.
    """

    def __init__(self) -> None:
        self.entries: list[ScheduleEntry] = []
        self.delivered: list[Delivery] = []
        self._done: set[int] = set()
        self._state = _State()
        self._mode: str = "skip"
        self._cap: int = effective_cap(None)
        self._chained_steering: _Source | None = None
        self._chained_follow_up: _Source | None = None

    # -- building ---------------------------------------------------------------------------
    def after_tool(self, k: int, message: MessageLike | Sequence[MessageLike]) -> SteeringSchedule:
        """Hand ``message`` to the loop right after the ``k``-th executed tool call of the run
        (0-based, global across rounds; skipped calls are not counted)."""
        self._add(ScheduleEntry("after_tool", _messages(message), tool=_index(k, "k")))
        return self

    def after_call(
        self, round: int, index: int, message: MessageLike | Sequence[MessageLike]
    ) -> SteeringSchedule:
        """Hand ``message`` over right after call ``index`` of round ``round`` (both 0-based)."""
        self._add(
            ScheduleEntry(
                "after_call",
                _messages(message),
                round=_index(round, "round"),
                index=_index(index, "index"),
            )
        )
        return self

    def before_round(
        self, round: int, message: MessageLike | Sequence[MessageLike]
    ) -> SteeringSchedule:
        """Queue ``message`` so it is delivered at the start of round ``round`` (round 0: with the
        prompt).  If steering already ends the previous round's batch, it travels with it."""
        self._add(ScheduleEntry("before_round", _messages(message), round=_index(round, "round")))
        return self

    def follow_up(self, message: MessageLike | Sequence[MessageLike]) -> SteeringSchedule:
        """Deliver ``message`` as a follow-up the next time the model finishes.  Each call is one
        follow-up batch: ``.follow_up("a").follow_up("b")`` continues the run twice."""
        self._add(ScheduleEntry("follow_up", _messages(message)))
        return self

    def _add(self, entry: ScheduleEntry) -> None:
        self.entries.append(entry)

    # -- reporting --------------------------------------------------------------------------
    @property
    def pending(self) -> list[ScheduleEntry]:
        """Entries never handed to the loop (the run did not reach their point)."""
        return [e for e in self.entries if id(e) not in self._done]

    @property
    def messages(self) -> list[UserMessage]:
        """Every message handed to the loop, in order."""
        return [d.message for d in self.delivered]

    def kind_of(self, message: UserMessage) -> DeliveryKind | None:
        """``"steering"``/``"follow_up"`` if this exact message object was handed over."""
        for d in self.delivered:
            if d.message is message:
                return d.kind
        return None

    def describe(self) -> str:
        lines = [f"SteeringSchedule ({len(self.entries)} entries, {len(self.delivered)} delivered)"]
        for e in self.entries:
            state = "pending" if id(e) not in self._done else "delivered"
            lines.append(f"  {e.describe()}  [{state}]")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (
            f"SteeringSchedule(entries={len(self.entries)}, delivered={len(self.delivered)}, "
            f"pending={len(self.pending)})"
        )

    # -- wiring -----------------------------------------------------------------------------
    def configure(self, config: LoopConfig) -> LoopConfig:
        """Install the schedule's hooks on ``config`` (in place; also returned).  Hooks already on
        the config are chained: their messages follow the schedule's and are recorded too."""
        if (
            config.get_steering_messages is not None
            and config.get_steering_messages != self._steering
        ):
            self._chained_steering = config.get_steering_messages
        if (
            config.get_follow_up_messages is not None
            and config.get_follow_up_messages != self._follow_up
        ):
            self._chained_follow_up = config.get_follow_up_messages
        config.get_steering_messages = self._steering
        config.get_follow_up_messages = self._follow_up
        self._mode = config.steering_mode
        self._cap = effective_cap(config.max_iterations)
        return config

    def observe(self, event: AgentEvent) -> None:
        """Feed every event of the run, in order (``run_loop`` does).  The schedule needs them to
        tell which poll the loop is making."""
        s = self._state
        if isinstance(event, AgentStart):
            self._state = _State(started=True)
        elif isinstance(event, TurnStart):
            s.round += 1
            s.call_in_round = 0
            s.batch_size = 0
            s.round_steering = False
            s.last = "turn_start"
        elif isinstance(event, MessageEnd):
            message = event.message
            if isinstance(message, AssistantMessage):
                s.batch_size = len(message.tool_calls)
                s.last = "assistant"
            elif isinstance(message, ToolResultMessage):
                s.last = "tool"
            else:
                s.last = "user"
        elif isinstance(event, ToolExecutionEnd):
            s.call_in_round += 1
            if not event.result.skipped:
                s.executed += 1
            s.last = "tool_end"
        elif isinstance(event, TurnEnd):
            s.last = "turn_end"
        elif isinstance(event, AgentEnd):
            s.last = "agent_end"

    # -- the hooks --------------------------------------------------------------------------
    def _require_events(self, hook: str) -> None:
        if not self._state.started:
            raise RuntimeError(
                f"SteeringSchedule.{hook} was polled before the schedule saw the run's "
                "agent_start: "
                "feed it every loop event (run_loop does; with agent_loop call "
                "schedule.observe(event) for each event)"
            )

    async def _steering(self) -> list[UserMessage]:
        self._require_events("get_steering_messages")
        s = self._state
        out: list[UserMessage] = []
        if s.last == "tool":
            k = s.executed - 1
            i = s.call_in_round - 1
            for e in self._due(
                lambda e: (
                    (e.kind == "after_tool" and e.tool == k)
                    or (e.kind == "after_call" and e.round == s.round and e.index == i)
                )
            ):
                out.extend(
                    self._deliver(e, "steering", after_tool=k, round=s.round + 1, call_index=i)
                )
            last_call = s.call_in_round >= s.batch_size
            batch_ends = bool(out) if self._mode == "skip" else last_call
            if batch_ends and (out or s.round_steering) and s.round + 1 < self._cap:
                # The loop will not poll again at the end of this round (it already holds
                # steering): entries for the next round travel with this batch.
                nxt = s.round + 1
                for e in self._due(lambda e: e.kind == "before_round" and e.round == nxt):
                    out.extend(self._deliver(e, "steering", after_tool=None, round=nxt))
            if out:
                s.round_steering = True
            extra = await _call(self._chained_steering)
            out.extend(
                self._record(extra, "steering", after_tool=k, round=s.round + 1, call_index=i)
            )
            if extra:
                s.round_steering = True
            return out
        if s.last == "turn_end":
            target = s.round + 1
        elif s.last in ("user", "turn_start") and s.round == 0:
            target = 0  # the poll right after the prompts
        else:
            target = None
        if target is not None:
            for e in self._due(lambda e: e.kind == "before_round" and e.round == target):
                out.extend(self._deliver(e, "steering", after_tool=None, round=target))
        extra = await _call(self._chained_steering)
        out.extend(
            self._record(
                extra,
                "steering",
                after_tool=None,
                round=target if target is not None else s.round + 1,
            )
        )
        return out

    async def _follow_up(self) -> list[UserMessage]:
        self._require_events("get_follow_up_messages")
        s = self._state
        out: list[UserMessage] = []
        due = self._due(lambda e: e.kind == "follow_up")
        if due:
            out.extend(self._deliver(due[0], "follow_up", after_tool=None, round=s.round + 1))
        extra = await _call(self._chained_follow_up)
        out.extend(self._record(extra, "follow_up", after_tool=None, round=s.round + 1))
        return out

    def _due(self, predicate: Callable[[ScheduleEntry], bool]) -> list[ScheduleEntry]:
        return [e for e in self.entries if id(e) not in self._done and predicate(e)]

    def _deliver(
        self,
        entry: ScheduleEntry,
        kind: DeliveryKind,
        *,
        after_tool: int | None,
        round: int,
        call_index: int | None = None,
    ) -> list[UserMessage]:
        self._done.add(id(entry))
        for m in entry.messages:
            self.delivered.append(Delivery(m, kind, after_tool, round, call_index, entry))
        return list(entry.messages)

    def _record(
        self,
        messages: list[UserMessage],
        kind: DeliveryKind,
        *,
        after_tool: int | None,
        round: int,
        call_index: int | None = None,
    ) -> list[UserMessage]:
        for m in messages:
            self.delivered.append(Delivery(m, kind, after_tool, round, call_index, None))
        return messages


async def _call(source: _Source | None) -> list[UserMessage]:
    if source is None:
        return []
    value: Any = source()
    if inspect.isawaitable(value):
        value = await value
    return _messages(value) if value else []


def _messages(message: Any) -> list[UserMessage]:
    """Normalise once, so the very objects handed to the loop are the ones recorded."""
    if isinstance(message, UserMessage):
        return [message]
    if isinstance(message, str):
        return [UserMessage(content=message)]
    if isinstance(message, Sequence):
        out: list[UserMessage] = []
        for m in message:
            if isinstance(m, UserMessage):
                out.append(m)
            elif isinstance(m, str):
                out.append(UserMessage(content=m))
            else:
                raise TypeError(
                    f"a scheduled message must be a str or UserMessage, got {type(m).__name__}"
                )
        if not out:
            raise ValueError("a schedule entry needs at least one message")
        return out
    raise TypeError(
        f"a scheduled message must be a str or UserMessage, got {type(message).__name__}"
    )


def _index(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int (0-based), got {value!r}")
    return value


def _short(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


__all__ = ["Delivery", "DeliveryKind", "MessageLike", "ScheduleEntry", "SteeringSchedule"]
