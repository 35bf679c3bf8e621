"""The reference model (oracle): what the loop must produce for a generated example.

``predict`` walks the loop's algorithm over plain data (no loop code is run) and returns the
termination, model calls, every tool result, the final text, the error and the delivered and
undelivered steering/follow-up messages.  The model types are imported for annotations only: the
example (``model``) depends on the oracle, never the reverse.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from openprogram.loop import effective_cap
from openprogram.tools import SKIPPED_TEXT

from .universe import CUT_TEXT, NOT_FOUND, RAN_OUT, VALIDATION_PREFIX

if TYPE_CHECKING:
    from .model import GenCall, GeneratedScenario, GenSteering, GenTool


@dataclass(frozen=True)
class ExpectedResult:
    """One predicted tool result: exact ``text`` when the loop fixes it, else a ``text_matches``
    regex (validation messages, whose detail is the validator's)."""

    name: str
    is_error: bool
    skipped: bool
    text: str | None = None  # exact text, when the spec fixes it
    text_matches: str | None = None  # a regex, when only the shape is fixed (validation)


@dataclass(frozen=True)
class Expected:
    """What the spec says the run must produce (the reference model's prediction)."""

    termination: str
    model_calls: int
    tool_results: tuple[ExpectedResult, ...]
    final_text: str | None  # text of the last assistant message (None: no assistant message)
    error_text: str | None
    delivered: tuple[str, ...]  # steering/follow-up messages in delivery order
    undelivered: tuple[str, ...]
    cap: int


def _tool_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    return json.dumps(value, ensure_ascii=False)


def _predict_result(
    call: GenCall, tools: dict[str, GenTool], executed: dict[str, int]
) -> ExpectedResult:
    """The result of one call that is not skipped; ``executed`` counts each tool's ``execute``
    invocations so far (a ``sequence`` tool plays its outcomes in that order)."""
    tool = tools.get(call.name)
    if tool is None:
        return ExpectedResult(call.name, True, False, text=NOT_FOUND.format(name=call.name))
    if call.kind in ("schema", "raw"):
        return ExpectedResult(
            call.name,
            True,
            False,
            text_matches="^" + re.escape(VALIDATION_PREFIX.format(name=call.name)),
        )
    outcomes = tool.outcomes
    n = executed.get(call.name, 0)
    executed[call.name] = n + 1
    behaviour, value = outcomes[min(n, len(outcomes) - 1)]
    if behaviour == "raises":
        return ExpectedResult(call.name, True, False, text=str(value) or "RuntimeError")
    if behaviour == "echo":
        return ExpectedResult(call.name, False, False, text=_tool_text(dict(call.args or {})))
    return ExpectedResult(call.name, False, False, text=_tool_text(value))


class _ScheduleModel:
    """The steering schedule's delivery rules, restated for the oracle:

    - ``after_tool k`` is handed over at the poll right after the k-th executed call (0-based,
      global; skipped calls are not executed) and ``after_call (r, i)`` right after call ``i`` of
      round ``r`` executed — never, if that call does not execute;
    - ``before_round r`` is handed over at the poll that precedes round ``r``: the poll after the
      prompts (r = 0) or after round r-1 — or, when steering already ends round r-1's batch (so
      the loop will not poll at its end), together with that steering, if round r is allowed;
    - follow-ups: one entry per ``get_follow_up_messages`` poll, in order.

    Messages due at the same poll come in the order they were scheduled, before-round ones last.
    """

    def __init__(self, items: Sequence[GenSteering], *, cap: int, skip_mode: bool) -> None:
        self.steering = [s for s in items if not s.follow_up]
        self.follow = [s.message for s in items if s.follow_up]
        self.handed: set[int] = set()
        self.executed = 0
        self.cap = cap
        self.skip_mode = skip_mode
        self.round_steering = False

    def _take(self, predicate: Any) -> list[str]:
        out = []
        for i, s in enumerate(self.steering):
            if i not in self.handed and predicate(s):
                self.handed.add(i)
                out.append(s.message)
        return out

    def before(self, round_index: int) -> list[str]:
        """The poll before ``round_index`` (after the prompts, or after the previous round)."""
        return self._take(lambda s: s.before_round == round_index)

    def after_call(self, round_index: int, index: int, last: bool) -> list[str]:
        """The poll after call ``index`` of round ``round_index`` executed."""
        k = self.executed
        self.executed += 1
        out = self._take(lambda s: s.after_tool == k or s.after_call == (round_index, index))
        batch_ends = bool(out) if self.skip_mode else last
        if batch_ends and (out or self.round_steering) and round_index + 1 < self.cap:
            out += self._take(lambda s: s.before_round == round_index + 1)
        if out:
            self.round_steering = True
        return out

    def new_round(self) -> None:
        self.round_steering = False

    def poll_follow_up(self) -> list[str]:
        return [self.follow.pop(0)] if self.follow else []


def predict(g: GeneratedScenario) -> Expected:
    """Walk the loop algorithm over the example's plain data: rounds within the cap, each call's
    result (or skip), steering and follow-up deliveries, and how the run ends."""
    tools = {t.name: t for t in g.tools}
    cap = effective_cap(g.max_iterations)
    skip_mode = g.steering_mode == "skip"
    schedule = _ScheduleModel(g.steering, cap=cap, skip_mode=skip_mode)
    results: list[ExpectedResult] = []
    executed: dict[str, int] = {}
    delivered: list[str] = []
    undelivered: list[str] = []
    model_calls = 0
    final_text: str | None = None
    error_text: str | None = None
    termination = "completed"

    pending = schedule.before(0)
    iterations = 0
    has_more = True
    while True:  # outer loop: one pass per follow-up batch
        while has_more or pending:
            iterations += 1
            if iterations > cap:
                termination = "max_iterations"
                undelivered.extend(pending)
                break
            round_index = iterations - 1
            schedule.new_round()
            delivered.extend(pending)
            pending = []
            model_calls += 1
            if model_calls > len(g.script):
                final_text, error_text, termination = "", RAN_OUT, "error"
                break
            turn = g.script[model_calls - 1]
            final_text = "" if turn.text is None else turn.text
            if turn.ending in ("error", "aborted", "cut"):
                error_text = CUT_TEXT if turn.ending == "cut" else turn.error
                termination = "aborted" if turn.ending == "aborted" else "error"
                break
            has_more = bool(turn.calls)
            batch: list[str] = []
            for index, c in enumerate(turn.calls):
                if batch and skip_mode:
                    results.append(ExpectedResult(c.name, True, True, text=SKIPPED_TEXT))
                    continue
                results.append(_predict_result(c, tools, executed))
                batch.extend(schedule.after_call(round_index, index, index == len(turn.calls) - 1))
            if batch:
                pending = batch  # handed over in the final round: reported undelivered
            elif iterations < cap:
                pending = schedule.before(round_index + 1)
        else:
            # The model finished; follow-ups start another round if one is still allowed.
            if iterations < cap:
                follow = schedule.poll_follow_up()
                if follow:
                    pending = follow
                    continue
            termination = "completed"
        break
    return Expected(
        termination=termination,
        model_calls=model_calls,
        tool_results=tuple(results),
        final_text=final_text,
        error_text=error_text,
        delivered=tuple(delivered),
        undelivered=tuple(undelivered),
        cap=cap,
    )
