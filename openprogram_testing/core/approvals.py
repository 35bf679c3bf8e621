"""Scripted reviewers: a test's decisions on a run's approval requests, strict both ways.

A ``ScriptedReviewer`` is an approval gate (``openprogram.approvals``) that answers from a script
the test writes::

    approvals.deny("delete", "never /etc", args={"path": Matches(r"^/etc")})
    approvals.modify("move", {"path": "a", "to": "/tmp/b"})
    approvals.approve("delete")
    approvals.approve(when=lambda request: request.reason is None, times=None)

Each rule answers a request that fits it: a tool name, the call's arguments (the listed keys,
with the trajectory matchers: ``{$regex: ...}``, ``Matches``, ``Approx``), ``nth`` (the n-th
fitting request, 1-based) or a ``when`` predicate of the ``ApprovalRequest``; the first rule
in order that fits and is not used up answers (``times``: how many requests it answers,
``None``: every one).  Strict both ways, as the scripted provider is: a request no rule answers
is denied (the call never runs) and recorded, and ``assert_complete`` then fails naming the
call; a rule never used fails too, unless ``required=False``.  The ``approvals`` fixture
installs one for every run of the test (``Runtime.override(approval_gate=...)``) and checks it
at teardown.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from openprogram.approvals import ApprovalDecision, ApprovalRequest, Approve, Deny, Modify
from openprogram.texts import clip

from .conditions import Condition
from .matchers import MadeCall, _json, callable_name

UNSCRIPTED_TEXT = "no scripted decision for this approval request"
"""The ``Deny`` message a scripted reviewer answers a request no rule fits with: the call never
runs, and ``assert_complete`` fails the test naming it."""

DecisionKind: TypeAlias = Literal["approve", "deny", "modify"]

ArgumentsChange: TypeAlias = Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
"""What ``modify`` runs the call with: new arguments, or a function of the model's."""

RequestPredicate: TypeAlias = Callable[[ApprovalRequest], Any]


@dataclass(slots=True, eq=False)
class ReviewRule:
    """One scripted decision: what it answers (``kind``, with ``message`` or ``arguments``),
    which requests it fits (``condition``: a tool name, ``args`` and ``nth``; ``when``: a
    predicate of the request; neither: any request), how many it answers (``times``, ``None``:
    all) and whether a test that never used it fails (``required``).  ``label`` names it in
    failures (``approvals[2]`` in a scenario file)."""

    kind: DecisionKind
    condition: Condition | None = None
    when: RequestPredicate | None = None
    message: str = ""
    arguments: ArgumentsChange | None = None
    times: int | None = 1
    required: bool = True
    label: str = ""
    fitted: int = 0
    used: int = 0

    def fits(self, request: ApprovalRequest) -> bool:
        """Whether ``request`` is one this rule is about (not counting ``nth`` or ``times``)."""
        if self.condition is not None:
            made = MadeCall(0, request.tool_name, request.arguments, None, request.tool_call_id)
            if not self.condition.fits(made):
                return False
        if self.when is not None:
            try:
                verdict = self.when(request)
            except Exception as exc:
                raise ReviewerError(
                    f"{self.describe()}: the when= predicate raised {type(exc).__name__}: "
                    f"{clip(str(exc), 200)}"
                ) from exc
            return bool(verdict)
        return True

    @property
    def exhausted(self) -> bool:
        return self.times is not None and self.used >= self.times

    def decision(self, request: ApprovalRequest) -> ApprovalDecision:
        if self.kind == "approve":
            return Approve()
        if self.kind == "deny":
            return Deny(self.message)
        change = self.arguments
        assert change is not None
        if callable(change):
            try:
                new = change(dict(request.arguments))
            except Exception as exc:
                raise ReviewerError(
                    f"{self.describe()}: the arguments function raised {type(exc).__name__}: "
                    f"{clip(str(exc), 200)}"
                ) from exc
            return Modify(dict(new))
        return Modify(dict(change))

    def describe(self) -> str:
        """``deny(delete {"path": "/"}, 'never the root')``, as failures name a rule."""
        parts: list[str] = []
        condition = self.condition
        if condition is not None and condition.call is not None:
            shown = condition.call.describe().removesuffix(" (any arguments)")
            parts.append(shown + (f" nth={condition.nth}" if condition.nth != 1 else ""))
        if self.when is not None:
            parts.append(f"when={callable_name(self.when)}")
        if self.kind == "deny" and self.message:
            parts.append(repr(clip(self.message, 80)))
        if self.kind == "modify" and self.arguments is not None:
            change = self.arguments
            parts.append(callable_name(change) if callable(change) else clip(_json(change), 80))
        text = f"{self.kind}({', '.join(parts) or 'any request'})"
        return f"{self.label} {text}" if self.label else text


@dataclass(frozen=True, slots=True)
class Answered:
    """One request the reviewer answered: the ``request``, the ``decision`` it gave and the
    ``rule`` that gave it (``None``: nobody scripted it, and it was denied)."""

    request: ApprovalRequest
    decision: ApprovalDecision
    rule: ReviewRule | None


class ReviewerError(AssertionError):
    """A scripted reviewer could not decide: a ``when=`` predicate or a ``modify`` function
    raised (a broken test: the gate raising makes the runtime refuse the call, and
    ``assert_complete`` reports it)."""


@dataclass(slots=True)
class ApprovalScriptError(AssertionError):
    """The reviewer's script and the run disagree: ``unscripted`` requests no rule answered
    (each was denied, its call never ran), ``unused`` required rules no request reached and
    ``errors`` rules that raised.  The message names each."""

    unscripted: list[ApprovalRequest] = field(default_factory=list)
    unused: list[ReviewRule] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines: list[str] = []
        for request in self.unscripted:
            lines.append(f"an approval request nobody scripted: {describe_request(request)}")
        for rule in self.unused:
            lines.append(f"a scripted approval decision was never asked for: {rule.describe()}")
        lines.extend(self.errors)
        return "\n".join(lines)


def describe_request(request: ApprovalRequest) -> str:
    """``delete {"path": "/"} (call c1 in run run-3, reason: ...)``."""
    where = f"call {request.tool_call_id}"
    if request.run is not None:
        where += f" in run {request.run.run_id}"
    if request.reason:
        where += f", reason: {clip(request.reason, 120)}"
    return f"{request.tool_name} {clip(_json(dict(request.arguments)), 200)} ({where})"


class ScriptedReviewer:
    """An approval gate answering from scripted rules (see the module docstring).  Thread-safe:
    a sync gate runs on a worker thread when the run has an ``approval_timeout_s``."""

    def __init__(self) -> None:
        self.rules: list[ReviewRule] = []
        self.reviewed: list[Answered] = []
        self.errors: list[str] = []
        self._lock = threading.Lock()

    # -- scripting ------------------------------------------------------------------------------
    def approve(
        self,
        tool: str | None = None,
        *,
        args: Any = None,
        nth: int = 1,
        when: RequestPredicate | None = None,
        times: int | None = 1,
        required: bool = True,
    ) -> ScriptedReviewer:
        """Approve a fitting request: the call runs as the model asked."""
        return self._add(ReviewRule("approve"), tool, args, nth, when, times, required)

    def deny(
        self,
        tool: str | None = None,
        message: str = "",
        *,
        args: Any = None,
        nth: int = 1,
        when: RequestPredicate | None = None,
        times: int | None = 1,
        required: bool = True,
    ) -> ScriptedReviewer:
        """Deny a fitting request: the call never runs and the model reads ``message``."""
        if not isinstance(message, str):
            raise TypeError(f"deny(message=) takes a string, got {type(message).__name__}")
        rule = ReviewRule("deny", message=message)
        return self._add(rule, tool, args, nth, when, times, required)

    def modify(
        self,
        tool: str | None = None,
        arguments: ArgumentsChange | None = None,
        *,
        args: Any = None,
        nth: int = 1,
        when: RequestPredicate | None = None,
        times: int | None = 1,
        required: bool = True,
    ) -> ScriptedReviewer:
        """Approve a fitting request with ``arguments`` instead of the model's (a mapping, or a
        function of the model's arguments returning the new ones)."""
        if arguments is None or not (callable(arguments) or isinstance(arguments, Mapping)):
            raise TypeError(
                "modify() needs arguments=: a mapping of the new arguments, or a function of "
                f"the model's arguments returning them; got {arguments!r}"
            )
        rule = ReviewRule("modify", arguments=arguments)
        return self._add(rule, tool, args, nth, when, times, required)

    def _add(
        self,
        rule: ReviewRule,
        tool: str | None,
        args: Any,
        nth: int,
        when: RequestPredicate | None,
        times: int | None,
        required: bool,
    ) -> ScriptedReviewer:
        if times is not None and (
            isinstance(times, bool) or not isinstance(times, int) or times < 1
        ):
            raise ValueError(f"times= must be an int >= 1 or None (every request), got {times!r}")
        if tool is not None:
            rule.condition = Condition.build(tool, args, nth)
        elif args is not None or nth != 1:
            raise TypeError("args= and nth= belong to a tool name: pass the tool too")
        if when is not None and not callable(when):
            raise TypeError(f"when= takes a predicate of the ApprovalRequest, got {when!r}")
        rule.when = when
        rule.times = times
        rule.required = bool(required)
        with self._lock:
            self.rules.append(rule)
        return self

    # -- the gate ----------------------------------------------------------------------------------
    def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        with self._lock:
            try:
                rule = self._pick(request)
                decision = Deny(UNSCRIPTED_TEXT) if rule is None else rule.decision(request)
            except ReviewerError as exc:
                self.errors.append(str(exc))
                raise
            if rule is not None:
                rule.used += 1
            self.reviewed.append(Answered(request, decision, rule))
            return decision

    def _pick(self, request: ApprovalRequest) -> ReviewRule | None:
        chosen: ReviewRule | None = None
        for rule in self.rules:
            if rule.exhausted or not rule.fits(request):
                continue
            rule.fitted += 1
            nth = rule.condition.nth if rule.condition is not None else 1
            if chosen is None and rule.fitted >= nth:
                chosen = rule
        return chosen

    # -- checking --------------------------------------------------------------------------------
    @property
    def unscripted(self) -> list[ApprovalRequest]:
        """Requests no rule answered (each was denied)."""
        return [r.request for r in self.reviewed if r.rule is None]

    @property
    def unused(self) -> list[ReviewRule]:
        """Required rules no request reached."""
        return [r for r in self.rules if r.required and r.used == 0]

    def assert_complete(self) -> None:
        """Fail (``ApprovalScriptError``) when a request went unscripted, a required rule was
        never used, or a rule raised."""
        __tracebackhide__ = True
        unscripted, unused, errors = self.unscripted, self.unused, list(self.errors)
        if unscripted or unused or errors:
            raise ApprovalScriptError(unscripted, unused, errors)

    def decisions(self) -> list[tuple[str, DecisionKind | None]]:
        """``(tool, kind)`` for every request in order (``None``: unscripted)."""
        return [(r.request.tool_name, r.rule.kind if r.rule else None) for r in self.reviewed]


__all__ = [
    "UNSCRIPTED_TEXT",
    "Answered",
    "ApprovalScriptError",
    "ReviewRule",
    "ReviewerError",
    "ScriptedReviewer",
    "describe_request",
]
