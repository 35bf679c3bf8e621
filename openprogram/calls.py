"""Running one tool call, and the mutable state of a run that the loop and this module share.

``prepare`` answers everything about a call that needs no ``await`` (unknown tool, arguments that
did not parse or validate) and calls a plain sync tool directly: the hot path.  ``invoke`` is the
general path (extras, async bodies, timeouts, cancellation, live updates); the loop awaits what
a plain function returned.  Every path turns every outcome into a result the same way: an
``Exception`` (or a value that cannot become text) is an error result, a ``BaseException`` ends
the run ``aborted`` (``abort_call``), a ``KeyboardInterrupt``/``SystemExit`` being re-raised after
``agent_end``.
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import AsyncGenerator, Awaitable
from functools import partial
from typing import Any, TypeAlias

from ._sync import run_in_daemon_thread
from .approvals import active_gate, gated_tools
from .cancel import CancelToken
from .config import AgentContext, LoopConfig, effective_cap
from .events import AgentEvent, ToolExecutionUpdate
from .providers.base import Context, StreamOptions, error_text
from .runs import wants_poll_point
from .texts import CANCELLED_TEXT, timed_out_text, tool_not_found_text, unserialisable_text
from .tools import (
    AgentTool,
    arguments_problem,
    error_result,
    make_result,
    validation_failed_text,
)
from .types import (
    FailedTermination,
    Message,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    failure_termination,
)


class RunState:
    """Mutable state of one run of the loop, shared by the loop's phases and the per-call
    helpers (``prepare``, ``invoke``): the history, the counters, and what is decided once per
    run (the round cap, how the sources are polled).  ``stopped`` says that the current batch
    was stopped (a tool aborted, the cancel token fired, a steering source raised) and how the
    run then ends."""

    __slots__ = (
        "cancel",
        "cap",
        "config",
        "context",
        "executed_calls",
        "follow_up_point",
        "follow_up_source",
        "gate",
        "gated",
        "info",
        "new_messages",
        "options",
        "provider_context",
        "reraise",
        "rounds",
        "skip_mode",
        "steering",
        "steering_point",
        "steering_source",
        "stopped",
        "tools",
    )

    def __init__(self, context: AgentContext, tools: list[AgentTool], config: LoopConfig) -> None:
        self.config = config
        self.context = context
        self.tools = {t.spec.name: t for t in tools}
        # positional (once per run, but W3-like workloads start thousands of runs)
        offered = context.provider_tools
        self.provider_context = Context(
            context.system_prompt,
            context.messages,
            [t.spec for t in tools] if offered is None else list(offered),
        )
        self.options = StreamOptions(
            config.tool_choice,
            config.parallel_tool_calls,
            config.max_tokens,
            config.temperature,
            config.cancel,
            config.extras,
        )
        self.new_messages: list[Message] = []
        self.steering: list[UserMessage] = []
        self.stopped: FailedTermination | None = None
        self.reraise: BaseException | None = None
        self.cancel = config.cancel
        self.info = config.run_info
        self.cap = effective_cap(config.max_iterations)
        self.skip_mode = config.steering_mode == "skip"
        self.rounds = 0  # rounds started (model calls asked for), follow-up rounds included
        self.executed_calls = 0
        self.steering_source = config.get_steering_messages
        self.follow_up_source = config.get_follow_up_messages
        # Decided once per run: a source without a parameter is called bare (no PollPoint).
        self.steering_point = wants_poll_point(self.steering_source)
        self.follow_up_point = wants_poll_point(self.follow_up_source)
        # Tools that may require approval (``None``: none does, nothing is checked per call),
        # and their gate: an enclosing ``Runtime.override(approval_gate=...)``'s, else the
        # config's.
        self.gated = gated_tools(tools)
        self.gate = active_gate(config.approval_gate) if self.gated is not None else None

    def append(self, message: Message) -> None:
        self.context.messages.append(message)
        self.new_messages.append(message)


_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), dict, list, tuple})
"""Types a tool commonly returns that are never awaitable: skips ``inspect.isawaitable``'s ABC
check on the hot path (the profile showed it in every round)."""


class Awaiting:
    """``prepare``'s answer for a plain tool that returned an awaitable (the coroutine of an
    ``async def`` tool with nothing to watch): the loop awaits ``awaitable`` itself and turns
    what it gives (or raises) into the result."""

    __slots__ = ("awaitable",)

    def __init__(self, awaitable: Awaitable[Any]) -> None:
        self.awaitable = awaitable


class Invoke:
    """``prepare``'s answer for a call the general path runs (``invoke``: extras, timeouts,
    cancel tokens, live updates), with the tool and its validated ``arguments``."""

    __slots__ = ("arguments", "tool")

    def __init__(self, tool: AgentTool, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments


Prepared: TypeAlias = ToolResultMessage | Awaiting | Invoke
"""What ``prepare`` answers, told apart by type: the call's result (answered without running
the tool, or a plain tool's result), an ``Awaiting`` or an ``Invoke``.  The result is its own
tag: the hot path (a plain sync tool) allocates no wrapper."""


def prepare(run: RunState, call: ToolCall) -> Prepared:
    """Everything about one call that needs no ``await``: an unknown tool, argument JSON that did
    not parse and failed validation are answered here, and a plain tool (the hot path) is called
    directly.  Returns the result, an ``Awaiting`` (what a plain tool returned must still be
    awaited, by the loop) or an ``Invoke`` (the general path runs the call)."""
    tool = run.tools.get(call.name)
    if tool is None:
        return error_result(call.id, call.name, tool_not_found_text(call.name))
    if call.raw_arguments is not None:
        problem = [("root", arguments_problem(call.raw_arguments))]
        text = validation_failed_text(call.name, problem, call.raw_arguments)
        return error_result(call.id, call.name, text)
    try:
        arguments, problems = tool.validate(call.arguments)
    except RecursionError:
        arguments, problems = call.arguments, [("root", "arguments are nested too deeply")]
    if problems:
        text = validation_failed_text(call.name, problems, call.arguments)
        return error_result(call.id, call.name, text)
    config = run.config
    if (
        tool.accepts
        or config.tool_timeout_s is not None
        or (tool.is_async and config.cancel is not None)
    ):
        return Invoke(tool, arguments)
    # A plain sync tool runs here; so does an ``async def`` tool with nothing to watch (no
    # timeout, no cancel token, no progress callback): its coroutine is awaited inline by
    # the loop, with no task, event or wait per call.
    try:
        value = tool.execute(arguments)
    except BaseException as exc:
        return raised_result(run, call, exc)
    if type(value) not in _PLAIN_VALUES and inspect.isawaitable(value):
        return Awaiting(value)
    return safe_result(call.id, call.name, value)


def source_failed(run: RunState, exc: BaseException) -> None:
    """A steering source raised inside a batch: close the batch as on abort; the run ends as
    ``failure_termination`` says and re-raises after ``agent_end`` (cancellation is not
    re-raised: the run just ends ``aborted``)."""
    run.stopped = failure_termination(exc)
    if not isinstance(exc, asyncio.CancelledError) and run.reraise is None:
        run.reraise = exc


def raised_result(run: RunState, call: ToolCall, exc: BaseException) -> ToolResultMessage:
    """The result of a tool call whose body raised ``exc``, decided here once for every path
    (sync, async, timed): an ``Exception`` is an error result the model reads; anything else
    (cancellation, ``KeyboardInterrupt``/``SystemExit``, also when ``_guard`` carried one out of
    the tool's task) aborts the call (``abort_call``)."""
    if isinstance(exc, _Escaped):
        return abort_call(run, call, exc.inner)
    if isinstance(exc, Exception):
        return error_result(call.id, call.name, error_text(exc))
    return abort_call(run, call, exc)


def abort_call(run: RunState, call: ToolCall, exc: BaseException) -> ToolResultMessage:
    """A ``BaseException`` from a tool: the run ends ``aborted``; non-cancellation ones
    (``KeyboardInterrupt``, ``SystemExit``) are re-raised after ``agent_end``."""
    if run.stopped is None:
        run.stopped = "aborted"
    if not isinstance(exc, asyncio.CancelledError) and run.reraise is None:
        run.reraise = exc
    return error_result(call.id, call.name, CANCELLED_TEXT)


async def invoke(
    run: RunState,
    tool: AgentTool,
    call: ToolCall,
    arguments: dict[str, Any],
    outcome: list[ToolResultMessage],
) -> AsyncGenerator[AgentEvent, None]:
    """The general path: extras, async bodies, timeouts, cancellation and live updates."""
    config = run.config
    loop = asyncio.get_running_loop()
    updates: list[Any] = []
    wake = asyncio.Event()
    kwargs: dict[str, Any] = {}
    if "tool_call_id" in tool.accepts:
        kwargs["tool_call_id"] = call.id
    if "cancel" in tool.accepts:
        kwargs["cancel"] = config.cancel if config.cancel is not None else CancelToken()
    if "on_update" in tool.accepts:

        def on_update(partial_value: Any) -> None:
            updates.append(partial_value)
            try:
                if asyncio.get_running_loop() is loop:
                    wake.set()
                    return
            except RuntimeError:
                pass
            loop.call_soon_threadsafe(wake.set)

        kwargs["on_update"] = on_update

    timeout = config.tool_timeout_s
    try:
        if tool.is_async:
            future: asyncio.Future[Any] = asyncio.ensure_future(
                _guard(tool.execute(arguments, **kwargs))
            )
        elif timeout is not None:
            # A daemon thread, not the default executor: a tool that never returns must not
            # keep ``asyncio.run`` or the interpreter from finishing (docs/decisions.md).
            ctx = contextvars.copy_context()
            future = run_in_daemon_thread(partial(ctx.run, tool.execute, arguments, **kwargs))
        else:
            value = tool.execute(arguments, **kwargs)
            if inspect.isawaitable(value):
                future = asyncio.ensure_future(_guard(value))
            else:
                for item in updates:
                    yield ToolExecutionUpdate(
                        tool_call_id=call.id, tool_name=call.name, partial=item
                    )
                outcome.append(safe_result(call.id, call.name, value))
                return
    except BaseException as exc:
        outcome.append(raised_result(run, call, exc))
        return

    deadline = None if timeout is None else loop.time() + timeout
    cancel_wait = asyncio.ensure_future(config.cancel.wait()) if config.cancel is not None else None
    try:
        while True:
            wake_wait = asyncio.ensure_future(wake.wait())
            waits: set[asyncio.Future[Any]] = {future, wake_wait}
            if cancel_wait is not None:
                waits.add(cancel_wait)
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            try:
                await asyncio.wait(waits, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
            finally:
                wake_wait.cancel()
            wake.clear()
            while updates:
                item = updates.pop(0)
                yield ToolExecutionUpdate(tool_call_id=call.id, tool_name=call.name, partial=item)
            if future.done():
                break
            if cancel_wait is not None and cancel_wait.done():
                future.cancel()
                outcome.append(abort_call(run, call, asyncio.CancelledError()))
                return
            if deadline is not None and loop.time() >= deadline:
                future.cancel()
                assert timeout is not None
                outcome.append(error_result(call.id, call.name, timed_out_text(call.name, timeout)))
                return
    except asyncio.CancelledError as exc:
        future.cancel()
        outcome.append(abort_call(run, call, exc))
        return
    finally:
        if cancel_wait is not None:
            cancel_wait.cancel()

    try:
        value = future.result()
    except BaseException as exc:
        outcome.append(raised_result(run, call, exc))
        return
    outcome.append(safe_result(call.id, call.name, value))


class _Escaped(Exception):
    """Carries a ``KeyboardInterrupt``/``SystemExit`` out of a tool's task: asyncio re-raises
    those from the event loop itself (killing it, with no ``agent_end``), so ``_guard`` wraps
    them and the loop unwraps them into the same ``aborted`` path as a sync tool's."""

    def __init__(self, inner: BaseException) -> None:
        super().__init__(type(inner).__name__)
        self.inner = inner


async def _guard(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except (KeyboardInterrupt, SystemExit) as exc:
        raise _Escaped(exc) from None


def safe_result(call_id: str, name: str, value: Any) -> ToolResultMessage:
    """``make_result``, or an error result when the value cannot be turned into text (a
    structure too deep to serialise, a ``model_dump``/``__str__`` that raises): the same on
    every path, sync, async or timed."""
    try:
        return make_result(call_id, name, value)
    except Exception as exc:
        return error_result(call_id, name, unserialisable_text(name, error_text(exc)))


__all__ = [
    "Awaiting",
    "Invoke",
    "Prepared",
    "RunState",
    "abort_call",
    "invoke",
    "prepare",
    "raised_result",
    "safe_result",
    "source_failed",
]
