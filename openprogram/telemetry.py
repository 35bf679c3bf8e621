"""Runs as OpenTelemetry GenAI spans, built from the loop's own event stream.

When ``opentelemetry-api`` is installed (the ``otel`` extra) and a tracer provider is set, every
run of the loop is written as the GenAI semantic conventions describe an agent:

- one ``invoke_agent`` span per run (``invoke_agent {tool}`` for a run started by a tool call,
  named after that tool), child of whatever span is current when the run starts, so a nested
  ``Runtime.exec`` lands under the ``execute_tool`` span of the call whose body started it;
- one ``chat {model}`` span per model call, with the finish reason, the response model and the
  call's own usage (``gen_ai.usage.*``: only the names the convention defines);
- one ``execute_tool {tool}`` span per tool call, current while the tool body runs (spans the
  tool makes nest under it); an error result sets the span's status and adds the
  ``exception`` event; a call skipped by steering is marked ``openprogram.tool_call.skipped``;
- steering and follow-up messages as events on the run span when they are delivered; the
  termination, the model calls and the undelivered messages as attributes of the run span.

Content (messages, system instructions, tool arguments and results) is recorded only when
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` is ``true`` (or ``span_only``/
``span_and_event``), the convention's switch.

Why from the events: the event stream is what every other view of a run (the harness's trace,
the timeline, the report) is read from, so the spans say what those say; the loop itself
carries one hook (``run_spans``), taken once per run.  With no tracer provider (or
OpenTelemetry not imported at all) that hook returns ``None`` after two look-ups and the run is
exactly the run without telemetry.  Attribute names come from
``opentelemetry-semantic-conventions``; names outside the convention are under ``openprogram.``.

``use_tracer_provider(provider)`` routes the runs started in a context to a given provider
instead of the global one (a test's in-memory exporter; the harness's per-test export).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
import time
import warnings
from collections import deque
from collections.abc import AsyncGenerator, Awaitable, Iterator
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ._version import __version__
from .events import (
    AgentEnd,
    AgentEvent,
    MessageEnd,
    MessageStart,
    ToolApprovalEnd,
    ToolExecutionEnd,
    ToolExecutionStart,
)
from .providers.apis import api_named
from .runs import PollPoint, wants_poll_point
from .types import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    user_messages,
)

if TYPE_CHECKING:
    from .config import AgentContext, LoopConfig
    from .loop import AgentStream

CAPTURE_CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The convention's switch for recording content; ``true``, ``span_only`` and
``span_and_event`` (any case) turn it on here (this module records content on spans only)."""
_CAPTURE_ON = frozenset({"true", "span_only", "span_and_event"})

# Attributes of our own (the convention has no name for these facts).
RUN_ID = "openprogram.run.id"
RUN_PARENT_ID = "openprogram.run.parent_id"
RUN_KIND = "openprogram.run.kind"
RUN_DEPTH = "openprogram.run.depth"
RUN_TERMINATION = "openprogram.run.termination"
RUN_MODEL_CALLS = "openprogram.run.model_calls"
RUN_UNDELIVERED = "openprogram.run.undelivered"
TOOL_CALL_SKIPPED = "openprogram.tool_call.skipped"
MESSAGE_TEXT = "openprogram.message.text"
STEERING_EVENT = "openprogram.steering"
APPROVAL_EVENT = "openprogram.approval"
APPROVAL_OUTCOME = "openprogram.approval.outcome"
FOLLOW_UP_EVENT = "openprogram.follow_up"

FINISH_REASONS = {
    "stop": "stop",
    "length": "length",
    "toolUse": "tool_call",
    "error": "error",
    "aborted": "error",
}
"""Our stop reasons as the convention's finish reasons (an aborted call did not finish: the
convention has no closer value than ``error``; the run span's termination says ``aborted``)."""

_provider_override: ContextVar[Any] = ContextVar("openprogram_tracer_provider", default=None)
_tracers: dict[int, tuple[Any, Any]] = {}
_missing_conventions_told = [False]


@contextlib.contextmanager
def use_tracer_provider(provider: Any) -> Iterator[Any]:
    """Write the spans of every run started inside the ``with`` block to ``provider`` instead
    of the global tracer provider (it reaches nested runs, tasks and copied contexts, never a
    concurrent run outside the block).  Why: OpenTelemetry sets its global provider once per
    process, and a test, or an export per test, needs its own."""
    if not hasattr(provider, "get_tracer"):
        raise TypeError(f"use_tracer_provider() takes a TracerProvider, got {provider!r}")
    token = _provider_override.set(provider)
    try:
        yield provider
    finally:
        _provider_override.reset(token)


def _tracer() -> Any:
    """The tracer a run starting here writes to, or ``None`` (the common case, kept cheap): no
    provider given to ``use_tracer_provider`` and OpenTelemetry not imported, or imported with
    no provider set (the API's proxy), or the API's no-op provider set."""
    provider = _provider_override.get()
    if provider is None:
        trace = sys.modules.get("opentelemetry.trace")
        if trace is None:
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            return None
    cached = _tracers.get(id(provider))
    if cached is not None and cached[0] is provider:
        return cached[1]
    from opentelemetry.trace import NoOpTracer

    tracer = provider.get_tracer("openprogram", __version__)
    if isinstance(tracer, NoOpTracer):  # the API's no-op provider: decided once, not per run
        tracer = None
    _tracers[id(provider)] = (provider, tracer)
    return tracer


def run_spans(stream: AgentStream, context: AgentContext, config: LoopConfig) -> _RunSpans | None:
    """The loop's hook, once per run: ``None`` when no span is to be written (nothing else to
    do), else the recorder whose ``config`` the run must use (its steering and follow-up
    sources tagged, so a delivered message is known to be one or the other) and whose ``wrap``
    wraps the run's event producer."""
    tracer = _tracer()
    if tracer is None:
        return None
    try:
        conventions = _conventions()
    except ImportError:
        if not _missing_conventions_told[0]:
            _missing_conventions_told[0] = True
            warnings.warn(
                "a tracer provider is set but opentelemetry-semantic-conventions is not "
                "installed: runs are not traced (pip install 'openprogram-loop[otel]')",
                RuntimeWarning,
                stacklevel=3,
            )
        return None
    content = capture_content()
    run_span = _start_run_span(tracer, conventions, context, config, content)
    if not run_span.is_recording():  # a no-op provider or a sampler said no: nothing more
        return None
    return _RunSpans(tracer, conventions, run_span, content, stream, context, config)


def _start_run_span(
    tracer: Any, names: Any, context: AgentContext, config: LoopConfig, content: bool
) -> Any:
    """The run's ``invoke_agent`` span, with the attributes a sampler may decide on."""
    from opentelemetry.trace import SpanKind

    g = names.gen_ai
    info = config.run_info
    agent = info.tool_name if info is not None and info.tool_name else None
    attributes: dict[str, Any] = {
        g.GEN_AI_OPERATION_NAME: "invoke_agent",
        g.GEN_AI_PROVIDER_NAME: provider_name(config.provider),
    }
    if agent:
        attributes[g.GEN_AI_AGENT_NAME] = agent
    if config.model:
        attributes[g.GEN_AI_REQUEST_MODEL] = config.model
    if info is not None:
        attributes[RUN_ID] = info.run_id
        attributes[RUN_KIND] = info.kind
        attributes[RUN_DEPTH] = info.depth
        if info.parent_id is not None:
            attributes[RUN_PARENT_ID] = info.parent_id
    if content and context.system_prompt:
        attributes[g.GEN_AI_SYSTEM_INSTRUCTIONS] = _json(
            [{"type": "text", "content": context.system_prompt}]
        )
    return tracer.start_span(
        f"invoke_agent {agent}" if agent else "invoke_agent",
        kind=SpanKind.INTERNAL,
        attributes=attributes,
    )


@functools.cache
def _conventions() -> Any:
    from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
    from opentelemetry.semconv.attributes import error_attributes, exception_attributes

    class Names:
        gen_ai = gen_ai_attributes
        ERROR_TYPE = error_attributes.ERROR_TYPE
        EXCEPTION_MESSAGE = exception_attributes.EXCEPTION_MESSAGE

    return Names


def provider_name(provider: Any) -> str:
    """``gen_ai.provider.name`` for ``provider``: the convention's name of its API's provider
    (``openprogram.providers.apis``), else the name the provider gives itself (a scripted or
    emulated provider: a custom value, as the convention allows), else its class name."""
    api = getattr(provider, "api", None)
    entry = api_named(api) if isinstance(api, str) else None
    if entry is not None and entry.otel_provider:
        return entry.otel_provider
    for attribute in ("provider_name", "name"):
        name = getattr(provider, attribute, None)
        if isinstance(name, str) and name:
            return name
    return type(provider).__name__


def capture_content() -> bool:
    """Whether content is recorded (the convention's switch, read when a run starts)."""
    return os.environ.get(CAPTURE_CONTENT_ENV, "").strip().lower() in _CAPTURE_ON


class _RunSpans:
    """The spans of one run, fed its events in order (``wrap``)."""

    def __init__(
        self,
        tracer: Any,
        names: Any,
        run_span: Any,
        content: bool,
        stream: AgentStream,
        context: AgentContext,
        config: LoopConfig,
    ) -> None:
        from opentelemetry import trace

        self._trace = trace
        self._tracer = tracer
        self._g = names.gen_ai
        self._names = names
        self._stream = stream
        self._context = context
        self._content = content
        self.run_span = run_span
        self._asked = self._first = 0  # when the open model call was asked, its first event
        self._kinds: deque[str] = deque()  # per polled message: "steering" or "follow_up"
        self.config = replace(
            config,
            get_steering_messages=_tagged(config.get_steering_messages, "steering", self._kinds),
            get_follow_up_messages=_tagged(config.get_follow_up_messages, "follow_up", self._kinds),
        )
        self._provider = provider_name(config.provider)
        self._model = config.model

    # -- the run -------------------------------------------------------------------------------
    async def wrap(
        self, producer: AsyncGenerator[AgentEvent, None]
    ) -> AsyncGenerator[AgentEvent, None]:
        """Pass the run's events through, recording each; the run span ends with the producer
        (after ``agent_end``, so an exception re-raised after it is recorded too).

        A model call's span and a tool call's span are made current while they are open, so
        the spans of an instrumented HTTP client, of the tool's body and of a nested run nest
        under them: the producer runs in its consumer's context, between two events."""
        from opentelemetry import context as otel_context

        trace = self._trace
        run_span = self.run_span
        open_span: Any = None  # the open chat or execute_tool span
        token: Any = None  # its attachment as the current span
        chats = 0
        prompts_done = False
        failure: BaseException | None = None
        try:
            while True:
                asked = time.time_ns()
                try:
                    event = await producer.__anext__()
                except StopAsyncIteration:
                    break
                kind = type(event)
                if kind is MessageStart:
                    message = event.message  # type: ignore[union-attr]
                    if isinstance(message, AssistantMessage):
                        prompts_done = True
                        if self._stream.model_calls > chats:  # a model call, not a stand-in
                            chats = self._stream.model_calls
                            open_span = self._start_chat(asked)
                            token = otel_context.attach(trace.set_span_in_context(open_span))
                    elif isinstance(message, UserMessage) and prompts_done:
                        self._delivered(message)
                elif kind is MessageEnd:
                    if open_span is not None and isinstance(
                        event.message,  # type: ignore[union-attr]
                        AssistantMessage,
                    ):
                        otel_context.detach(token)
                        self._end_chat(open_span, event.message)  # type: ignore[union-attr]
                        open_span = token = None
                elif kind is ToolExecutionStart:
                    open_span = self._start_tool(event)  # type: ignore[arg-type]
                    token = otel_context.attach(trace.set_span_in_context(open_span))
                elif kind is ToolExecutionEnd:
                    if open_span is not None:
                        otel_context.detach(token)
                        self._end_tool(open_span, event)  # type: ignore[arg-type]
                        open_span = token = None
                elif kind is AgentEnd:
                    self._end_run(event)  # type: ignore[arg-type]
                elif kind is ToolApprovalEnd and open_span is not None:
                    self._approval(open_span, event)  # type: ignore[arg-type]
                yield event
        except BaseException as exc:
            failure = exc
            raise
        finally:
            if token is not None:
                otel_context.detach(token)
            if open_span is not None:
                open_span.end()
            if failure is not None and not isinstance(failure, GeneratorExit):
                run_span.record_exception(failure)
                run_span.set_status(trace.Status(trace.StatusCode.ERROR, type(failure).__name__))
            if failure is not None:
                with contextlib.suppress(Exception):
                    await producer.aclose()
            run_span.end()

    def _end_run(self, end: AgentEnd) -> None:
        span = self.run_span
        span.set_attribute(RUN_TERMINATION, end.termination)
        span.set_attribute(RUN_MODEL_CALLS, end.model_calls)
        if end.undelivered:
            span.set_attribute(RUN_UNDELIVERED, len(end.undelivered))
        if end.termination in ("error", "aborted"):
            span.set_attribute(self._names.ERROR_TYPE, end.termination)
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, end.termination))
        if self._content:
            last = next(
                (m for m in reversed(end.messages) if isinstance(m, AssistantMessage)), None
            )
            if last is not None:
                span.set_attribute(self._g.GEN_AI_OUTPUT_MESSAGES, _json([_output(last)]))

    def _delivered(self, message: UserMessage) -> None:
        kind = self._kinds.popleft() if self._kinds else "steering"
        attributes: dict[str, Any] = {}
        if self._content:
            attributes[MESSAGE_TEXT] = message.text
        self.run_span.add_event(
            FOLLOW_UP_EVENT if kind == "follow_up" else STEERING_EVENT, attributes
        )

    # -- model calls -----------------------------------------------------------------------------
    def _start_chat(self, asked: int) -> Any:
        g = self._g
        config = self.config
        attributes: dict[str, Any] = {
            g.GEN_AI_OPERATION_NAME: "chat",
            g.GEN_AI_PROVIDER_NAME: self._provider,
        }
        if self._model:
            attributes[g.GEN_AI_REQUEST_MODEL] = self._model
        if config.max_tokens is not None:
            attributes[g.GEN_AI_REQUEST_MAX_TOKENS] = config.max_tokens
        if config.temperature is not None:
            attributes[g.GEN_AI_REQUEST_TEMPERATURE] = config.temperature
        if self._content:
            history = self._context.messages
            # (the message just started is the answer, not the input: it is not appended yet)
            attributes[g.GEN_AI_INPUT_MESSAGES] = _json([_input(m) for m in history])
            if self._context.system_prompt:
                attributes[g.GEN_AI_SYSTEM_INSTRUCTIONS] = _json(
                    [{"type": "text", "content": self._context.system_prompt}]
                )
        span = self._tracer.start_span(
            f"chat {self._model}" if self._model else "chat",
            context=self._trace.set_span_in_context(self.run_span),
            kind=self._trace.SpanKind.CLIENT,
            attributes=attributes,
            start_time=asked,
        )
        self._asked, self._first = asked, time.time_ns()
        return span

    def _end_chat(self, span: Any, message: AssistantMessage) -> None:
        g = self._g
        usage = message.usage
        span.set_attribute(
            g.GEN_AI_USAGE_INPUT_TOKENS,
            usage.input_tokens + usage.cache_read_tokens + usage.cache_write_tokens,
        )
        span.set_attribute(g.GEN_AI_USAGE_OUTPUT_TOKENS, usage.output_tokens)
        if usage.cache_read_tokens:
            span.set_attribute(g.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS, usage.cache_read_tokens)
        if usage.cache_write_tokens:
            span.set_attribute(g.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS, usage.cache_write_tokens)
        span.set_attribute(
            g.GEN_AI_RESPONSE_FINISH_REASONS, [FINISH_REASONS.get(message.stop_reason, "error")]
        )
        if message.model:
            span.set_attribute(g.GEN_AI_RESPONSE_MODEL, message.model)
        if self._content:
            span.set_attribute(g.GEN_AI_OUTPUT_MESSAGES, _json([_output(message)]))
        if message.stop_reason not in ("error", "aborted"):
            # (a failed call's first event is its failure: no chunk arrived)
            seconds = (self._first - self._asked) / 1e9
            span.set_attribute(g.GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK, seconds)
        else:
            error = message.error_message or message.stop_reason
            span.set_attribute(
                self._names.ERROR_TYPE,
                str(message.error_status) if message.error_status else "_OTHER",
            )
            span.add_event("exception", {self._names.EXCEPTION_MESSAGE: error})
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, error))
        span.end()

    # -- tool calls ------------------------------------------------------------------------------
    def _start_tool(self, event: ToolExecutionStart) -> Any:
        g = self._g
        attributes: dict[str, Any] = {
            g.GEN_AI_OPERATION_NAME: "execute_tool",
            g.GEN_AI_TOOL_NAME: event.tool_name,
            g.GEN_AI_TOOL_CALL_ID: event.tool_call_id,
            g.GEN_AI_TOOL_TYPE: "function",
        }
        if self._content:
            attributes[g.GEN_AI_TOOL_CALL_ARGUMENTS] = _json(event.args)
        return self._tracer.start_span(
            f"execute_tool {event.tool_name}",
            context=self._trace.set_span_in_context(self.run_span),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
        )

    def _approval(self, span: Any, event: ToolApprovalEnd) -> None:
        """The approval gate's decision, as an event of the call's span (``outcome``: the
        loop's typed outcome; a refused call's error result says the rest)."""
        span.add_event(APPROVAL_EVENT, {APPROVAL_OUTCOME: event.outcome})

    def _end_tool(self, span: Any, event: ToolExecutionEnd) -> None:
        result = event.result
        if result.skipped:
            span.set_attribute(TOOL_CALL_SKIPPED, True)
        elif event.is_error:
            text = result.text or "error"
            span.set_attribute(self._names.ERROR_TYPE, "_OTHER")
            span.add_event("exception", {self._names.EXCEPTION_MESSAGE: text})
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, text))
        elif self._content:
            span.set_attribute(self._g.GEN_AI_TOOL_CALL_RESULT, _json(_tool_result(result)))
        span.end()


# -- steering and follow-up sources, tagged ------------------------------------------------------


def _tagged(source: Any, kind: str, kinds: deque[str]) -> Any:
    """``source`` as it is, noting ``kind`` once per message it hands over, so the run's spans
    know a delivered message's kind (the loop delivers what its sources return, in order).
    It declares the ``PollPoint`` parameter exactly when ``source`` does."""
    if source is None:
        return None

    async def note(value: Any) -> list[UserMessage]:
        if isinstance(value, Awaitable):
            value = await value
        messages = user_messages(value, "a polled message") if value else []
        kinds.extend(kind for _ in messages)
        return messages

    if wants_poll_point(source):

        async def with_point(point: PollPoint) -> list[UserMessage]:
            return await note(source(point))

        return with_point

    async def bare() -> list[UserMessage]:
        return await note(source())

    return bare


# -- content, in the convention's message shapes --------------------------------------------------


def _json(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)


def _user_parts(content: str | list[Any]) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    parts: list[dict[str, Any]] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ImageContent):
            parts.append(
                {
                    "type": "blob",
                    "modality": "image",
                    "mime_type": block.mime_type,
                    "content": block.data_b64,
                }
            )
    return parts


def _assistant_parts(message: AssistantMessage) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextContent):
            parts.append({"type": "text", "content": block.text})
        elif isinstance(block, ThinkingContent):
            parts.append({"type": "reasoning", "content": block.thinking})
        elif isinstance(block, ToolCall):
            parts.append(
                {
                    "type": "tool_call",
                    "id": block.id,
                    "name": block.name,
                    "arguments": block.arguments,
                }
            )
    return parts


def _tool_result(result: ToolResultMessage) -> Any:
    return result.details if result.details is not None else result.text


def _input(message: Message) -> dict[str, Any]:
    if isinstance(message, UserMessage):
        return {"role": "user", "parts": _user_parts(message.content)}
    if isinstance(message, AssistantMessage):
        return {"role": "assistant", "parts": _assistant_parts(message)}
    return {
        "role": "tool",
        "parts": [
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.text}
        ],
    }


def _output(message: AssistantMessage) -> dict[str, Any]:
    return {
        "role": "assistant",
        "parts": _assistant_parts(message),
        "finish_reason": FINISH_REASONS.get(message.stop_reason, "error"),
    }


__all__ = [
    "APPROVAL_EVENT",
    "CAPTURE_CONTENT_ENV",
    "FOLLOW_UP_EVENT",
    "RUN_ID",
    "RUN_PARENT_ID",
    "RUN_TERMINATION",
    "STEERING_EVENT",
    "TOOL_CALL_SKIPPED",
    "capture_content",
    "run_spans",
    "use_tracer_provider",
]
