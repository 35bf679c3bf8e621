"""Anthropic Messages on the wire: ``POST /v1/messages`` (and, inside event-stream ``chunk``
frames, InvokeModel on Bedrock).

Streams are named SSE events ending with ``message_stop`` (a ``ping`` after the first block
start, as the API sends it).  Thinking blocks carry a ``signature_delta`` when a signature is
scripted; redacted thinking is a ``redacted_thinking`` block.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openprogram.providers.base import ToolChoice
from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    UserMessage,
)

from .base import (
    ErrorAnswer,
    Frame,
    Framing,
    ParsedRequest,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    arguments_object,
    dicts,
    first_int,
    make_call,
    number,
    pieces,
    text_of,
    tool_result,
    tool_specs,
    user_content,
)
from .openai_chat import GARBLE_PREFIX
from .sse import SSE, frame_type, json_frames, with_data

__all__ = ["ERRORS", "Anthropic", "anthropic_error", "garble"]

STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}

ERRORS: dict[int, tuple[str, str]] = {
    400: ("invalid_request_error", "Invalid request."),
    401: ("authentication_error", "invalid x-api-key"),
    403: ("permission_error", "Your API key does not have permission to use this resource."),
    404: ("not_found_error", "model: {model}"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of requests has exceeded your rate limit."),
    500: ("api_error", "Internal server error"),
    529: ("overloaded_error", "Overloaded"),
}
"""Status → (error type, default message) of Anthropic's JSON error body."""


def anthropic_error(status: int, message: str | None, request_id: str, model: str) -> Any:
    etype, default = ERRORS.get(
        status, ("api_error" if status >= 500 else "invalid_request_error", "Error")
    )
    text = message if message is not None else default.format(model=model)
    return {"type": "error", "error": {"type": etype, "message": text}, "request_id": request_id}


class Anthropic(WireFormat):
    api = "anthropic"
    framing: Framing = SSE(named=True)
    request_id_header = "request-id"

    def _usage(self, turn: WireTurn, output_tokens: int) -> dict[str, Any]:
        u = turn.usage
        return {
            "input_tokens": u.input_tokens,
            "cache_creation_input_tokens": u.cache_write_tokens,
            "cache_read_input_tokens": u.cache_read_tokens,
            "output_tokens": output_tokens,
        }

    def _message(
        self, turn: WireTurn, ctx: RenderContext, content: list[Any], stop: str | None, out: int
    ) -> dict[str, Any]:
        return {
            "id": f"msg_emu{ctx.index}",
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": self._usage(turn, out),
        }

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        def ev(type_: str, terminal: bool = False, **data: Any) -> Frame:
            return Frame(type_, {"type": type_, **data}, terminal)

        start = self._message(turn, ctx, [], None, min(1, turn.usage.output_tokens))
        yield ev("message_start", message=start)
        ping = ev("ping")
        for i, part in enumerate(turn.parts):
            deltas: list[dict[str, Any]]
            if isinstance(part, TextPart):
                block: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": p} for p in pieces(turn, part.text)]
            elif isinstance(part, ThinkingPart) and part.redacted:
                block = {"type": "redacted_thinking", "data": part.text}
                deltas = []
            elif isinstance(part, ThinkingPart):
                block = {"type": "thinking", "thinking": "", "signature": ""}
                deltas = [
                    {"type": "thinking_delta", "thinking": p} for p in pieces(turn, part.text)
                ]
                if part.signature is not None:
                    deltas.append({"type": "signature_delta", "signature": part.signature})
            else:
                block = {"type": "tool_use", "id": part.id, "name": part.name, "input": {}}
                fragments = [] if part.empty else list(pieces(turn, part.arguments))
                deltas = [{"type": "input_json_delta", "partial_json": p} for p in ["", *fragments]]
            yield ev("content_block_start", index=i, content_block=block)
            if i == 0:
                yield ping
            for d in deltas:
                yield ev("content_block_delta", index=i, delta=d)
            yield ev("content_block_stop", index=i)
        if not turn.parts:
            yield ping
        if turn.ending == "error":
            etype = ERRORS.get(turn.error_status, ("api_error", ""))[0]
            error = {"type": etype, "message": turn.error}
            yield Frame("error", {"type": "error", "error": error}, True, exception=True)
            return
        if turn.ending in ("cut", "drop"):
            return
        yield ev(
            "message_delta",
            delta={"stop_reason": STOP[turn.stop], "stop_sequence": None},
            usage=self._usage(turn, turn.usage.output_tokens),
        )
        yield ev("message_stop", terminal=True)

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        content: list[Any] = []
        for part in turn.parts:
            if isinstance(part, TextPart):
                content.append({"type": "text", "text": part.text})
            elif isinstance(part, ThinkingPart) and part.redacted:
                content.append({"type": "redacted_thinking", "data": part.text})
            elif isinstance(part, ThinkingPart):
                content.append(
                    {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
                )
            else:
                content.append(
                    {
                        "type": "tool_use",
                        "id": part.id,
                        "name": part.name,
                        "input": arguments_object(part.arguments),
                    }
                )
        return self._message(turn, ctx, content, STOP[turn.stop], turn.usage.output_tokens)

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        raw_system = body.get("system")
        system = [text_of(raw_system)] if raw_system else []
        messages: list[Message] = []
        names: dict[str, str] = {}
        for m in dicts(body.get("messages")):
            role, content = m.get("role"), m.get("content")
            if role == "assistant":
                messages.append(AssistantMessage(content=_assistant_blocks(content, names)))
            elif role == "user":
                if isinstance(content, str):
                    messages.append(UserMessage(content=content))
                    continue
                rest: list[dict[str, Any]] = []
                for b in dicts(content):
                    if b.get("type") == "tool_result":
                        text = text_of(b.get("content"))
                        is_error = b.get("is_error") is True
                        result = tool_result(names, b.get("tool_use_id"), text, is_error=is_error)
                        messages.append(result)
                    else:
                        rest.append(b)
                if rest:
                    messages.append(UserMessage(content=user_content(rest)))
        tools = tool_specs(dicts(body.get("tools")), lambda t: t.get("input_schema"))
        choice: ToolChoice | None = None
        parallel: bool | None = None
        tc = body.get("tool_choice")
        if isinstance(tc, dict):
            kind = tc.get("type")
            choice = {"auto": "auto", "any": "required", "none": "none"}.get(str(kind))
            if kind == "tool":
                choice = {"type": "function", "name": str(tc.get("name") or "")}
            if isinstance(tc.get("disable_parallel_tool_use"), bool):
                parallel = not tc["disable_parallel_tool_use"]
        return ParsedRequest(
            system,
            messages,
            tools,
            choice,
            parallel,
            first_int(body, "max_tokens"),
            number(body.get("temperature")),
        )

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        return ErrorAnswer(status, anthropic_error(status, message, request_id, model), {})

    def is_terminal(self, frame: str) -> bool:
        return frame_type(frame) == "message_stop"


def _assistant_blocks(content: Any, names: dict[str, str]) -> list[Any]:
    blocks: list[Any] = []
    if isinstance(content, str):
        blocks.append(TextContent(text=content))
    for b in dicts(content):
        kind = b.get("type")
        if kind == "text":
            blocks.append(TextContent(text=str(b.get("text", ""))))
        elif kind == "thinking":
            sig = b.get("signature")
            blocks.append(
                ThinkingContent(
                    thinking=str(b.get("thinking", "")),
                    signature=sig if isinstance(sig, str) else None,
                )
            )
        elif kind == "redacted_thinking":
            blocks.append(ThinkingContent(thinking=str(b.get("data", "")), redacted=True))
        elif kind == "tool_use":
            call = make_call(b.get("id"), b.get("name"), b.get("input"))
            names[call.id] = call.name
            blocks.append(call)
    return blocks


def garble(frames: list[str], i: int) -> int:
    """Garble ``tool_use`` block ``i`` (its first ``input_json_delta``, or a new one before its
    stop frame when it has none); returns how many tool-use blocks the stream has."""
    seen = 0
    target: Any = None
    done = False
    for pos, frame, payload in json_frames(frames):
        kind = payload.get("type")
        if kind == "content_block_start":
            block = payload.get("content_block") or {}
            if block.get("type") in ("tool_use", "server_tool_use"):
                if seen == i:
                    target = payload.get("index")
                seen += 1
        elif kind == "content_block_delta" and target is not None and not done:
            delta = payload.get("delta") or {}
            if payload.get("index") == target and delta.get("type") == "input_json_delta":
                delta["partial_json"] = GARBLE_PREFIX + str(delta.get("partial_json") or "")
                frames[pos] = with_data(frame, payload)
                done = True
        elif kind == "content_block_stop" and payload.get("index") == target and not done:
            extra = {
                "type": "content_block_delta",
                "index": target,
                "delta": {"type": "input_json_delta", "partial_json": GARBLE_PREFIX},
            }
            frames.insert(pos, with_data("event: content_block_delta", extra))
            done = True
    return seen


def inject_error(message: str, after_frame: int) -> str:
    """The in-stream ``error`` event Anthropic sends (``overloaded_error``)."""
    payload = {"type": "error", "error": {"type": "overloaded_error", "message": message}}
    return with_data("event: error", payload)
