"""Anthropic Messages adapter on the official ``anthropic`` SDK (``AsyncAnthropic``).

Streaming (default) reads the raw event stream of ``messages.create(..., stream=True)``:
``content_block_start``/``_delta``/``_stop`` for ``text`` (``text_delta``), ``thinking``
(``thinking_delta`` + ``signature_delta``), ``redacted_thinking`` (its ``data`` is kept as the
block's signature, ``redacted=True``) and ``tool_use`` (``input_json_delta`` fragments; a call
with no fragments, or only empty ones, has empty arguments).  ``message_start`` carries input
usage, ``message_delta`` the stop reason and output usage, ``message_stop`` ends the message.
An ``error`` event mid-stream (e.g. ``overloaded_error``) becomes an error with the matching
status (529 for overloaded).  ``ping`` is ignored.

Requests: ``max_tokens`` is required by the API; ``options.max_tokens`` or
:data:`DEFAULT_MAX_TOKENS`.  The system prompt goes to ``system``; tool results become
``tool_result`` blocks (with ``is_error``) in a user turn, consecutive user-side messages are
merged into one turn (the API wants alternating roles); thinking blocks go back with their
signature (unsigned thinking, e.g. from another provider, is dropped); assistant messages that
ended in ``error``/``aborted`` are left out.  ``options.extras`` go to the SDK's ``extra_body``
(e.g. ``{"thinking": {"type": "enabled", "budget_tokens": 2048}}``), and so does
``options.temperature``: anthropic 2.x's ``messages.create()`` has no ``temperature`` keyword.
"""

from __future__ import annotations

import json
from typing import Any

from ..events import AssistantMessageEvent
from ..types import (
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from ._sdk import Events, SDKProvider, StreamParser, role_turns, with_metered_http_client
from .base import Context, MessageBuilder, StreamOptions, TerminalReason
from .wire import tools_fragment

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider", "anthropic_messages"]

DEFAULT_MAX_TOKENS = 4096


_PLATFORMS = {
    "anthropic": "AsyncAnthropic",
    "bedrock": "AsyncAnthropicBedrock",
    "vertex": "AsyncAnthropicVertex",
}


class AnthropicProvider(SDKProvider):
    """``AnthropicProvider(client=None, *, api_key=None, base_url=None, stream=True,
    max_retries=0, platform="anthropic", **client_kwargs)`` — see
    :class:`openprogram.providers._sdk.SDKProvider`.

    Claude on AWS Bedrock and Google Vertex AI goes through the ``anthropic`` SDK's own clients:
    pass an ``AsyncAnthropicBedrock`` / ``AsyncAnthropicVertex`` as ``client``, or
    ``platform="bedrock"`` / ``"vertex"`` with that client's arguments (``aws_region``...,
    ``region``/``project_id``...) to have one built per event loop.  Their InvokeModel /
    ``streamRawPredict`` streams carry Anthropic's own events, so everything below applies
    unchanged (the Bedrock client takes AWS credentials from the normal chain).
    """

    provider_name = "anthropic"
    api = "anthropic-messages"

    def __init__(self, client: Any = None, *, platform: str = "anthropic", **kwargs: Any) -> None:
        if platform not in _PLATFORMS:
            raise ValueError(
                f"unknown platform {platform!r}: expected 'anthropic', 'bedrock' or 'vertex'"
            )
        self.platform = platform
        super().__init__(client, **kwargs)

    def _make_client(self, **kwargs: Any) -> Any:
        import anthropic

        client_class = getattr(anthropic, _PLATFORMS[self.platform])
        return client_class(**with_metered_http_client(kwargs, anthropic))

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        import anthropic

        return anthropic.APIStatusError, anthropic.APITimeoutError, anthropic.APIConnectionError

    def build_request(self, model: str, context: Context, options: StreamOptions) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": model,
            "max_tokens": options.max_tokens or DEFAULT_MAX_TOKENS,
            "messages": anthropic_messages(context),
            **tools_fragment(
                "anthropic", context.tools, options.tool_choice, options.parallel_tool_calls
            ),
        }
        if context.system_prompt:
            params["system"] = context.system_prompt
        extra: dict[str, Any] = {}
        if options.temperature is not None:
            # Not a keyword of this SDK's messages.create(); the HTTP API still takes it.
            extra["temperature"] = options.temperature
        extra.update(options.extras)
        if extra:
            params["extra_body"] = extra
        return params

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        if stream:
            return await client.messages.create(**params, stream=True)
        return await client.messages.create(**params)

    def _parser(self, builder: MessageBuilder) -> StreamParser:
        return _AnthropicStreamParser(builder)

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        b = builder
        out: list[AssistantMessageEvent] = []
        if data.get("type") == "error":
            return [b.error(f"API error: {data.get('error')}")]
        for block in data.get("content") or []:
            kind = block.get("type")
            if kind == "text":
                i, ev = b.text_start()
                out += [ev, b.text_delta(i, block.get("text") or ""), b.text_end(i)]
            elif kind == "thinking":
                i, ev = b.thinking_start()
                out += [ev, b.thinking_delta(i, block.get("thinking") or "")]
                out.append(b.thinking_end(i, block.get("signature")))
            elif kind == "redacted_thinking":
                i, ev = b.thinking_start(redacted=True)
                out += [ev, b.thinking_end(i, block.get("data"))]
            elif kind == "tool_use":
                i, ev = b.toolcall_start(block.get("id") or "", block.get("name") or "")
                out.append(ev)
                arguments = block.get("input")
                if arguments:
                    out.append(b.toolcall_delta(i, json.dumps(arguments)))
                out.append(b.toolcall_end(i))
        usage = _usage(data.get("usage"), Usage())
        out.append(b.done(_stop_reason(data.get("stop_reason"), b), usage))
        return out


class _AnthropicStreamParser(StreamParser):
    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.blocks: dict[int, tuple[str, int]] = {}  # wire index -> (kind, builder index)
        self.signatures: dict[int, str] = {}
        self.initial_input: dict[int, Any] = {}
        self.has_fragments: set[int] = set()
        self.usage = Usage()
        self.stop_reason: str | None = None

    def feed(self, data: dict[str, Any]) -> Events:
        b = self.b
        kind = data.get("type")
        if kind == "message_start":
            message = data.get("message") or {}
            self.usage = _usage(message.get("usage"), self.usage)
            return []
        if kind == "content_block_start":
            wi = data.get("index", 0)
            block = data.get("content_block") or {}
            btype = block.get("type")
            if btype == "text":
                index, ev = b.text_start()
                out = [ev]
                if block.get("text"):
                    out.append(b.text_delta(index, block["text"]))
            elif btype == "thinking":
                index, ev = b.thinking_start()
                out = [ev]
                if block.get("thinking"):
                    out.append(b.thinking_delta(index, block["thinking"]))
                if block.get("signature"):
                    self.signatures[wi] = block["signature"]
            elif btype == "redacted_thinking":
                index, ev = b.thinking_start(redacted=True)
                out = [ev]
                self.signatures[wi] = block.get("data") or ""
            elif btype == "tool_use":
                index, ev = b.toolcall_start(block.get("id") or "", block.get("name") or "")
                out = [ev]
                self.initial_input[wi] = block.get("input")
            else:  # server tools, citations containers...: not ours
                return []
            self.blocks[wi] = (btype, index)
            return out
        if kind == "content_block_delta":
            wi = data.get("index", 0)
            if wi not in self.blocks:
                return []
            btype, index = self.blocks[wi]
            delta = data.get("delta") or {}
            dtype = delta.get("type")
            if dtype == "text_delta" and delta.get("text"):
                return [b.text_delta(index, delta["text"])]
            if dtype == "thinking_delta" and delta.get("thinking"):
                return [b.thinking_delta(index, delta["thinking"])]
            if dtype == "signature_delta":
                self.signatures[wi] = self.signatures.get(wi, "") + (delta.get("signature") or "")
                return []
            if dtype == "input_json_delta":
                self.has_fragments.add(wi)
                fragment = delta.get("partial_json") or ""
                return [b.toolcall_delta(index, fragment)] if fragment else []
            return []
        if kind == "content_block_stop":
            wi = data.get("index", 0)
            if wi not in self.blocks:
                return []
            btype, index = self.blocks.pop(wi)
            if btype == "text":
                return [b.text_end(index)]
            if btype in ("thinking", "redacted_thinking"):
                return [b.thinking_end(index, self.signatures.pop(wi, None))]
            initial = self.initial_input.pop(wi, None)
            if wi not in self.has_fragments and initial:
                return [b.toolcall_end(index, initial)]
            return [b.toolcall_end(index)]
        if kind == "message_delta":
            delta = data.get("delta") or {}
            if delta.get("stop_reason"):
                self.stop_reason = delta["stop_reason"]
            self.usage = _usage(data.get("usage"), self.usage)
            return []
        if kind == "message_stop":
            self.finished = True
            out = b.close_open_blocks()
            out.append(b.done(_stop_reason(self.stop_reason, b), self.usage))
            return out
        return []


def _stop_reason(stop_reason: str | None, builder: MessageBuilder) -> TerminalReason:
    if stop_reason == "tool_use":
        return "toolUse"
    if stop_reason in ("max_tokens", "model_context_window_exceeded"):
        return "length"
    return "toolUse" if builder.message.tool_calls else "stop"


def _usage(raw: Any, previous: Usage) -> Usage:
    """Merge an Anthropic usage object into ``previous`` (message_delta repeats or updates
    only some counters)."""
    if not isinstance(raw, dict):
        return previous

    def pick(key: str, old: int) -> int:
        value = raw.get(key)
        return int(value) if isinstance(value, int) else old

    return Usage(
        input_tokens=pick("input_tokens", previous.input_tokens),
        output_tokens=pick("output_tokens", previous.output_tokens),
        cache_read_tokens=pick("cache_read_input_tokens", previous.cache_read_tokens),
        cache_write_tokens=pick("cache_creation_input_tokens", previous.cache_write_tokens),
    )


def anthropic_messages(context: Context) -> list[dict[str, Any]]:
    """Our history as Anthropic ``messages`` (alternating roles, user-side turns merged)."""
    return role_turns(context, AnthropicProvider.api, _user_block, _assistant_block, _tool_result)


def _tool_result(message: ToolResultMessage) -> list[dict[str, Any]]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id}
    if any(isinstance(p, ImageContent) for p in message.content):
        block["content"] = [p for p in map(_user_block, message.content) if p]
    elif message.text:  # an empty result is sent without content (empty text is rejected)
        block["content"] = message.text
    if message.is_error:
        block["is_error"] = True
    return [block]


def _user_block(part: TextContent | ImageContent) -> dict[str, Any] | None:
    if isinstance(part, ImageContent):
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": part.mime_type, "data": part.data_b64},
        }
    return {"type": "text", "text": part.text} if part.text else None


def _assistant_block(
    block: TextContent | ThinkingContent | ToolCall, own: bool
) -> dict[str, Any] | None:
    """A block of an assistant message as Anthropic takes it back: signed thinking goes back
    whichever adapter produced it (``own`` is not needed), unsigned thinking is dropped."""
    if isinstance(block, TextContent):
        return {"type": "text", "text": block.text} if block.text else None
    if isinstance(block, ThinkingContent):
        if not block.signature:
            return None
        if block.redacted:
            return {"type": "redacted_thinking", "data": block.signature}
        return {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
    return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.arguments}
