"""Helpers for the harness tests: tools, and a builder of hand-made (possibly broken) event lists."""

from __future__ import annotations

from typing import Any

from openprogram.events import (
    AgentEnd,
    AgentEvent,
    AgentStart,
    AssistantMessageEvent,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolExecutionEnd,
    ToolExecutionStart,
    TurnEnd,
    TurnStart,
)
from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


def add_tool(calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """``add(a, b)`` in dict form; records its calls."""

    def execute(args: dict[str, Any]) -> int:
        if calls is not None:
            calls.append(args)
        return int(args["a"]) + int(args["b"])

    return {
        "spec": {"name": "add", "description": "Add.", "parameters": ADD_SCHEMA},
        "execute": execute,
    }


def failing_tool(name: str = "boom") -> dict[str, Any]:
    def execute(args: dict[str, Any]) -> Any:
        raise RuntimeError("kaboom")

    return {"spec": {"name": name, "parameters": {"type": "object"}}, "execute": execute}


class Events:
    """Builds an event list the way the loop would, one call per event kind, so a test can build
    a valid run and then break exactly one thing.  ``end()`` fills ``agent_end`` from the
    ``message_end`` events (override with ``messages=``/``model_calls=``)."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self._results: list[ToolResultMessage] = []

    @classmethod
    def prompted(cls, prompt: str = "go") -> Events:
        """A run opened the way every run opens: ``agent_start``, the first ``turn_start`` and
        the prompt."""
        b = cls().start()
        b.turn()
        b.user(prompt)
        return b

    def add(self, *events: AgentEvent) -> Events:
        self.events.extend(events)
        return self

    def start(self) -> Events:
        return self.add(AgentStart())

    def turn(self) -> Events:
        self._results = []
        return self.add(TurnStart())

    def user(self, text: str | UserMessage) -> UserMessage:
        m = text if isinstance(text, UserMessage) else UserMessage(content=text)
        self.add(MessageStart(message=m), MessageEnd(message=m))
        return m

    def assistant(
        self,
        text: str = "",
        calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
        *,
        stop: str | None = None,
        error: str | None = None,
    ) -> AssistantMessage:
        content: list[Any] = [TextContent(text=text)] if text else []
        content += [ToolCall(id=i, name=n, arguments=a) for i, n, a in calls]
        reason = stop or ("toolUse" if calls else "stop")
        m = AssistantMessage(content=content, stop_reason=reason, error_message=error)  # type: ignore[arg-type]
        kind = "error" if reason in ("error", "aborted") else "done"
        self.add(
            MessageStart(message=m),
            MessageUpdate(message=m, event=AssistantMessageEvent(type="start", partial=m)),
            MessageUpdate(
                message=m, event=AssistantMessageEvent(type=kind, reason=reason, message=m)
            ),
            MessageEnd(message=m),
        )
        return m

    def result(
        self,
        call_id: str,
        name: str,
        text: str,
        *,
        is_error: bool = False,
        skipped: bool = False,
        execute: bool = True,
    ) -> ToolResultMessage:
        r = ToolResultMessage(
            tool_call_id=call_id,
            tool_name=name,
            content=[TextContent(text=text)],
            is_error=is_error,
            skipped=skipped,
        )
        if execute:
            self.add(
                ToolExecutionStart(tool_call_id=call_id, tool_name=name, args={}),
                ToolExecutionEnd(tool_call_id=call_id, tool_name=name, result=r, is_error=is_error),
            )
        self.add(MessageStart(message=r), MessageEnd(message=r))
        self._results.append(r)
        return r

    def reply_turn(
        self, text: str, *, steering: str | UserMessage | None = None
    ) -> AssistantMessage:
        """A whole turn in which the model replies with ``text`` only (after the ``steering``
        message, when one is delivered first); returns the reply."""
        self.turn()
        if steering is not None:
            self.user(steering)
        reply = self.assistant(text)
        self.turn_end(reply)
        return reply

    def turn_end(
        self, message: AssistantMessage, results: list[ToolResultMessage] | None = None
    ) -> Events:
        return self.add(
            TurnEnd(
                message=message, tool_results=list(self._results if results is None else results)
            )
        )

    def end(
        self,
        termination: str = "completed",
        *,
        undelivered: list[UserMessage] = (),  # type: ignore[assignment]
        messages: list[Message] | None = None,
        model_calls: int | None = None,
    ) -> list[AgentEvent]:
        emitted = [e.message for e in self.events if isinstance(e, MessageEnd)]
        calls = sum(1 for m in emitted if isinstance(m, AssistantMessage))
        self.add(
            AgentEnd(
                messages=emitted if messages is None else messages,
                termination=termination,  # type: ignore[arg-type]
                undelivered=list(undelivered),
                model_calls=calls if model_calls is None else model_calls,
            )
        )
        return self.events


def add_calls(n: int) -> list[tuple[str, str, dict[str, Any]]]:
    """``n`` argument-less ``add`` calls with ids ``c1``..``cn``, for :meth:`Events.assistant`."""
    return [(f"c{i}", "add", {}) for i in range(1, n + 1)]


def simple_run() -> tuple[Events, list[AgentEvent]]:
    """A valid run: prompt, one add call, a text answer."""
    b = Events.prompted("add 1 and 2")
    a1 = b.assistant("Adding.", [("c1", "add", {"a": 1, "b": 2})])
    b.result("c1", "add", "3")
    b.turn_end(a1)
    b.reply_turn("3")
    return b, b.end()
