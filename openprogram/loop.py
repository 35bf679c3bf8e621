"""The tool-calling loop (SPEC §4, §5): the whole mechanism, top to bottom.

Each round the provider streams one assistant message.  Tool calls in it are executed in order
and their results appended to the history; then the model is asked again.  A message with no
tool calls means "finish" — unless steering is queued, which keeps the loop alive.  A hard cap
(``MAX_INNER_ITERATIONS``) bounds the rounds, follow-up rounds included.

Guarantees (each tested):

- exactly one ``agent_end`` per run, whatever happens (cap, provider error, a provider that
  raises, cancellation, a tool raising ``BaseException``), carrying the ``termination`` reason;
- every ``ToolCall`` of a non-error message gets exactly one result, in call order;
- tool calls of an ``error``/``aborted`` message (including a stream cut before its terminal event)
  never run;
- no steering/follow-up message is lost: the loop polls the hooks only when it can still deliver
  what they return, and messages a tool batch handed back in the final round are reported as
  ``undelivered``.

Hot path (issue #8 budgets, measured with ``python -m bench``): the history is one list appended
in place (never copied); tools are normalised once per run and their validators compiled once
per schema; a plain sync tool is called directly; a round's two phases (stream the assistant
message, run its tool calls) are written inline in ``_run_loop`` because a helper generator per
phase cost a generator per round and a hop per event; events and messages are slotted
dataclasses (``openprogram._model``).
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, TypeAlias

from .cancel import CancelToken
from .events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    EventStream,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from .providers.base import Context, Provider, StreamOptions, ToolChoice, error_text
from .tools import (
    CANCELLED_TEXT,
    SKIPPED_TEXT,
    AgentTool,
    error_result,
    make_result,
    normalize_tools,
    validation_failed_text,
)
from .types import (
    AssistantMessage,
    Message,
    Termination,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

MAX_INNER_ITERATIONS = 50
"""Hard cap on model calls per run, against idle spinning."""

STREAM_ENDED_TEXT = "stream ended without a final event"
ABORTED_TEXT = "Request was aborted"

MessageSource: TypeAlias = Callable[
    [], "Awaitable[Sequence[UserMessage | str]] | Sequence[UserMessage | str]"
]
SteeringMode: TypeAlias = Literal["skip", "after_batch"]


@dataclass(slots=True)
class AgentContext:
    """The conversation a run works on.  ``messages`` is appended in place by the run."""

    system_prompt: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: Sequence[Any] = ()


@dataclass(slots=True)
class LoopConfig:
    """How a run talks to its provider and to the outside world.

    ``get_steering_messages``/``get_follow_up_messages`` may be sync or async and return user
    messages (or plain strings).  ``steering_mode="skip"`` (default) skips the rest of a tool batch
    when steering arrives mid-batch; ``"after_batch"`` finishes the batch first.
    """

    provider: Provider
    model: str = ""
    max_iterations: int | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    cancel: CancelToken | None = None
    tool_timeout_s: float | None = None
    steering_mode: SteeringMode = "skip"
    max_tokens: int | None = None
    temperature: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)


def effective_cap(max_iterations: int | None) -> int:
    """``None`` → 50; otherwise ``max(1, min(50, max_iterations))``."""
    if max_iterations is None:
        return MAX_INNER_ITERATIONS
    return max(1, min(MAX_INNER_ITERATIONS, int(max_iterations)))


class AgentStream(EventStream[AgentEvent, list[Message]]):
    """The event stream of one run.  Its result is the list of new messages; once the run ended,
    ``termination``, ``undelivered`` and ``model_calls`` say how."""

    __slots__ = ("end", "model_calls", "termination", "undelivered")

    def __init__(self) -> None:
        super().__init__()
        self.termination: Termination | None = None
        self.undelivered: list[UserMessage] = []
        self.model_calls = 0
        self.end: AgentEnd | None = None


def agent_loop(
    prompts: Sequence[UserMessage | str] | UserMessage | str,
    context: AgentContext,
    config: LoopConfig,
) -> AgentStream:
    """Start a run with new prompt message(s).  Tool entries are checked here, before any model
    call: an invalid entry raises ``TypeError`` naming it."""
    if isinstance(prompts, str | UserMessage):
        prompts = [prompts]
    prompt_messages = [_as_user(p) for p in prompts]
    tools = normalize_tools(context.tools)
    stream = AgentStream()
    stream.bind(_run_loop(stream, prompt_messages, context, tools, config))
    return stream


def agent_loop_continue(context: AgentContext, config: LoopConfig) -> AgentStream:
    """Resume from an existing history (e.g. after adding tool results or a user message).

    The history must not be empty and must not end with an assistant message (the model would
    be asked to answer itself).
    """
    if not context.messages:
        raise ValueError("cannot continue: the context has no messages")
    if isinstance(context.messages[-1], AssistantMessage):
        raise ValueError(
            "cannot continue from an assistant message: add a user message or tool results"
        )
    tools = normalize_tools(context.tools)
    stream = AgentStream()
    stream.bind(_run_loop(stream, [], context, tools, config))
    return stream


class _Run:
    """Mutable state of one run, shared by the loop and its helpers (``_prepare``, ``_invoke``)."""

    __slots__ = (
        "aborted",
        "config",
        "context",
        "new_messages",
        "options",
        "provider_context",
        "reraise",
        "steering",
        "tools",
    )

    def __init__(self, context: AgentContext, tools: list[AgentTool], config: LoopConfig) -> None:
        self.config = config
        self.context = context
        self.tools = {t.name: t for t in tools}
        self.provider_context = Context(
            system_prompt=context.system_prompt,
            messages=context.messages,
            tools=[t.spec for t in tools],
        )
        self.options = StreamOptions(
            tool_choice=config.tool_choice,
            parallel_tool_calls=config.parallel_tool_calls,
            max_tokens=config.max_tokens,
            temperature=config.temperature,
            cancel=config.cancel,
            extras=config.extras,
        )
        self.new_messages: list[Message] = []
        self.steering: list[UserMessage] = []
        self.aborted = False
        self.reraise: BaseException | None = None

    def append(self, message: Message) -> None:
        self.context.messages.append(message)
        self.new_messages.append(message)


async def _run_loop(
    stream: AgentStream,
    prompts: list[UserMessage],
    context: AgentContext,
    tools: list[AgentTool],
    config: LoopConfig,
) -> AsyncGenerator[AgentEvent, None]:
    run = _Run(context, tools, config)
    provider = config.provider
    cancel = config.cancel
    poll_steering = config.get_steering_messages is not None
    skip_mode = config.steering_mode == "skip"
    cap = effective_cap(config.max_iterations)
    termination: Termination = "completed"
    undelivered: list[UserMessage] = []
    iterations = 0
    failure: BaseException | None = None

    # Events are built with positional arguments on this path: in CPython 3.11 a keyword call
    # costs about twice as much as the construction itself (0.47 vs 0.21 µs here).
    yield AgentStart()
    yield TurnStart()
    try:
        for prompt in prompts:
            yield MessageStart(prompt)
            run.append(prompt)
            yield MessageEnd(prompt)
        pending = await _poll(config.get_steering_messages)

        has_more_tool_calls = True
        first_round = True
        while True:  # outer loop: one pass per follow-up batch
            while has_more_tool_calls or pending:
                iterations += 1
                if iterations > cap:
                    termination = "max_iterations"
                    undelivered.extend(pending)
                    pending = []
                    break
                if not first_round:
                    yield TurnStart()
                first_round = False

                for user_message in pending:
                    yield MessageStart(user_message)
                    run.append(user_message)
                    yield MessageEnd(user_message)
                pending = []

                # -- 1. stream one assistant message into the history ------------------------
                # Inline, not a helper generator: a generator per round plus a hop per event
                # measured ~6% of a round (issue #8).  A provider that raises, a stream without a
                # terminal event and cancellation all become an ``error``/``aborted`` message
                # here, so everything below has one path for every failure.
                if cancel is not None and cancel.is_set():
                    message = AssistantMessage(
                        stop_reason="aborted", error_message=_NOT_CALLED, model=config.model
                    )
                    started = False
                else:
                    stream.model_calls += 1
                    final: AssistantMessage | None = None
                    partial: AssistantMessage | None = None
                    started = False
                    iterator: Any = None
                    try:
                        iterator = provider.stream(config.model, run.provider_context, run.options)
                        async for event in iterator:
                            if event.partial is not None:
                                partial = event.partial
                            if not started:
                                started = True
                                yield MessageStart(partial or event.message or AssistantMessage())
                            if event.type == "done" or event.type == "error":
                                final = event.message or partial or _empty(config)
                                yield MessageUpdate(final, event)
                                break
                            yield MessageUpdate(partial, event)  # type: ignore[arg-type]
                            if cancel is not None and cancel.is_set():
                                final = _fail(partial, config, "aborted", ABORTED_TEXT)
                                break
                        else:
                            final = _fail(partial, config, "error", STREAM_ENDED_TEXT)
                    except asyncio.CancelledError:
                        final = _fail(partial, config, "aborted", ABORTED_TEXT)
                    except Exception as exc:
                        final = _fail(partial, config, "error", error_text(exc))
                    finally:
                        # (``final`` is None only when the consumer closed the run mid-stream:
                        # nothing may be awaited then.)
                        if iterator is not None and final is not None:
                            await _close(iterator)
                    assert final is not None
                    message = final
                    if message.stop_reason not in _STOP_REASONS:
                        message.stop_reason = "error"
                if not started:
                    yield MessageStart(message)
                run.append(message)
                yield MessageEnd(message)

                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    yield TurnEnd(message=message, tool_results=[])
                    termination = "error" if message.stop_reason == "error" else "aborted"
                    break

                # -- 2. run its tool calls, sequentially, in order -------------------------
                # Inline for the same reason; what each call needs is decided by ``_prepare``.
                # Steering is polled after every executed call; in ``skip`` mode the rest of
                # the batch is then answered without running.
                tool_calls = [c for c in message.content if isinstance(c, ToolCall)]
                has_more_tool_calls = bool(tool_calls)
                results: list[ToolResultMessage] = []
                run.steering = []
                for call in tool_calls:
                    yield ToolExecutionStart(call.id, call.name, call.arguments)
                    executed = not run.aborted and not (run.steering and skip_mode)
                    if executed:
                        prepared, tool, arguments = _prepare(run, call)
                        if prepared is None:  # extras, async, timeouts: the general path
                            outcome: list[ToolResultMessage] = []
                            async for event in _invoke(run, tool, call, arguments, outcome):
                                yield event
                            result = outcome[0]
                        elif isinstance(prepared, ToolResultMessage):
                            result = prepared
                        else:  # a plain function that returned an awaitable
                            result = await _settle(run, call, prepared)
                    elif run.aborted:
                        result = error_result(call.id, call.name, CANCELLED_TEXT)
                    else:
                        result = error_result(call.id, call.name, SKIPPED_TEXT, skipped=True)
                    yield ToolExecutionEnd(call.id, call.name, result, result.is_error)
                    yield MessageStart(result)
                    run.append(result)
                    results.append(result)
                    yield MessageEnd(result)
                    if (
                        executed
                        and poll_steering
                        and not run.aborted
                        and (not run.steering or not skip_mode)
                    ):
                        try:
                            run.steering.extend(await _poll(config.get_steering_messages))
                        except asyncio.CancelledError:
                            run.aborted = True
                yield TurnEnd(message, results)

                if run.aborted:
                    termination = "aborted"
                    undelivered.extend(run.steering)
                    break
                if run.steering:
                    pending = run.steering
                elif iterations < cap:
                    pending = await _poll(config.get_steering_messages)
            else:
                # The inner loop ran dry: the model finished.  Follow-ups start another round,
                # but only if one is still allowed (never dequeue what cannot be delivered).
                if iterations < cap:
                    follow = await _poll(config.get_follow_up_messages)
                    if follow:
                        pending = follow
                        continue
                termination = "completed"
            break
    except GeneratorExit:
        raise
    except asyncio.CancelledError:
        termination = "aborted"
    except BaseException as exc:  # a hook or an internal failure: still end the run properly
        termination = "error" if isinstance(exc, Exception) else "aborted"
        failure = exc
    if run.reraise is not None and failure is None:
        failure = run.reraise

    stream.termination = termination
    stream.undelivered = undelivered
    end = AgentEnd(
        messages=run.new_messages,
        termination=termination,
        undelivered=undelivered,
        model_calls=stream.model_calls,
    )
    stream.end = end
    stream.set_result(run.new_messages)
    yield end
    if failure is not None:
        raise failure


_NOT_CALLED = "Request was aborted before the model was called"
_PLAIN_VALUES = frozenset({str, int, float, bool, type(None), dict, list, tuple})
"""Types a tool commonly returns that are never awaitable: skips ``inspect.isawaitable``'s ABC
check on the hot path (the profile showed it in every round)."""


_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})


def _empty(config: LoopConfig) -> AssistantMessage:
    return AssistantMessage(model=config.model)


async def _close(iterator: Any) -> None:
    """Close a provider stream that is left early (or has ended): releases its connection."""
    aclose = getattr(iterator, "aclose", None)
    if aclose is not None:
        try:
            await aclose()
        except Exception:
            pass


def _fail(
    partial_message: AssistantMessage | None,
    config: LoopConfig,
    reason: Literal["error", "aborted"],
    text: str,
) -> AssistantMessage:
    message = (
        partial_message if partial_message is not None else AssistantMessage(model=config.model)
    )
    message.stop_reason = reason
    message.error_message = text
    return message


def _prepare(
    run: _Run, call: ToolCall
) -> tuple[ToolResultMessage | Awaitable[Any] | None, Any, dict[str, Any]]:
    """Everything about one call that needs no ``await``: an unknown tool, argument JSON that did
    not parse and failed validation are answered here, and a plain sync tool (the hot path) is
    called directly.  Returns ``(outcome, tool, arguments)``; the outcome is the result, or what
    a plain tool returned that must still be awaited (``_settle``), or ``None``: the general path
    (``_invoke``: extras, async bodies, timeouts) runs the call."""
    tool = run.tools.get(call.name)
    if tool is None:
        return error_result(call.id, call.name, f"Tool {call.name} not found"), None, {}
    if call.raw_arguments is not None:
        not_json = [("root", "arguments are not valid JSON")]
        text = validation_failed_text(call.name, not_json, call.raw_arguments)
        return error_result(call.id, call.name, text), tool, {}
    arguments, problems = tool.validate(call.arguments)
    if problems:
        text = validation_failed_text(call.name, problems, call.arguments)
        return error_result(call.id, call.name, text), tool, arguments
    if tool.accepts or tool.is_async or run.config.tool_timeout_s is not None:
        return None, tool, arguments
    try:
        value = tool.execute(arguments)
        if type(value) not in _PLAIN_VALUES and inspect.isawaitable(value):
            return value, tool, arguments
        return make_result(call.id, call.name, value), tool, arguments
    except Exception as exc:
        return error_result(call.id, call.name, error_text(exc)), tool, arguments
    except BaseException as exc:
        return _abort(run, call, exc), tool, arguments


def _abort(run: _Run, call: ToolCall, exc: BaseException) -> ToolResultMessage:
    """A ``BaseException`` from a tool: the run ends ``aborted``; non-cancellation ones
    (``KeyboardInterrupt``, ``SystemExit``) are re-raised after ``agent_end``."""
    run.aborted = True
    if not isinstance(exc, asyncio.CancelledError) and run.reraise is None:
        run.reraise = exc
    return error_result(call.id, call.name, CANCELLED_TEXT)


async def _invoke(
    run: _Run,
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
            future: asyncio.Future[Any] = asyncio.ensure_future(tool.execute(arguments, **kwargs))
        elif timeout is not None:
            ctx = contextvars.copy_context()
            future = loop.run_in_executor(None, partial(ctx.run, tool.execute, arguments, **kwargs))
        else:
            value = tool.execute(arguments, **kwargs)
            if inspect.isawaitable(value):
                future = asyncio.ensure_future(value)
            else:
                for item in updates:
                    yield ToolExecutionUpdate(
                        tool_call_id=call.id, tool_name=call.name, partial=item
                    )
                outcome.append(make_result(call.id, call.name, value))
                return
    except Exception as exc:
        outcome.append(error_result(call.id, call.name, error_text(exc)))
        return
    except BaseException as exc:
        outcome.append(_abort(run, call, exc))
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
                outcome.append(_abort(run, call, asyncio.CancelledError()))
                return
            if deadline is not None and loop.time() >= deadline:
                future.cancel()
                outcome.append(
                    error_result(
                        call.id, call.name, f"Tool {call.name} timed out after {timeout:g}s"
                    )
                )
                return
    except asyncio.CancelledError as exc:
        future.cancel()
        outcome.append(_abort(run, call, exc))
        return
    finally:
        if cancel_wait is not None:
            cancel_wait.cancel()

    try:
        value = future.result()
    except asyncio.CancelledError as exc:
        outcome.append(_abort(run, call, exc))
        return
    except Exception as exc:
        outcome.append(error_result(call.id, call.name, error_text(exc)))
        return
    except BaseException as exc:
        outcome.append(_abort(run, call, exc))
        return
    outcome.append(make_result(call.id, call.name, value))


async def _settle(run: _Run, call: ToolCall, pending: Awaitable[Any]) -> ToolResultMessage:
    """The result of a plain function that returned an awaitable (a lambda around a coroutine,
    say): awaited here, failures fed back like any tool's."""
    try:
        return make_result(call.id, call.name, await pending)
    except Exception as exc:
        return error_result(call.id, call.name, error_text(exc))
    except BaseException as exc:
        return _abort(run, call, exc)


async def _poll(source: MessageSource | None) -> list[UserMessage]:
    if source is None:
        return []
    value = source()
    if inspect.isawaitable(value):
        value = await value
    if not value:
        return []
    return [_as_user(m) for m in value]


def _as_user(message: UserMessage | str) -> UserMessage:
    if isinstance(message, UserMessage):
        return message
    if isinstance(message, str):
        return UserMessage(content=message)
    raise TypeError(f"expected a UserMessage or str, got {type(message).__name__}")


__all__ = [
    "MAX_INNER_ITERATIONS",
    "AgentContext",
    "AgentStream",
    "LoopConfig",
    "SteeringMode",
    "agent_loop",
    "agent_loop_continue",
    "effective_cap",
]
