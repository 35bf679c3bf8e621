"""Loop traces: run a loop and keep everything it did.

``run_loop`` drives the real ``agent_loop`` with any provider (scripted, an emulator-backed
adapter, a cassette-backed adapter) and returns a ``LoopTrace``: every event in order, the run
result (messages, termination, model calls, undelivered messages), the requests a
``ScriptedProvider`` received during the run and the steering schedule used.  Assertions
(``judges.assertions``) and snapshots (``judges.snapshot``) work on it.

    trace = await run_loop(provider, "add 1 and 2", tools=[add])
    assert trace.termination == "completed"
    print(render_timeline(trace))
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from openprogram import RunInfo, run_sync
from openprogram.cancel import CancelToken
from openprogram.events import AgentEnd, AgentEvent, MessageEnd
from openprogram.loop import (
    MAX_INNER_ITERATIONS,
    AgentContext,
    LoopConfig,
    SteeringMode,
    agent_loop,
    agent_loop_continue,
    effective_cap,
)
from openprogram.providers.base import Provider, ToolChoice
from openprogram.tools import normalize_tools
from openprogram.types import (
    AssistantMessage,
    Message,
    Termination,
    ToolCall,
    ToolResultMessage,
    UserMessage,
    user_messages,
)
from openprogram_testing.base.failures import TimelineNote
from openprogram_testing.base.recording import Annotation, announce_trace, recording
from openprogram_testing.transport.scripted import ModelRequest

from .model_input import ModelInput
from .render import render_snapshot, render_timeline
from .steering import Delivery, RunAddress, SteeringSchedule


class _Notes:
    """A ``run_loop`` run's recorder: notes land at the number of events emitted so far."""

    __slots__ = ("annotations", "events")

    def __init__(self, events: list[AgentEvent], annotations: list[Annotation]) -> None:
        self.events = events
        self.annotations = annotations

    def note(self, kind: str, text: str) -> None:
        self.annotations.append(Annotation(len(self.events), kind, text))


@dataclass
class LoopTrace:
    """Everything one loop run did.

    ``messages`` are the run's new messages (prompts included), as carried by ``agent_end``.
    ``requests`` is what a provider with a ``requests`` list (``ScriptedProvider``) received
    during this run, else ``None``.  ``prompts`` and ``tool_names`` (when known) let the
    invariant checks tell prompts from steering and unknown tools from failing ones.
    """

    events: list[AgentEvent]
    messages: list[Message]
    termination: Termination
    model_calls: int
    cap: int = MAX_INNER_ITERATIONS
    undelivered: list[UserMessage] = field(default_factory=list)
    steering_mode: SteeringMode = "skip"
    requests: list[ModelRequest] | None = None
    schedule: SteeringSchedule | None = None
    prompts: list[UserMessage] | None = None
    tool_names: list[str] | None = None
    system_prompt: str | None = None
    handed_over: list[Delivery] | None = None
    # What every model call of the run was sent besides the conversation (system prompt, tool
    # menu, tool_choice, schema digest); ``None`` when not known (a trace built from events).
    model_input: ModelInput | None = None
    # The ``Runtime`` run this trace records (``None`` for a bare loop run) and its tool path,
    # written as ``tree["a/b"]`` takes it (``""`` for the outermost run; see
    # ``openprogram_testing.core.tree``).
    run: RunInfo | None = None
    path: str = RunAddress("")
    # When each event arrived (``time.perf_counter()`` seconds, parallel to ``events``) and
    # what the transport did underneath (cassette interactions, injected faults): the HTML
    # report shows durations and marks those at the event where they happened.
    event_times: list[float] | None = None
    annotations: list[Annotation] = field(default_factory=list)

    # -- construction ------------------------------------------------------------------------
    @classmethod
    def from_events(
        cls,
        events: Sequence[AgentEvent],
        *,
        cap: int = MAX_INNER_ITERATIONS,
        steering_mode: SteeringMode = "skip",
        schedule: SteeringSchedule | None = None,
        prompts: Sequence[UserMessage] | None = None,
        tool_names: Sequence[str] | None = None,
        requests: list[ModelRequest] | None = None,
    ) -> LoopTrace:
        """Build a trace from an event list (a recorded run, or a hand-built one in tests).  The
        result fields come from the last ``agent_end``; without one, from the ``message_end``
        events (termination ``"error"``, since a run without ``agent_end`` did not end properly)."""
        events = list(events)
        end = next((e for e in reversed(events) if isinstance(e, AgentEnd)), None)
        if end is not None:
            messages = list(end.messages)
            termination: Termination = end.termination
            model_calls = end.model_calls
            undelivered = list(end.undelivered)
        else:
            messages = [e.message for e in events if isinstance(e, MessageEnd)]
            termination = "error"
            model_calls = sum(1 for m in messages if isinstance(m, AssistantMessage))
            undelivered = []
        return cls(
            events=events,
            messages=messages,
            termination=termination,
            model_calls=model_calls,
            cap=cap,
            undelivered=undelivered,
            steering_mode=steering_mode,
            requests=requests,
            schedule=schedule,
            prompts=list(prompts) if prompts is not None else None,
            tool_names=list(tool_names) if tool_names is not None else None,
        )

    # -- views -------------------------------------------------------------------------------
    @property
    def assistant_messages(self) -> list[AssistantMessage]:
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    @property
    def tool_results(self) -> list[ToolResultMessage]:
        return [m for m in self.messages if isinstance(m, ToolResultMessage)]

    @property
    def tool_calls(self) -> list[ToolCall]:
        return [c for m in self.assistant_messages for c in m.tool_calls]

    @property
    def skipped(self) -> list[ToolResultMessage]:
        """Results of calls skipped because steering arrived mid-batch."""
        return [r for r in self.tool_results if r.skipped]

    @property
    def user_messages(self) -> list[UserMessage]:
        return [m for m in self.messages if isinstance(m, UserMessage)]

    @property
    def final_message(self) -> AssistantMessage | None:
        msgs = self.assistant_messages
        return msgs[-1] if msgs else None

    @property
    def final_text(self) -> str:
        """The text of the last assistant message (``""`` if there is none)."""
        final = self.final_message
        return final.text if final is not None else ""

    @property
    def error(self) -> str | None:
        """The error text when the run ended on an ``error``/``aborted`` message, else ``None``."""
        final = self.final_message
        if final is not None and final.stop_reason in ("error", "aborted"):
            return final.error_message or final.stop_reason
        return None

    @property
    def deliveries(self) -> list[Delivery]:
        """What the steering schedule handed to the loop during this run (a schedule reused for
        several runs keeps them all; ``run_loop`` records which are this run's)."""
        if self.handed_over is not None:
            return list(self.handed_over)
        return list(self.schedule.delivered) if self.schedule is not None else []

    @property
    def recovered_errors(self) -> list[ToolResultMessage]:
        """Error results (not skipped) after which the model was called again."""
        out: list[ToolResultMessage] = []
        seen_error: list[ToolResultMessage] = []
        for m in self.messages:
            if isinstance(m, ToolResultMessage) and m.is_error and not m.skipped:
                seen_error.append(m)
            elif isinstance(m, AssistantMessage) and seen_error:
                out.extend(seen_error)
                seen_error = []
        return out

    # The renderers as methods (``trace.timeline(color=True)``, ``tree.snapshot_text()``).
    timeline = render_timeline
    snapshot_text = render_snapshot

    def __repr__(self) -> str:
        return (
            f"LoopTrace(termination={self.termination!r}, model_calls={self.model_calls}, "
            f"events={len(self.events)}, messages={len(self.messages)})"
        )


async def run_loop(
    provider: Provider,
    prompts: Sequence[UserMessage | str] | UserMessage | str,
    *,
    tools: Sequence[Any] = (),
    schedule: SteeringSchedule | None = None,
    system_prompt: str | None = None,
    model: str = "test-model",
    max_iterations: int | None = None,
    tool_choice: ToolChoice | None = None,
    parallel_tool_calls: bool | None = None,
    steering_mode: SteeringMode = "skip",
    tool_timeout_s: float | None = None,
    cancel: CancelToken | None = None,
    history: Sequence[Message] = (),
) -> LoopTrace:
    """Run ``agent_loop`` to the end and return its ``LoopTrace``.

    ``history`` starts the run from earlier messages; with no prompts it resumes through
    ``agent_loop_continue``.  Whatever the loop raises after ``agent_end`` (a hook failure, a
    ``KeyboardInterrupt`` from a tool) is re-raised with the run's timeline attached as a note.
    """
    prompt_list = user_messages(prompts, "a prompt")
    config = LoopConfig(
        provider=provider,
        model=model,
        max_iterations=max_iterations,
        tool_choice=tool_choice,
        parallel_tool_calls=parallel_tool_calls,
        steering_mode=steering_mode,
        tool_timeout_s=tool_timeout_s,
        cancel=cancel,
    )
    if schedule is not None:
        schedule.configure(config)
    already = len(schedule.delivered) if schedule is not None else 0
    agent_tools = normalize_tools(list(tools))  # once: the loop accepts AgentTools as they are
    context = AgentContext(system_prompt=system_prompt, messages=list(history), tools=agent_tools)
    tool_names = [t.name for t in agent_tools]
    recorded = getattr(provider, "requests", None)
    start = len(recorded) if isinstance(recorded, list) else None

    stream = (
        agent_loop(prompt_list, context, config)
        if prompt_list or not history
        else (agent_loop_continue(context, config))
    )
    events: list[AgentEvent] = []
    times: list[float] = []
    annotations: list[Annotation] = []
    failure: BaseException | None = None
    clock = time.perf_counter
    watch = schedule.observe if schedule is not None else None
    with recording(_Notes(events, annotations)):
        try:
            async for event in stream:
                events.append(event)
                times.append(clock())
                if watch is not None:  # before the loop polls: conditions read this call
                    watch(None, event)
        except BaseException as exc:  # re-raised below, once the trace exists
            failure = exc

    requests = list(recorded[start:]) if isinstance(recorded, list) and start is not None else None
    trace = LoopTrace.from_events(
        events,
        cap=effective_cap(max_iterations),
        steering_mode=steering_mode,
        schedule=schedule,
        prompts=prompt_list,
        tool_names=tool_names,
        requests=requests,
    )
    trace.system_prompt = system_prompt
    trace.model_input = ModelInput.of(system_prompt, tool_choice, (t.spec for t in agent_tools))
    trace.event_times = times
    trace.annotations = annotations
    if schedule is not None:
        trace.handed_over = list(schedule.delivered[already:])
    announce_trace(trace)
    if failure is not None:
        try:
            failure.add_note(TimelineNote("loop timeline:\n" + render_timeline(trace)))
        except Exception:
            pass
        raise failure
    return trace


def run_loop_sync(
    provider: Provider,
    prompts: Sequence[UserMessage | str] | UserMessage | str,
    **kwargs: Any,
) -> LoopTrace:
    """``run_loop`` for synchronous code, through ``openprogram.run_sync`` (safe inside a running
    event loop too; prefer ``await run_loop(...)`` in async code)."""
    return run_sync(lambda: run_loop(provider, prompts, **kwargs))


__all__ = [
    "LoopTrace",
    "render_snapshot",
    "render_timeline",
    "run_loop",
    "run_loop_sync",
]
