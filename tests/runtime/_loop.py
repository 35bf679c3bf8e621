"""Helpers for the core loop tests: run a loop, and render its events as compact tokens so an
exact event order can be asserted in one readable list."""

from __future__ import annotations

import asyncio
from typing import Any

from openprogram import (
    AgentContext,
    AgentEvent,
    AgentStream,
    LoopConfig,
    ToolResultMessage,
    agent_loop,
)
from openprogram_testing import ModelRequest


def add_tool(calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """A JSON-Schema ``add(a, b)`` tool in dict form that records its calls."""

    def execute(args: dict[str, Any]) -> int:
        if calls is not None:
            calls.append(args)
        return args["a"] + args["b"]

    return {
        "spec": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
                "additionalProperties": False,
            },
        },
        "execute": execute,
    }


def token(event: AgentEvent) -> str:
    t = event.type
    if t in ("message_start", "message_end"):
        short = "ms" if t == "message_start" else "me"
        return f"{short}({event.message.role})"  # type: ignore[union-attr]
    if t == "message_update":
        return "upd"
    if t == "tool_execution_start":
        return f"tes({event.tool_call_id})"  # type: ignore[union-attr]
    if t == "tool_execution_update":
        return f"teu({event.tool_call_id})"  # type: ignore[union-attr]
    if t == "tool_execution_end":
        err = ",err" if event.is_error else ""  # type: ignore[union-attr]
        return f"tee({event.tool_call_id}{err})"  # type: ignore[union-attr]
    if t == "turn_end":
        return f"turn_end({len(event.tool_results)})"  # type: ignore[union-attr]
    if t == "agent_end":
        return f"agent_end({event.termination})"  # type: ignore[union-attr]
    return t


def tokens(events: list[AgentEvent]) -> list[str]:
    """Compact tokens with runs of ``upd`` collapsed into one ``upd…``."""
    out: list[str] = []
    for e in events:
        tok = token(e)
        if tok == "upd" and out and out[-1] == "upd…":
            continue
        out.append("upd…" if tok == "upd" else tok)
    return out


#: The tokens of a user message (the prompt, a steering or follow-up message): it streams no updates.
USER = ["ms(user)", "me(user)"]
#: The tokens of an assistant reply that streamed (its updates collapsed by :func:`tokens`).
REPLY = ["ms(assistant)", "upd…", "me(assistant)"]
#: The tokens of an assistant message that failed before the provider streamed anything.
FAILED_REPLY = ["ms(assistant)", "me(assistant)"]
#: The tokens of a tool result message.
TOOL_RESULT = ["ms(toolResult)", "me(toolResult)"]


def tool_call(call_id: str, *, error: bool = False) -> list[str]:
    """The tokens of one tool call run in a batch: its execution start and end, then its result
    message."""
    return [f"tes({call_id})", f"tee({call_id}{',err' if error else ''})", *TOOL_RESULT]


def run_order(*turns: list[str], end: str = "completed") -> list[str]:
    """The exact token order of a whole run, built from the tokens of each turn's messages.

    Every order the loop emits has the same frame: ``agent_start``, each turn's tokens between
    ``turn_start`` and ``turn_end(<its tool results>)``, then ``agent_end(<termination>)``. Writing
    only the turns keeps each expected order short enough to read what the test is about, while
    the comparison stays token for token."""
    out = ["agent_start"]
    for body in turns:
        out += ["turn_start", *body, f"turn_end({body.count('me(toolResult)')})"]
    return [*out, f"agent_end({end})"]


def fed_back_error(request: ModelRequest) -> str:
    """The text of the error tool result that ends the messages of a model ``request``: how a
    failed tool call (bad arguments, a refused nested exec, an invalid pick) is fed back to the
    model. Fails unless that last message is an error tool result."""
    message = request.messages[-1]
    assert isinstance(message, ToolResultMessage) and message.is_error, message
    return message.text


async def collect(stream: AgentStream) -> list[AgentEvent]:
    return [e async for e in stream]


def run(
    provider: Any, prompts: Any = "hi", tools: Any = (), *, messages: Any = None, **config: Any
) -> tuple[list[AgentEvent], AgentStream]:
    context = AgentContext(messages=list(messages or []), tools=list(tools))
    stream = agent_loop(prompts, context, LoopConfig(provider=provider, **config))
    events = asyncio.run(collect(stream))
    return events, stream
