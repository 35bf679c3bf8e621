"""Gemini ``generateContent`` on the wire (Developer API and Vertex AI paths).

``POST …/models/{model}:generateContent`` answers one JSON document;
``…:streamGenerateContent?alt=sse`` answers data-only SSE with CRLF line endings and no end
sentinel.  As the real API does: every chunk repeats the cumulative ``usageMetadata`` (the last
one is complete), the last chunk carries ``finishReason`` (``STOP`` also when the model called
functions), a function call arrives whole in one chunk, and calls carry an ``id`` only when the
script gave one (Gemini 2.x sends none; see ``docs/decisions.md``).  Thinking is a part with
``thought: true``; its signature travels as ``thoughtSignature``.
"""

from __future__ import annotations

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
    ToolResultMessage,
    UserContent,
    UserMessage,
)

from .base import (
    ErrorAnswer,
    Frame,
    ParsedRequest,
    Part,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    arguments_object,
    as_dict,
    dicts,
    number,
    pieces,
    tool_specs,
)
from .sse import SSE, frame_json, with_data

__all__ = ["STATUS_NAMES", "Gemini", "gemini_error", "inject_error"]

FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "toolUse": "STOP"}

STATUS_NAMES: dict[int, str] = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    409: "ABORTED",
    429: "RESOURCE_EXHAUSTED",
    499: "CANCELLED",
    500: "INTERNAL",
    501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
"""HTTP status → the ``google.rpc.Code`` name Gemini puts in ``error.status``."""


def gemini_error(status: int, message: str | None, model: str) -> dict[str, Any]:
    name = STATUS_NAMES.get(status, "INTERNAL" if status >= 500 else "FAILED_PRECONDITION")
    default = f"models/{model} is not found" if status == 404 else name.replace("_", " ").lower()
    return {"error": {"code": status, "message": message or default, "status": name}}


def _usage(turn: WireTurn, output_tokens: int) -> dict[str, Any]:
    u = turn.usage
    prompt = u.input_tokens + u.cache_read_tokens
    out: dict[str, Any] = {
        "promptTokenCount": prompt,
        "candidatesTokenCount": output_tokens,
        "totalTokenCount": prompt + output_tokens,
    }
    if u.cache_read_tokens:
        out["cachedContentTokenCount"] = u.cache_read_tokens
    return out


def _wire_parts(turn: WireTurn, part: Part, *, stream: bool) -> list[dict[str, Any]]:
    """One scripted part as Gemini parts: text and thinking in the turn's delta size when
    streaming, whole otherwise."""
    if isinstance(part, TextPart | ThinkingPart):
        texts = list(pieces(turn, part.text)) if stream else [part.text]
        out: list[dict[str, Any]] = []
        for text in texts or [""]:
            item: dict[str, Any] = {"text": text}
            if isinstance(part, ThinkingPart):
                item["thought"] = True
            out.append(item)
        if isinstance(part, ThinkingPart) and part.signature is not None:
            out[-1]["thoughtSignature"] = part.signature
        return out
    call: dict[str, Any] = {"name": part.name, "args": arguments_object(part.arguments)}
    if part.id_given:
        call = {"id": part.id, **call}
    return [{"functionCall": call}]


class Gemini(WireFormat):
    api = "gemini"
    framing = SSE(named=False, newline="\r\n")
    request_id_header = "x-goog-request-id"

    def _chunk(
        self,
        ctx: RenderContext,
        parts: list[dict[str, Any]],
        usage: dict[str, Any],
        finish: str | None,
    ) -> dict[str, Any]:
        candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}}
        if finish is not None:
            candidate["finishReason"] = finish
        candidate["index"] = 0
        return {
            "candidates": [candidate],
            "usageMetadata": usage,
            "modelVersion": ctx.model,
            "responseId": f"emu{ctx.index}",
        }

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        chunks = [p for part in turn.parts for p in _wire_parts(turn, part, stream=True)]
        ends = turn.ending == "done"
        if not chunks and ends:
            chunks = [{"text": ""}]
        total = turn.usage.output_tokens
        for i, part in enumerate(chunks):
            last = i == len(chunks) - 1
            so_far = total if last else total * (i + 1) // len(chunks)
            finish = FINISH[turn.stop] if last and ends else None
            data = self._chunk(ctx, [part], _usage(turn, so_far), finish)
            yield Frame(None, data, terminal=finish is not None)
        if turn.ending == "error":
            error = gemini_error(turn.error_status, turn.error, ctx.model)
            yield Frame(None, error, terminal=True, exception=True)

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        parts = [p for part in turn.parts for p in _wire_parts(turn, part, stream=False)]
        usage = _usage(turn, turn.usage.output_tokens)
        return self._chunk(ctx, parts or [{"text": ""}], usage, FINISH[turn.stop])

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        instruction = as_dict(body.get("systemInstruction") or body.get("system_instruction"))
        system_text = "".join(str(p.get("text", "")) for p in dicts(instruction.get("parts")))
        messages: list[Message] = []
        for content in dicts(body.get("contents")):
            parts = dicts(content.get("parts"))
            if content.get("role") == "model":
                messages.append(AssistantMessage(content=_model_blocks(parts)))
                continue
            user: list[UserContent] = []
            for p in parts:
                response = p.get("functionResponse")
                if isinstance(response, dict):
                    name = str(response.get("name") or "")
                    result = response.get("response")
                    text = json.dumps(result, ensure_ascii=False) if result is not None else ""
                    messages.append(
                        ToolResultMessage(
                            tool_call_id=str(response.get("id") or ""),
                            tool_name=name,
                            content=[TextContent(text=text)],
                            is_error=isinstance(result, dict) and "error" in result,
                        )
                    )
                elif isinstance(p.get("text"), str):
                    user.append(TextContent(text=p["text"]))
                elif isinstance(p.get("inlineData"), dict):
                    data = p["inlineData"]
                    user.append(
                        ImageContent(
                            data_b64=str(data.get("data", "")),
                            mime_type=str(data.get("mimeType", "")),
                        )
                    )
            if user:
                messages.append(UserMessage(content=user))
        declarations = (
            d for t in dicts(body.get("tools")) for d in dicts(t.get("functionDeclarations"))
        )
        tools = tool_specs(
            declarations, lambda d: d.get("parametersJsonSchema", d.get("parameters"))
        )
        config = as_dict(as_dict(body.get("toolConfig")).get("functionCallingConfig"))
        generation = as_dict(body.get("generationConfig"))
        max_tokens = generation.get("maxOutputTokens")
        return ParsedRequest(
            [system_text] if system_text else [],
            messages,
            tools,
            _tool_choice(config),
            None,
            max_tokens if isinstance(max_tokens, int) else None,
            number(generation.get("temperature")),
        )

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        return ErrorAnswer(status, gemini_error(status, message, model), {})

    def is_terminal(self, frame: str) -> bool:
        payload = frame_json(frame)
        if not isinstance(payload, dict):
            return False
        if "error" in payload:
            return True
        return any(
            isinstance(c, dict) and c.get("finishReason") for c in dicts(payload.get("candidates"))
        )


def _model_blocks(parts: list[dict[str, Any]]) -> list[Any]:
    blocks: list[Any] = []
    for p in parts:
        call = p.get("functionCall")
        if isinstance(call, dict):
            args = call.get("args")
            blocks.append(
                ToolCall(
                    id=str(call.get("id") or ""),
                    name=str(call.get("name") or ""),
                    arguments=args if isinstance(args, dict) else {},
                )
            )
        elif isinstance(p.get("text"), str):
            signature = p.get("thoughtSignature")
            if p.get("thought") is True:
                blocks.append(
                    ThinkingContent(
                        thinking=p["text"],
                        signature=signature if isinstance(signature, str) else None,
                    )
                )
            elif p["text"]:
                blocks.append(TextContent(text=p["text"]))
    return blocks


def _tool_choice(config: dict[str, Any]) -> ToolChoice | None:
    mode = config.get("mode")
    names = config.get("allowedFunctionNames")
    if mode == "ANY" and isinstance(names, list) and len(names) == 1:
        return {"type": "function", "name": str(names[0])}
    return {"AUTO": "auto", "ANY": "required", "NONE": "none"}.get(str(mode))


def inject_error(message: str, after_frame: int) -> str:
    """The in-stream error document Gemini sends (503 ``UNAVAILABLE``, the overloaded model)."""
    return with_data("", gemini_error(503, message, ""))
