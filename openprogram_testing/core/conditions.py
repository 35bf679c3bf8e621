"""Steering by what the agent does: conditions on the run so far, and what a schedule saw.

An index (``after_tool(1)``) breaks when the agent changes its plan; a test that means "when it
tries to book, the user says wait" says so with a condition::

    schedule.when("book_flight", "Wait - not that one.", args={"seats": 2}, nth=1)
    schedule.when(lambda calls: len(calls) > 3, "You are going round in circles.")

A condition is checked right after each executed call of a run (where ``after_tool`` entries are
checked): a tool name, with ``args`` compared as ``assert_trajectory(args="subset")`` compares
them (the listed keys; values may be ``{$regex: ...}``, ``{$approx: ...}``, compiled patterns or
callables) and ``nth`` (1-based: the entry fires right after the n-th call that fits), or a
predicate over the calls the run made so far.  Non-JSON arguments fit no ``args``.

``RunWatch`` is what the schedule knows of one run, fed by the run's events (``run_loop`` and
``run_exec`` feed them): the calls it executed, its last reply and, when a simulated user needs
it, its messages.  ``SteeringNotFired`` is the failure for entries a run never reached.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeAlias

from openprogram.events import AgentStart, MessageEnd
from openprogram.texts import clip
from openprogram.types import AssistantMessage, Message, ToolCall

from .matchers import ExpectedCall, MadeCall, arguments_difference, expected_calls


class Described(Protocol):
    """A schedule entry as a failure names it (``steering.ScheduleEntry``)."""

    def describe(self) -> str: ...


Predicate: TypeAlias = Callable[[Sequence[MadeCall]], Any]
"""``predicate(calls)``: the calls the run executed so far (the latest last) -> fire or not."""


@dataclass(frozen=True, slots=True, eq=False)
class Condition:
    """When a ``when`` entry fires: right after the ``nth`` executed call that fits ``call`` (a
    tool name and optional ``args``), or right after the first call at which ``predicate`` holds
    for the calls so far."""

    call: ExpectedCall | None = None
    nth: int = 1
    predicate: Predicate | None = None

    @classmethod
    def build(cls, condition: str | Predicate, args: Any, nth: int) -> Condition:
        """Check the builder's arguments once, so a bad pattern fails where it is written."""
        if isinstance(nth, bool) or not isinstance(nth, int) or nth < 1:
            raise ValueError(f"nth must be an int >= 1 (the 1st fitting call is 1), got {nth!r}")
        if isinstance(condition, str):
            if not condition:
                raise ValueError("when() needs a tool name or a predicate, got ''")
            entry: dict[str, Any] = {"name": condition}
            if args is not None:
                entry["args"] = args
            return cls(call=expected_calls([entry])[0], nth=nth)
        if callable(condition):
            if args is not None or nth != 1:
                raise TypeError("args= and nth= belong to a tool name, not to a predicate")
            if _is_async(condition):
                raise TypeError(
                    f"when() takes a plain function of the calls so far, got the async "
                    f"{_name(condition)}: its coroutine would be taken for a yes; make it a def"
                )
            return cls(predicate=condition)
        raise TypeError(f"when() takes a tool name or a predicate, got {condition!r}")

    def fits(self, made: MadeCall) -> bool:
        """Whether ``made`` is a call this condition counts (tool name and arguments)."""
        want = self.call
        if want is None:
            return False
        return made.name == want.name and arguments_difference(want, made, "subset") is None

    def holds(self, calls: Sequence[MadeCall]) -> bool:
        """The predicate's verdict on the calls so far, given as a copy (a predicate that
        clears or edits its list leaves the schedule's record of the run whole); a predicate
        that raises, or returns an awaitable, is an error naming it (a broken test, not a silent
        "no", nor a coroutine taken for "yes")."""
        assert self.predicate is not None
        try:
            verdict = self.predicate(list(calls))
        except Exception as exc:
            raise SteeringConditionError(
                f"the steering condition {_name(self.predicate)} raised {type(exc).__name__}: "
                f"{clip(str(exc), 200)}"
            ) from exc
        if inspect.isawaitable(verdict):
            if inspect.iscoroutine(verdict):
                verdict.close()  # never awaited: closed, so no "never awaited" warning follows
            raise SteeringConditionError(
                f"the steering condition {_name(self.predicate)} returned an awaitable: a "
                "condition is a plain function of the calls so far (it is judged between two "
                "tool calls, where nothing may be awaited)"
            )
        return bool(verdict)

    def describe(self) -> str:
        if self.predicate is not None:
            return f"when({_name(self.predicate)})"
        assert self.call is not None
        shown = self.call.describe().removesuffix(" (any arguments)")
        return f"when({shown}" + (f", nth={self.nth})" if self.nth != 1 else ")")


class SteeringConditionError(RuntimeError):
    """A condition could not be judged: its predicate raised, or the schedule never saw the run's
    events (``schedule.configure`` on a loop nobody feeds ``schedule.observe``)."""


@dataclass(slots=True)
class RunWatch:
    """What a schedule saw of one run: the calls of the latest model reply, the calls executed
    so far (as ``MadeCall``), the latest reply, and the run's messages when kept."""

    batch: list[ToolCall] = field(default_factory=list)
    made: list[MadeCall] = field(default_factory=list)
    reply: AssistantMessage | None = None
    history: list[Message] = field(default_factory=list)
    counts: dict[int, int] = field(default_factory=dict)
    seen: bool = False
    path: tuple[str, ...] = ()

    def see(self, event: Any, keep_history: bool) -> None:
        """Take one event of the run (cheap: a type test, and work only at message ends)."""
        kind = type(event)
        if kind is MessageEnd:
            message = event.message
            if keep_history:
                self.history.append(message)
            if isinstance(message, AssistantMessage):
                self.reply = message
                self.batch = message.tool_calls
        elif kind is AgentStart:  # a schedule reused for another run starts it afresh
            self.batch, self.made, self.reply, self.history = [], [], None, []
            self.counts = {}
        self.seen = True

    def executed(self, call_index: int, lane: str) -> MadeCall | None:
        """Record the call at ``call_index`` of the latest reply as executed; ``None`` when the
        run's events were never seen."""
        if not self.seen or call_index >= len(self.batch):
            return None
        call = self.batch[call_index]
        made = MadeCall(
            len(self.made), call.name, call.arguments, call.raw_arguments, call.id, lane
        )
        self.made.append(made)
        return made


class SteeringNotFired(AssertionError):
    """Schedule entries no run reached (an index past the calls made, a condition never met, a
    dialogue line never answered).  ``entries`` are the entries, ``calls`` what each run the
    schedule saw executed (``{run path: [MadeCall, ...]}``, ``""`` for the outermost run).  An
    entry that may legitimately not fire is built with ``required=False`` (YAML
    ``optional: true``)."""

    def __init__(self, entries: Sequence[Described], calls: Mapping[str, Sequence[MadeCall]]):
        self.entries = list(entries)
        self.calls = {k: list(v) for k, v in calls.items()}
        lines = [
            f"{len(self.entries)} steering entr{'y' if len(self.entries) == 1 else 'ies'} never "
            "fired (mark one required=False / optional: true if it may legitimately not fire):"
        ]
        for e in self.entries:
            label = getattr(e, "label", None)
            lines.append(f"  - {label + ': ' if label else ''}{e.describe()}")
        lines.append(calls_text(self.calls))
        super().__init__("\n".join(lines))


CALLS_SHOWN = 12
"""How many calls of a run a failure lists (the first ones and the last few, then the count)."""


def calls_text(calls: Mapping[str, Sequence[MadeCall]]) -> str:
    """The calls each run executed, a few per run: a run of thousands stays a short message."""
    if not calls:
        return "the schedule saw no executed call"
    out: list[str] = []
    for path, made in calls.items():
        where = f"run {path}" if path else "the run"
        out.append(f"{where} executed {len(made)} call(s)" + (":" if made else ""))
        shown = list(made) if len(made) <= CALLS_SHOWN else [*made[:8], *made[-3:]]
        for k, m in enumerate(shown):
            if len(made) > CALLS_SHOWN and k == 8:
                out.append(f"    ... {len(made) - 11} more")
            out.append(f"    {m.describe()}")
    return "\n".join(out)


def _is_async(fn: Any) -> bool:
    """An ``async def`` function, or an object whose ``__call__`` is one (a partial of either
    is unwrapped by ``inspect``)."""
    return inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
        getattr(fn, "__call__", None)  # noqa: B004 - the method itself, not callable()
    )


def _name(fn: Any) -> str:
    return str(getattr(fn, "__qualname__", None) or repr(fn))


__all__ = [
    "CALLS_SHOWN",
    "Condition",
    "Predicate",
    "RunWatch",
    "SteeringConditionError",
    "SteeringNotFired",
    "calls_text",
]
