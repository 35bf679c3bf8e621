"""Gemini ``generateContent`` on the wire (Developer API and Vertex AI paths).

``POST …/models/{model}:generateContent`` answers one JSON document;
``…:streamGenerateContent?alt=sse`` answers data-only SSE with CRLF line endings and no end
sentinel.  As the real API does: every chunk repeats the cumulative ``usageMetadata`` (the last
one is complete), the last chunk carries ``finishReason`` (``STOP`` also when the model called
functions), a function call arrives whole in one chunk, and calls carry an ``id`` only when the
script gave one (Gemini 2.x sends none; see ``docs/decisions.md``).  Thinking is a part with
``thought: true``; its signature travels as ``thoughtSignature``.  A turn with a call whose
scripted arguments are not a JSON object is what Gemini sends for a broken call: one candidate
with ``finishReason: MALFORMED_FUNCTION_CALL``, a ``finishMessage`` and no parts (Gemini never
sends ``args`` that are not an object).

Requests are read in both spellings proto3 JSON accepts (``functionCall`` and
``function_call``; litellm sends snake_case): :func:`camel_keys` brings a body to camelCase.
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

__all__ = ["STATUS_NAMES", "Gemini", "camel_keys", "gemini_error", "inject_error"]

FINISH = {"stop": "STOP", "length": "MAX_TOKENS", "toolUse": "STOP"}
MALFORMED = "MALFORMED_FUNCTION_CALL"

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


_OPAQUE = frozenset(
    {"args", "response", "parameters", "parametersJsonSchema", "responseSchema",
     "responseJsonSchema", "labels", "metadata"}
)  # fmt: skip
"""Fields whose value is the user's own JSON (call arguments, tool results, JSON schemas):
their keys are data, never respelled."""


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest) if rest else key


def camel_keys(value: Any) -> Any:
    """A Gemini request body with every field name in camelCase (``function_call`` →
    ``functionCall``), as proto3 JSON reads both spellings; the values of :data:`_OPAQUE`
    fields are kept as sent.  Iterative, so any depth works."""
    root: list[Any] = [None]
    stack: list[tuple[Any, list[Any] | dict[str, Any], Any]] = [(value, root, 0)]
    while stack:
        item, parent, slot = stack.pop()
        if isinstance(item, dict):
            out: dict[str, Any] = {}
            for k, v in item.items():
                name = _camel(k) if isinstance(k, str) else k
                if name in out and name != k:
                    continue  # both spellings sent: the camelCase one wins
                out[name] = v
            parent[slot] = out
            stack.extend((v, out, k) for k, v in out.items() if k not in _OPAQUE)
        elif isinstance(item, list):
            copy = list(item)
            parent[slot] = copy
            stack.extend((v, copy, i) for i, v in enumerate(item))
        else:
            parent[slot] = item
    return root[0]


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

    def _malformed(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any] | None:
        """The whole answer to a turn with a broken call (``None``: the turn has none)."""
        bad = turn.malformed_call
        if bad is None or turn.ending != "done":
            return None
        chunk = self._chunk(ctx, [], _usage(turn, turn.usage.output_tokens), MALFORMED)
        candidate = chunk["candidates"][0]
        candidate["content"] = {}
        candidate["finishMessage"] = f"Malformed function call: {bad.name}{bad.arguments}"
        return chunk

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        malformed = self._malformed(turn, ctx)
        if malformed is not None:
            yield Frame(None, malformed, terminal=True)
            return
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
        malformed = self._malformed(turn, ctx)
        if malformed is not None:
            return malformed
        parts = [p for part in turn.parts for p in _wire_parts(turn, part, stream=False)]
        usage = _usage(turn, turn.usage.output_tokens)
        return self._chunk(ctx, parts or [{"text": ""}], usage, FINISH[turn.stop])

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        body = camel_keys(body)
        instruction = as_dict(body.get("systemInstruction"))
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
