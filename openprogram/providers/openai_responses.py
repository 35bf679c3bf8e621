"""OpenAI Responses adapter on the official ``openai`` SDK (``AsyncOpenAI.responses``).

Streaming (default) reads the typed event stream: ``response.output_item.added`` opens a
function call (``call_id`` is the id we keep, as the API wants it back in
``function_call_output``), ``response.function_call_arguments.delta``/``.done`` carry its
argument JSON, ``response.output_text.delta``/``.done`` the text, and
``response.reasoning_summary_text.delta`` / ``response.reasoning_text.delta`` the reasoning
(thinking blocks).  ``response.completed`` / ``response.incomplete`` end the message (with usage;
``incomplete_details.reason == "max_output_tokens"`` → ``length``); ``response.failed`` and
``error`` events end it with an error.  A stream that ends without one of those is an error.

Requests: the system prompt is ``instructions``; tool calls go back as ``function_call`` items and
results as ``function_call_output`` items (no error flag exists: the error text is the output;
images become ``input_image`` output parts).  Thinking is not sent back (reasoning items need the
server-side id from a stored response), and assistant messages that ended in
``error``/``aborted`` are left out.  ``options.extras`` go to the SDK's ``extra_body``.
"""

from __future__ import annotations

from typing import Any

from ..events import AssistantMessageEvent
from ..types import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._sdk import (
    _ERROR_TYPE_STATUS,
    Events,
    OpenAISDKProvider,
    StreamParser,
    arguments_json,
    data_url,
    openai_usage,
    openai_user_message,
)
from .base import Context, MessageBuilder, TerminalReason, is_retryable_status

__all__ = ["OpenAIResponsesProvider", "responses_input"]

_CODE_STATUS = {**_ERROR_TYPE_STATUS, "rate_limit_exceeded": 429, "server_error": 500}


class OpenAIResponsesProvider(OpenAISDKProvider):
    """The Responses API (``client.responses``): the whole history goes as ``input`` items on
    every call; the module docstring says how our messages and its events map onto each other.
    Constructed like every OpenAI adapter: see
    :class:`openprogram.providers._sdk.OpenAISDKProvider`."""

    api = "openai-responses"

    wire_api = "openai_responses"
    max_tokens_field = "max_output_tokens"

    def _history(self, context: Context) -> dict[str, Any]:
        history: dict[str, Any] = {"input": responses_input(context)}
        if context.system_prompt:
            history["instructions"] = context.system_prompt
        return history

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        if stream:
            return await client.responses.create(**params, stream=True)
        return await client.responses.create(**params)

    def _parser(self, builder: MessageBuilder) -> StreamParser:
        return _ResponsesStreamParser(builder)

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        b = builder
        out: list[AssistantMessageEvent] = []
        for n, item in enumerate(data.get("output") or []):
            kind = item.get("type")
            if kind == "message":
                for part in item.get("content") or []:
                    text = (
                        part.get("text")
                        if part.get("type") == "output_text"
                        else part.get("refusal")
                    )
                    if isinstance(text, str) and text:
                        i, ev = b.text_start()
                        out += [ev, b.text_delta(i, text), b.text_end(i)]
            elif kind == "function_call":
                i, ev = b.toolcall_start(item.get("call_id") or f"call_{n}", item.get("name") or "")
                out.append(ev)
                if item.get("arguments"):
                    out.append(b.toolcall_delta(i, item["arguments"]))
                out.append(b.toolcall_end(i))
            elif kind == "reasoning":
                parts = (item.get("summary") or []) + (item.get("content") or [])
                text = "\n\n".join(p.get("text", "") for p in parts if p.get("text"))
                if text:
                    i, ev = b.thinking_start()
                    out += [ev, b.thinking_delta(i, text), b.thinking_end(i)]
        out.append(_terminal(b, data))
        return out


def _terminal(b: MessageBuilder, response: dict[str, Any]) -> AssistantMessageEvent:
    status = response.get("status")
    if status == "failed" or response.get("error"):
        return _error(b, response.get("error") or {})
    if status in ("in_progress", "queued"):
        return b.error(f"response not finished (status {status!r})", retryable=True)
    reason: TerminalReason | None = None
    details = response.get("incomplete_details") or {}
    if status == "incomplete" and details.get("reason") == "max_output_tokens":
        reason = "length"
    return b.done(reason, _usage(response.get("usage")))


def _error(b: MessageBuilder, error: dict[str, Any]) -> AssistantMessageEvent:
    code = error.get("code") or error.get("type")
    status = _CODE_STATUS.get(code) if isinstance(code, str) else None
    message = error.get("message") or "response failed"
    prefix = f"API error ({code})" if code else "API error"
    return b.error(
        f"{prefix}: {message}",
        status=status,
        retryable=is_retryable_status(status) if status else None,
    )


class _ResponsesStreamParser(StreamParser):
    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.calls: dict[int, int] = {}  # output_index -> builder index (open calls)
        self.call_args_seen: set[int] = set()
        self.texts: dict[tuple[Any, ...], int] = {}  # open text/thinking blocks

    def _text(self, key: tuple[Any, ...], delta: str, thinking: bool) -> Events:
        b = self.b
        out: list[AssistantMessageEvent] = []
        index = self.texts.get(key)
        if index is None:
            index, ev = b.thinking_start() if thinking else b.text_start()
            self.texts[key] = index
            out.append(ev)
        if delta:
            out.append(b.thinking_delta(index, delta) if thinking else b.text_delta(index, delta))
        return out

    def _end_text(self, key: tuple[Any, ...], full: Any, thinking: bool) -> Events:
        out: list[AssistantMessageEvent] = []
        if key not in self.texts:
            if not (isinstance(full, str) and full):
                return out
            out += self._text(key, full, thinking)
        index = self.texts.pop(key)
        out.append(self.b.thinking_end(index) if thinking else self.b.text_end(index))
        return out

    def _end_call(self, output_index: int, arguments: Any) -> list[AssistantMessageEvent]:
        index = self.calls.pop(output_index, None)
        if index is None:
            return []
        out: list[AssistantMessageEvent] = []
        if output_index not in self.call_args_seen and isinstance(arguments, str) and arguments:
            out.append(self.b.toolcall_delta(index, arguments))
        out.append(self.b.toolcall_end(index))
        return out

    def feed(self, data: dict[str, Any]) -> Events:
        b = self.b
        kind = data.get("type")
        oi = data.get("output_index", 0)
        delta = data.get("delta") or ""
        ci = data.get("content_index", 0)
        si = data.get("summary_index", 0)
        if kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call" and oi not in self.calls:
                call_id = item.get("call_id") or f"call_{oi}"
                index, ev = b.toolcall_start(call_id, item.get("name") or "")
                self.calls[oi] = index
                out = [ev]
                if item.get("arguments"):
                    self.call_args_seen.add(oi)
                    out.append(b.toolcall_delta(index, item["arguments"]))
                return out
            return []
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            return self._text(("t", oi, ci), delta, False)
        if kind in ("response.output_text.done", "response.refusal.done"):
            full = data.get("text") if kind == "response.output_text.done" else data.get("refusal")
            return self._end_text(("t", oi, data.get("content_index", 0)), full, False)
        if kind == "response.reasoning_summary_text.delta":
            return self._text(("s", oi, si), delta, True)
        if kind == "response.reasoning_summary_text.done":
            return self._end_text(("s", oi, data.get("summary_index", 0)), data.get("text"), True)
        if kind == "response.reasoning_text.delta":
            return self._text(("r", oi, ci), delta, True)
        if kind == "response.reasoning_text.done":
            return self._end_text(("r", oi, data.get("content_index", 0)), data.get("text"), True)
        if kind == "response.function_call_arguments.delta":
            open_call = self.calls.get(oi)
            if open_call is None or not data.get("delta"):
                return []
            self.call_args_seen.add(oi)
            return [b.toolcall_delta(open_call, data["delta"])]
        if kind == "response.function_call_arguments.done":
            return self._end_call(oi, data.get("arguments"))
        if kind == "response.output_item.done":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                return self._end_call(oi, item.get("arguments"))
            return []
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            self.finished = True
            out = b.close_open_blocks()
            response = data.get("response") or {}
            if kind == "response.failed" and not response.get("error"):
                response = {**response, "error": {"message": "response failed"}}
            out.append(_terminal(b, response))
            return out
        if kind == "error":
            self.finished = True
            return [_error(b, data)]
        return []


def _usage(raw: Any) -> Usage:
    return openai_usage(raw, "input_tokens", "output_tokens")


def responses_input(context: Context) -> list[dict[str, Any]]:
    """Our history as Responses ``input`` items."""
    out: list[dict[str, Any]] = []
    for message in context.messages:
        if isinstance(message, UserMessage):
            out.append(openai_user_message(message, _input_part))
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            if message.text:
                out.append({"role": "assistant", "content": message.text})
            for call in message.tool_calls:
                out.append(
                    {
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments_json(call),
                    }
                )
        elif isinstance(message, ToolResultMessage):
            output: Any
            if any(isinstance(p, ImageContent) for p in message.content):
                output = [_input_part(p) for p in message.content]
            else:
                output = message.text
            out.append(
                {"type": "function_call_output", "call_id": message.tool_call_id, "output": output}
            )
    return out


def _input_part(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, ImageContent):
        return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
    return {"type": "input_text", "text": part.text}
