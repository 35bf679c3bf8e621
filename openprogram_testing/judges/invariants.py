"""The loop invariants: what every run of the loop must satisfy, each a named check.

Each check is a function named for the rule it enforces (``skipped_calls_follow_steering``) that
takes a ``LoopTrace`` and returns the ``Violation`` s it finds; ``find_violations`` runs them all
and ``check_invariants`` raises ``InvariantViolation`` with the run's timeline.  Rules keep a
number too (violation messages, ``only=``) because failure texts and scenario files cite it.

``rechunking_keeps_final_messages`` (``check_rechunk_invariance``) needs several runs of the same
script and is the one rule not checked on a single trace.

To add a rule: write ``def my_rule(trace, rounds=None) -> list[Violation]`` here (``rounds`` is
the parsed trace when the caller has it; collect the finds with ``broken = _Broken(number)``)
and register it with ``Invariant`` in ``INVARIANTS`` (the next free number).
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from openprogram.events import (
    AgentEnd,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolApprovalEnd,
    ToolApprovalStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from openprogram.providers.base import Provider
from openprogram.texts import (
    CANCELLED_TEXT,
    NOT_CALLED_TEXT,
    SKIPPED_TEXT,
    SOURCE_FAILED_PREFIX,
    clipped_repr,
)
from openprogram.types import (
    AssistantMessage,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram_testing.base.failures import TraceFailure
from openprogram_testing.core.render import timeline_text
from openprogram_testing.core.rounds import Round, child_traces, split_rounds
from openprogram_testing.core.trace import LoopTrace, run_loop_sync

from .cache_prefix import array_changes, cache_prefix_moves, deferred_in_array


@dataclass(frozen=True)
class Violation:
    """One broken invariant: its number, what is wrong and the offending event numbers.  In a
    trace tree, ``run`` names the run and ``lane`` prefixes its event numbers (``r1#3``) as the
    tree's timeline does."""

    invariant: int
    detail: str
    events: tuple[int, ...] = ()
    run: str = ""
    lane: str = ""

    @property
    def rule(self) -> str:
        """The name of the broken rule (the check function's name)."""
        return RULE_NAMES.get(self.invariant, f"invariant_{self.invariant}")

    def __str__(self) -> str:
        numbers = ", ".join(f"{self.lane}#{i}" for i in self.events)
        where = f" [events {numbers}]" if self.events else ""
        about = DESCRIPTIONS.get(self.invariant, "")
        run = f"in {self.run}: " if self.run else ""
        return f"invariant {self.invariant} ({self.rule}: {about}): {run}{self.detail}{where}"


@dataclass
class _Broken:
    """What one rule check finds, as it finds it: the rule's number is given once, each find is
    ``broken(detail, *event_numbers)``, and ``violations`` is what the check returns."""

    invariant: int
    violations: list[Violation] = field(default_factory=list)

    def __call__(self, detail: str, *events: int) -> None:
        self.violations.append(Violation(self.invariant, detail, events))


class InvariantViolation(TraceFailure):
    """A loop invariant does not hold.  ``violations`` lists every broken one;
    ``invariant`` is the number of the first; ``summary`` names them all."""

    violations: list[Violation]

    def __init__(self, violations: Sequence[Violation], timeline: str = "") -> None:
        numbers = sorted({v.invariant for v in violations})
        plural = "s" if len(numbers) > 1 else ""
        head = f"loop invariant{plural} {', '.join(map(str, numbers))} violated:"
        body = "\n".join(f"  - {v}" for v in violations)
        super().__init__(f"{head}\n{body}", timeline, violations)
        self.invariant = self.violations[0].invariant if self.violations else 0


def _same(a: Any, b: Any) -> bool:
    return a is b or a == b


def _find(haystack: Iterable[tuple[int, Message]], needle: Message) -> list[int]:
    """Event numbers where ``needle`` appears (by identity, else equality)."""
    pairs = list(haystack)
    hits = [i for i, m in pairs if m is needle]
    return hits or [i for i, m in pairs if m == needle]


def _q(text: str, limit: int = 60) -> str:
    return clipped_repr(text, limit)


def run_starts_and_ends_once(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """Exactly one ``agent_start`` (first) and one ``agent_end`` (last), and ``agent_end``
    carries the messages the run emitted."""
    ev = trace.events
    broken = _Broken(1)
    if not ev:
        return [Violation(1, "the trace has no events")]
    starts = [i for i, e in enumerate(ev) if isinstance(e, AgentStart)]
    ends = [i for i, e in enumerate(ev) if isinstance(e, AgentEnd)]
    if len(starts) != 1:
        broken(f"{len(starts)} agent_start events (expected exactly 1)", *starts)
    if not isinstance(ev[0], AgentStart):
        broken(f"the first event is {ev[0].type}, not agent_start", 0)
    if len(ends) != 1:
        broken(f"{len(ends)} agent_end events (expected exactly 1)", *ends)
    if not isinstance(ev[-1], AgentEnd):
        after = tuple(range(ends[0] + 1, len(ev))) if ends else (len(ev) - 1,)
        what = (
            "events after agent_end" if ends else f"the last event is {ev[-1].type}, not agent_end"
        )
        broken(what, *after)
    if ends:
        end = ev[ends[-1]]
        assert isinstance(end, AgentEnd)
        emitted = [e.message for e in ev if isinstance(e, MessageEnd)]
        if len(emitted) != len(end.messages) or not all(
            _same(a, b) for a, b in zip(emitted, end.messages, strict=False)
        ):
            broken(
                f"agent_end carries {len(end.messages)} message(s) but the run emitted "
                f"{len(emitted)} message_end event(s) with different messages",
                ends[-1],
            )
    return broken.violations


def events_pair_up(trace: LoopTrace, rounds: Sequence[Round] | None = None) -> list[Violation]:
    """Turns, messages and tool executions open and close in pairs, never interleaved."""
    broken = _Broken(2)
    turn_open: int | None = None
    msg_open: tuple[int, Message] | None = None
    tool_open: tuple[int, str] | None = None
    for i, e in enumerate(trace.events):
        if isinstance(e, TurnStart):
            if turn_open is not None:
                broken(f"turn_start while the turn started at #{turn_open} is open", turn_open, i)
            turn_open = i
        elif isinstance(e, TurnEnd):
            if turn_open is None:
                broken("turn_end without an open turn", i)
            turn_open = None
        elif isinstance(
            e, MessageStart | MessageUpdate | MessageEnd | ToolExecutionStart | ToolExecutionEnd
        ):
            if turn_open is None:
                broken(f"{e.type} outside any turn (no open turn_start)", i)
        if isinstance(e, MessageStart):
            if msg_open is not None:
                broken(
                    f"message_start while the message started at #{msg_open[0]} is open",
                    msg_open[0],
                    i,
                )
            msg_open = (i, e.message)
        elif isinstance(e, MessageUpdate):
            if msg_open is None or not isinstance(msg_open[1], AssistantMessage):
                broken("message_update outside an assistant message", i)
        elif isinstance(e, MessageEnd):
            if msg_open is None:
                broken(f"message_end ({e.message.role}) without message_start", i)
            elif msg_open[1].role != e.message.role or (
                not isinstance(e.message, AssistantMessage) and not _same(msg_open[1], e.message)
            ):
                broken(
                    f"message_end ({e.message.role}) does not match the message "
                    f"started at #{msg_open[0]} ({msg_open[1].role})",
                    msg_open[0],
                    i,
                )
            msg_open = None
        elif isinstance(e, ToolExecutionStart):
            if tool_open is not None:
                broken(
                    f"tool_execution_start {e.tool_call_id} before tool_execution_end "
                    f"of {tool_open[1]} (started at #{tool_open[0]})",
                    tool_open[0],
                    i,
                )
            tool_open = (i, e.tool_call_id)
        elif isinstance(e, ToolExecutionUpdate):
            if tool_open is None or tool_open[1] != e.tool_call_id:
                broken(f"tool_execution_update for {e.tool_call_id} outside its execution", i)
        elif isinstance(e, ToolExecutionEnd):
            if tool_open is None:
                broken(f"tool_execution_end {e.tool_call_id} without tool_execution_start", i)
            elif tool_open[1] != e.tool_call_id:
                broken(
                    f"tool_execution_end {e.tool_call_id} does not match "
                    f"tool_execution_start {tool_open[1]}",
                    tool_open[0],
                    i,
                )
            tool_open = None
        elif isinstance(e, AgentEnd):
            if msg_open is not None:
                broken(f"message started at #{msg_open[0]} never ended", msg_open[0], i)
            if tool_open is not None:
                broken(
                    f"tool execution {tool_open[1]} started at #{tool_open[0]} never ended",
                    tool_open[0],
                    i,
                )
            if turn_open is not None and e.termination not in ("error", "aborted"):
                broken(
                    f"turn started at #{turn_open} never ended (termination {e.termination})",
                    turn_open,
                    i,
                )
    return broken.violations


def _model_call_events(trace: LoopTrace) -> list[int]:
    """Assistant messages a model call produced: not the ``aborted`` message of a round the
    cancel token stopped before its call, nor the ``error`` message that closes round 0 when a
    steering or follow-up source raised at the first poll (no model was asked)."""
    return [
        i
        for i, e in enumerate(trace.events)
        if isinstance(e, MessageEnd)
        and isinstance(e.message, AssistantMessage)
        and e.message.error_message != NOT_CALLED_TEXT
        and not (e.message.error_message or "").startswith(SOURCE_FAILED_PREFIX)
    ]


def model_calls_within_cap(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """No more model calls (or rounds) than the cap, and ``agent_end`` counts them right."""
    broken = _Broken(3)
    cap = trace.cap
    calls = _model_call_events(trace)
    if len(calls) > cap:
        broken(f"{len(calls)} model calls with cap {cap}", *calls[cap:])
    turns = [i for i, e in enumerate(trace.events) if isinstance(e, TurnStart)]
    if len(turns) > cap:
        broken(f"{len(turns)} rounds with cap {cap}", *turns[cap:])
    ends = [(i, e) for i, e in enumerate(trace.events) if isinstance(e, AgentEnd)]
    if ends:
        i, end = ends[-1]
        if end.model_calls > cap:
            broken(f"agent_end reports {end.model_calls} model calls with cap {cap}", i)
        elif end.model_calls != len(calls):
            broken(
                f"agent_end reports {end.model_calls} model calls but the run "
                f"streamed {len(calls)} model response(s)",
                i,
            )
    if trace.requests is not None and len(trace.requests) > cap:
        broken(f"the provider received {len(trace.requests)} requests with cap {cap}")
    return broken.violations


def every_call_answered_in_order(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """Each call of a non-error assistant message gets exactly one result, in call order,
    before the next assistant message; ``turn_end`` lists the round's results."""
    rounds = split_rounds(trace) if rounds is None else rounds
    broken = _Broken(4)
    outstanding: list[ToolCall] = []
    owner = -1
    for i, e in enumerate(trace.events):
        if not isinstance(e, MessageEnd | AgentEnd):
            continue
        m = e.message if isinstance(e, MessageEnd) else None
        if isinstance(m, AssistantMessage) or isinstance(e, AgentEnd):
            if outstanding:
                missing = ", ".join(f"{c.id} ({c.name})" for c in outstanding)
                nxt = "the next assistant message" if m is not None else "agent_end"
                broken(
                    f"call(s) {missing} of the assistant message at #{owner} got no "
                    f"result before {nxt}",
                    owner,
                    i,
                )
            outstanding = []
            if isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted"):
                outstanding = list(m.tool_calls)
                owner = i
                ids = [c.id for c in outstanding]
                dupes = sorted({x for x in ids if ids.count(x) > 1})
                if dupes:
                    broken(f"the assistant message repeats tool call id(s) {dupes}", i)
        elif isinstance(m, ToolResultMessage):
            if not outstanding:
                broken(
                    f"result for {m.tool_call_id} ({m.tool_name}) answers no outstanding tool call",
                    i,
                )
            elif outstanding[0].id != m.tool_call_id:
                expected = outstanding[0]
                late = any(c.id == m.tool_call_id for c in outstanding)
                why = "out of call order" if late else "for an unknown call id"
                broken(
                    f"result for {m.tool_call_id} ({m.tool_name}) arrives {why}; "
                    f"expected the result of {expected.id} ({expected.name})",
                    owner,
                    i,
                )
                outstanding = [c for c in outstanding if c.id != m.tool_call_id]
            else:
                outstanding.pop(0)
    for r in rounds:
        if r.turn_end is None or r.end_results is None or r.reply is None:
            continue
        got = [p.message for p in r.results]
        if len(got) != len(r.end_results) or not all(
            _same(a, b) for a, b in zip(got, r.end_results, strict=False)
        ):
            broken(
                f"turn_end of round {r.index} lists {len(r.end_results)} result(s), the "
                f"round produced {len(got)}",
                r.turn_end,
            )
    return broken.violations


def skipped_calls_follow_steering(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """In skip mode, steering that arrives mid-batch skips exactly the remaining calls (with the
    loop's skip text) and is delivered right before the next assistant message."""
    rounds = split_rounds(trace) if rounds is None else rounds
    broken = _Broken(5)
    skip_mode = trace.steering_mode == "skip"
    deliveries = trace.deliveries
    for pos, r in enumerate(rounds):
        results = r.results
        skipped = [k for k, p in enumerate(results) if p.message.skipped]
        if not skipped and not skip_mode:
            continue
        if skipped and not skip_mode:
            broken(
                f"round {r.index} skipped calls in steering_mode {trace.steering_mode!r}",
                *(results[k].event_index for k in skipped),
            )
            continue
        # Steering handed over mid-batch in this round (schedule knowledge, when there is one).
        mid = [
            d
            for d in deliveries
            if d.kind == "steering" and d.call_index is not None and d.round == r.index + 1
        ]
        first = skipped[0] if skipped else None
        if first is not None:
            if first == 0:
                broken(
                    f"round {r.index}: the first call was skipped; steering can only "
                    "arrive after an executed call",
                    results[0].event_index,
                )
            wrong = [
                results[k].event_index
                for k in range(first, len(results))
                if not results[k].message.skipped
            ]
            if wrong:
                broken(f"round {r.index}: a call after the first skipped one ran", *wrong)
            for k in skipped:
                i, m = results[k].event_index, results[k].message
                if m.text != SKIPPED_TEXT or not m.is_error:
                    broken(
                        f"skipped result {m.tool_call_id} has text {_q(m.text)} and "
                        f"is_error={m.is_error}; expected {SKIPPED_TEXT!r} with is_error=True",
                        i,
                    )
        if trace.schedule is not None:
            if mid:
                at = min(d.call_index for d in mid if d.call_index is not None)
                expect_skipped = list(range(at + 1, len(r.calls)))
                if skipped != expect_skipped:
                    broken(
                        f"round {r.index}: steering arrived after call {at}, so call(s) "
                        f"{expect_skipped} should be skipped; skipped: {skipped}",
                        *(p.event_index for p in results),
                    )
            elif skipped:
                broken(
                    f"round {r.index}: calls skipped although no steering arrived during the batch",
                    *(results[k].event_index for k in skipped),
                )
        if first is None and not mid:
            continue
        # The steering must open the next round, right before its assistant message.
        nxt = rounds[pos + 1] if pos + 1 < len(rounds) else None
        if nxt is None:
            if trace.termination == "completed" or (
                trace.termination == "max_iterations" and not trace.undelivered
            ):
                broken(
                    f"round {r.index} skipped calls for steering, but the run ended "
                    f"({trace.termination}) without delivering it or reporting it undelivered",
                    *((r.turn_end,) if r.turn_end is not None else ()),
                )
            continue
        if (
            not nxt.arrivals
            or nxt.reply_index is None
            or nxt.arrivals[-1].event_index > nxt.reply_index
        ):
            at_events = tuple(x for x in (nxt.turn_start, nxt.reply_index) if x is not None)
            broken(
                f"round {nxt.index} does not deliver the steering right before its "
                "assistant message",
                *at_events,
            )
            continue
        last_user = max(a.event_index for a in nxt.arrivals)
        between = [
            i
            for i in range(last_user + 1, nxt.reply_index)
            if isinstance(trace.events[i], MessageEnd)
        ]
        if between:
            broken("a message comes between the steering and the next assistant message", *between)
        for d in mid:
            if not any(a.message is d.message for a in nxt.arrivals) and not any(
                u is d.message for u in trace.undelivered
            ):
                broken(
                    f"steering {_q(d.message.text)} from round {r.index} is not "
                    f"delivered at the start of round {nxt.index}",
                    nxt.reply_index,
                )
    return broken.violations


def tool_failures_are_fed_back(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """An unknown tool, invalid arguments or a failing tool gives an ``is_error`` result, and
    the model is called again while the cap allows."""
    rounds = split_rounds(trace) if rounds is None else rounds
    broken = _Broken(6)
    for i, e in enumerate(trace.events):
        if isinstance(e, ToolExecutionEnd) and e.is_error != e.result.is_error:
            broken(
                f"tool_execution_end {e.tool_call_id} says is_error={e.is_error} but its "
                f"result says is_error={e.result.is_error}",
                i,
            )
    known = set(trace.tool_names) if trace.tool_names is not None else None
    # A run that ended by cancellation, or by an exception in a hook (termination "error"
    # without an error message), legitimately stops without another model call.
    last = rounds[-1] if rounds else None
    aborted = trace.termination == "aborted" or (
        trace.termination == "error" and (last is None or not last.failed)
    )
    for pos, r in enumerate(rounds):
        by_id = {p.message.tool_call_id: (p.event_index, p.message) for p in r.results}
        errors = []
        for c in r.calls:
            hit = by_id.get(c.id)
            if hit is None:
                continue  # invariant 4
            i, m = hit
            if m.skipped or m.text == CANCELLED_TEXT:
                continue
            if known is not None and c.name not in known:
                want = f"Tool {c.name} not found"
                if not m.is_error or m.text != want:
                    broken(
                        f"call {c.id} names the unknown tool {c.name!r}; its result should "
                        f"be is_error with {want!r}, got is_error={m.is_error} {_q(m.text)}",
                        i,
                    )
            elif c.raw_arguments is not None and not (
                # Without the menu an unknown tool cannot be told from a known one, and the
                # loop looks a tool up before it reads its arguments.
                known is None and m.is_error and m.text == f"Tool {c.name} not found"
            ):
                if not m.is_error or not m.text.startswith(
                    f'Validation failed for tool "{c.name}"'
                ):
                    broken(
                        f"call {c.id} has invalid argument JSON; its result should be an "
                        f"is_error validation failure, got is_error={m.is_error} {_q(m.text)}",
                        i,
                    )
            if m.is_error:
                errors.append(i)
        if errors and not aborted and r.index + 1 < trace.cap:
            nxt = rounds[pos + 1] if pos + 1 < len(rounds) else None
            if nxt is None or nxt.reply is None:
                broken(
                    f"round {r.index} ended with error result(s) but the model was not "
                    f"called again (cap {trace.cap}, termination {trace.termination})",
                    *errors,
                )
    return broken.violations


def nothing_runs_after_a_failed_message(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """After an ``error``/``aborted`` assistant message no model call follows, none of its
    calls runs and the run ends with the matching termination."""
    broken = _Broken(7)
    ev = trace.events
    for i, e in enumerate(ev):
        if not (isinstance(e, MessageEnd) and isinstance(e.message, AssistantMessage)):
            continue
        m = e.message
        if m.stop_reason not in ("error", "aborted"):
            continue
        ids = {c.id for c in m.tool_calls}
        later = ev[i + 1 :]
        for j, x in enumerate(later, start=i + 1):
            if isinstance(x, MessageStart | MessageEnd) and isinstance(x.message, AssistantMessage):
                broken(f"a model call follows the {m.stop_reason} message at #{i}", i, j)
                break
        ran = [
            j
            for j, x in enumerate(later, start=i + 1)
            if (isinstance(x, ToolExecutionStart | ToolExecutionEnd) and x.tool_call_id in ids)
            or (isinstance(x, ToolExecutionStart) and not ids)
            or (
                isinstance(x, MessageEnd)
                and isinstance(x.message, ToolResultMessage)
                and x.message.tool_call_id in ids
            )
        ]
        if ran:
            broken(
                f"tool calls of the {m.stop_reason} message at #{i} were run or answered", i, *ran
            )
        kinds = [x.type for x in later]
        if kinds[:1] != ["turn_end"] or (isinstance(later[0], TurnEnd) and later[0].tool_results):
            broken(
                f"the {m.stop_reason} message at #{i} must be followed by turn_end with no "
                f"tool results, then agent_end; got {kinds[:3]}",
                i,
                i + 1,
            )
        want = m.stop_reason  # (a failed message's stop reason is the termination's word)
        if trace.termination != want:
            broken(
                f"the run ended on a {m.stop_reason} message but termination is "
                f"{trace.termination!r} (expected {want!r})",
                i,
            )
    return broken.violations


def handed_over_messages_are_accounted_for(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """Every steering/follow-up message handed to the loop is delivered once or reported
    undelivered, and every user message is a prompt or a handed-over message."""
    broken = _Broken(8)
    users = [
        (i, e.message)
        for i, e in enumerate(trace.events)
        if isinstance(e, MessageEnd) and isinstance(e.message, UserMessage)
    ]
    prompts = trace.prompts
    end_at = tuple(i for i, e in enumerate(trace.events) if isinstance(e, AgentEnd))
    if trace.undelivered and trace.termination == "completed":
        broken(
            f"{len(trace.undelivered)} message(s) undelivered although the run completed", *end_at
        )
    for d in trace.deliveries:
        seen = _find(users, d.message)
        held = [u for u in trace.undelivered if u is d.message] or [
            u for u in trace.undelivered if u == d.message
        ]
        if not seen and not held:
            broken(
                f"{d.kind} message {_q(d.message.text)} was handed to the loop "
                f"(for round {d.round}) but neither delivered nor reported undelivered",
                *end_at,
            )
        elif seen and held:
            broken(
                f"{d.kind} message {_q(d.message.text)} is both delivered and reported undelivered",
                *seen,
                *end_at,
            )
        elif len(seen) > 1:
            broken(f"{d.kind} message {_q(d.message.text)} was delivered {len(seen)} times", *seen)
    if prompts is not None:
        handed = [d.message for d in trace.deliveries]
        for i, m in users:
            if not any(p is m for p in prompts) and not any(h is m for h in handed):
                broken(
                    f"user message {_q(m.text)} is neither a prompt nor a message "
                    "handed to the loop",
                    i,
                )
    return broken.violations


def steering_after_a_text_reply_continues(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """Steering queued after a text-only reply causes another model call."""
    rounds = split_rounds(trace) if rounds is None else rounds
    broken = _Broken(9)
    ev = trace.events
    calls = _model_call_events(trace)
    for pos, r in enumerate(rounds):
        m = r.reply
        if m is None or r.failed or m.tool_calls:
            continue
        text_only_at = r.reply_index or 0
        # Steering the schedule handed over after this text-only round.
        queued = [
            d
            for d in trace.deliveries
            if d.kind == "steering" and d.call_index is None and d.round == r.index + 1
        ]
        nxt = rounds[pos + 1] if pos + 1 < len(rounds) else None
        if (
            nxt is not None
            and nxt.arrivals
            and (nxt.reply_index is None or nxt.reply_index < nxt.arrivals[-1].event_index)
        ):
            broken(
                f"user message(s) delivered after the text-only reply at #{text_only_at} "
                "were not followed by a model call",
                *(a.event_index for a in nxt.arrivals),
            )
        for d in queued:
            if any(u is d.message for u in trace.undelivered):
                continue
            seen = [
                i for i, e in enumerate(ev) if isinstance(e, MessageEnd) and e.message is d.message
            ]
            if not seen or not any(c > seen[0] for c in calls):
                broken(
                    f"steering {_q(d.message.text)} queued after the text-only reply at "
                    f"#{text_only_at} did not cause another model call "
                    f"(termination {trace.termination})",
                    text_only_at,
                    *seen,
                )
    return broken.violations


def rechunking_keeps_final_messages(
    make_provider: Callable[[int | None], Provider],
    prompts: Sequence[UserMessage | str] | UserMessage | str,
    *,
    chunk_sizes: Sequence[int | None] = (None, 1, 2, 3, 7),
    make_schedule: Callable[[], Any] | None = None,
    **run_kwargs: Any,
) -> list[LoopTrace]:
    """Run the same script once per chunk size and require identical final messages (a provider
    stream split differently must not change what the loop builds).  ``make_provider(chunk_size)``
    builds a fresh provider (e.g. ``lambda n: ScriptedProvider(turns, chunk_size=n)``);
    ``make_schedule()`` a fresh steering schedule per run.  Each run is also checked against the
    single-trace rules.  Returns the traces; raises ``InvariantViolation`` on a difference."""
    __tracebackhide__ = True
    if not chunk_sizes:
        raise ValueError("chunk_sizes must name at least one chunk size")
    traces: list[LoopTrace] = []
    baseline: list[str] | None = None
    for size in chunk_sizes:
        kwargs = dict(run_kwargs)
        if make_schedule is not None:
            kwargs["schedule"] = make_schedule()
        trace = run_loop_sync(make_provider(size), prompts, **kwargs)
        check_invariants(trace)
        dumped = [
            json.dumps(m.model_dump(mode="json"), sort_keys=True, indent=1) for m in trace.messages
        ]
        if baseline is None:
            baseline = dumped
        elif dumped != baseline:
            diff = "\n".join(
                difflib.unified_diff(
                    "\n".join(baseline).splitlines(),
                    "\n".join(dumped).splitlines(),
                    fromfile=f"chunk_size={chunk_sizes[0]}",
                    tofile=f"chunk_size={size}",
                    lineterm="",
                    n=2,
                )
            )
            raise InvariantViolation(
                [
                    Violation(
                        10,
                        f"final messages with chunk_size={size} differ from "
                        f"chunk_size={chunk_sizes[0]}:\n{diff}",
                    )
                ],
                timeline_text(trace),
            )
        traces.append(trace)
    return traces


check_rechunk_invariance = rechunking_keeps_final_messages
"""The name the package exports (``openprogram_testing.check_rechunk_invariance``)."""


# -- the registry -------------------------------------------------------------------------------

Check = Callable[[LoopTrace, Sequence[Round]], list[Violation]]


def unapproved_calls_never_run(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """A call is reviewed inside its own execution (``tool_approval_start``/``_end`` pair up by
    id between its ``tool_execution_start`` and ``_end``), and a call the decision refuses never
    runs: its result is the loop's not-run answer (``Cancelled`` when the run was cancelled
    meanwhile), with no progress update and no nested run started by it."""
    broken = _Broken(11)
    running: str | None = None
    asked: dict[str, int] = {}
    refused: dict[str, tuple[int, ToolApprovalEnd]] = {}
    for i, e in enumerate(trace.events):
        if isinstance(e, ToolExecutionStart):
            running = e.tool_call_id
        elif isinstance(e, ToolApprovalStart):
            if running != e.tool_call_id:
                broken(f"tool_approval_start {e.tool_call_id} outside its call's execution", i)
            if e.tool_call_id in asked:
                broken(
                    f"tool_approval_start {e.tool_call_id} asked twice", asked[e.tool_call_id], i
                )
            asked[e.tool_call_id] = i
        elif isinstance(e, ToolApprovalEnd):
            call_id = e.tool_call_id
            if call_id not in asked:
                broken(f"tool_approval_end {call_id} without tool_approval_start", i)
            elif running != call_id:
                broken(f"tool_approval_end {call_id} outside its call's execution", i)
            if not e.runs:
                refused[call_id] = (i, e)
            asked.setdefault(call_id, i)
            asked[call_id] = -1  # decided
        elif isinstance(e, ToolExecutionUpdate) and e.tool_call_id in refused:
            at, decision = refused[e.tool_call_id]
            broken(
                f"call {e.tool_call_id} ({e.tool_name}) was {decision.outcome} yet ran: it sent "
                "a progress update",
                at,
                i,
            )
        elif isinstance(e, ToolExecutionEnd):
            call_id = e.tool_call_id
            if asked.get(call_id, -1) >= 0:
                broken(f"tool_approval_start {call_id} got no tool_approval_end", asked[call_id], i)
            if call_id in refused:
                at, decision = refused[call_id]
                text = "".join(getattr(b, "text", "") for b in e.result.content)
                expected = (
                    text == CANCELLED_TEXT
                    if decision.outcome == "cancelled"
                    else text.startswith(f"Tool {e.tool_name} was not run: ")
                )
                if not (e.result.is_error and expected):
                    broken(
                        f"call {call_id} ({e.tool_name}) was {decision.outcome} yet ran: its "
                        f"result is {_q(text)}",
                        at,
                        i,
                    )
            running = None
    for _, child in child_traces(trace):
        run = getattr(child, "run", None)
        started_by = getattr(run, "tool_call_id", None)
        if started_by in refused:
            at, decision = refused[started_by]
            broken(
                f"call {started_by} was {decision.outcome} yet ran: it started a nested run",
                at,
            )
    return broken.violations


def tool_array_frozen(trace: LoopTrace, rounds: Sequence[Round] | None = None) -> list[Violation]:
    """Every model call of a run is sent the same tool array (names, descriptions, schemas, in
    order): a tool ``tool_search`` loads joins at the next run, never inside this one."""
    broken = _Broken(12)
    calls = _model_call_events(trace)
    for move in array_changes(trace.requests):
        event = calls[move.call] if move.call < len(calls) else None
        broken(str(move), *(() if event is None else (event,)))
    return broken.violations


def deferred_tools_hidden_until_loaded(
    trace: LoopTrace, rounds: Sequence[Round] | None = None
) -> list[Violation]:
    """No model call of a run offers a deferred tool the run started without (``RunInfo.
    deferred``): its schema reaches the model through ``tool_search``'s result, and the array
    at the next run."""
    broken = _Broken(13)
    run = trace.run
    if run is None or not run.deferred:
        return broken.violations
    calls = _model_call_events(trace)
    for call, names in deferred_in_array(trace.requests, run.deferred):
        event = calls[call] if call < len(calls) else None
        broken(
            f"model call #{call} offers deferred tool(s) {', '.join(names)} the run started "
            "without",
            *(() if event is None else (event,)),
        )
    return broken.violations


def cache_prefix_kept(trace: LoopTrace, rounds: Sequence[Round] | None = None) -> list[Violation]:
    """Between model calls of a run the cached prefix stays: the system prompt, the tool array
    and every earlier message (``openprogram_testing.cache_prefix``; a test whose runs move it
    on purpose says why with ``@pytest.mark.moves_cache_prefix(reason=...)``)."""
    broken = _Broken(14)
    calls = _model_call_events(trace)
    for move in cache_prefix_moves(trace.requests):
        event = calls[move.call] if move.call < len(calls) else None
        broken(str(move), *(() if event is None else (event,)))
    return broken.violations


@dataclass(frozen=True)
class Invariant:
    """A rule: its number, its name (the check function's), what it says and its check
    (``None`` for the multi-run rule)."""

    number: int
    description: str
    check: Check | None = field(default=None, compare=False)
    name: str = ""

    def __post_init__(self) -> None:
        if not self.name:
            if self.check is None:
                raise ValueError("an invariant without a check needs a name")
            object.__setattr__(self, "name", self.check.__name__)


INVARIANTS: tuple[Invariant, ...] = (
    Invariant(
        1,
        "exactly one agent_start (first) and one agent_end (last), carrying the run's messages",
        run_starts_and_ends_once,
    ),
    Invariant(
        2,
        "turn_start/turn_end alternate, message_start/message_end pair up, "
        "tool_execution_start/end pair up by id",
        events_pair_up,
    ),
    Invariant(3, "model calls ≤ cap (follow-up rounds included)", model_calls_within_cap),
    Invariant(
        4,
        "every ToolCall of a non-error assistant message gets exactly one result, in call "
        "order, before the next assistant message",
        every_call_answered_in_order,
    ),
    Invariant(
        5,
        "steering mid-batch in skip mode skips exactly the remaining calls (exact text) and is "
        "delivered right before the next assistant message",
        skipped_calls_follow_steering,
    ),
    Invariant(
        6,
        "an unknown tool, invalid arguments or a failing tool gives an is_error result and the "
        "model is called again within the cap",
        tool_failures_are_fed_back,
    ),
    Invariant(
        7,
        "after an error/aborted message no model call follows and none of its tool calls runs",
        nothing_runs_after_a_failed_message,
    ),
    Invariant(
        8,
        "every steering/follow-up message handed to the loop is delivered or reported undelivered",
        handed_over_messages_are_accounted_for,
    ),
    Invariant(
        9,
        "steering queued after a text-only reply causes another model call",
        steering_after_a_text_reply_continues,
    ),
    Invariant(
        10,
        "re-chunking the provider stream does not change the final messages",
        name="rechunking_keeps_final_messages",
    ),
    Invariant(
        11,
        "a call's approval is decided inside its execution, and a call not approved never runs "
        "(its result is the not-run answer, no update, no nested run)",
        unapproved_calls_never_run,
    ),
    Invariant(
        12,
        "every model call of a run is sent the same tool array",
        tool_array_frozen,
    ),
    Invariant(
        13,
        "a deferred tool is never in the tool array of a run that started without it",
        deferred_tools_hidden_until_loaded,
    ),
    Invariant(
        14,
        "every model call keeps the cached prefix: the previous call's system prompt, tool "
        "array and messages (unless the test says why its runs move it)",
        cache_prefix_kept,
    ),
)
"""Every rule, in number order.  Rules with a ``check`` run on every trace."""

DESCRIPTIONS: dict[int, str] = {i.number: i.description for i in INVARIANTS}
CACHE_PREFIX_RULE = 14
"""The prompt-cache rule, the one a test may turn off by giving its reason."""


def _check_reason(reason: Any) -> None:
    if not isinstance(reason, str) or not reason.strip():
        raise ValueError(
            "moves_cache_prefix needs the reason the runs change the cached prefix (a non-empty "
            f"string), got {reason!r}"
        )


RULE_NAMES: dict[int, str] = {i.number: i.name for i in INVARIANTS}


def _select(only: Iterable[int | str] | None) -> list[Invariant]:
    if only is None:
        return [i for i in INVARIANTS if i.check is not None]
    by_key: dict[int | str, Invariant] = {}
    for rule in INVARIANTS:
        by_key[rule.number] = rule
        by_key[rule.name] = rule
    chosen: list[Invariant] = []
    for key in only:
        inv = by_key.get(key)
        if inv is None or inv.check is None:
            single = ", ".join(f"{i.number} {i.name}" for i in INVARIANTS if i.check is not None)
            raise ValueError(
                f"no single-trace invariant {key!r}: choose from {single} "
                "(10 is check_rechunk_invariance)"
            )
        if inv not in chosen:
            chosen.append(inv)
    return sorted(chosen, key=lambda i: i.number)


def find_violations(
    trace: LoopTrace,
    *,
    only: Iterable[int | str] | None = None,
    moves_cache_prefix: str | None = None,
) -> list[Violation]:
    """Every broken single-trace rule of ``trace`` (all, or those named/numbered in ``only``),
    without raising.  ``moves_cache_prefix`` (the reason, a non-empty string) leaves out rule
    14, ``cache_prefix_kept``: the runs change the cached prefix on purpose."""
    selected = _select(only)
    if moves_cache_prefix is not None:
        _check_reason(moves_cache_prefix)
        selected = [i for i in selected if i.number != CACHE_PREFIX_RULE]
    rounds = split_rounds(trace)
    out: list[Violation] = []
    for inv in selected:
        assert inv.check is not None
        out.extend(inv.check(trace, rounds))
    return out


def check_invariants(
    trace: LoopTrace | Any,
    *,
    only: Iterable[int | str] | None = None,
    moves_cache_prefix: str | None = None,
) -> None:
    """Raise ``InvariantViolation`` (with the run's timeline) unless ``trace`` satisfies every
    single-trace rule (or those in ``only``: numbers or rule names).  A trace tree
    (``run_exec``) is checked run by run; each violation names its run.  ``moves_cache_prefix``
    gives the reason the runs change the cached prefix on purpose (rule 14 is then not
    checked; the marker ``@pytest.mark.moves_cache_prefix(reason=...)`` passes it)."""
    __tracebackhide__ = True
    if isinstance(trace, LoopTrace):
        violations = find_violations(trace, only=only, moves_cache_prefix=moves_cache_prefix)
    else:
        violations = find_tree_violations(trace, only=only, moves_cache_prefix=moves_cache_prefix)
    if violations:
        raise InvariantViolation(violations, timeline_text(trace))


def find_tree_violations(
    tree: Any,
    *,
    only: Iterable[int | str] | None = None,
    moves_cache_prefix: str | None = None,
) -> list[Violation]:
    """Every broken rule of every run of a trace tree (``TraceTree``), without raising; a
    nested run's violations name it and number its events as the tree's timeline does."""
    out: list[Violation] = []
    for k, node in enumerate(tree.walk()):
        lane = f"r{k}" if k else ""
        label = "" if k == 0 else f"{lane} ({node.label})"
        for v in find_violations(node.trace, only=only, moves_cache_prefix=moves_cache_prefix):
            out.append(Violation(v.invariant, v.detail, v.events, label, lane))
    return out


__all__ = [
    "CACHE_PREFIX_RULE",
    "DESCRIPTIONS",
    "INVARIANTS",
    "NOT_CALLED_TEXT",
    "RULE_NAMES",
    "Invariant",
    "InvariantViolation",
    "Violation",
    "cache_prefix_kept",
    "check_invariants",
    "check_rechunk_invariance",
    "deferred_tools_hidden_until_loaded",
    "events_pair_up",
    "every_call_answered_in_order",
    "find_tree_violations",
    "find_violations",
    "handed_over_messages_are_accounted_for",
    "model_calls_within_cap",
    "nothing_runs_after_a_failed_message",
    "rechunking_keeps_final_messages",
    "run_starts_and_ends_once",
    "skipped_calls_follow_steering",
    "steering_after_a_text_reply_continues",
    "tool_array_frozen",
    "tool_failures_are_fed_back",
    "unapproved_calls_never_run",
]
