"""OpenAI Chat Completions on the wire: ``POST /v1/chat/completions``.

Streams are data-only SSE ending with ``data: [DONE]``; the usage chunk (``choices: []``) is
sent only when the request asks for it (``stream_options.include_usage``), as the real API does.
Thinking goes out as ``reasoning_content`` deltas (the de-facto extension of OpenAI-compatible
servers; the official API has no thinking on this endpoint).  ``prompt_tokens`` include the
cached tokens, so ``input_tokens = prompt_tokens - cached_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from openprogram.providers.base import ToolChoice
from openprogram.types import (
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolSpec,
    Usage,
    UserMessage,
)

from .base import (
    CREATED,
    CallPart,
    ErrorAnswer,
    Frame,
    ParsedRequest,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    as_dict,
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
from .sse import SSE, frame_data, json_frames, with_data

__all__ = [
    "ERRORS",
    "GARBLE_PREFIX",
    "OpenAIChat",
    "OpenAIFormat",
    "garble",
    "openai_request",
    "openai_tool_choice",
]

FINISH = {"stop": "stop", "length": "length", "toolUse": "tool_calls"}

ERRORS: dict[int, tuple[str, str | None, str]] = {
    400: ("invalid_request_error", None, "Invalid request."),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: ("invalid_request_error", "unsupported_country_region_territory", "Forbidden."),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model `{model}` does not exist or you do not have access to it.",
    ),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests."),
    500: ("server_error", None, "The server had an error while processing your request."),
    503: ("server_error", None, "The engine is currently overloaded, please try again later."),
    529: ("server_error", None, "The engine is currently overloaded, please try again later."),
}
"""Status → (error type, code, default message) of OpenAI's JSON error body (both APIs)."""

GARBLE_PREFIX = "<garbled>"
"""What argument garbling puts in front of the first fragment: anything in front of a JSON
document makes it invalid, whatever the rest of the fragments say."""


def openai_error(status: int, message: str | None, model: str) -> dict[str, Any]:
    """OpenAI's JSON error body (both OpenAI APIs)."""
    otype, code, default = ERRORS.get(
        status, ("server_error" if status >= 500 else "invalid_request_error", None, "Error")
    )
    text = message if message is not None else default.format(model=model)
    return {"error": {"message": text, "type": otype, "param": None, "code": code}}


def openai_tool_choice(value: Any) -> ToolChoice | None:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        fn = value.get("function")
        name = fn.get("name") if isinstance(fn, dict) else value.get("name")
        if name:
            return {"type": "function", "name": str(name)}
        return dict(value)
    return None


def _usage(u: Usage) -> dict[str, Any]:
    prompt = u.input_tokens + u.cache_read_tokens
    return {
        "prompt_tokens": prompt,
        "completion_tokens": u.output_tokens,
        "total_tokens": prompt + u.output_tokens,
        "prompt_tokens_details": {"cached_tokens": u.cache_read_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def openai_request(
    body: dict[str, Any],
    system: list[str],
    messages: list[Message],
    tools: list[ToolSpec],
    *max_tokens_keys: str,
) -> ParsedRequest:
    """A parsed request of either OpenAI API: they differ in how they send messages and tools
    but spell ``tool_choice``, ``parallel_tool_calls`` and ``temperature`` alike (the output
    limit under their own ``max_tokens_keys``, first found wins)."""
    parallel = body.get("parallel_tool_calls")
    return ParsedRequest(
        system,
        messages,
        tools,
        openai_tool_choice(body.get("tool_choice")),
        parallel if isinstance(parallel, bool) else None,
        first_int(body, *max_tokens_keys),
        number(body.get("temperature")),
    )


class OpenAIFormat(WireFormat):
    """What both OpenAI APIs answer alike: errors, as :func:`openai_error` bodies."""

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        return ErrorAnswer(status, openai_error(status, message, model), {})


class OpenAIChat(OpenAIFormat):
    api = "openai_chat"
    framing = SSE(named=False)

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        opts = ctx.body.get("stream_options")
        include_usage = isinstance(opts, dict) and opts.get("include_usage") is True

        def chunk(choices: list[Any], **extra: Any) -> dict[str, Any]:
            out: dict[str, Any] = {
                "id": f"chatcmpl-emu{ctx.index}",
                "object": "chat.completion.chunk",
                "created": CREATED,
                "model": ctx.model,
                "system_fingerprint": "fp_emulator",
                "choices": choices,
            }
            if include_usage:
                out["usage"] = None
            out.update(extra)
            return out

        def delta(d: dict[str, Any], finish: str | None = None) -> Frame:
            choice = {"index": 0, "delta": d, "logprobs": None, "finish_reason": finish}
            return Frame(None, chunk([choice]), terminal=finish is not None)

        first_text = bool(turn.parts) and isinstance(turn.parts[0], TextPart)
        yield delta({"role": "assistant", "content": "" if first_text else None, "refusal": None})
        tool_index = 0
        for part in turn.parts:
            if isinstance(part, TextPart):
                for piece in pieces(turn, part.text):
                    yield delta({"content": piece})
            elif isinstance(part, ThinkingPart):
                for piece in pieces(turn, part.text):
                    yield delta({"reasoning_content": piece})
            else:
                head = {
                    "index": tool_index,
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": ""},
                }
                yield delta({"tool_calls": [head]})
                for piece in pieces(turn, part.arguments):
                    fragment = {"index": tool_index, "function": {"arguments": piece}}
                    yield delta({"tool_calls": [fragment]})
                tool_index += 1
        if turn.ending == "error":
            body = openai_error(turn.error_status, turn.error, ctx.model)
            yield Frame(None, body, terminal=True, exception=True)
            return
        if turn.ending in ("cut", "drop"):
            return
        yield delta({}, FINISH[turn.stop])
        if include_usage:
            yield Frame(None, chunk([], usage=_usage(turn.usage)))
        yield Frame(None, "[DONE]", terminal=True)

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        text = "".join(p.text for p in turn.parts if isinstance(p, TextPart))
        message: dict[str, Any] = {
            "role": "assistant",
            "content": text if any(isinstance(p, TextPart) for p in turn.parts) else None,
            "refusal": None,
            "annotations": [],
        }
        thinking = "".join(p.text for p in turn.parts if isinstance(p, ThinkingPart))
        if thinking:
            message["reasoning_content"] = thinking
        calls = [p for p in turn.parts if isinstance(p, CallPart)]
        if calls:
            message["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments},
                }
                for c in calls
            ]
        choice = {
            "index": 0,
            "message": message,
            "logprobs": None,
            "finish_reason": FINISH[turn.stop],
        }
        return {
            "id": f"chatcmpl-emu{ctx.index}",
            "object": "chat.completion",
            "created": CREATED,
            "model": ctx.model,
            "choices": [choice],
            "usage": _usage(turn.usage),
            "system_fingerprint": "fp_emulator",
        }

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        system: list[str] = []
        messages: list[Message] = []
        names: dict[str, str] = {}
        for m in dicts(body.get("messages")):
            role, content = m.get("role"), m.get("content")
            if role in ("system", "developer"):
                system.append(text_of(content))
            elif role == "user":
                messages.append(UserMessage(content=user_content(content)))
            elif role == "assistant":
                blocks: list[Any] = []
                reasoning = m.get("reasoning_content") or m.get("reasoning")
                if isinstance(reasoning, str) and reasoning:
                    blocks.append(ThinkingContent(thinking=reasoning))
                text = text_of(content)
                if text:
                    blocks.append(TextContent(text=text))
                for tc in dicts(m.get("tool_calls")):
                    fn = as_dict(tc.get("function"))
                    call = make_call(tc.get("id"), fn.get("name"), fn.get("arguments"))
                    names[call.id] = call.name
                    blocks.append(call)
                messages.append(AssistantMessage(content=blocks))
            elif role == "tool":
                messages.append(tool_result(names, m.get("tool_call_id"), text_of(content)))
        functions = (as_dict(t.get("function")) for t in dicts(body.get("tools")))
        tools = tool_specs(functions, lambda f: f.get("parameters"))
        return openai_request(body, system, messages, tools, "max_tokens", "max_completion_tokens")

    def is_terminal(self, frame: str) -> bool:
        """``data: [DONE]`` and the chunk that carries ``finish_reason``: the SDK swallows
        ``[DONE]``, so the chunk with ``finish_reason`` is what ends the message for a client
        (dropping ``[DONE]`` alone would change nothing it sees)."""
        data = (frame_data(frame) or "").strip()
        if data == "[DONE]":
            return True
        try:
            payload = json.loads(data)
        except ValueError:
            return False
        choices = payload.get("choices") if isinstance(payload, dict) else None
        return isinstance(choices, list) and any(
            isinstance(c, dict) and c.get("finish_reason") is not None for c in choices
        )


def garble(frames: list[str], i: int) -> int:
    """Garble the arguments of tool call ``i`` (keyed by choice index and ``tool_calls[].index``);
    returns how many tool calls the stream has."""
    order: list[tuple[int, int]] = []
    garbled = False
    for pos, frame, payload in json_frames(frames):
        changed = False
        for choice in payload.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                key = (choice.get("index", 0), call.get("index", 0))
                if key not in order:
                    order.append(key)
                if order.index(key) != i or garbled:
                    continue
                function = call.setdefault("function", {})
                fragment = function.get("arguments") or ""
                if fragment or _last_fragment(frames, pos, key):
                    function["arguments"] = GARBLE_PREFIX + fragment
                    garbled = changed = True
        if changed:
            frames[pos] = with_data(frame, payload)
    return len(order)


def _last_fragment(frames: list[str], pos: int, key: tuple[int, int]) -> bool:
    """Whether frame ``pos`` holds the last argument fragment of tool call ``key`` (so a call
    whose fragments are all empty still gets garbled)."""
    for _, _, payload in json_frames(frames[pos + 1 :]):
        for choice in payload.get("choices") or []:
            for call in (choice.get("delta") or {}).get("tool_calls") or []:
                if (choice.get("index", 0), call.get("index", 0)) == key:
                    return False
    return True


def inject_error(message: str, after_frame: int) -> str:
    """The in-stream error frame OpenAI Chat sends."""
    return with_data("", openai_error(500, message, ""))
