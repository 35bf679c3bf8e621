"""Provider stream events, loop events, and the async event stream that carries them.

Events are small slotted dataclasses with pydantic's model API (see ``openprogram._model``), built
once and never copied; treat them as immutable (they are not frozen because a frozen dataclass
costs twice as much to build, and the loop builds about fifteen per round).  Provider events share
one class
(``AssistantMessageEvent``) discriminated by ``type`` because their fields overlap; loop events are
one class per kind (a discriminated union, ``AgentEvent``) so a consumer can ``match`` on them.

``partial`` on a provider event is the assistant message as streamed so far: the *same object*
throughout one response (see ``openprogram.types``), so carrying it is free.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Generator
from dataclasses import dataclass, field
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from ._model import Model
from .types import AssistantMessage, Message, Termination, ToolCall, ToolResultMessage, UserMessage

ProviderEventType: TypeAlias = Literal[
    "start",
    "text_start",
    "text_delta",
    "text_end",
    "thinking_start",
    "thinking_delta",
    "thinking_end",
    "toolcall_start",
    "toolcall_delta",
    "toolcall_end",
    "done",
    "error",
]


@dataclass(slots=True)
class AssistantMessageEvent(Model):
    """One provider stream event.

    - ``*_start``/``*_delta``/``*_end`` carry ``content_index``; deltas carry the raw fragment in
      ``delta``; ``toolcall_end`` carries the parsed ``tool_call``.
    - Exactly one terminal event ends a stream: ``done`` (reason stop/length/toolUse) or
      ``error`` (reason error/aborted); both carry the final ``message``.
    """

    type: ProviderEventType
    content_index: int | None = None
    delta: str | None = None
    tool_call: ToolCall | None = None
    reason: str | None = None
    partial: AssistantMessage | None = None
    message: AssistantMessage | None = None

    @property
    def is_terminal(self) -> bool:
        return self.type == "done" or self.type == "error"


@dataclass(slots=True)
class AgentStart(Model):
    type: Literal["agent_start"] = field(default="agent_start", kw_only=True)


@dataclass(slots=True)
class AgentEnd(Model):
    """The last event of every run. ``undelivered`` holds steering/follow-up messages that were
    handed to the loop but could not be delivered (the cap was reached): never silently lost."""

    type: Literal["agent_end"] = field(default="agent_end", kw_only=True)
    messages: list[Message]
    termination: Termination
    undelivered: list[UserMessage] = field(default_factory=list)
    model_calls: int = 0


@dataclass(slots=True)
class TurnStart(Model):
    type: Literal["turn_start"] = field(default="turn_start", kw_only=True)


@dataclass(slots=True)
class TurnEnd(Model):
    type: Literal["turn_end"] = field(default="turn_end", kw_only=True)
    message: AssistantMessage
    tool_results: list[ToolResultMessage]


@dataclass(slots=True)
class MessageStart(Model):
    type: Literal["message_start"] = field(default="message_start", kw_only=True)
    message: Message


@dataclass(slots=True)
class MessageUpdate(Model):
    type: Literal["message_update"] = field(default="message_update", kw_only=True)
    message: AssistantMessage
    event: AssistantMessageEvent


@dataclass(slots=True)
class MessageEnd(Model):
    type: Literal["message_end"] = field(default="message_end", kw_only=True)
    message: Message


@dataclass(slots=True)
class ToolExecutionStart(Model):
    type: Literal["tool_execution_start"] = field(default="tool_execution_start", kw_only=True)
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]


@dataclass(slots=True)
class ToolExecutionUpdate(Model):
    type: Literal["tool_execution_update"] = field(default="tool_execution_update", kw_only=True)
    tool_call_id: str
    tool_name: str
    partial: Any = None


@dataclass(slots=True)
class ToolExecutionEnd(Model):
    type: Literal["tool_execution_end"] = field(default="tool_execution_end", kw_only=True)
    tool_call_id: str
    tool_name: str
    result: ToolResultMessage
    is_error: bool


ApprovalOutcome: TypeAlias = Literal[
    "approved",
    "modified",
    "denied",
    "timed_out",
    "gate_failed",
    "no_gate",
    "invalid_arguments",
    "cancelled",
]
"""How an approval request ended (``tool_approval_end``).  Only ``approved`` and ``modified``
let the call run; every other outcome answers it with an error result and the body never runs:
``denied`` (the gate said ``Deny``), ``timed_out`` (no decision within ``approval_timeout_s``),
``gate_failed`` (the gate raised or returned something that is not a decision), ``no_gate`` (the
tool requires approval and the run has no gate), ``invalid_arguments`` (``Modify`` gave
arguments the tool's schema refuses), ``cancelled`` (the run's cancel token fired meanwhile)."""


@dataclass(slots=True)
class ToolApprovalStart(Model):
    """A call of a tool that requires approval waits for the approval gate (after its
    ``tool_execution_start``, before anything runs).  ``reason``: the tool's approval check's
    string verdict, if it gave one."""

    type: Literal["tool_approval_start"] = field(default="tool_approval_start", kw_only=True)
    tool_call_id: str
    tool_name: str
    args: dict[str, Any]
    reason: str | None = None


@dataclass(slots=True)
class ToolApprovalEnd(Model):
    """The decision on a ``tool_approval_start``.  ``args``: the arguments the call runs with
    when ``outcome`` is ``modified`` (else ``None``); ``message``: the ``Deny`` message, or
    what went wrong for the other refusing outcomes."""

    type: Literal["tool_approval_end"] = field(default="tool_approval_end", kw_only=True)
    tool_call_id: str
    tool_name: str
    outcome: ApprovalOutcome
    args: dict[str, Any] | None = None
    message: str | None = None

    @property
    def runs(self) -> bool:
        """Whether the call goes on to run (approved as asked, or with changed arguments)."""
        return self.outcome == "approved" or self.outcome == "modified"


AgentEvent: TypeAlias = (
    AgentStart
    | AgentEnd
    | TurnStart
    | TurnEnd
    | MessageStart
    | MessageUpdate
    | MessageEnd
    | ToolExecutionStart
    | ToolExecutionUpdate
    | ToolExecutionEnd
    | ToolApprovalStart
    | ToolApprovalEnd
)

E = TypeVar("E")
R = TypeVar("R")


class EventStream(Generic[E, R]):
    """An async-iterable stream of events with an awaitable final result.

    It is pull-driven: the producer (an async generator) advances only while someone iterates, so
    there is no queue and no background task on the hot path.  ``await stream`` (or
    ``await stream.result()``) drains whatever has not been consumed and returns the result that
    the producer set through ``set_result``.  Iterate at most once.
    """

    __slots__ = ("_gen", "_has_result", "_result", "_started")

    def __init__(self, producer: AsyncGenerator[E, None] | None = None) -> None:
        self._gen = producer
        self._result: R | None = None
        self._has_result = False
        self._started = False

    def bind(self, producer: AsyncGenerator[E, None]) -> None:
        """Attach the producer after construction (it may need a reference to this stream)."""
        self._gen = producer

    def set_result(self, value: R) -> None:
        self._result = value
        self._has_result = True

    def __aiter__(self) -> AsyncIterator[E]:
        if self._started:
            raise RuntimeError("an EventStream can be iterated only once")
        if self._gen is None:
            raise RuntimeError("EventStream has no producer")
        self._started = True
        return self._gen  # the producer itself: no wrapper generator, one hop less per event

    async def result(self) -> R:
        if not self._started:
            async for _ in self:
                pass
        elif getattr(self._gen, "ag_frame", None) is not None:  # started, not finished
            raise RuntimeError("result() awaited while the stream is still being iterated")
        if not self._has_result:
            raise RuntimeError("the stream ended without a result")
        return self._result  # type: ignore[return-value]

    def __await__(self) -> Generator[Any, None, R]:
        return self.result().__await__()

    async def aclose(self) -> None:
        """Close the producer where it stands: a consumer that stops iterating early (an
        observer of the run raised) releases what the producer holds (a provider's open
        stream) now, not whenever the garbage collector finalizes it."""
        close = getattr(self._gen, "aclose", None)
        if close is not None:
            await close()


__all__ = [
    "AgentEnd",
    "AgentEvent",
    "AgentStart",
    "ApprovalOutcome",
    "AssistantMessageEvent",
    "EventStream",
    "MessageEnd",
    "MessageStart",
    "MessageUpdate",
    "ProviderEventType",
    "ToolApprovalEnd",
    "ToolApprovalStart",
    "ToolExecutionEnd",
    "ToolExecutionStart",
    "ToolExecutionUpdate",
    "TurnEnd",
    "TurnStart",
]
