"""OpenAI Responses on the wire: ``POST /v1/responses``.

Streams are named SSE events (``response.created`` … ``response.completed``, no ``[DONE]``).
Thinking is a ``reasoning`` item with a summary; a signature becomes ``encrypted_content`` (a
redacted block is ``encrypted_content`` alone).  ``input_tokens`` include the cached tokens.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    Usage,
    UserMessage,
)

from .base import (
    CREATED,
    Frame,
    ParsedRequest,
    Part,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireTurn,
    dicts,
    make_call,
    pieces,
    text_of,
    tool_result,
    tool_specs,
    user_content,
)
from .openai_chat import GARBLE_PREFIX, OpenAIFormat, openai_request
from .sse import SSE, frame_type, json_frames, with_data

__all__ = ["TERMINAL_EVENTS", "OpenAIResponses", "garble"]

TERMINAL_EVENTS = ("response.completed", "response.incomplete", "response.failed")


def _usage(u: Usage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_tokens
    return {
        "input_tokens": prompt,
        "input_tokens_details": {"cached_tokens": u.cache_read_tokens},
        "output_tokens": u.output_tokens,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": prompt + u.output_tokens,
    }


class OpenAIResponses(OpenAIFormat):
    api = "openai_responses"
    framing = SSE(named=True)

    def _response(
        self, ctx: RenderContext, status: str, output: list[Any], usage: Usage | None
    ) -> dict[str, Any]:
        b = ctx.body
        incomplete = {"reason": "max_output_tokens"} if status == "incomplete" else None
        return {
            "id": f"resp_emu{ctx.index}",
            "object": "response",
            "created_at": CREATED,
            "status": status,
            "background": False,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": b.get("instructions"),
            "max_output_tokens": b.get("max_output_tokens"),
            "max_tool_calls": None,
            "model": ctx.model,
            "output": output,
            "parallel_tool_calls": b.get("parallel_tool_calls", True),
            "previous_response_id": b.get("previous_response_id"),
            "reasoning": {"effort": None, "summary": None},
            "service_tier": "default",
            "store": b.get("store", True),
            "temperature": b.get("temperature", 1.0),
            "text": {"format": {"type": "text"}, "verbosity": "medium"},
            "tool_choice": b.get("tool_choice", "auto"),
            "tools": b.get("tools") or [],
            "top_p": b.get("top_p", 1.0),
            "truncation": "disabled",
            "usage": _usage(usage) if usage is not None else None,
            "user": None,
            "metadata": {},
        }

    def _item(self, ctx: RenderContext, i: int, part: Part) -> dict[str, Any]:
        n = ctx.index
        if isinstance(part, TextPart):
            content = {"type": "output_text", "annotations": [], "logprobs": [], "text": part.text}
            return {
                "id": f"msg_emu{n}_{i}",
                "type": "message",
                "status": "completed",
                "content": [content],
                "role": "assistant",
            }
        if isinstance(part, ThinkingPart):
            summary = [] if part.redacted else [{"type": "summary_text", "text": part.text}]
            item: dict[str, Any] = {"id": f"rs_emu{n}_{i}", "type": "reasoning", "summary": summary}
            secret = part.text if part.redacted else part.signature
            if secret is not None:
                item["encrypted_content"] = secret
            return item
        return {
            "id": f"fc_emu{n}_{i}",
            "type": "function_call",
            "status": "completed",
            "arguments": part.arguments,
            "call_id": part.id,
            "name": part.name,
        }

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        seq = 0

        def ev(type_: str, terminal: bool = False, **data: Any) -> Frame:
            nonlocal seq
            frame = Frame(type_, {"type": type_, "sequence_number": seq, **data}, terminal)
            seq += 1
            return frame

        start = self._response(ctx, "in_progress", [], None)
        yield ev("response.created", response=start)
        yield ev("response.in_progress", response=start)
        output: list[Any] = []
        for i, part in enumerate(turn.parts):
            done = self._item(ctx, i, part)
            item_id = done["id"]
            where = {"item_id": item_id, "output_index": i}
            if isinstance(part, TextPart):
                added = {**done, "status": "in_progress", "content": []}
                yield ev("response.output_item.added", output_index=i, item=added)
                empty = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
                yield ev("response.content_part.added", **where, content_index=0, part=empty)
                for piece in pieces(turn, part.text):
                    yield ev(
                        "response.output_text.delta",
                        **where,
                        content_index=0,
                        delta=piece,
                        logprobs=[],
                    )
                yield ev(
                    "response.output_text.done",
                    **where,
                    content_index=0,
                    text=part.text,
                    logprobs=[],
                )
                yield ev(
                    "response.content_part.done", **where, content_index=0, part=done["content"][0]
                )
            elif isinstance(part, ThinkingPart):
                added = {"id": item_id, "type": "reasoning", "summary": []}
                yield ev("response.output_item.added", output_index=i, item=added)
                if not part.redacted:
                    summary = {"type": "summary_text", "text": ""}
                    yield ev(
                        "response.reasoning_summary_part.added",
                        **where,
                        summary_index=0,
                        part=summary,
                    )
                    for piece in pieces(turn, part.text):
                        yield ev(
                            "response.reasoning_summary_text.delta",
                            **where,
                            summary_index=0,
                            delta=piece,
                        )
                    yield ev(
                        "response.reasoning_summary_text.done",
                        **where,
                        summary_index=0,
                        text=part.text,
                    )
                    yield ev(
                        "response.reasoning_summary_part.done",
                        **where,
                        summary_index=0,
                        part={"type": "summary_text", "text": part.text},
                    )
            else:
                added = {**done, "status": "in_progress", "arguments": ""}
                yield ev("response.output_item.added", output_index=i, item=added)
                for piece in pieces(turn, part.arguments):
                    yield ev("response.function_call_arguments.delta", **where, delta=piece)
                yield ev("response.function_call_arguments.done", **where, arguments=part.arguments)
            yield ev("response.output_item.done", output_index=i, item=done)
            output.append(done)
        if turn.ending == "error":
            code = "rate_limit_exceeded" if turn.error_status == 429 else "server_error"
            yield ev("error", terminal=True, code=code, message=turn.error, param=None)
            return
        if turn.ending in ("cut", "drop"):
            return
        status = "incomplete" if turn.stop == "length" else "completed"
        final = self._response(ctx, status, output, turn.usage)
        yield ev(f"response.{status}", terminal=True, response=final)

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        output = [self._item(ctx, i, p) for i, p in enumerate(turn.parts)]
        status = "incomplete" if turn.stop == "length" else "completed"
        return self._response(ctx, status, output, turn.usage)

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        system: list[str] = []
        if isinstance(body.get("instructions"), str):
            system.append(body["instructions"])
        messages: list[Message] = []
        names: dict[str, str] = {}
        current: AssistantMessage | None = None

        def assistant() -> AssistantMessage:
            nonlocal current
            if current is None:
                current = AssistantMessage()
                messages.append(current)
            return current

        items: Any = body.get("input")
        if isinstance(items, str):
            items = [{"role": "user", "content": items}]
        for item in dicts(items):
            kind, role = item.get("type"), item.get("role")
            if kind == "function_call":
                call = make_call(item.get("call_id"), item.get("name"), item.get("arguments"))
                names[call.id] = call.name
                assistant().content.append(call)
            elif kind == "reasoning":
                summary = "".join(str(s.get("text", "")) for s in dicts(item.get("summary")))
                secret = item.get("encrypted_content")
                assistant().content.append(
                    ThinkingContent(
                        thinking=summary,
                        signature=secret if isinstance(secret, str) else None,
                        redacted=not summary and isinstance(secret, str),
                    )
                )
            elif role == "assistant":
                text = text_of(item.get("content"))
                if text:
                    assistant().content.append(TextContent(text=text))
            else:
                current = None
                if kind == "function_call_output":
                    text = text_of(item.get("output"))
                    messages.append(tool_result(names, item.get("call_id"), text))
                elif role in ("system", "developer"):
                    system.append(text_of(item.get("content")))
                elif role == "user":
                    messages.append(UserMessage(content=user_content(item.get("content"))))
        functions = (t for t in dicts(body.get("tools")) if t.get("type", "function") == "function")
        tools = tool_specs(functions, lambda t: t.get("parameters"))
        return openai_request(body, system, messages, tools, "max_output_tokens", "max_tokens")

    def is_terminal(self, frame: str) -> bool:
        return frame_type(frame) in TERMINAL_EVENTS


def garble(frames: list[str], i: int) -> int:
    """Garble function call ``i`` (``function_call`` output items, keyed by ``item_id``) and
    every frame that repeats its arguments; returns how many calls the stream has."""
    calls: list[str] = []
    target: str | None = None
    target_index: int | None = None
    delta_done = False
    for pos, frame, payload in json_frames(frames):
        kind = payload.get("type")
        changed = False
        if kind == "response.output_item.added":
            item = payload.get("item") or {}
            if item.get("type") == "function_call":
                calls.append(str(item.get("id")))
                if len(calls) - 1 == i:
                    target, target_index = str(item.get("id")), payload.get("output_index")
        elif target is not None and _same_item(payload, target, target_index):
            if kind == "response.function_call_arguments.delta" and not delta_done:
                payload["delta"] = GARBLE_PREFIX + str(payload.get("delta") or "")
                delta_done = changed = True
            elif kind == "response.function_call_arguments.done":
                payload["arguments"] = GARBLE_PREFIX + str(payload.get("arguments") or "")
                changed = True
            elif kind == "response.output_item.done":
                item = payload.get("item") or {}
                item["arguments"] = GARBLE_PREFIX + str(item.get("arguments") or "")
                changed = True
        if kind in TERMINAL_EVENTS and target:
            for item in (payload.get("response") or {}).get("output") or []:
                if item.get("id") == target and item.get("type") == "function_call":
                    item["arguments"] = GARBLE_PREFIX + str(item.get("arguments") or "")
                    changed = True
        if changed:
            frames[pos] = with_data(frame, payload)
    return len(calls)


def _same_item(payload: dict[str, Any], item_id: str, output_index: Any) -> bool:
    if "item_id" in payload:
        return str(payload["item_id"]) == item_id
    item = payload.get("item")
    if isinstance(item, dict) and "id" in item:
        return str(item["id"]) == item_id
    return bool(payload.get("output_index") == output_index)


def inject_error(message: str, after_frame: int) -> str:
    """The in-stream ``error`` event the Responses API sends."""
    payload = {
        "type": "error",
        "code": "server_error",
        "message": message,
        "param": None,
        "sequence_number": after_frame,
    }
    return with_data("event: error", payload)
