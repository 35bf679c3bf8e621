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
from typing import Any

from .approvals import Reviewed, review
from .calls import (
    Awaiting,
    Invoke,
    Prepared,
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
from .runs import MessageSource, PollPoint, poll_point, polls_steering
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
    FailedTermination,
    Message,
    Termination,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    failure_termination,
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
    """One run, phase by phase (as pi's ``agent-loop.ts``): the prompts and the first steering
    poll, then rounds of (1) stream a message, (2) run its calls, (3) poll steering, then (4)
    follow-ups.  Phases 1 and 2 are written here, not as helper generators: a generator per
    phase costs its creation (with the event loop's async-generator hooks) and a hop per event,
    which measured 19% of a W1 round (docs/decisions.md, "The loop's phases")."""
    run = RunState(context, tools, config)
    cancel = run.cancel
    termination: Termination = "completed"
    undelivered: list[UserMessage] = []
    failure: BaseException | None = None
    # Events are built with positional arguments on this path: in CPython 3.11 a keyword call
    # costs about twice as much as the construction itself (0.47 vs 0.21 µs here).
    yield AgentStart()
    yield TurnStart()
    try:
        for added in _add_messages(run, prompts):
            yield added
        pending: list[UserMessage] = []
        if run.steering_source is not None:  # (no source: the polls are skipped, not awaited)
            try:
                pending = await _poll_steering(run, None, 0, False)
            except GeneratorExit:
                raise
            except BaseException as exc:
                for closing in _source_failed_at_start(run, exc):
                    yield closing
                raise
        has_more_tool_calls = True
        while True:  # outer loop: one pass per follow-up batch
            while has_more_tool_calls or pending:
                if run.rounds == run.cap:
                    termination = "max_iterations"
                    undelivered.extend(pending)
                    pending = []
                    break
                if run.rounds:
                    yield TurnStart()
                run.rounds += 1
                if pending:  # (an empty one is kept: one list less per round)
                    for added in _add_messages(run, pending):
                        yield added
                    pending = []

                # -- 1. stream one assistant message into the history ------------------------
                # A provider that raises, a stream without a terminal event and cancellation
                # all become an ``error``/``aborted`` message, so the rest of the round has one
                # path for every failure.
                started = False
                if cancel is not None and cancel.is_set():
                    message = _failed_message(None, config, "aborted", NOT_CALLED_TEXT)
                else:
                    stream.model_calls += 1
                    final: AssistantMessage | None = None
                    partial: AssistantMessage | None = None
                    iterator: Any = None
                    try:
                        iterator = config.provider.stream(
                            config.model, run.provider_context, run.options
                        )
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
                                final = _failed_message(partial, config, "aborted", ABORTED_TEXT)
                                break
                        else:
                            final = _failed_message(partial, config, "error", STREAM_ENDED_TEXT)
                    except asyncio.CancelledError:
                        final = _failed_message(partial, config, "aborted", ABORTED_TEXT)
                    except Exception as exc:
                        final = _failed_message(partial, config, "error", error_text(exc))
                    finally:
                        if final is not None:  # (None: the consumer closed the run mid-stream)
                            await _close(iterator)
                    assert final is not None
                    message = final
                    # Dropped before the tools run: held across a tool's await, the spent
                    # stream and its last event outlived a young collection in every in-flight
                    # run (docs/decisions.md, "Concurrent runs and the collector").
                    iterator = event = None
                    if message.stop_reason not in _STOP_REASONS:
                        message.stop_reason = "error"
                if not started:
                    yield MessageStart(message)
                run.append(message)
                yield MessageEnd(message)
                if message.stop_reason == "error" or message.stop_reason == "aborted":
                    yield TurnEnd(message=message, tool_results=[])
                    termination = message.stop_reason
                    break

                # -- 2. run its tool calls, in order ------------------------------------------
                # Each is answered by ``prepare`` (reviewed first if its tool is gated), then
                # steering may be polled (``polls_steering``): in ``skip`` mode steering skips
                # the rest of the batch; a stopped batch answers its rest ``Cancelled``.
                tool_calls = _tool_calls(message)
                has_more_tool_calls = bool(tool_calls)
                results: list[ToolResultMessage] = []
                if run.steering:  # (an empty one is reused: one list less per round)
                    run.steering = []
                last_index = len(tool_calls) - 1
                for index in range(last_index + 1):  # (``range``: see ``_tool_calls``)
                    call = tool_calls[index]
                    yield ToolExecutionStart(call.id, call.name, call.arguments)
                    executed = run.stopped is None and not (run.steering and run.skip_mode)
                    runs = executed
                    if not executed:
                        prepared: Prepared = _not_run(run, call)
                    elif run.gated is not None and call.name in run.gated:
                        reviewed = Reviewed()
                        async for event in _review(run, call, reviewed):
                            yield event
                        runs = reviewed.call is not None  # (perhaps with changed arguments)
                        prepared = _reviewed(run, call, reviewed)
                    else:
                        prepared = prepare(run, call)
                    if type(prepared) is Awaiting:  # a plain function's awaitable
                        # Awaited here, not in a helper: a helper coroutine per call would stay
                        # alive across the tool's await (docs/decisions.md, "Concurrent runs and
                        # the collector"); errors fed back as usual.
                        try:
                            value = await prepared.awaitable
                        except BaseException as exc:
                            result = raised_result(run, call, exc)
                        else:
                            result = safe_result(call.id, call.name, value)
                    elif type(prepared) is Invoke:  # extras, timeouts, cancel tokens
                        outcome: list[ToolResultMessage] = []
                        async for event in invoke(
                            run, prepared.tool, call, prepared.arguments, outcome
                        ):
                            yield event
                        result = outcome[0]
                    else:
                        assert type(prepared) is ToolResultMessage
                        result = prepared
                    if runs:
                        _count_call(run)
                    yield ToolExecutionEnd(call.id, call.name, result, result.is_error)
                    yield MessageStart(result)
                    run.append(result)
                    results.append(result)
                    yield MessageEnd(result)
                    if (
                        executed
                        and run.steering_source is not None
                        and run.stopped is None
                        and polls_steering(
                            config.steering_mode, True, bool(run.steering), run.rounds, run.cap
                        )
                    ):
                        await _steering_after_call(run, index, index == last_index)
                yield TurnEnd(message, results)

                # -- 3. the batch was stopped, or steering starts the next round -------------
                if run.stopped is not None:
                    termination = run.stopped
                    undelivered.extend(run.steering)
                    break
                if run.steering:
                    pending = run.steering
                elif run.steering_source is not None and polls_steering(
                    config.steering_mode, False, False, run.rounds, run.cap
                ):
                    pending = await _poll_steering(run, None, len(tool_calls), True)
            else:
                # -- 4. the model finished: follow-ups start another round, if one is allowed
                # (never dequeue what cannot be delivered)
                if run.follow_up_source is not None and run.rounds < run.cap:
                    pending = await _poll_follow_ups(run)
                    if pending:
                        continue
                termination = "completed"
            break
    except GeneratorExit:
        raise
    except asyncio.CancelledError:
        termination = "aborted"
    except BaseException as exc:  # a hook or an internal failure: still end the run properly
        termination = failure_termination(exc)
        failure = exc
    if run.reraise is not None and failure is None:
        failure = run.reraise

    yield _end(stream, run, termination, undelivered)
    if failure is not None:
        raise failure


# -- the steps of a call that leave the hot path -----------------------------------------------


def _not_run(run: RunState, call: ToolCall) -> ToolResultMessage:
    """A call answered without running: ``Cancelled`` once the batch is stopped, else skipped
    (steering arrived in ``skip`` mode)."""
    if run.stopped is not None:
        return error_result(call.id, call.name, CANCELLED_TEXT)
    return error_result(call.id, call.name, SKIPPED_TEXT, skipped=True)


def _review(run: RunState, call: ToolCall, reviewed: Reviewed) -> AsyncGenerator[AgentEvent, None]:
    """A gated tool's call is reviewed before it runs (``openprogram.approvals``)."""
    return review(
        run.tools[call.name],
        run.gated[call.name],  # type: ignore[index]
        call,
        run.gate,
        run.config.approval_timeout_s,
        run.cancel,
        run.info,
        reviewed,
    )


def _reviewed(run: RunState, call: ToolCall, reviewed: Reviewed) -> Prepared:
    """What a reviewed call becomes: approved, it is ``prepare``d (with changed arguments, if
    any); otherwise it is answered without running (denied or timed out: the reviewer's
    result; aborted: ``abort_call``)."""
    if reviewed.call is not None:
        return prepare(run, reviewed.call)
    if reviewed.aborted is not None:
        return abort_call(run, call, reviewed.aborted)
    assert reviewed.result is not None
    return reviewed.result


def _count_call(run: RunState) -> None:
    """A call ran: count it; a cancel token fired during it stops the batch (the rest is
    answered ``Cancelled``)."""
    run.executed_calls += 1
    cancel = run.cancel
    if cancel is not None and cancel.is_set() and run.stopped is None:
        run.stopped = "aborted"


async def _steering_after_call(run: RunState, index: int, batch_done: bool) -> None:
    """The steering poll after call ``index``: what it returns waits in ``run.steering``; a
    source that raises stops the batch (``source_failed``)."""
    try:
        run.steering.extend(await _poll_steering(run, index, index + 1, batch_done))
    except GeneratorExit:
        raise
    except BaseException as exc:
        source_failed(run, exc)


def _tool_calls(message: AssistantMessage) -> list[ToolCall]:
    """The message's tool calls, in order.  (A loop, not a list comprehension: that is one more
    function call per round.  The loop walks them by index over a ``range``, not
    ``enumerate``: an enumerate, its list iterator and its tuple are three collector-tracked
    objects alive across every awaited call; a range iterator is not tracked.)"""
    tool_calls: list[ToolCall] = []
    for block in message.content:
        if isinstance(block, ToolCall):
            tool_calls.append(block)
    return tool_calls


def _add_messages(run: RunState, messages: list[UserMessage]) -> Iterator[AgentEvent]:
    """Prompts and delivered steering/follow-ups join the history, each between its events."""
    for message in messages:
        yield MessageStart(message)
        run.append(message)
        yield MessageEnd(message)


async def _poll_steering(
    run: RunState, call_index: int | None, calls_in_round: int, batch_done: bool
) -> list[UserMessage]:
    """One steering poll (where: ``polls_steering``), with a ``PollPoint`` if the source takes
    one (decided once per run)."""
    point = (
        poll_point(
            "steering",
            round=max(run.rounds - 1, 0),
            calls_in_run=run.executed_calls,
            run=run.info,
            call_index=call_index,
            calls_in_round=calls_in_round,
            batch_done=batch_done,
        )
        if run.steering_point
        else None
    )
    return await _poll(run.steering_source, point)


async def _poll_follow_ups(run: RunState) -> list[UserMessage]:
    """The follow-up poll when the model finished (with a ``PollPoint`` if the source takes
    one, decided once per run)."""
    point = (
        poll_point("follow_up", round=run.rounds - 1, calls_in_run=run.executed_calls, run=run.info)
        if run.follow_up_point
        else None
    )
    return await _poll(run.follow_up_source, point)


# -- the cold parts of a run (once per run at most) ------------------------------------------------


def _source_failed_at_start(run: RunState, exc: BaseException) -> Iterator[AgentEvent]:
    """The events that close round 0 when the steering source raised at the first poll: a
    failed message no model produced (its stop reason: ``failure_termination``), then
    ``turn_end``; the run then ends and re-raises.  The message joins the history between its
    two events, as every message does."""
    failed = AssistantMessage(
        stop_reason=failure_termination(exc),
        error_message=SOURCE_FAILED_PREFIX + error_text(exc),
        model=run.config.model,
    )
    yield MessageStart(failed)
    run.append(failed)
    yield MessageEnd(failed)
    yield TurnEnd(failed, [])


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


async def _close(iterator: Any) -> None:
    """Close a provider stream that is left early (or has ended): releases its connection.  (A
    stream without ``aclose``, a plain async iterator, has nothing to release.)"""
    aclose = getattr(iterator, "aclose", None)
    if aclose is None:
        return
    try:
        await aclose()
    except Exception:
        pass


def _failed_message(
    partial_message: AssistantMessage | None,
    config: LoopConfig,
    reason: FailedTermination,
    text: str,
) -> AssistantMessage:
    """The round's message when it failed: what had streamed so far (or an empty message),
    with its stop reason and why."""
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
