"""Deterministic steering and follow-up injection.

A ``SteeringSchedule`` says *when* user messages reach a running loop::

    schedule = (
        SteeringSchedule()
        .after_tool(1, "stop, use the cache instead")   # after the 2nd executed tool call
        .before_round(2, "remember: metric units")       # queued for the start of round 2
        .follow_up("now summarise")                      # when the model would finish
    )
    schedule.when("book_flight", "wait, not that one", args={"seats": 2})  # by what it does
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

Conditions (``when``, see ``conditions``) and the simulated user (``simulated_user``, see
``dialogue``) read what the run did: ``run_loop`` and ``run_exec`` feed the schedule each event
(``observe``).  An entry no run reached is a failure: ``assert_complete`` raises
``SteeringNotFired`` naming it (the ``steering`` fixture and the scenario runner call it), unless
the entry was built with ``required=False``.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TypeAlias

from openprogram import PollPoint, RunInfo
from openprogram.loop import LoopConfig, effective_cap
from openprogram.runs import (
    MessageSource,
    SteeringMode,
    polls_source,
    polls_steering,
    wants_poll_point,
)
from openprogram.texts import clip
from openprogram.types import AssistantMessage, Message, UserMessage, user_messages
from openprogram_testing.base import deprecated

from .conditions import Condition, Predicate, RunWatch, SteeringConditionError, SteeringNotFired
from .dialogue import Answer, DialogueMismatch, call_answer, parse_dialogue
from .matchers import MadeCall, Matches

MessageLike: TypeAlias = str | UserMessage
"""A scheduled message: a plain string becomes ``UserMessage(content=...)``."""

RunPath: TypeAlias = tuple[str, ...]
"""A run addressed by the tool names that led to it: ``()`` is the outermost run,
``("summarize_cities",)`` the run started by its ``summarize_cities`` call."""

RunLike: TypeAlias = str | Sequence[str] | None
"""How callers name a run: ``None``/``""`` (outermost), ``"a/b"`` or ``["a", "b"]``."""

EntryKind: TypeAlias = Literal[
    "after_tool", "after_call", "before_round", "follow_up", "when", "user"
]
DeliveryKind: TypeAlias = Literal["steering", "follow_up"]


class RunAddress(str):
    """A run's path as ``tree[...]``, ``run=`` and ``expect.runs`` write it (``"plan/survey"``;
    ``""`` for the outermost run): what ``TraceTree.path`` and ``LoopTrace.path`` hold.

    Before 0.2.0 a run's path was the tuple of tool names (now ``steps``).  Code written then
    compares it with a tuple, or iterates it (``"/".join(node.path)``, ``for step in ...``); as a
    plain string both would quietly change meaning (a comparison that is just ``False``, one
    character per "step").  Until 0.3 they keep the tuple's meaning and warn with a
    ``DeprecationWarning`` naming ``.steps``; everything else is the string's.  The hash is the
    string's, so the path is a key beside ``"a/b"`` (a dict keyed by the old tuples does not
    find it).
    """

    __slots__ = ()

    @property
    def steps(self) -> RunPath:
        """The tool names one by one (``()`` for the outermost run)."""
        return tuple(part for part in str.split(self, "/") if part)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, tuple | list):
            _path_deprecated(self, f"compared with {type(other).__name__} {other!r}")
            return self.steps == tuple(other)
        return str.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = str.__hash__

    def __iter__(self) -> Iterator[str]:
        _path_deprecated(self, "iterated")
        return iter(self.steps)


def _path_deprecated(path: RunAddress, how: str) -> None:
    warnings.warn(
        f"a run's path is the string {str(path)!r} since openprogram-loop 0.2.0; it was {how} "
        f"as the 0.1 tuple of tool names: compare it with {str(path)!r}, or use .steps "
        f"({path.steps!r}) for the tool names (the tuple meaning ends in 0.3)",
        DeprecationWarning,
        stacklevel=3,
    )


def run_path(run: RunLike) -> RunPath:
    """Normalise a run address (see ``RunLike``) to a tuple of tool names."""
    if run is None:
        return ()
    if not isinstance(run, str | list | tuple):  # a number or a mapping is no run address
        raise TypeError(f'a run is named by "a/b" or ["a", "b"] (tool names), got {run!r}')
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
    required: bool = True
    """``False``: the run may legitimately never reach this entry (not a failure)."""
    condition: Condition | None = None
    expect: Matches | None = None
    """A simulated user's line: the pattern the agent's reply must fit."""
    line: int | None = None
    """A simulated user's line: its 0-based position in the dialogue."""
    label: str | None = None
    """Where the entry was written (``steering[2]`` in a scenario file), for failures."""

    def describe(self) -> str:
        if self.condition is not None:
            where = self.condition.describe()
        elif self.kind == "user":
            where = f"simulated user line {self.line}"
            if self.expect is not None:
                where += f" (answers /{_short(self.expect.text, 60)}/)"
        elif self.kind == "after_tool":
            where = f"after_tool({self.tool})"
        elif self.kind == "after_call":
            where = f"after_call(round={self.round}, index={self.index})"
        elif self.kind == "before_round":
            where = f"before_round({self.round})"
        else:
            where = "follow_up"
        if not self.required:
            where += " (optional)"
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
        self._mode: SteeringMode = "skip"
        self._cap: int | None = None
        self._chained_steering: MessageSource | None = None
        self._chained_follow_up: MessageSource | None = None
        self._paths: dict[str, RunPath] = {}
        self._steered_rounds: set[tuple[str | None, int]] = set()
        self._watches: dict[str | None, RunWatch] = {}
        self._answerers: dict[RunPath, Answer] = {}
        self._answered: set[RunPath] = set()  # callable users that said they are done
        self._keep_history = False
        self._hushed: set[RunPath] = set()  # dialogues ended by a mismatch
        self.mismatches: list[DialogueMismatch] = []
        self.polled = False
        """Whether a loop ever polled the schedule (the pytest fixture judges only one that
        ran)."""

    # -- building ---------------------------------------------------------------------------
    def after_tool(
        self,
        k: int,
        message: MessageLike | Sequence[MessageLike],
        *,
        run: RunLike = None,
        required: bool = True,
    ) -> SteeringSchedule:
        """Hand ``message`` to the loop right after the ``k``-th executed tool call of the run
        (0-based, global across rounds; skipped calls are not counted).  ``required=False``:
        a run that makes fewer calls is not a failure (every builder takes it)."""
        entry = ScheduleEntry("after_tool", _messages(message), tool=_index(k, "k"))
        return self._add(entry, run, required)

    def when(
        self,
        condition: str | Predicate,
        message: MessageLike | Sequence[MessageLike],
        *,
        args: Any = None,
        nth: int = 1,
        run: RunLike = None,
        required: bool = True,
    ) -> SteeringSchedule:
        """Hand ``message`` over right after the ``nth`` (1-based) executed call of the tool
        named ``condition`` whose arguments fit ``args`` (the listed keys, with the trajectory
        matchers), or right after the first executed call at which ``condition(calls)`` holds
        for the calls the run made so far (see ``conditions``)."""
        entry = ScheduleEntry("when", _messages(message))
        entry.condition = Condition.build(condition, args, nth)
        return self._add(entry, run, required)

    def simulated_user(
        self, dialogue: Sequence[Any] | Answer, *, run: RunLike = None, required: bool = True
    ) -> SteeringSchedule:
        """Answer the agent when the model finishes, as a user would: each line of a scripted
        dialogue once, in order (a line's ``expect`` must fit the reply it answers), or what
        ``dialogue(last_reply, history)`` returns until it returns ``None`` (see ``dialogue``).
        Scheduled ``follow_up`` entries due at the same point go first."""
        path = run_path(run)
        if callable(dialogue) and not isinstance(dialogue, Sequence):
            if path in self._answerers:
                raise ValueError("one callable simulated user per run")
            self._answerers[path] = dialogue
            self._keep_history = True
            return self
        for k, line in enumerate(parse_dialogue(dialogue)):
            entry = ScheduleEntry("user", line.messages, expect=line.expect, line=k)
            self._add(entry, run, required and line.required)
        return self

    def after_call(
        self,
        round: int,
        index: int,
        message: MessageLike | Sequence[MessageLike],
        *,
        run: RunLike = None,
        required: bool = True,
    ) -> SteeringSchedule:
        """Hand ``message`` over right after call ``index`` of round ``round`` (both 0-based)."""
        entry = ScheduleEntry(
            "after_call",
            _messages(message),
            round=_index(round, "round"),
            index=_index(index, "index"),
        )
        return self._add(entry, run, required)

    def before_round(
        self,
        round: int,
        message: MessageLike | Sequence[MessageLike],
        *,
        run: RunLike = None,
        required: bool = True,
    ) -> SteeringSchedule:
        """Queue ``message`` so it is delivered at the start of round ``round`` (round 0: with the
        prompt).  If steering already ends the previous round's batch, it travels with it."""
        entry = ScheduleEntry("before_round", _messages(message), round=_index(round, "round"))
        return self._add(entry, run, required)

    def follow_up(
        self,
        message: MessageLike | Sequence[MessageLike],
        *,
        run: RunLike = None,
        required: bool = True,
    ) -> SteeringSchedule:
        """Deliver ``message`` as a follow-up the next time the model finishes.  Each call is one
        follow-up batch: ``.follow_up("a").follow_up("b")`` continues the run twice."""
        return self._add(ScheduleEntry("follow_up", _messages(message)), run, required)

    def _add(self, entry: ScheduleEntry, run: RunLike, required: bool) -> SteeringSchedule:
        entry.run = run_path(run)
        entry.required = bool(required)
        self.entries.append(entry)
        return self

    # -- reporting --------------------------------------------------------------------------
    @property
    def pending(self) -> list[ScheduleEntry]:
        """Entries never handed to the loop (no run reached their point)."""
        return [e for e in self.entries if id(e) not in self._done]

    @property
    def unfired(self) -> list[ScheduleEntry]:
        """Required entries no run reached (the lines after a dialogue mismatch are not
        counted: the mismatch is the failure)."""
        return [
            e
            for e in self.pending
            if e.required and not (e.kind == "user" and e.run in self._hushed)
        ]

    def calls_seen(self) -> dict[str, list[MadeCall]]:
        """The calls each run executed, as the schedule saw them, by run path (``""``: the
        outermost run); runs at the same path are listed together."""
        out: dict[str, list[MadeCall]] = {}
        for watch in self._watches.values():
            out.setdefault("/".join(watch.path), []).extend(watch.made)
        return out

    def assert_complete(self) -> None:
        """Raise ``DialogueMismatch`` for the first dialogue line whose expectation the agent's
        reply did not fit, else ``SteeringNotFired`` naming the required entries no run reached
        (and the calls the runs made)."""
        __tracebackhide__ = True
        if self.mismatches:
            raise self.mismatches[0]
        unfired = self.unfired
        if unfired:
            raise SteeringNotFired(unfired, self.calls_seen())

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

    def _chain(self, steering: MessageSource | None, follow_up: MessageSource | None) -> None:
        if steering is not None and steering != self.steering:
            self._chained_steering = steering
        if follow_up is not None and follow_up != self.follow_ups:
            self._chained_follow_up = follow_up

    # -- what the runs do -------------------------------------------------------------------
    def observe(self, run: RunInfo | None, event: Any = deprecated.ONE_ARGUMENT) -> None:
        """Take one event of a run (``run``: the ``Runtime`` run, ``None`` for a bare loop), so
        conditions and the simulated user can read what the run did.  ``run_loop`` and
        ``run_exec`` call it; call it yourself for each event of a loop you run around
        ``configure``.  The signature is a ``Runtime.observe`` observer's (0.1's
        ``observe(event)`` still works until 0.3, warning)."""
        if event is deprecated.ONE_ARGUMENT:
            deprecated.warn("SteeringSchedule.observe(event)", "observe(None, event)")
            run, event = None, run
        if run is not None and run.kind != "exec":
            return
        key = run.run_id if run is not None else None
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = RunWatch(path=self._path(run))
        watch.see(event, self._keep_history)

    def _watch(self, point: PollPoint, path: RunPath) -> RunWatch:
        key = point.run.run_id if point.run is not None else None
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = RunWatch(path=path)
        return watch

    def _fires(self, entry: ScheduleEntry, watch: RunWatch, made: MadeCall | None) -> bool:
        """Whether a ``when`` entry fires after the call just executed (``made``)."""
        condition = entry.condition
        assert condition is not None
        if made is None:
            raise SteeringConditionError(
                f"{entry.describe()}: the schedule never saw this run's events, so it cannot "
                "tell which call was made; run it with run_loop/run_exec (or loop_runner/"
                "exec_runner), or pass each event to schedule.observe"
            )
        if condition.predicate is not None:
            return condition.holds(watch.made)
        if not condition.fits(made):
            return False
        count = watch.counts[id(entry)] = watch.counts.get(id(entry), 0) + 1
        return count == condition.nth

    # -- the sources ------------------------------------------------------------------------
    async def steering(self, point: PollPoint) -> list[UserMessage]:
        """The loop's steering source: what is due at ``point``, then the chained source's."""
        if point.run is not None and point.run.kind != "exec":
            return await _call(self._chained_steering, point)  # a choices= ask: not a target
        self.polled = True
        path = self._path(point.run)
        key = (point.run.run_id if point.run is not None else None, point.round)
        out: list[UserMessage] = []
        if point.call_index is not None:
            k = point.calls_in_run - 1
            i = point.call_index
            watch = self._watch(point, path)
            made = watch.executed(i, "/".join(path))
            for e in self._due(
                path,
                lambda e: (
                    (e.kind == "after_tool" and e.tool == k)
                    or (e.kind == "after_call" and e.round == point.round and e.index == i)
                    or (e.kind == "when" and self._fires(e, watch, made))
                ),
            ):
                out.extend(self._deliver(e, "steering", point, after_tool=k, call_index=i))
            # The chained source is polled before deciding: what it hands over is queued steering
            # for the loop as much as the schedule's own.
            extra = await _call(self._chained_steering, point)
            if out or extra:
                self._steered_rounds.add(key)
            # When the round has taken steering and the loop will not poll again before the next
            # round (the loop's own rule: ``polls_steering``), entries for that round travel now.
            nxt = point.round + 1
            queued = key in self._steered_rounds
            again = polls_steering(self._mode, not point.batch_done, queued, nxt, self._cap)
            if queued and not again and (self._cap is None or nxt < self._cap):
                for e in self._due(path, lambda e: e.kind == "before_round" and e.round == nxt):
                    out.extend(self._deliver(e, "steering", point, round=nxt))
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
        self.polled = True
        path = self._path(point.run)
        out: list[UserMessage] = []
        due = self._due(path, lambda e: e.kind == "follow_up")
        if due:
            out.extend(self._deliver(due[0], "follow_up", point, round=point.round + 1))
        else:
            out.extend(self._user_says(point, path))
        extra = await _call(self._chained_follow_up, point)
        out.extend(self._record(extra, "follow_up", point, round=point.round + 1))
        return out

    def _user_says(self, point: PollPoint, path: RunPath) -> list[UserMessage]:
        """The simulated user's answer to the run's latest reply: the next dialogue line (if
        the reply fits its expectation), else the callable's answer; nothing once done."""
        if path in self._hushed:
            return []
        lines = self._due(path, lambda e: e.kind == "user")
        answer = self._answerers.get(path)
        if not lines and (answer is None or path in self._answered):
            return []
        watch = self._watch(point, path)
        if lines:
            line = lines[0]
            if line.expect is not None:
                reply = self._reply(watch, line.describe())
                if not line.expect(reply):
                    self._hushed.add(path)
                    say = " ".join(m.text for m in line.messages)
                    run = "/".join(path)
                    self.mismatches.append(
                        DialogueMismatch(line.line or 0, say, line.expect.text, reply, run)
                    )
                    return []
            return self._deliver(line, "follow_up", point, round=point.round + 1)
        assert answer is not None
        history: list[Message] = watch.history
        said = call_answer(answer, self._reply(watch, "the simulated user"), history)
        if not said:
            self._answered.add(path)
            return []
        said_before = sum(1 for e in self.entries if e.kind == "user" and e.run == path)
        entry = ScheduleEntry("user", said, run=path, line=said_before)
        self.entries.append(entry)  # recorded like a line, so deliveries name it
        return self._deliver(entry, "follow_up", point, round=point.round + 1)

    @staticmethod
    def _reply(watch: RunWatch, who: str) -> str:
        if not watch.seen:
            raise SteeringConditionError(
                f"{who}: the schedule never saw this run's events, so it cannot read the "
                "agent's reply; run it with run_loop/run_exec (or loop_runner/exec_runner), or "
                "pass each event to schedule.observe"
            )
        reply: AssistantMessage | None = watch.reply
        return reply.text if reply is not None else ""

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


async def _call(source: MessageSource | None, point: PollPoint) -> list[UserMessage]:
    """Poll a chained source as the runtime would (the outermost-run rule: ``polls_source``),
    with the point if it takes one."""
    if not polls_source(source, point.run):
        return []
    assert source is not None
    value: Any = source(point) if wants_poll_point(source) else source()
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
