"""Who is running and where the loop polls: ``RunInfo``, ``PollPoint`` and the message queues.

``RunInfo`` names one run of the loop started by ``Runtime.exec`` (a *work* run, ``kind="exec"``)
or by its ``choices=`` decision (``kind="choices"``), and links a nested run to the run and the
tool call that started it, so observers can rebuild the tree of runs of one ``exec``.

``PollPoint`` tells a steering or follow-up source where the loop is polling it.  A source
receives one only if it declares a positional parameter (``def source(point): ...``); the loop
decides that once per run (``wants_poll_point``), so a source without the parameter costs nothing
extra.

``MessageQueue`` is the thread-safe queue behind ``Runtime.steer`` and ``Runtime.follow_up``;
``Handover`` is what a run observer is told when a run takes messages from it.
"""

from __future__ import annotations

import inspect
import threading
import types
from collections import deque
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .types import ToolSpec, UserMessage, user_messages

RunKind: TypeAlias = Literal["exec", "choices"]
HookKind: TypeAlias = Literal["steering", "follow_up"]
DrainMode: TypeAlias = Literal["one_at_a_time", "all"]
SteeringMode: TypeAlias = Literal["skip", "after_batch"]
"""What steering that arrives mid-batch does to the rest of the batch: ``"skip"`` answers the
remaining calls without running them, ``"after_batch"`` runs them first."""
STEERING_MODES: tuple[SteeringMode, ...] = ("skip", "after_batch")


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run of the loop started by ``Runtime.exec``.

    - ``run_id``: unique within the process (``"run-1"``, ``"run-2"``, ...);
    - ``parent_id``: the run whose tool body started this one (``None`` for an outermost run);
      for a ``choices`` run, the work run it decides for;
    - ``depth``: 0 for an outermost run, 1 for a run started inside one of its tool calls, ...;
    - ``tool_call_id``/``tool_name``: the tool call of the parent run whose body called
      ``exec`` (``None`` for an outermost run and for ``choices`` runs);
    - ``kind``: ``"exec"`` (the work) or ``"choices"`` (one ask of the ``choices=`` decision);
    - ``tools``: the names of the tools the run offers the model, in menu order (a nested run
      its own menu, a ``choices`` ask its ``choose`` tool), so an observer can tell a call of
      a tool that is not offered from one of a tool that failed;
    - ``system_prompt``, ``tool_choice`` and ``tool_specs``: the rest of what every model call of
      the run is sent besides the conversation (the loop builds them once per run), so an
      observer (a trace snapshot) sees a changed prompt, menu or ``tool_choice`` even when the
      model happens to answer the same.  Left out of equality and hashing: they describe the
      run, they do not name it;
    - ``deferred``: the deferred tools on the run's menu whose schemas its array leaves out
      (``tool_search`` can load them; a loaded one joins the array at the next run), so an
      observer can tell that a call of one of them followed a ``tool_search`` that loaded it.
    """

    run_id: str
    parent_id: str | None = None
    depth: int = 0
    tool_call_id: str | None = None
    tool_name: str | None = None
    kind: RunKind = "exec"
    tools: tuple[str, ...] = ()
    system_prompt: str | None = field(default=None, compare=False)
    tool_choice: str | dict[str, Any] | None = field(default=None, compare=False)
    tool_specs: tuple[ToolSpec, ...] = field(default=(), compare=False)
    deferred: tuple[str, ...] = field(default=(), compare=False)

    @property
    def outermost(self) -> bool:
        """The outermost work run of an ``exec``: the one ``Runtime.steer()``/``follow_up()``
        feed, and the only one a source without a ``PollPoint`` parameter is polled in (such a
        source cannot tell the runs apart)."""
        return self.depth == 0 and self.kind == "exec"


@dataclass(frozen=True, slots=True)
class PollPoint:
    """Where the loop polls a steering or follow-up source (each field is described where it
    is declared, below).

    The loop polls steering right after the prompts, after every executed call (in ``skip``
    mode: until steering arrives in the batch), and at the end of a round when another round is
    allowed and the batch handed nothing back; it polls follow-ups when the model finished and
    another round is allowed.  It never polls when it could not deliver the answer.
    """

    # Which source is polled: steering (after the prompts, after a call, at a round's end) or
    # follow-up (when the model finished).
    hook: HookKind
    # The 0-based round the poll belongs to (the first steering poll belongs to round 0).
    round: int
    # The index in its batch of the call just executed; None when not right after a call.
    call_index: int | None
    # Calls executed so far in this round (skipped and cancelled calls are not counted).
    calls_in_round: int
    # Calls executed so far in this run, across rounds (``after_tool(k)`` counts these).
    calls_in_run: int
    # No call of the round's batch is left to run (False only for the first poll and mid-batch).
    batch_done: bool
    # The run's nesting depth: 0 for the outermost run (``RunInfo.depth``).
    depth: int = 0
    # The ``Runtime`` run being polled; None for a bare ``agent_loop``.
    run: RunInfo | None = None


def poll_point(
    hook: HookKind,
    *,
    round: int,
    calls_in_run: int,
    run: RunInfo | None,
    call_index: int | None = None,
    calls_in_round: int = 0,
    batch_done: bool = True,
) -> PollPoint:
    """The loop's one way to build a ``PollPoint``: by keyword, the depth read from ``run``.
    The defaults are a poll that is not right after a call (``call_index=None``) with the
    batch done; the first steering poll and a mid-batch poll say otherwise."""
    return PollPoint(
        hook=hook,
        round=round,
        call_index=call_index,
        calls_in_round=calls_in_round,
        calls_in_run=calls_in_run,
        batch_done=batch_done,
        depth=run.depth if run is not None else 0,
        run=run,
    )


@dataclass(frozen=True, slots=True)
class Handover:
    """Messages the runtime took from its ``steer()``/``follow_up()`` queue and handed to a
    run, at the poll that took them: ``point`` says where (its ``run``, ``round``,
    ``call_index``, ...), ``kind`` which queue.  The loop delivers them at the start of the next
    round, or reports them ``undelivered`` when the run ends first."""

    point: PollPoint
    messages: tuple[UserMessage, ...]

    @property
    def kind(self) -> HookKind:
        return self.point.hook

    @property
    def run(self) -> RunInfo | None:
        return self.point.run


MessageSource: TypeAlias = Callable[
    ..., "Awaitable[Sequence[UserMessage | str]] | Sequence[UserMessage | str]"
]
"""A steering or follow-up source: ``() -> messages`` or ``(point: PollPoint) -> messages``, sync
or async, returning user messages or plain strings."""

_POSITIONAL = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.VAR_POSITIONAL,
)
_CO_VARARGS = inspect.CO_VARARGS


def wants_poll_point(source: Callable[..., Any] | None) -> bool:
    """Whether ``source`` declares a positional parameter, i.e. is called with a ``PollPoint``.

    Plain functions and bound methods are answered from their code object (no ``inspect``);
    anything else through ``inspect.signature`` (an uninspectable callable gets no point).
    """
    if source is None:
        return False
    if type(source) is types.FunctionType:
        code = source.__code__
        return code.co_argcount > 0 or bool(code.co_flags & _CO_VARARGS)
    if type(source) is types.MethodType and type(source.__func__) is types.FunctionType:
        code = source.__func__.__code__
        return code.co_argcount > 1 or bool(code.co_flags & _CO_VARARGS)
    try:
        params = inspect.signature(source).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.kind in _POSITIONAL for p in params)


def check_steering_mode(mode: object) -> SteeringMode:
    """``mode`` if it is a ``SteeringMode``; else a ``ValueError`` listing the modes."""
    if mode not in STEERING_MODES:
        allowed = " or ".join(repr(m) for m in STEERING_MODES)
        raise ValueError(f"steering_mode must be {allowed}, got {mode!r}")
    return mode


def polls_steering(
    mode: SteeringMode, after_call: bool, steering_queued: bool, next_round: int, cap: int | None
) -> bool:
    """Whether the loop polls its steering source (it has one, the batch was not stopped) at
    one of its polling places within a round: right after an executed call (``after_call``)
    or at the round's end, with ``steering_queued`` saying whether the round has taken
    steering so far.

    After a call it polls unless steering is queued in ``"skip"`` mode (the rest of the batch
    is skipped: nothing is left to poll after).  At the round's end it polls only when nothing
    is queued (what is queued starts the next round) and ``next_round`` is allowed under the
    round ``cap`` (never dequeue what cannot be delivered; ``None``: no cap known).  The loop
    decides here, and ``openprogram_testing``'s steering schedule asks the same question to
    know which poll is a round's last."""
    if steering_queued and (mode == "skip" or not after_call):
        return False
    return after_call or cap is None or next_round < cap


def polls_source(source: Callable[..., Any] | None, run: RunInfo | None) -> bool:
    """The outermost-run rule: whether a steering or follow-up ``source`` is polled in ``run``.
    In a bare loop (``run=None``) and in the outermost work run, always; in any other run (a
    nested ``exec``, a ``choices`` ask) only if it takes a ``PollPoint``: a source that cannot
    tell the runs apart would take messages meant for the outermost run."""
    if source is None:
        return False
    return run is None or run.outermost or wants_poll_point(source)


class MessageQueue:
    """A thread-safe FIFO of user messages with a drain mode: ``"one_at_a_time"`` hands one
    message per poll, ``"all"`` hands everything queued.  ``take`` is what a run polls."""

    __slots__ = ("_items", "_lock", "mode")

    def __init__(self, mode: DrainMode = "one_at_a_time") -> None:
        check_drain_mode(mode)
        self.mode: DrainMode = mode
        self._items: deque[UserMessage] = deque()
        self._lock = threading.Lock()

    def put(self, messages: Iterable[UserMessage]) -> None:
        with self._lock:
            self._items.extend(messages)

    def take(self) -> list[UserMessage]:
        """Remove and return the messages of one poll (none when empty)."""
        if not self._items:
            return []
        with self._lock:
            if self.mode == "all":
                taken = list(self._items)
                self._items.clear()
                return taken
            return [self._items.popleft()] if self._items else []

    def put_back(self, messages: Sequence[UserMessage]) -> None:
        """Return ``messages`` (taken by one poll that could not hand them over) to the front
        of the queue, in their order, ahead of anything queued since."""
        with self._lock:
            self._items.extendleft(reversed(messages))

    def clear(self) -> list[UserMessage]:
        """Remove and return everything queued."""
        with self._lock:
            taken = list(self._items)
            self._items.clear()
            return taken

    def snapshot(self) -> list[UserMessage]:
        with self._lock:
            return list(self._items)

    def __len__(self) -> int:
        return len(self._items)


def check_drain_mode(mode: object) -> None:
    if mode not in ("one_at_a_time", "all"):
        raise ValueError(f"drain mode must be 'one_at_a_time' or 'all', got {mode!r}")


HandoverObserver = Callable[[Handover], Any]
"""Told each ``Handover`` when a run takes messages from the runtime's queues; may be async."""


def with_queue(
    queue: MessageQueue, source: MessageSource | None, told: tuple[HandoverObserver, ...] = ()
) -> MessageSource:
    """A run's source: the configured ``source`` (if any), then one drain of ``queue``.  It
    declares the ``PollPoint`` parameter only when ``source`` does or an observer is to be
    ``told`` what the queue handed over (and where), so a plain run costs the loop no poll
    point."""
    if told:
        return told_source(queue, source, told)
    if source is None:
        return queue.take
    if wants_poll_point(source):

        async def with_point(point: Any) -> list[UserMessage | str]:
            return await then_queue(source(point), queue)

        return with_point

    async def bare() -> list[UserMessage | str]:
        return await then_queue(source(), queue)

    return bare


def told_source(
    queue: MessageQueue, source: MessageSource | None, told: tuple[HandoverObserver, ...]
) -> MessageSource:
    """``with_queue``'s source when observers want each ``Handover`` as it happens: it takes
    the ``PollPoint`` (to say where) and polls ``source`` as ``with_queue`` would.

    An observer that raises fails the run, as an observer of events does (one rule for every
    observer; a warning would let an observer's own check pass unseen): the poll raises, which
    ends the run as a raising steering source does.  Nothing is lost on the way: what this poll
    took from the queue and from ``source`` goes back to the front of the queue, in order
    (``runtime.queued_steering``/``queued_follow_ups``: the next ``exec`` delivers it)."""
    takes_point = wants_poll_point(source)

    async def source_and_queue(point: PollPoint) -> list[UserMessage | str]:
        polled: Any = None if source is None else source(point) if takes_point else source()
        if inspect.isawaitable(polled):
            polled = await polled
        taken = queue.take()
        if taken:
            handover = Handover(point, tuple(taken))
            try:
                for tell in told:
                    outcome = tell(handover)
                    if inspect.isawaitable(outcome):
                        await outcome
            except BaseException:
                from_source = user_messages(polled, "a polled message") if polled else []
                queue.put_back([*from_source, *taken])
                raise
        return [*(polled or ()), *taken]

    return source_and_queue


async def then_queue(polled: Any, queue: MessageQueue) -> list[UserMessage | str]:
    """What a configured source returned (awaited if it is awaitable), then one drain of
    ``queue``: the two sources of ``with_queue`` differ only in how the source is called."""
    if inspect.isawaitable(polled):
        polled = await polled
    return [*(polled or ()), *queue.take()]


__all__ = [
    "STEERING_MODES",
    "DrainMode",
    "Handover",
    "HandoverObserver",
    "HookKind",
    "MessageQueue",
    "MessageSource",
    "PollPoint",
    "RunInfo",
    "RunKind",
    "SteeringMode",
    "check_drain_mode",
    "check_steering_mode",
    "poll_point",
    "polls_source",
    "polls_steering",
    "wants_poll_point",
    "with_queue",
]
