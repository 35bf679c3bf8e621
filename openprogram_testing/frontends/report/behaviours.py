"""The loop's behaviours, each named once and defined as a function of a trace.

A behaviour is something the loop can do that a suite should exercise at least once: finish on
text, run a parallel batch, skip the rest of a batch when steering arrives after its first call,
end at the cap with messages it could not deliver, and so on.  Each definition counts how often
one run shows the behaviour (0: not at all), reading only the trace (events, messages,
termination, the steering schedule's deliveries), so coverage can be computed for any run a
suite produced: scripted, emulated, replayed from a cassette or nested in ``Runtime.exec``.

The definitions are deliberately narrow and disjoint where the loop's rules are (a skip "at the
first call" is not also "in the middle"); ``docs/report.md`` lists them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.events import ToolExecutionUpdate
from openprogram.runtime import CHOOSE_TOOL
from openprogram.texts import ABORTED_TEXT, CANCELLED_TEXT, STREAM_ENDED_TEXT
from openprogram.tool_search import TOOL_SEARCH
from openprogram.types import AssistantMessage, ThinkingContent, ToolResultMessage
from openprogram_testing.base.recording import NESTED_RUN
from openprogram_testing.core.rounds import Round, ToolRun, child_traces, split_rounds

if TYPE_CHECKING:
    from openprogram_testing.core.trace import LoopTrace
    from openprogram_testing.core.tree import TraceTree


@dataclass(frozen=True, slots=True)
class Behaviour:
    """A named loop behaviour: ``count(trace, rounds)`` says how often one run shows it."""

    name: str
    title: str
    definition: str
    count: Callable[[LoopTrace, list[Round]], int]


def _replies(rounds: list[Round]) -> list[AssistantMessage]:
    return [r.reply for r in rounds if r.reply is not None]


def _error_text(result: ToolResultMessage) -> str:
    return "".join(getattr(b, "text", "") for b in result.content)


def _steered_after(rounds: list[Round]) -> list[tuple[Round, Round]]:
    """Pairs (round, next round) where steering arrived in between."""
    return [
        (r, n)
        for r, n in itertools.pairwise(rounds)
        if any(a.origin == "steering" for a in n.arrivals)
    ]


def _skip_at(position: str) -> Callable[[LoopTrace, list[Round]], int]:
    """Steering cut a batch of two or more calls short after its first / a middle call."""

    def count(trace: LoopTrace, rounds: list[Round]) -> int:
        n = 0
        for r, _next in _steered_after(rounds):
            executed, skipped = len(r.executed), len(r.skipped)
            if not skipped or len(r.calls) < 2:
                continue
            if position == "first" and executed == 1:
                n += 1
            elif position == "middle" and 1 < executed < len(r.calls):
                n += 1
        return n

    return count


def _steering_after_last_call(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(
        1
        for r, _n in _steered_after(rounds)
        if trace.steering_mode == "skip" and len(r.calls) >= 1 and not r.skipped
    )


def _steering_after_batch(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(
        1
        for r, _n in _steered_after(rounds)
        if trace.steering_mode == "after_batch" and len(r.calls) >= 1 and not r.skipped
    )


def _steering_after_text(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for r, _n in _steered_after(rounds) if r.reply is not None and len(r.calls) == 0)


def _steering_with_prompt(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for a in (rounds[0].arrivals if rounds else []) if a.origin == "steering")


def _arrivals(kind: str) -> Callable[[LoopTrace, list[Round]], int]:
    def count(trace: LoopTrace, rounds: list[Round]) -> int:
        return sum(1 for r in rounds[1:] for a in r.arrivals if a.origin == kind)

    return count


def _several_prompts(trace: LoopTrace, rounds: list[Round]) -> int:
    return int(sum(1 for r in rounds[:1] for a in r.arrivals if a.origin == "prompt") >= 2)


def _text_finish(trace: LoopTrace, rounds: list[Round]) -> int:
    final = trace.final_message
    ok = (
        trace.termination == "completed"
        and final is not None
        and final.stop_reason == "stop"
        and not final.tool_calls
        and bool(final.text)
    )
    return int(ok)


def _tool_round(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for r, n in itertools.pairwise(rounds) if r.executed and n.reply)


def _parallel_batch(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for r in rounds if len(r.calls) >= 2)


def _termination(value: str) -> Callable[[LoopTrace, list[Round]], int]:
    return lambda trace, rounds: int(trace.termination == value)


def _cap_undelivered(trace: LoopTrace, rounds: list[Round]) -> int:
    return int(trace.termination == "max_iterations" and bool(trace.undelivered))


def _errors(trace: LoopTrace, rounds: list[Round]) -> list[AssistantMessage]:
    return [m for m in _replies(rounds) if m.stop_reason == "error"]


def _cut_stream(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for m in _errors(trace, rounds) if m.error_message == STREAM_ENDED_TEXT)


def _retryable_error(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(
        1
        for m in _errors(trace, rounds)
        if m.error_retryable and m.error_message != STREAM_ENDED_TEXT
    )


def _provider_error(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(
        1
        for m in _errors(trace, rounds)
        if not m.error_retryable and m.error_message != STREAM_ENDED_TEXT
    )


def _aborted(trace: LoopTrace, rounds: list[Round]) -> int:
    replies = _replies(rounds)
    model_aborted = any(m.stop_reason == "aborted" for m in replies)
    return int(trace.termination == "aborted" or model_aborted)


def _length_stop(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for m in _replies(rounds) if m.stop_reason == "length")


def _thinking(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(
        1 for m in _replies(rounds) if any(isinstance(b, ThinkingContent) for b in m.content)
    )


def _tool_runs(rounds: list[Round]) -> list[tuple[Round, ToolRun]]:
    return [(r, t) for r in rounds for t in r.tools]


def _call_of(r: Round, t: ToolRun) -> object:
    if r.reply is None:
        return None
    return next((c for c in r.reply.tool_calls if c.id == t.result.tool_call_id), None)


def _tool_error_kind(trace: LoopTrace, r: Round, t: ToolRun) -> str | None:
    """Why a call ended in an error result: ``unknown``, ``unparsable``, ``invalid``,
    ``timeout``, ``cancelled``, ``raised`` (the tool raised or returned an error), or ``None``."""
    result = t.result
    if not result.is_error or result.skipped:
        return None
    if t.decided is not None and not t.decided.runs:
        return "refused"  # not run for want of approval: the approval behaviours count it
    text = _error_text(result)
    names = trace.tool_names
    if (names is not None and result.tool_name not in names) or text == (
        f"Tool {result.tool_name} not found"
    ):
        return "unknown"
    call = _call_of(r, t)
    if call is not None and getattr(call, "raw_arguments", None) is not None:
        return "unparsable"
    if text.startswith(f'Validation failed for tool "{result.tool_name}"'):
        return "invalid"
    if text.startswith(f"Tool {result.tool_name} timed out after "):
        return "timeout"
    if text in (CANCELLED_TEXT, ABORTED_TEXT):
        return "cancelled"
    return "raised"


def _tool_errors(kind: str) -> Callable[[LoopTrace, list[Round]], int]:
    def count(trace: LoopTrace, rounds: list[Round]) -> int:
        return sum(1 for r, t in _tool_runs(rounds) if _tool_error_kind(trace, r, t) == kind)

    return count


def _approvals(runs: bool, outcome: str | None = None) -> Callable[[LoopTrace, list[Round]], int]:
    """Calls whose approval decision let them run (``outcome``: only that one) or refused them."""

    def count(trace: LoopTrace, rounds: list[Round]) -> int:
        return sum(
            1
            for _, t in _tool_runs(rounds)
            if t.decided is not None
            and t.decided.runs == runs
            and (outcome is None or t.decided.outcome == outcome)
        )

    return count


def _error_recovered(trace: LoopTrace, rounds: list[Round]) -> int:
    return len(trace.recovered_errors)


def _tool_updates(trace: LoopTrace, rounds: list[Round]) -> int:
    return sum(1 for e in trace.events if isinstance(e, ToolExecutionUpdate))


def _nested_exec(trace: LoopTrace, rounds: list[Round]) -> int:
    """The nested ``exec`` runs this run's tools started, as noted on the run itself
    (``NESTED_RUN``): by the trace-tree recorder for a run of a tree, by ``run_exec`` for a
    tree run inside a traced tool; a run noted by both counts once).  A ``choices=`` ask is not
    one (it is no tool's run)."""
    return len({note.text for note in trace.annotations if note.kind == NESTED_RUN})


def _choices_retry(trace: LoopTrace, rounds: list[Round]) -> int:
    """A ``choices=`` decision that needed the re-ask: the run carries the re-ask message, or
    after the instruction to pick with the ``choose`` tool a reply did not pick and the model
    was called again."""
    asked = False
    missed = False
    for r in rounds:
        for a in r.arrivals:
            text = a.message.content if isinstance(a.message.content, str) else ""
            if text.startswith(f"You must call the `{CHOOSE_TOOL}` tool"):
                return 1
            if f"by calling the `{CHOOSE_TOOL}` tool" in text:
                asked = True
        if r.reply is None or not asked:
            continue
        if missed:
            return 1
        missed = not any(c.name == CHOOSE_TOOL for c in r.reply.tool_calls)
    return 0


def _tool_search_loads(trace: LoopTrace, rounds: list[Round]) -> int:
    """``tool_search`` results that loaded at least one tool (their ``details`` say which)."""
    n = 0
    for r in rounds:
        for t in r.tools:
            result = t.result
            details = result.details
            if (
                result.tool_name == TOOL_SEARCH
                and not result.is_error
                and isinstance(details, dict)
                and details.get("loaded")
            ):
                n += 1
    return n


def _deferred_calls(trace: LoopTrace, rounds: list[Round]) -> int:
    """Calls of tools the run started with deferred (``RunInfo.deferred``) that ran and
    succeeded (a refused or failed call is counted by the error behaviours)."""
    run = trace.run
    deferred = set(run.deferred) if run is not None else set()
    if not deferred:
        return 0
    return sum(
        1
        for r in rounds
        for t in r.tools
        if t.result.tool_name in deferred and not t.result.is_error
    )


BEHAVIOURS: tuple[Behaviour, ...] = (
    Behaviour("text_finish", "text finish",
              "the run completed on an assistant reply with text and no tool calls", _text_finish),
    Behaviour("tool_round", "tool round",
              "a round executed tool calls and the model was called again with their results",
              _tool_round),
    Behaviour("parallel_batch", "parallel batch",
              "one assistant reply requested two or more tool calls", _parallel_batch),
    Behaviour("several_prompts", "several prompts",
              "the run started with two or more prompt messages", _several_prompts),
    Behaviour("steering_with_prompt", "steering before the first round",
              "a steering message was delivered together with the prompt, before the first "
              "model call", _steering_with_prompt),
    Behaviour("steering_skip_first", "steering skip at the first call",
              "steering arrived after the first call of a batch of two or more; the rest "
              "were skipped", _skip_at("first")),
    Behaviour("steering_skip_middle", "steering skip at a middle call",
              "steering arrived after a call that was neither the first nor the last of its "
              "batch; the rest were skipped", _skip_at("middle")),
    Behaviour("steering_after_last_call", "steering at the last call",
              "in skip mode, steering arrived after the last call of a batch: nothing left "
              "to skip, delivered before the next model call", _steering_after_last_call),
    Behaviour("steering_after_batch", "steering in after_batch mode",
              "in after_batch mode, steering arrived during a batch: every call ran, the "
              "message was delivered before the next model call", _steering_after_batch),
    Behaviour("steering_after_text", "steering after a text reply",
              "steering arrived after a reply without tool calls and the run went on",
              _steering_after_text),
    Behaviour("follow_up", "follow-up",
              "a follow-up message was delivered when the run would have ended",
              _arrivals("follow_up")),
    Behaviour("cap_reached", "cap reached",
              "the run ended at its model-call cap (termination max_iterations)",
              _termination("max_iterations")),
    Behaviour("cap_undelivered", "cap with undelivered messages",
              "the run ended at its cap holding steering/follow-up messages it reported as "
              "undelivered", _cap_undelivered),
    Behaviour("provider_error", "provider error",
              "a model call ended in a non-retryable error", _provider_error),
    Behaviour("retryable_error", "retryable error",
              "a model call ended in an error marked retryable (429, 5xx, …)",
              _retryable_error),
    Behaviour("cut_stream", "cut stream",
              "a response stream ended without its final event", _cut_stream),
    Behaviour("aborted", "abort",
              "the run or a model call was aborted", _aborted),
    Behaviour("length_stop", "length stop",
              "a reply stopped at the output length limit", _length_stop),
    Behaviour("thinking", "thinking",
              "a reply carried thinking (reasoning) content", _thinking),
    Behaviour("unknown_tool", "unknown tool",
              "the model called a tool the run does not have", _tool_errors("unknown")),
    Behaviour("invalid_arguments", "invalid arguments",
              "a call's arguments failed the tool's schema", _tool_errors("invalid")),
    Behaviour("unparsable_arguments", "unparsable arguments",
              "a call's arguments were not valid JSON", _tool_errors("unparsable")),
    Behaviour("raising_tool", "raising tool",
              "a tool raised (or returned an error result)", _tool_errors("raised")),
    Behaviour("tool_timeout", "tool timeout",
              "a tool ran past the run's tool timeout", _tool_errors("timeout")),
    Behaviour("error_recovered", "error recovered",
              "the model was called again after an error result", _error_recovered),
    Behaviour("tool_updates", "tool progress updates",
              "a tool reported progress updates while running", _tool_updates),
    Behaviour("nested_exec", "nested exec",
              "a tool started a nested run (Runtime.exec inside a tool)", _nested_exec),
    Behaviour("choices_retry", "choices retry",
              "a choices= decision needed the re-ask before the model picked", _choices_retry),
    Behaviour("approval_refused", "approval refused",
              "a call that requires approval was not approved (denied, or no decision came) "
              "and never ran", _approvals(False)),
    Behaviour("approval_modified", "approval with changed arguments",
              "a reviewer approved a call with changed arguments", _approvals(True, "modified")),
    Behaviour("tool_search_load", "tool_search load",
              "a tool_search call loaded deferred tools (their schemas in its result)",
              _tool_search_loads),
    Behaviour("deferred_call", "deferred tool call",
              "the model called a deferred tool the run's array left out (loaded by "
              "tool_search in the same run) and it ran", _deferred_calls),
)  # fmt: skip

BY_NAME: dict[str, Behaviour] = {b.name: b for b in BEHAVIOURS}


def exhibited(subject: LoopTrace | TraceTree) -> dict[str, int]:
    """How often a run shows each behaviour; only behaviours seen at least once are listed.

    ``subject`` is a run's ``LoopTrace`` (that run alone: its ``nested_exec`` counts the nested
    runs its tools started) or a ``TraceTree`` (that run and every run nested in it, added up,
    as the report's record of the tree and the coverage table count them).  One reading: the
    counts of a tree are the sums of its runs' counts."""
    counts: dict[str, int] = {}
    _add(subject, counts)
    return counts


def _add(subject: Any, counts: dict[str, int]) -> None:
    inner = getattr(subject, "trace", None)
    trace = inner if inner is not None and hasattr(inner, "events") else subject
    rounds = split_rounds(trace)
    for behaviour in BEHAVIOURS:
        n = behaviour.count(trace, rounds)
        if n:
            counts[behaviour.name] = counts.get(behaviour.name, 0) + n
    for node, child in child_traces(subject):
        _add(node if hasattr(node, "children") else child, counts)


__all__ = ["BEHAVIOURS", "BY_NAME", "Behaviour", "exhibited"]
