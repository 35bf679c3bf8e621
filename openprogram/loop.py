"""The tool-calling loop: the whole mechanism, top to bottom.

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
  ``undelivered``;
- a steering/follow-up source that raises ends the run like a failure of the loop itself: the
  open batch is closed (remaining calls answered ``Cancelled``), ``turn_end`` and
  ``agent_end(termination="error")`` are emitted (``"aborted"`` for a ``BaseException``), what
  it handed over earlier is reported ``undelivered``, then the exception is re-raised;
- a cancel token fired during a call (by the tool itself, say) stops the rest of the batch: the
  remaining calls are answered ``Cancelled`` and the run ends ``aborted``.

Steering/follow-up sources that declare a positional parameter receive a ``PollPoint`` (where the
loop polls); that is decided once per run (``openprogram.runs.wants_poll_point``).

Hot path (budgets measured with ``python -m bench``): the history is one list appended
in place (never copied); tools are normalised once per run and their validators compiled once
per schema; a plain sync tool is called directly; a round's two phases (stream the assistant
message, run its tool calls) are written inline in ``_run_loop`` because a helper generator per
phase cost a generator per round and a hop per event; what happens at most once per run (round
0 closed by a failing source, the follow-up poll, the ``agent_end`` assembly) is in helpers
below it, so the hot function holds only what every round runs; events and messages are slotted
dataclasses (``openprogram._model``).
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, Iterator, Sequence
from typing import Any, Literal

from .approvals import Reviewed, active_gate, gated_tools, review
from .calls import (
    Awaiting,
    Invoke,
    RunState,
    abort_call,
    invoke,
    prepare,
    raised_result,
    safe_result,
    source_failed,
)
from .config import (
    MAX_INNER_ITERATIONS,
    AgentContext,
    LoopConfig,
    SteeringMode,
    effective_cap,
)
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
    TurnEnd,
    TurnStart,
)
from .providers.base import error_text
from .runs import MessageSource, PollPoint, RunInfo, poll_point, wants_poll_point
from .telemetry import run_spans
from .texts import (
    ABORTED_TEXT,
    CANCELLED_TEXT,
    NOT_CALLED_TEXT,
    SKIPPED_TEXT,
    SOURCE_FAILED_PREFIX,
    STREAM_ENDED_TEXT,
)
from .tools import AgentTool, error_result, normalize_tools
from .types import (
    AssistantMessage,
    Message,
    Termination,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    user_messages,
)


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
    prompt_messages = user_messages(prompts, "a prompt")
    tools = normalize_tools(context.tools)
    stream = AgentStream()
    _bind(stream, prompt_messages, context, tools, config)
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
    _bind(stream, [], context, tools, config)
    return stream


def _bind(
    stream: AgentStream,
    prompts: list[UserMessage],
    context: AgentContext,
    tools: list[AgentTool],
    config: LoopConfig,
) -> None:
    """Give ``stream`` its producer: the run itself, written as OpenTelemetry spans too when a
    tracer provider is set (``openprogram.telemetry``; ``None`` from ``run_spans`` otherwise)."""
    spans = run_spans(stream, context, config)
    if spans is None:
        stream.bind(_run_loop(stream, prompts, context, tools, config))
    else:
        stream.bind(spans.wrap(_run_loop(stream, prompts, context, tools, spans.config)))


async def _run_loop(
    stream: AgentStream,
    prompts: list[UserMessage],
    context: AgentContext,
    tools: list[AgentTool],
    config: LoopConfig,
) -> AsyncGenerator[AgentEvent, None]:
    run = RunState(context, tools, config)
    provider = config.provider
    cancel = config.cancel
    steering_source = config.get_steering_messages
    poll_steering = steering_source is not None
    # Decided once per run: a source without a parameter is called bare (no PollPoint built).
    steering_point = wants_poll_point(steering_source)
    follow_up_source = config.get_follow_up_messages
    follow_up_point = wants_poll_point(follow_up_source)
    run_info = config.run_info
    executed_calls = 0
    skip_mode = config.steering_mode == "skip"
    cap = effective_cap(config.max_iterations)
    termination: Termination = "completed"
    undelivered: list[UserMessage] = []
    iterations = 0
    failure: BaseException | None = None
    # Tools that may require approval (``None``: none does, nothing is checked per call).
    gated = gated_tools(tools)
    # The gate: an enclosing ``Runtime.override(approval_gate=...)``'s, else the config's.
    gate = active_gate(config.approval_gate) if gated is not None else None

    # Events are built with positional arguments on this path: in CPython 3.11 a keyword call
    # costs about twice as much as the construction itself (0.47 vs 0.21 µs here).
    yield AgentStart()
    yield TurnStart()
    try:
        for prompt in prompts:
            yield MessageStart(prompt)
            run.append(prompt)
            yield MessageEnd(prompt)
        pending: list[UserMessage] = []
        if poll_steering:  # (the polls are skipped, not awaited, when there is no source)
            try:
                pending = await _poll(
                    steering_source,
                    poll_point("steering", round=0, calls_in_run=0, run=run_info, batch_done=False)
                    if steering_point
                    else None,
                )
            except GeneratorExit:
                raise
            except BaseException as exc:
                for closing in _source_failed_at_start(run, exc, config):
                    yield closing
                raise

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

                if pending:  # (an empty one is kept: one list less per round)
                    for user_message in pending:
                        yield MessageStart(user_message)
                        run.append(user_message)
                        yield MessageEnd(user_message)
                    pending = []

                # -- 1. stream one assistant message into the history ------------------------
                # Inline, not a helper generator: a generator per round plus a hop per event
                # measured ~6% of a round.  A provider that raises, a stream without a
                # terminal event and cancellation all become an ``error``/``aborted`` message
                # here, so everything below has one path for every failure.
                if cancel is not None and cancel.is_set():
                    message = AssistantMessage(
                        stop_reason="aborted", error_message=NOT_CALLED_TEXT, model=config.model
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
                        if final is not None:
                            aclose = getattr(iterator, "aclose", None)
                            if aclose is not None:
                                await _close(aclose)
                    assert final is not None
                    message = final
                    # Dropped before the tools run: held across a tool's await, the spent
                    # stream (with its frame and the event loop's weakref to it) and the last
                    # event outlived a young collection in every in-flight run
                    # (docs/decisions.md, "Concurrent runs and the collector").
                    iterator = event = None
                    if message.stop_reason not in _STOP_REASONS:
                        message.stop_reason = "error"
                if not started:
                    yield MessageStart(message)
                run.context.messages.append(message)  # (``run.append`` inline, as below)
                run.new_messages.append(message)
                yield MessageEnd(message)

                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    yield TurnEnd(message=message, tool_results=[])
                    termination = "error" if message.stop_reason == "error" else "aborted"
                    break

                # -- 2. run its tool calls, sequentially, in order -------------------------
                # Inline for the same reason; what each call needs is decided by ``prepare``.
                # Steering is polled after every executed call; in ``skip`` mode the rest of
                # the batch is then answered without running.
                # (a loop, not a list comprehension: that is a function call per round)
                tool_calls: list[ToolCall] = []
                for block in message.content:
                    if isinstance(block, ToolCall):
                        tool_calls.append(block)
                has_more_tool_calls = bool(tool_calls)
                results: list[ToolResultMessage] = []
                if run.steering:  # (an empty one is reused: one list less per round)
                    run.steering = []
                last_index = len(tool_calls) - 1
                # An index over ``range``, not ``enumerate``: an enumerate, its list iterator
                # and its tuple are three collector-tracked objects alive across every awaited
                # call (a range iterator is not tracked).
                for index in range(last_index + 1):
                    call = tool_calls[index]
                    yield ToolExecutionStart(call.id, call.name, call.arguments)
                    executed = not run.aborted and not (run.steering and skip_mode)
                    answered: ToolResultMessage | None = None
                    if executed and gated is not None and call.name in gated:
                        # Approval first: the call runs (perhaps with changed arguments) or is
                        # answered here without running (openprogram.approvals).
                        reviewed = Reviewed()
                        async for event in review(
                            run.tools[call.name],
                            gated[call.name],
                            call,
                            gate,
                            config.approval_timeout_s,
                            cancel,
                            run_info,
                            reviewed,
                        ):
                            yield event
                        if reviewed.call is not None:
                            call = reviewed.call
                        elif reviewed.aborted is not None:
                            answered = abort_call(run, call, reviewed.aborted)
                        else:
                            answered = reviewed.result
                    if answered is not None:
                        result = answered
                    elif executed:
                        prepared = prepare(run, call)
                        if type(prepared) is ToolResultMessage:
                            result = prepared
                        elif type(prepared) is Awaiting:  # a plain function's awaitable
                            # Awaited here, not in a helper: a helper coroutine per call would
                            # stay alive across the tool's await (docs/decisions.md,
                            # "Concurrent runs and the collector"); errors fed back as usual.
                            try:
                                value = await prepared.awaitable
                            except BaseException as exc:
                                result = raised_result(run, call, exc)
                            else:
                                result = safe_result(call.id, call.name, value)
                        else:  # extras, timeouts, cancel tokens: the general path
                            assert type(prepared) is Invoke
                            outcome: list[ToolResultMessage] = []
                            async for event in invoke(
                                run, prepared.tool, call, prepared.arguments, outcome
                            ):
                                yield event
                            result = outcome[0]
                        executed_calls += 1
                        if cancel is not None and cancel.is_set():
                            run.aborted = True  # fired during the call: the rest is cancelled
                    elif run.aborted:
                        result = error_result(call.id, call.name, CANCELLED_TEXT)
                    else:
                        result = error_result(call.id, call.name, SKIPPED_TEXT, skipped=True)
                    yield ToolExecutionEnd(call.id, call.name, result, result.is_error)
                    yield MessageStart(result)
                    run.context.messages.append(result)
                    run.new_messages.append(result)
                    results.append(result)
                    yield MessageEnd(result)
                    if (
                        executed
                        and poll_steering
                        and not run.aborted
                        and (not run.steering or not skip_mode)
                    ):
                        try:
                            run.steering.extend(
                                await _poll(
                                    steering_source,
                                    poll_point(
                                        "steering",
                                        round=iterations - 1,
                                        calls_in_run=executed_calls,
                                        run=run_info,
                                        call_index=index,
                                        calls_in_round=index + 1,
                                        batch_done=index == last_index,
                                    )
                                    if steering_point
                                    else None,
                                )
                            )
                        except GeneratorExit:
                            raise
                        except BaseException as exc:
                            source_failed(run, exc)
                yield TurnEnd(message, results)

                if run.aborted:
                    termination = "error" if run.failed else "aborted"
                    undelivered.extend(run.steering)
                    break
                if run.steering:
                    pending = run.steering
                elif poll_steering and iterations < cap:
                    pending = await _poll(
                        steering_source,
                        poll_point(
                            "steering",
                            round=iterations - 1,
                            calls_in_run=executed_calls,
                            run=run_info,
                            calls_in_round=len(tool_calls),
                        )
                        if steering_point
                        else None,
                    )
            else:
                # The inner loop ran dry: the model finished.  Follow-ups start another round,
                # but only if one is still allowed (never dequeue what cannot be delivered).
                if follow_up_source is not None and iterations < cap:
                    follow = await _poll_follow_ups(
                        follow_up_source,
                        follow_up_point,
                        iterations - 1,
                        executed_calls,
                        run_info,
                    )
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

    yield _end(stream, run, termination, undelivered)
    if failure is not None:
        raise failure


# -- the cold parts of a run (once per run at most), kept out of ``_run_loop`` ---------------------


def _source_failed_at_start(
    run: RunState, exc: BaseException, config: LoopConfig
) -> Iterator[AgentEvent]:
    """The events that close round 0 when the steering source raised at the first poll: an
    error message no model produced (``aborted`` for a ``BaseException``), then ``turn_end``;
    the run then ends and re-raises.  The message joins the history between its two events, as
    every message does."""
    failed = AssistantMessage(
        stop_reason="error" if isinstance(exc, Exception) else "aborted",
        error_message=SOURCE_FAILED_PREFIX + error_text(exc),
        model=config.model,
    )
    yield MessageStart(failed)
    run.append(failed)
    yield MessageEnd(failed)
    yield TurnEnd(failed, [])


async def _poll_follow_ups(
    source: MessageSource | None,
    with_point: bool,
    round: int,
    executed_calls: int,
    run_info: RunInfo | None,
) -> list[UserMessage]:
    """The follow-up poll when the model finished (``with_point``: the source takes a
    ``PollPoint``, decided once per run)."""
    point = (
        poll_point("follow_up", round=round, calls_in_run=executed_calls, run=run_info)
        if with_point
        else None
    )
    return await _poll(source, point)


def _end(
    stream: AgentStream, run: RunState, termination: Termination, undelivered: list[UserMessage]
) -> AgentEnd:
    """The run's ``agent_end``, with the stream's result and end fields set from it."""
    stream.termination = termination
    stream.undelivered = undelivered
    end = AgentEnd(run.new_messages, termination, undelivered, stream.model_calls)
    stream.end = end
    stream.set_result(run.new_messages)
    return end


_STOP_REASONS = frozenset({"stop", "length", "toolUse", "error", "aborted"})


def _empty(config: LoopConfig) -> AssistantMessage:
    return AssistantMessage(model=config.model)


async def _close(aclose: Any) -> None:
    """Close a provider stream that is left early (or has ended): releases its connection.  (A
    stream without ``aclose``, a plain async iterator, has nothing to release.)"""
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


async def _poll(source: MessageSource | None, point: PollPoint | None) -> list[UserMessage]:
    if source is None:
        return []
    value = source() if point is None else source(point)
    if inspect.isawaitable(value):
        value = await value
    if not value:
        return []
    return user_messages(value, "a polled message")


__all__ = [
    "ABORTED_TEXT",
    "MAX_INNER_ITERATIONS",
    "STREAM_ENDED_TEXT",
    "AgentContext",
    "AgentStream",
    "LoopConfig",
    "MessageSource",
    "SteeringMode",
    "agent_loop",
    "agent_loop_continue",
    "effective_cap",
]
