"""Hand-built traces for the regression-testing helpers: one assistant message per batch of
calls, so a test states a trajectory in one line and can build thousands of calls cheaply."""

from __future__ import annotations

from typing import Any

from openprogram.types import AssistantMessage, TextContent, ToolCall, Usage, UserMessage
from openprogram_testing import LoopTrace


def made(*calls: tuple[str, Any] | str, usage: Usage | None = None) -> LoopTrace:
    """A finished run that made ``calls`` (a name, or ``(name, args)``; a ``str`` args value
    is raw, non-JSON arguments), one model call each, then a final text reply."""
    messages: list[Any] = [UserMessage(content="go")]
    for k, c in enumerate(calls):
        name, args = (c, {}) if isinstance(c, str) else c
        raw = args if isinstance(args, str) else None
        call = ToolCall(id=f"c{k}", name=name, arguments={} if raw else args, raw_arguments=raw)
        messages.append(
            AssistantMessage(content=[call], stop_reason="toolUse", usage=usage or Usage())
        )
    messages.append(AssistantMessage(content=[TextContent(text="done")], usage=usage or Usage()))
    return LoopTrace(
        events=[], messages=messages, termination="completed", model_calls=len(calls) + 1
    )
