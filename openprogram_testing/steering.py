"""Deterministic steering and follow-up injection.

A ``SteeringSchedule`` says *when* user messages reach a running loop::

    schedule = (
        SteeringSchedule()
        .after_tool(1, "stop, use the cache instead")   # after the 2nd executed tool call
        .before_round(2, "remember: metric units")       # queued for the start of round 2
        .follow_up("now summarise")                      # when the model would finish
    )
    trace = await run_loop(provider, "go", tools=[...], schedule=schedule)

It is the loop's steering and follow-up source, and it takes the loop's ``PollPoint``: the loop
says where it polls (round, index of the call just executed, calls executed so far, whether the
batch is finished, which run), so the schedule never re-derives the loop's polling rules.  The
loop polls steering right after the prompts, after every executed call (in ``skip`` mode until
steering arrives in the batch) and at the end of a round when another round is allowed; it polls
follow-ups when the model finished.  Skipped calls are never followed by a poll, so
``after_tool(k)`` counts executed calls only.

Runs of a ``Runtime``: every entry may target a nested run by the path of tool names that led to
it (``run="summarize_cities"``: the run started by a ``summarize_cities`` call of the outermost
run; ``run="plan/summarize_cities"`` one level deeper).  The default is the outermost run.  An
entry is delivered once, in the first matching run that reaches its point.

Rounds and call indices are 0-based.  ``delivered`` lists what the schedule handed to the loop (a
message handed over in a run's final round may still end up in the run's ``undelivered`` list:
the loop reports it, it is never lost) and ``pending`` lists the entries no run reached.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from openprogram import PollPoint, RunInfo
from openprogram.loop import LoopConfig, effective_cap
from openprogram.runs import wants_poll_point
from openprogram.texts import clip
from openprogram.types import UserMessage, user_messages

MessageLike: TypeAlias = str | UserMessage
"""A scheduled message: a plain string becomes ``UserMessage(content=...)``."""

RunPath: TypeAlias = tuple[str, ...]
"""A run addressed by the tool names that led to it: ``()`` is the outermost run,
``("summarize_cities",)`` the run started by its ``summarize_cities`` call."""

RunLike: TypeAlias = str | Sequence[str] | None
"""How callers name a run: ``None``/``""`` (outermost), ``"a/b"`` or ``["a", "b"]``."""

EntryKind: TypeAlias = Literal["after_tool", "after_call", "before_round", "follow_up"]
DeliveryKind: TypeAlias = Literal["steering", "follow_up"]

_Source: TypeAlias = Callable[
    ..., "Awaitable[Sequence[UserMessage | str]] | Sequence[UserMessage | str]"
]


def run_path(run: RunLike) -> RunPath:
    """Normalise a run address (see ``RunLike``) to a tuple of tool names."""
    if run is None:
        return ()
    parts = run.split("/") if isinstance(run, str) else list(run)
    out: list[str] = []
    for part in parts:
        if not isinstance(part, str):
            raise TypeError(f"a run path is made of tool names (str), got {part!r}")
        if part:
            out.append(part)
    return tuple(out)


@dataclass(slots=True, eq=False)
class ScheduleEntry:
    """One scheduled injection.  ``describe()`` gives ``after_tool(1)``-style text for reports."""

    kind: EntryKind
    messages: list[UserMessage]
    tool: int | None = None
    round: int | None = None
    index: int | None = None
    run: RunPath = ()

    def describe(self) -> str:
        if self.kind == "after_tool":
            where = f"after_tool({self.tool})"
        elif self.kind == "after_call":
            where = f"after_call(round={self.round}, index={self.index})"
        elif self.kind == "before_round":
            where = f"before_round({self.round})"
        else:
            where = "follow_up"
        if self.run:
            where += f" in run {'/'.join(self.run)}"
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
    - ``entry``: the schedule entry that produced it (``None`` for messages of a source that was
      already installed and is chained by ``configure``/``attach``).
    - ``run``/``path``: the ``Runtime`` run it was handed to and that run's tool path (``None``
      and ``()`` for a bare ``agent_loop`` run).
    """

    message: UserMessage
    kind: DeliveryKind
    after_tool: int | None
    round: int
    call_index: int | None = None
    entry: ScheduleEntry | None = None
    run: RunInfo | None = None
    path: RunPath = ()


class SteeringSchedule:
    """Deliver user messages at chosen points of a loop run (see the module docstring).

    Builder methods return ``self`` so entries chain.  Several entries due at the same poll are
    delivered together, in the order they were added.  ``run=`` on a builder targets a nested
    ``Runtime`` run by its tool path (see ``RunLike``).
    """

    def __init__(self) -> None:
        self.entries: list[ScheduleEntry] = []
        self.delivered: list[Delivery] = []
        self._done: set[int] = set()
        self._mode: str = "skip"
        self._cap: int | None = None
        self._chained_steering: _Source | None = None
        self._chained_follow_up: _Source | None = None
        self._paths: dict[str, RunPath] = {}
        self._steered_rounds: set[tuple[str | None, int]] = set()

    # -- building ---------------------------------------------------------------------------
    def after_tool(
        self, k: int, message: MessageLike | Sequence[MessageLike], *, run: RunLike = None
    ) -> SteeringSchedule:
        """Hand ``message`` to the loop right after the ``k``-th executed tool call of the run
        (0-based, global across rounds; skipped calls are not counted)."""
        entry = ScheduleEntry("after_tool", _messages(message), tool=_index(k, "k"))
        return self._add(entry, run)

    def after_call(
        self,
        round: int,
        index: int,
        message: MessageLike | Sequence[MessageLike],
        *,
        run: RunLike = None,
    ) -> SteeringSchedule:
        """Hand ``message`` over right after call ``index`` of round ``round`` (both 0-based)."""
        entry = ScheduleEntry(
            "after_call",
            _messages(message),
            round=_index(round, "round"),
            index=_index(index, "index"),
        )
        return self._add(entry, run)

    def before_round(
        self, round: int, message: MessageLike | Sequence[MessageLike], *, run: RunLike = None
    ) -> SteeringSchedule:
        """Queue ``message`` so it is delivered at the start of round ``round`` (round 0: with the
        prompt).  If steering already ends the previous round's batch, it travels with it."""
        entry = ScheduleEntry("before_round", _messages(message), round=_index(round, "round"))
        return self._add(entry, run)

    def follow_up(
        self, message: MessageLike | Sequence[MessageLike], *, run: RunLike = None
    ) -> SteeringSchedule:
        """Deliver ``message`` as a follow-up the next time the model finishes.  Each call is one
        follow-up batch: ``.follow_up("a").follow_up("b")`` continues the run twice."""
        return self._add(ScheduleEntry("follow_up", _messages(message)), run)

    def _add(self, entry: ScheduleEntry, run: RunLike) -> SteeringSchedule:
        entry.run = run_path(run)
        self.entries.append(entry)
        return self

    # -- reporting --------------------------------------------------------------------------
    @property
    def pending(self) -> list[ScheduleEntry]:
        """Entries never handed to the loop (no run reached their point)."""
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

    def path_of(self, run: RunInfo) -> RunPath:
        """The tool path of a ``Runtime`` run this schedule was polled in."""
        return self._path(run)

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
        """Install the schedule as ``config``'s steering and follow-up sources (in place; also
        returned).  Sources already on the config are chained: polled after the schedule, their
        messages are recorded too."""
        self._chain(config.get_steering_messages, config.get_follow_up_messages)
        config.get_steering_messages = self.steering
        config.get_follow_up_messages = self.follow_ups
        self._mode = config.steering_mode
        self._cap = effective_cap(config.max_iterations)
        return config

    def attach(self, runtime: Any) -> Callable[[], None]:
        """Install the schedule on a ``Runtime`` (polled in every run of its ``exec`` calls,
        nested ones included); returns a function that puts the runtime's own sources back.
        The runtime's sources are chained as the runtime itself would poll them."""
        steering, follow_up = runtime.get_steering_messages, runtime.get_follow_up_messages
        self._chain(steering, follow_up)
        runtime.get_steering_messages = self.steering
        runtime.get_follow_up_messages = self.follow_ups
        self._mode = runtime.steering_mode
        self._cap = None  # each exec has its own cap; the loop never polls past it

        def detach() -> None:
            runtime.get_steering_messages = steering
            runtime.get_follow_up_messages = follow_up

        return detach

    def _chain(self, steering: _Source | None, follow_up: _Source | None) -> None:
        if steering is not None and steering != self.steering:
            self._chained_steering = steering
        if follow_up is not None and follow_up != self.follow_ups:
            self._chained_follow_up = follow_up

    # -- the sources ------------------------------------------------------------------------
    async def steering(self, point: PollPoint) -> list[UserMessage]:
        """The loop's steering source: what is due at ``point``, then the chained source's."""
        if point.run is not None and point.run.kind != "exec":
            return await _call(self._chained_steering, point)  # a choices= ask: not a target
        path = self._path(point.run)
        key = (point.run.run_id if point.run is not None else None, point.round)
        out: list[UserMessage] = []
        if point.call_index is not None:
            k = point.calls_in_run - 1
            i = point.call_index
            for e in self._due(
                path,
                lambda e: (
                    (e.kind == "after_tool" and e.tool == k)
                    or (e.kind == "after_call" and e.round == point.round and e.index == i)
                ),
            ):
                out.extend(self._deliver(e, "steering", point, after_tool=k, call_index=i))
            if out:
                self._steered_rounds.add(key)
            # Steering ends this batch (skip mode) or the batch is done: the loop will not poll
            # again at the end of this round, so entries for the next round travel now.
            ends = bool(out) if self._mode == "skip" else point.batch_done
            nxt = point.round + 1
            if ends and key in self._steered_rounds and (self._cap is None or nxt < self._cap):
                for e in self._due(path, lambda e: e.kind == "before_round" and e.round == nxt):
                    out.extend(self._deliver(e, "steering", point, round=nxt))
            extra = await _call(self._chained_steering, point)
            if extra:
                self._steered_rounds.add(key)
            out.extend(self._record(extra, "steering", point, after_tool=k, call_index=i))
            return out
        target = point.round + 1 if point.batch_done else 0
        for e in self._due(path, lambda e: e.kind == "before_round" and e.round == target):
            out.extend(self._deliver(e, "steering", point, round=target))
        extra = await _call(self._chained_steering, point)
        out.extend(self._record(extra, "steering", point, round=target))
        return out

    async def follow_ups(self, point: PollPoint) -> list[UserMessage]:
        """The loop's follow-up source: the next due ``follow_up`` batch, then the chained
        source's messages."""
        if point.run is not None and point.run.kind != "exec":
            return await _call(self._chained_follow_up, point)
        path = self._path(point.run)
        out: list[UserMessage] = []
        due = self._due(path, lambda e: e.kind == "follow_up")
        if due:
            out.extend(self._deliver(due[0], "follow_up", point, round=point.round + 1))
        extra = await _call(self._chained_follow_up, point)
        out.extend(self._record(extra, "follow_up", point, round=point.round + 1))
        return out

    # -- bookkeeping ------------------------------------------------------------------------
    def _path(self, run: RunInfo | None) -> RunPath:
        if run is None or run.parent_id is None:
            return ()
        known = self._paths.get(run.run_id)
        if known is None:
            parent = self._paths.get(run.parent_id, ())
            known = (*parent, run.tool_name or "?")
            self._paths[run.run_id] = known
        return known

    def _due(
        self, path: RunPath, predicate: Callable[[ScheduleEntry], bool]
    ) -> list[ScheduleEntry]:
        return [
            e for e in self.entries if id(e) not in self._done and e.run == path and predicate(e)
        ]

    def _deliver(
        self,
        entry: ScheduleEntry,
        kind: DeliveryKind,
        point: PollPoint,
        *,
        round: int | None = None,
        after_tool: int | None = None,
        call_index: int | None = None,
    ) -> list[UserMessage]:
        self._done.add(id(entry))
        return self._record(entry.messages, kind, point, round, after_tool, call_index, entry=entry)

    def _record(
        self,
        messages: list[UserMessage],
        kind: DeliveryKind,
        point: PollPoint,
        round: int | None = None,
        after_tool: int | None = None,
        call_index: int | None = None,
        *,
        entry: ScheduleEntry | None = None,
    ) -> list[UserMessage]:
        target = point.round + 1 if round is None else round
        path = self._path(point.run)
        for m in messages:
            self.delivered.append(
                Delivery(m, kind, after_tool, target, call_index, entry, point.run, path)
            )
        return list(messages)


async def _call(source: _Source | None, point: PollPoint) -> list[UserMessage]:
    """Poll a chained source as the runtime would: with the point if it takes one; without it
    only in a bare loop or the outermost work run (a source that cannot tell runs apart must not
    take messages meant for the outermost run)."""
    if source is None:
        return []
    if wants_poll_point(source):
        value: Any = source(point)
    elif point.run is None or point.run.outermost:
        value = source()
    else:
        return []
    if inspect.isawaitable(value):
        value = await value
    return _messages(value) if value else []


def _messages(message: Any) -> list[UserMessage]:
    """Normalise once, so the very objects handed to the loop are the ones recorded."""
    out = user_messages(message, "a scheduled message")
    if not out:
        raise ValueError("a schedule entry needs at least one message")
    return out


def _index(value: int, name: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative int (0-based), got {value!r}")
    return value


def _short(text: str, limit: int = 40) -> str:
    return clip(text, limit)


__all__ = [
    "Delivery",
    "DeliveryKind",
    "MessageLike",
    "RunLike",
    "RunPath",
    "ScheduleEntry",
    "SteeringSchedule",
    "run_path",
]
