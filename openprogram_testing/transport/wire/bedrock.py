"""Bedrock Runtime on the wire: Converse and Anthropic-on-Bedrock InvokeModel.

``POST /model/{modelId}/converse`` answers JSON; ``/converse-stream`` answers an AWS event
stream (``messageStart``, ``contentBlockStart`` only for tool use, ``contentBlockDelta``,
``contentBlockStop``, ``messageStop`` with the stop reason, then ``metadata`` with usage).
``/model/{modelId}/invoke`` and ``/invoke-with-response-stream`` carry Anthropic Messages
bodies; the stream wraps each Anthropic event as base64 in a ``chunk`` frame, and
``message_stop`` carries ``amazon-bedrock-invocationMetrics``; a non-streamed InvokeModel answer
reports usage in ``x-amzn-bedrock-input-token-count`` / ``-output-token-count`` headers.  A
scripted call whose arguments are not a JSON object ends a Converse answer with ``stopReason:
malformed_tool_use`` (its non-streamed ``toolUse.input`` stays an object).  Errors are JSON
``{"message": ...}`` with the type in ``x-amzn-ErrorType``; inside a stream, an ``exception``
message.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

from openprogram.providers.base import ToolChoice
from openprogram.types import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    UserContent,
    UserMessage,
)

from . import anthropic
from .anthropic import Anthropic
from .base import (
    ErrorAnswer,
    Frame,
    ParsedRequest,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    arguments_object,
    as_dict,
    dicts,
    dumps,
    number,
    pieces,
    tool_result,
    tool_specs,
)
from .eventstream import EventStream, decode_message, encode_message
from .eventstream import Message as EventMessage
from .openai_chat import GARBLE_PREFIX

__all__ = [
    "ERROR_NAMES",
    "BedrockConverse",
    "BedrockInvoke",
    "bedrock_error",
    "garble",
    "inject_error",
]

STOP = {"stop": "end_turn", "length": "max_tokens", "toolUse": "tool_use"}
MALFORMED = "malformed_tool_use"
"""Converse's stop reason for a tool call whose input is not valid JSON (the emulator answers
it for a scripted call whose arguments are not a JSON object)."""


def _stop_reason(turn: WireTurn) -> str:
    return MALFORMED if turn.malformed_call is not None else STOP[turn.stop]


ERROR_NAMES: dict[int, str] = {
    400: "ValidationException",
    403: "AccessDeniedException",
    404: "ResourceNotFoundException",
    408: "ModelTimeoutException",
    424: "ModelErrorException",
    429: "ThrottlingException",
    500: "InternalServerException",
    503: "ServiceUnavailableException",
}
"""HTTP status → the Bedrock error type (``x-amzn-ErrorType``; lowerCamel inside a stream)."""

_ERROR_SUFFIX = ":http://internal.amazon.com/coral/com.amazon.bedrock/"


def _error_name(status: int) -> str:
    return ERROR_NAMES.get(
        status, "InternalServerException" if status >= 500 else "ValidationException"
    )


def bedrock_error(status: int, message: str | None, request_id: str) -> ErrorAnswer:
    """Bedrock's error answer: JSON ``{"message": ...}``, the type in ``x-amzn-ErrorType``."""
    name = _error_name(status)
    text = message if message is not None else f"{name}: the emulator answered {status}"
    headers = {"x-amzn-ErrorType": name + _ERROR_SUFFIX}
    return ErrorAnswer(status, {"message": text}, headers)


def _exception_frame(status: int, message: str | None) -> Frame:
    name = "modelStreamErrorException" if status == 424 else _error_name(status)
    name = name[0].lower() + name[1:]
    return Frame(name, {"message": message or name}, terminal=True, exception=True)


def is_terminal_event(event_type: str | None) -> bool:
    """Whether a Converse stream event ends the stream (``messageStop``; ``metadata`` follows
    it and is the last frame)."""
    return event_type in ("messageStop", "metadata")


class BedrockConverse(WireFormat):
    api = "bedrock"
    framing = EventStream()
    request_id_header = "x-amzn-RequestId"

    def _usage(self, turn: WireTurn) -> dict[str, Any]:
        u = turn.usage
        out = {
            "inputTokens": u.input_tokens,
            "outputTokens": u.output_tokens,
            "totalTokens": u.input_tokens
            + u.output_tokens
            + u.cache_read_tokens
            + u.cache_write_tokens,
        }
        if u.cache_read_tokens or u.cache_write_tokens:
            out["cacheReadInputTokens"] = u.cache_read_tokens
            out["cacheWriteInputTokens"] = u.cache_write_tokens
        return out

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        yield Frame("messageStart", {"role": "assistant"})
        for i, part in enumerate(turn.parts):
            deltas: list[dict[str, Any]]
            if isinstance(part, TextPart):
                deltas = [{"text": p} for p in pieces(turn, part.text)] or [{"text": ""}]
            elif isinstance(part, ThinkingPart) and part.redacted:
                deltas = [{"reasoningContent": {"redactedContent": part.text}}]
            elif isinstance(part, ThinkingPart):
                deltas = [{"reasoningContent": {"text": p}} for p in pieces(turn, part.text)]
                if part.signature is not None:
                    deltas.append({"reasoningContent": {"signature": part.signature}})
            else:
                start = {"toolUse": {"toolUseId": part.id, "name": part.name}}
                yield Frame("contentBlockStart", {"start": start, "contentBlockIndex": i})
                fragments = [] if part.empty else list(pieces(turn, part.arguments))
                deltas = [{"toolUse": {"input": p}} for p in fragments or [""]]
            for d in deltas:
                yield Frame("contentBlockDelta", {"delta": d, "contentBlockIndex": i})
            yield Frame("contentBlockStop", {"contentBlockIndex": i})
        if turn.ending == "error":
            yield _exception_frame(turn.error_status, turn.error)
            return
        if turn.ending in ("cut", "drop"):
            return
        yield Frame("messageStop", {"stopReason": _stop_reason(turn)}, terminal=True)
        metadata = {"usage": self._usage(turn), "metrics": {"latencyMs": 0}}
        yield Frame("metadata", metadata, terminal=True)

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        content: list[Any] = []
        for part in turn.parts:
            if isinstance(part, TextPart):
                content.append({"text": part.text})
            elif isinstance(part, ThinkingPart) and part.redacted:
                content.append({"reasoningContent": {"redactedContent": part.text}})
            elif isinstance(part, ThinkingPart):
                text: dict[str, Any] = {"text": part.text}
                if part.signature is not None:
                    text["signature"] = part.signature
                content.append({"reasoningContent": {"reasoningText": text}})
            else:
                use = {
                    "toolUseId": part.id,
                    "name": part.name,
                    "input": arguments_object(part.arguments),
                }
                content.append({"toolUse": use})
        return {
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": _stop_reason(turn),
            "usage": self._usage(turn),
            "metrics": {"latencyMs": 0},
        }

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        system = [
            str(b["text"]) for b in dicts(body.get("system")) if isinstance(b.get("text"), str)
        ]
        messages: list[Message] = []
        names: dict[str, str] = {}
        for m in dicts(body.get("messages")):
            blocks = dicts(m.get("content"))
            if m.get("role") == "assistant":
                messages.append(AssistantMessage(content=_assistant_blocks(blocks, names)))
                continue
            user: list[UserContent] = []
            for b in blocks:
                result = b.get("toolResult")
                if isinstance(result, dict):
                    text = _result_text(result.get("content"))
                    is_error = result.get("status") == "error"
                    call_id = result.get("toolUseId")
                    messages.append(tool_result(names, call_id, text, is_error=is_error))
                elif isinstance(b.get("text"), str):
                    user.append(TextContent(text=b["text"]))
                elif isinstance(b.get("image"), dict):
                    image = b["image"]
                    data = as_dict(image.get("source")).get("bytes")
                    user.append(
                        ImageContent(
                            data_b64=str(data or ""), mime_type=f"image/{image.get('format', '')}"
                        )
                    )
            if user:
                messages.append(UserMessage(content=user))
        config = as_dict(body.get("toolConfig"))
        specs = (as_dict(t.get("toolSpec")) for t in dicts(config.get("tools")))
        tools = tool_specs(specs, lambda s: as_dict(s.get("inputSchema")).get("json"))
        inference = as_dict(body.get("inferenceConfig"))
        max_tokens = inference.get("maxTokens")
        return ParsedRequest(
            system,
            messages,
            tools,
            _tool_choice(as_dict(config.get("toolChoice"))),
            None,
            max_tokens if isinstance(max_tokens, int) else None,
            number(inference.get("temperature")),
        )

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        return bedrock_error(status, message, request_id)

    def is_terminal(self, frame: str) -> bool:
        return False  # not an SSE format

    def is_terminal_message(self, message: EventMessage) -> bool:
        return message.headers.get(":message-type") == "exception" or is_terminal_event(
            message.event_type
        )


def _assistant_blocks(blocks: list[dict[str, Any]], names: dict[str, str]) -> list[Any]:
    out: list[Any] = []
    for b in blocks:
        use = b.get("toolUse")
        reasoning = b.get("reasoningContent")
        if isinstance(use, dict):
            cid, name, args = use.get("toolUseId"), use.get("name"), use.get("input")
            call = ToolCall(
                id=str(cid or ""),
                name=str(name or ""),
                arguments=args if isinstance(args, dict) else {},
            )
            names[call.id] = call.name
            out.append(call)
        elif isinstance(reasoning, dict):
            text = as_dict(reasoning.get("reasoningText"))
            redacted = reasoning.get("redactedContent")
            signature = text.get("signature")
            out.append(
                ThinkingContent(
                    thinking=str(text.get("text", redacted if isinstance(redacted, str) else "")),
                    signature=signature if isinstance(signature, str) else None,
                    redacted=isinstance(redacted, str),
                )
            )
        elif isinstance(b.get("text"), str):
            out.append(TextContent(text=b["text"]))
    return out


def _result_text(content: Any) -> str:
    parts: list[str] = []
    for c in dicts(content):
        if isinstance(c.get("text"), str):
            parts.append(c["text"])
        elif "json" in c:
            parts.append(json.dumps(c["json"], ensure_ascii=False))
    return "".join(parts)


def _tool_choice(choice: dict[str, Any]) -> ToolChoice | None:
    if "tool" in choice:
        return {"type": "function", "name": str(as_dict(choice["tool"]).get("name") or "")}
    if "any" in choice:
        return "required"
    if "auto" in choice:
        return "auto"
    return None


class BedrockInvoke(Anthropic):
    """Anthropic Messages through Bedrock's InvokeModel: Anthropic bodies and events, Bedrock
    errors and event-stream framing (each event a base64 ``chunk``)."""

    framing = EventStream(chunked=True)
    request_id_header = "x-amzn-RequestId"

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        for frame in super().frames(turn, ctx):
            if frame.exception:
                error = as_dict(as_dict(frame.data).get("error"))
                yield _exception_frame(turn.error_status, str(error.get("message") or ""))
                continue
            if frame.event == "message_stop":
                u = turn.usage
                metrics = {
                    "inputTokenCount": u.input_tokens,
                    "outputTokenCount": u.output_tokens,
                    "invocationLatency": 0,
                    "firstByteLatency": 0,
                }
                frame.data = {**frame.data, "amazon-bedrock-invocationMetrics": metrics}
            yield frame

    def body_headers(self, turn: WireTurn) -> dict[str, str]:
        """InvokeModel's usage headers (the body is the model's own, so Bedrock reports its
        counts beside it; langchain-aws and litellm read them)."""
        u = turn.usage
        return {
            "x-amzn-bedrock-input-token-count": str(u.input_tokens),
            "x-amzn-bedrock-output-token-count": str(u.output_tokens),
            "x-amzn-bedrock-invocation-latency": "0",
        }

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        return bedrock_error(status, message, request_id)

    def is_terminal_message(self, message: EventMessage) -> bool:
        if message.headers.get(":message-type") == "exception":
            return True
        try:
            inner = json.loads(base64.b64decode(json.loads(message.payload)["bytes"]))
        except (ValueError, KeyError, TypeError):
            return False
        return isinstance(inner, dict) and inner.get("type") == "message_stop"


def inject_error(message: str, after_frame: int) -> bytes:
    """The in-stream exception message Bedrock sends when the service is overloaded (the same
    for Converse and InvokeModel streams)."""
    frame = _exception_frame(503, message)
    return EventStream().encode(frame)


def garble(messages: list[bytes], i: int) -> int:
    """Garble Converse tool use ``i``: its first ``toolUse.input`` fragment gets
    :data:`~.openai_chat.GARBLE_PREFIX` in front (CRCs recomputed); returns how many tool uses
    the stream has."""
    seen = 0
    target: Any = None
    for pos, raw in enumerate(messages):
        try:
            message = decode_message(raw)
            payload = json.loads(message.payload)
        except ValueError:
            continue
        if not isinstance(payload, dict):
            continue
        if message.event_type == "contentBlockStart" and "toolUse" in as_dict(payload.get("start")):
            if seen == i:
                target = payload.get("contentBlockIndex")
            seen += 1
        elif (
            target is not None
            and message.event_type == "contentBlockDelta"
            and payload.get("contentBlockIndex") == target
            and "toolUse" in as_dict(payload.get("delta"))
        ):
            use = payload["delta"]["toolUse"]
            use["input"] = GARBLE_PREFIX + str(use.get("input") or "")
            headers = {k: v for k, v in message.headers.items() if isinstance(v, str)}
            messages[pos] = encode_message(headers, dumps(payload).encode())
            target = None
    return seen


_RAW = "event: openprogram-raw-message\ndata: {index}"
"""Stands in for an event-stream message that is not an Anthropic ``chunk`` (an exception)
while the chunks are garbled as SSE frames; its data is not a JSON object, so it is skipped."""


def garble_invoke(messages: list[bytes], i: int) -> int:
    """Garble Anthropic tool use ``i`` in an InvokeModel stream: each ``chunk`` message carries
    one Anthropic event (base64 in ``bytes``), so the events are garbled as Anthropic's own
    (:func:`~.anthropic.garble`) and the changed ones wrapped again (CRCs recomputed); returns
    how many tool-use blocks the stream has."""

    frames: list[str] = []
    unchanged: dict[str, bytes] = {}
    shell: tuple[dict[str, Any], dict[str, Any]] = ({":event-type": "chunk"}, {})
    for index, raw in enumerate(messages):
        message: EventMessage | None = None
        try:
            message = decode_message(raw)
            outer = json.loads(message.payload)
            event = json.loads(base64.b64decode(outer["bytes"]))
        except (ValueError, KeyError, TypeError):
            event = None
        if message is None or message.event_type != "chunk" or not isinstance(event, dict):
            frame = _RAW.format(index=index)  # an exception message: kept as it is
        else:
            frame = f"event: {event.get('type')}\ndata: {dumps(event)}"
            shell = ({k: v for k, v in message.headers.items() if isinstance(v, str)}, outer)
        frames.append(frame)
        unchanged.setdefault(frame, raw)
    found = anthropic.garble(frames, i)
    headers, outer = shell
    rebuilt: list[bytes] = []
    for frame in frames:
        if frame in unchanged:
            rebuilt.append(unchanged[frame])
            continue
        data = frame.split("data: ", 1)[1]
        payload = {**outer, "bytes": base64.b64encode(data.encode("utf-8")).decode("ascii")}
        rebuilt.append(encode_message(headers, dumps(payload).encode()))
    messages[:] = rebuilt
    return found
