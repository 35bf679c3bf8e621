"""OpenAI Chat Completions adapter on the official ``openai`` SDK (``AsyncOpenAI``).

Streaming (default) requests ``stream=True`` with ``stream_options={"include_usage": True}``;
the final usage chunk has ``choices: []`` and arrives after the chunk carrying
``finish_reason``, so the message is finished when the SDK stream ends (``data: [DONE]``).  A
stream that ends before any ``finish_reason`` is an error ("stream ended without a final event").

Tool calls arrive as fragments keyed by ``index``; id and name come only in the first fragment of
each index (a fragment with a *different* id at a known index starts a new call: some
OpenAI-compatible servers send every parallel call as index 0).  Only choice 0 is read.
``delta.reasoning_content`` / ``delta.reasoning`` (sent by OpenAI-compatible servers for
reasoning models) become thinking blocks; OpenAI itself does not stream reasoning here.

A ``finish_reason`` followed by the end of the body counts as finished even when ``[DONE]`` is
missing (the SDK does not tell the two apart; the message is complete either way).

Messages we send: system prompt as a ``system`` message; tool results as ``role: "tool"``
messages (the API has no error flag: the error text is the content); images in user messages as
``image_url`` data URLs; images returned by tools (which tool messages cannot carry) follow the
tool messages in one user message.  Thinking is not sent back (the API has no field for it), and
assistant messages that ended in ``error``/``aborted`` are left out of the request.
``options.extras`` go to the SDK's ``extra_body`` (extra top-level JSON fields).
``options.max_tokens`` is sent as ``max_completion_tokens`` (servers that only know the older
``max_tokens`` can get it through ``extras``).
"""

from __future__ import annotations

from typing import Any

from ..events import AssistantMessageEvent
from ..types import (
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserMessage,
)
from ._sdk import (
    Events,
    OpenAISDKProvider,
    StreamParser,
    arguments_json,
    data_url,
    openai_usage,
    openai_user_message,
)
from .base import Context, MessageBuilder, TerminalReason

__all__ = ["OpenAIChatProvider", "chat_messages"]


class OpenAIChatProvider(OpenAISDKProvider):
    """The Chat Completions API (``client.chat.completions``); the module docstring says how our
    messages and its chunks map onto each other.  Constructed like every OpenAI adapter: see
    :class:`openprogram.providers._sdk.OpenAISDKProvider`."""

    api = "openai-chat"

    wire_api = "openai_chat"
    max_tokens_field = "max_completion_tokens"

    def _history(self, context: Context) -> dict[str, Any]:
        return {"messages": chat_messages(context)}

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        if stream:
            return await client.chat.completions.create(
                **params, stream=True, stream_options={"include_usage": True}
            )
        return await client.chat.completions.create(**params)

    def _parser(self, builder: MessageBuilder) -> StreamParser:
        return _ChatStreamParser(builder)

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        out: list[AssistantMessageEvent] = []
        choices = data.get("choices") or []
        choice = choices[0] if choices else {}
        message = choice.get("message") or {}
        b = builder
        reasoning = message.get("reasoning_content") or message.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            i, ev = b.thinking_start()
            out += [ev, b.thinking_delta(i, reasoning), b.thinking_end(i)]
        for key in ("content", "refusal"):
            text = message.get(key)
            if isinstance(text, str) and text:
                i, ev = b.text_start()
                out += [ev, b.text_delta(i, text), b.text_end(i)]
        for n, call in enumerate(message.get("tool_calls") or []):
            fn = call.get("function") or {}
            i, ev = b.toolcall_start(call.get("id") or f"call_{n}", fn.get("name") or "")
            out.append(ev)
            if fn.get("arguments"):
                out.append(b.toolcall_delta(i, fn["arguments"]))
            out.append(b.toolcall_end(i))
        if not choices:
            out.append(b.error("response has no choices"))
            return out
        out.append(b.done(_stop_reason(choice.get("finish_reason"), b), _usage(data.get("usage"))))
        return out


class _ChatStreamParser(StreamParser):
    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.text: int | None = None
        self.thinking: int | None = None
        self.calls: dict[int, int] = {}
        self.finish_reason: str | None = None
        self.usage: Usage | None = None

    def _close_text(self, out: list[AssistantMessageEvent]) -> None:
        if self.text is not None:
            out.append(self.b.text_end(self.text))
            self.text = None
        if self.thinking is not None:
            out.append(self.b.thinking_end(self.thinking))
            self.thinking = None

    def feed(self, data: dict[str, Any]) -> Events:
        b = self.b
        out: list[AssistantMessageEvent] = []
        if data.get("usage"):
            self.usage = _usage(data["usage"])
        for choice in data.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                if self.thinking is None:
                    self.thinking, ev = b.thinking_start()
                    out.append(ev)
                out.append(b.thinking_delta(self.thinking, reasoning))
            for key in ("content", "refusal"):
                text = delta.get(key)
                if isinstance(text, str) and text:
                    if self.thinking is not None:
                        out.append(b.thinking_end(self.thinking))
                        self.thinking = None
                    if self.text is None:
                        self.text, ev = b.text_start()
                        out.append(ev)
                    out.append(b.text_delta(self.text, text))
            for fragment in delta.get("tool_calls") or []:
                wire_index = fragment.get("index", 0)
                fn = fragment.get("function") or {}
                index = self.calls.get(wire_index)
                new_id = fragment.get("id")
                if index is not None and new_id and new_id != b.message.content[index].id:  # type: ignore[union-attr]
                    index = None  # servers that reuse index 0 for every parallel call
                if index is None:
                    self._close_text(out)
                    call_id = fragment.get("id") or f"call_{wire_index}"
                    index, ev = b.toolcall_start(call_id, fn.get("name") or "")
                    self.calls[wire_index] = index
                    out.append(ev)
                else:
                    call: ToolCall = b.message.content[index]  # type: ignore[assignment]
                    if not call.name and fn.get("name"):
                        call.name = fn["name"]
                if fn.get("arguments"):
                    out.append(b.toolcall_delta(index, fn["arguments"]))
            if choice.get("finish_reason"):
                self.finish_reason = choice["finish_reason"]
        return out

    def finish(self) -> list[AssistantMessageEvent]:
        if self.finish_reason is None:
            return super().finish()
        self.finished = True
        out = self.b.close_open_blocks()
        out.append(self.b.done(_stop_reason(self.finish_reason, self.b), self.usage))
        return out


def _stop_reason(finish_reason: str | None, builder: MessageBuilder) -> TerminalReason:
    if finish_reason in ("tool_calls", "function_call"):
        return "toolUse"
    if finish_reason == "length":
        return "length"
    return "toolUse" if builder.message.tool_calls else "stop"


def _usage(raw: Any) -> Usage:
    return openai_usage(raw, "prompt_tokens", "completion_tokens")


def chat_messages(context: Context) -> list[dict[str, Any]]:
    """Our history as Chat Completions ``messages``."""
    out: list[dict[str, Any]] = []
    if context.system_prompt:
        out.append({"role": "system", "content": context.system_prompt})
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            out.append(
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Images returned by the tools:"},
                        *pending_images,
                    ],
                }
            )
            pending_images.clear()

    for message in context.messages:
        if not isinstance(message, ToolResultMessage):
            flush_images()
        if isinstance(message, UserMessage):
            out.append(openai_user_message(message, _user_part))
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            text = message.text
            calls = message.tool_calls
            if not text and not calls:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": arguments_json(c)},
                    }
                    for c in calls
                ]
            out.append(entry)
        elif isinstance(message, ToolResultMessage):
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id,
                    "content": message.text or ("(see attached image)" if message.content else ""),
                }
            )
            pending_images += [
                _user_part(p) for p in message.content if isinstance(p, ImageContent)
            ]
    flush_images()
    return out


def _user_part(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, ImageContent):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    return {"type": "text", "text": part.text}
