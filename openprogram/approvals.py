"""Approvals: a tool call that waits for a reviewer's decision before it runs.

A tool says whether a call needs approval with ``requires_approval`` (``@function(
requires_approval=True)``, or a check called with the call's arguments); the run's approval gate
(``Runtime(approval_gate=...)``, sync or async) answers each such call with a typed decision:
``Approve()``, ``Deny(message)`` or ``Modify(arguments)`` (approve, running with changed
arguments).  The verdict rules of the check are upstream's code (``requirement_verdict``): a
check that raises means approval *is* required (fail closed), a string is the reason shown to the
reviewer.

Every way a decision can fail to come is answered, never hung on and never run: a denial, a gate
that raises or answers something that is not a decision, no decision within
``approval_timeout_s``, no gate at all, changed arguments the tool's schema refuses; the call
is then answered with an error result that tells the model it was not run and why
(``openprogram.texts.not_run_text``), and the run goes on.  The run's cancel token firing while
the gate thinks cancels the call like any other (the run ends ``aborted``).  The request and its
decision are two loop events, ``tool_approval_start`` and ``tool_approval_end``, between the
call's ``tool_execution_start`` and ``tool_execution_end``, so every observer of the run (traces,
reports) reads approvals from the same events as everything else.

A run with no tool that requires approval pays nothing per call (``gated_tools`` is ``None``).
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeAlias

from ._sync import run_in_daemon_thread
from .cancel import CancelToken
from .events import AgentEvent, ApprovalOutcome, ToolApprovalEnd, ToolApprovalStart
from .providers.base import error_text
from .runs import RunInfo
from .texts import (
    CHANGED_ARGUMENTS_TEXT,
    NO_GATE_TEXT,
    approval_denied_text,
    approval_failed_text,
    approval_timed_out_text,
    clipped_repr,
    not_run_text,
)
from .tools import AgentTool, error_result, validation_failed_text
from .types import ToolCall, ToolResultMessage


@dataclass(frozen=True, slots=True)
class Approve:
    """Run the call as the model asked."""


@dataclass(frozen=True, slots=True)
class Deny:
    """Do not run the call; the model reads ``message`` (why, or what to do instead)."""

    message: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.message, str):
            raise TypeError(f"Deny(message) takes a string, got {type(self.message).__name__}")


@dataclass(frozen=True, slots=True)
class Modify:
    """Run the call with ``arguments`` instead of the model's (checked against the tool's schema
    first: arguments it refuses are answered, not run)."""

    arguments: dict[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.arguments, dict) or not all(
            isinstance(k, str) for k in self.arguments
        ):
            raise TypeError(
                f"Modify(arguments) takes a dict of argument names to values, got "
                f"{clipped_repr(self.arguments, 80)}"
            )


ApprovalDecision: TypeAlias = Approve | Deny | Modify


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What the approval gate is asked about: one call (``tool_call_id``, ``tool_name``, its
    validated ``arguments``), the ``reason`` the tool's check gave (a string verdict, or why the
    check counts as requiring approval when it raised), and the ``run`` it belongs to (``None``
    for a loop run outside ``Runtime.exec``)."""

    tool_call_id: str
    tool_name: str
    arguments: dict[str, Any]
    reason: str | None = None
    run: RunInfo | None = None


ApprovalGate: TypeAlias = Callable[
    [ApprovalRequest], ApprovalDecision | Awaitable[ApprovalDecision]
]
"""Answers an ``ApprovalRequest`` with a decision; sync or async.  A sync gate runs on the event
loop's thread unless the run has an ``approval_timeout_s``: it then runs on a daemon thread so
that a gate that never returns is timed out rather than holding the loop."""

Requirement: TypeAlias = bool | Callable[..., Any] | None
"""A tool's ``requires_approval``: ``True``/``False``/``None``, or a check called with the call's
arguments as keywords (``check(**arguments)``) whose verdict ``requirement_verdict`` reads."""

CHECK_RAISED = "the approval check raised {}; approval is required"
"""The reason given to the reviewer when the tool's approval check raised (fail closed)."""


def _raised(exc: BaseException) -> str:
    """``ValueError: text`` (the class name alone when the text is empty or is the name)."""
    text = error_text(exc)
    name = type(exc).__name__
    return text if text == name else f"{name}: {text}"


def check_requirement(value: Any, name: str) -> Requirement:
    """``requires_approval=`` as a decorator or tool entry gives it: a bool, ``None`` or a
    callable; anything else is a ``TypeError`` naming the tool (at decoration, not mid-run)."""
    if value is None or isinstance(value, bool) or callable(value):
        return value  # type: ignore[no-any-return]
    raise TypeError(
        f"requires_approval= of tool {name!r} must be True, False or a callable taking the "
        f"call's arguments, got {clipped_repr(value, 80)}"
    )


def requirement_verdict(requirement: Any, arguments: dict[str, Any]) -> tuple[bool, str | None]:
    """``(needs approval, reason)`` by upstream's rules (its ``_evaluate_approval``): ``None`` or
    ``False`` → no; ``True`` → yes; a callable is called as ``check(**arguments)``: raising →
    yes, with a reason saying so (fail closed), ``True`` → yes, ``False``/``None`` → no, a
    non-empty string → yes with that string as the reason, anything else → its truth value."""
    if requirement is None or requirement is False:
        return False, None
    if requirement is True:
        return True, None
    try:
        verdict = requirement(**arguments)
        if inspect.isawaitable(verdict):
            # An async check cannot be awaited here (the verdict is needed before anything is
            # asked): closed, so it is not left unawaited, and counted as requiring approval.
            close = getattr(verdict, "close", None)
            if close is not None:
                close()
            raise TypeError("an approval check must be a plain function, not async")
    except Exception as exc:
        return True, CHECK_RAISED.format(_raised(exc))
    if verdict is True:
        return True, None
    if verdict is False or verdict is None:
        return False, None
    if isinstance(verdict, str) and verdict:
        return True, verdict
    try:
        return bool(verdict), None
    except Exception as exc:  # a verdict whose truth value raises: fail closed
        return True, CHECK_RAISED.format(_raised(exc))


def approval_requirement(tool: AgentTool) -> Requirement:
    """A tool's ``requires_approval``: from its ``meta`` (``@function`` sets it), else the key of
    a tool dict or the attribute of a tool object it was built from."""
    requirement = tool.meta.get("requires_approval")
    if requirement is None:
        source = tool.source
        requirement = (
            source.get("requires_approval")
            if isinstance(source, dict)
            else getattr(source, "requires_approval", None)
        )
    return check_requirement(requirement, tool.name)


def gated_tools(tools: Sequence[AgentTool]) -> dict[str, Requirement] | None:
    """The run's tools that may require approval, by name; ``None`` when none does (the loop
    then checks nothing per call).  Once per run, so written for speed: a tool that requires
    nothing costs a dict lookup or two (W3 starts thousands of runs a second)."""
    gated: dict[str, Requirement] | None = None
    for tool in tools:
        requirement = tool.meta.get("requires_approval")
        if requirement is None:
            source = tool.source
            requirement = (
                source.get("requires_approval")
                if type(source) is dict
                else getattr(source, "requires_approval", None)
            )
        if requirement is None or requirement is False:
            continue
        if gated is None:
            gated = {}
        gated[tool.name] = check_requirement(requirement, tool.name)
    return gated


_gate_override: ContextVar[ApprovalGate | None] = ContextVar(
    "openprogram_approval_gate", default=None
)
"""The approval gate every run started in this context uses instead of its runtime's own
(``Runtime.override(approval_gate=...)``)."""


def active_gate(own: ApprovalGate | None) -> ApprovalGate | None:
    """The gate a run uses: an enclosing override's, else the runtime's own."""
    override = _gate_override.get()
    return override if override is not None else own


@contextlib.contextmanager
def overriding_gate(gate: ApprovalGate) -> Iterator[None]:
    """Every run started inside uses ``gate`` (see ``Runtime.override``)."""
    if not callable(gate):
        raise TypeError(f"approval_gate must be a callable, got {gate!r}")
    token = _gate_override.set(gate)
    try:
        yield
    finally:
        _gate_override.reset(token)


def check_timeout(value: Any) -> float | None:
    """``approval_timeout_s``: ``None`` (wait as long as the reviewer takes) or seconds > 0."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ValueError(f"approval_timeout_s must be a number of seconds > 0, got {value!r}")
    return float(value)


class Reviewed:
    """What ``review`` decided for one call: ``call`` to run (the model's, or one carrying the
    changed arguments), or ``result`` (the call is answered without running), or ``aborted``
    (a ``BaseException`` or the cancel token: the loop aborts the call)."""

    __slots__ = ("aborted", "call", "result")

    def __init__(self) -> None:
        self.call: ToolCall | None = None
        self.result: ToolResultMessage | None = None
        self.aborted: BaseException | None = None


async def review(
    tool: AgentTool,
    requirement: Requirement,
    call: ToolCall,
    gate: ApprovalGate | None,
    timeout: float | None,
    cancel: CancelToken | None,
    run: RunInfo | None,
    reviewed: Reviewed,
) -> AsyncGenerator[AgentEvent, None]:
    """Decide whether ``call`` runs, yielding the approval events; the decision goes into
    ``reviewed``.  A call whose arguments do not validate is left to the loop (it is answered
    with the validation failure and never runs, so nobody is asked)."""
    reviewed.call = call
    if call.raw_arguments is not None:
        return
    try:
        arguments, problems = tool.validate(call.arguments)
    except RecursionError:
        return
    if problems:
        return
    needed, reason = requirement_verdict(requirement, arguments)
    if not needed:
        return
    yield ToolApprovalStart(call.id, call.name, arguments, reason)
    outcome: ApprovalOutcome
    if gate is None:
        outcome, why, message = "no_gate", NO_GATE_TEXT, NO_GATE_TEXT
    else:
        request = ApprovalRequest(call.id, call.name, arguments, reason, run)
        try:
            decision = await _ask(gate, request, timeout, cancel)
        except _TimedOut:
            assert timeout is not None
            why = message = approval_timed_out_text(timeout)
            outcome = "timed_out"
        except _Cancelled:
            reviewed.call = None
            reviewed.aborted = asyncio.CancelledError()
            yield ToolApprovalEnd(call.id, call.name, "cancelled", None, "the run was cancelled")
            return
        except Exception as exc:
            outcome, why = "gate_failed", approval_failed_text(_raised(exc))
            message = why
        except BaseException as exc:  # KeyboardInterrupt, SystemExit, task cancellation
            reviewed.call = None
            reviewed.aborted = exc
            yield ToolApprovalEnd(call.id, call.name, "cancelled", None, type(exc).__name__)
            return
        else:
            kind = type(decision)
            if kind is Approve:
                yield ToolApprovalEnd(call.id, call.name, "approved")
                return
            if kind is Modify:
                changed = decision.arguments
                try:
                    _, problems = tool.validate(changed)
                except RecursionError:
                    problems = [("root", "arguments are nested too deeply")]
                if not problems:
                    reviewed.call = ToolCall(call.id, call.name, changed, None, call.signature)
                    yield ToolApprovalEnd(call.id, call.name, "modified", changed)
                    return
                outcome = "invalid_arguments"
                message = CHANGED_ARGUMENTS_TEXT
                why = f"{message}\n{validation_failed_text(call.name, problems, changed)}"
            elif kind is Deny:
                outcome, message = "denied", decision.message
                why = approval_denied_text(message)
            else:
                outcome = "gate_failed"
                why = message = approval_failed_text(
                    f"it answered {clipped_repr(decision, 200)}, not Approve(), Deny(message) "
                    "or Modify(arguments)"
                )
    reviewed.call = None
    reviewed.result = error_result(call.id, call.name, not_run_text(call.name, why))
    yield ToolApprovalEnd(call.id, call.name, outcome, None, message)


class _TimedOut(Exception):
    pass


class _Cancelled(Exception):
    pass


async def _ask(
    gate: ApprovalGate, request: ApprovalRequest, timeout: float | None, cancel: CancelToken | None
) -> Any:
    """The gate's decision, or ``_TimedOut``/``_Cancelled``; what the gate raises propagates."""
    if timeout is None and cancel is None:
        value = gate(request)
        if inspect.isawaitable(value):
            value = await value
        return value
    if timeout is not None and not inspect.iscoroutinefunction(gate):
        # A sync gate that may never return: on a daemon thread, so the wait can give up.
        ctx = contextvars.copy_context()
        future: asyncio.Future[Any] = run_in_daemon_thread(partial(ctx.run, gate, request))
        future = asyncio.ensure_future(_settle(future))
    else:
        value = gate(request)
        if not inspect.isawaitable(value):
            return value
        future = asyncio.ensure_future(value)
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    cancel_wait = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
    try:
        waits: set[asyncio.Future[Any]] = {future}
        if cancel_wait is not None:
            waits.add(cancel_wait)
        remaining = None if deadline is None else max(0.0, deadline - loop.time())
        await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        if future.done():
            return future.result()
        future.cancel()
        if cancel_wait is not None and cancel_wait.done():
            raise _Cancelled
        raise _TimedOut
    except asyncio.CancelledError:
        future.cancel()
        raise
    finally:
        if cancel_wait is not None:
            cancel_wait.cancel()


async def _settle(future: asyncio.Future[Any]) -> Any:
    """Await a thread's future; an awaitable it returned (a sync gate handing back a coroutine)
    is awaited too."""
    value = await future
    if inspect.isawaitable(value):
        value = await value
    return value


__all__ = [
    "CHECK_RAISED",
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approve",
    "Deny",
    "Modify",
    "Requirement",
    "Reviewed",
    "active_gate",
    "approval_requirement",
    "check_requirement",
    "check_timeout",
    "gated_tools",
    "overriding_gate",
    "requirement_verdict",
    "review",
]
