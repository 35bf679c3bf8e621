"""A cassette as text, for ``openprogram-testing show``: each recorded request (model, history
roles, tools) and what its response streamed, whatever the wire API."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from openprogram.texts import clip
from openprogram_testing.transport.wire import route
from openprogram_testing.transport.wire.base import loads_or_none
from openprogram_testing.transport.wire.sse import frame_data, frame_event, frame_json, split_frames

from .files import recorded_body_text


def render_cassette(file: Path, data: dict[str, Any]) -> str:
    """One block per recorded interaction: the request (model, history roles, tools, last
    message) and the response (status and, for SSE bodies, the streamed text and tool calls)."""
    interactions = data.get("interactions") or []
    lines = [f"cassette {file} — {len(interactions)} interaction(s)"]
    for i, interaction in enumerate(interactions):
        request = interaction.get("request") or {}
        response = interaction.get("response") or {}
        lines.append("")
        lines.append(f"#{i} {request.get('method', '?')} {request.get('uri', '?')}")
        body = _json_body(request.get("body"))
        if isinstance(body, dict):
            lines.extend(
                "  " + line for line in _describe_request(body, str(request.get("uri") or ""))
            )
        status = response.get("status") or {}
        code = status.get("code") if isinstance(status, dict) else status
        lines.append(f"  ← {code} {status.get('message', '') if isinstance(status, dict) else ''}")
        lines.extend("    " + line for line in _describe_response(response))
    return "\n".join(lines)


def _json_body(body: Any) -> Any:

    return loads_or_none(recorded_body_text(body))


def _describe_request(body: dict[str, Any], uri: str = "") -> list[str]:
    from urllib.parse import unquote, urlsplit

    found = route(unquote(urlsplit(uri).path)) if uri else None
    if found is not None and found.api in ("gemini", "bedrock"):
        return _describe_parsed(found, body)
    out = [f"model {body.get('model')!r}, stream={body.get('stream', False)}"]
    messages = body.get("messages") or body.get("input") or []
    if isinstance(messages, list):
        roles = [str(m.get("role") or m.get("type")) for m in messages if isinstance(m, dict)]
        out.append(f"history ({len(roles)}): {', '.join(roles)}")
    tools = body.get("tools") or []
    names = [
        t.get("name") or (t.get("function") or {}).get("name") for t in tools if isinstance(t, dict)
    ]
    if names:
        out.append(f"tools: {', '.join(str(n) for n in names)}")
    for key in ("tool_choice", "parallel_tool_calls"):
        if key in body:
            out.append(f"{key}: {json.dumps(body[key])}")
    return out


def _describe_parsed(found: Any, body: dict[str, Any]) -> list[str]:
    """A Gemini or Bedrock request (model and streaming in the path; the body read by its wire
    format, in either spelling Gemini accepts)."""
    parsed = found.wire.parse(body)
    out = [f"model {found.model!r}, stream={bool(found.stream)}"]
    roles = [m.role for m in parsed.messages]
    out.append(f"history ({len(roles)}): {', '.join(roles)}")
    if parsed.tools:
        out.append(f"tools: {', '.join(t.name for t in parsed.tools)}")
    if parsed.tool_choice is not None:
        out.append(f"tool_choice: {json.dumps(parsed.tool_choice)}")
    return out


def _describe_response(response: dict[str, Any]) -> list[str]:
    text = recorded_body_text(response.get("body"))
    if text is None:
        return ["(no body)"]

    if "data:" not in text:
        return [_clip(text, 300)]
    frames = split_frames(text)
    kinds: dict[str, int] = {}
    texts: list[str] = []
    for frame in frames:
        event = frame_event(frame)
        data = frame_data(frame)
        payload = frame_json(frame)  # None for [DONE] too: it is not JSON
        kind = (
            event
            or (payload.get("object") if isinstance(payload, dict) else None)
            or ("[DONE]" if data == "[DONE]" else "data")
        )
        kinds[kind] = kinds.get(kind, 0) + 1
        texts.extend(_fragments(payload))
    summary = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in kinds.items())
    out = [f"{len(frames)} SSE frame(s): {summary}"]
    joined = "".join(texts)
    if joined:
        out.append(f"streamed text/arguments: {_clip(joined, 300)!r}")
    return out


def _fragments(payload: Any) -> list[str]:
    """Text and argument fragments of one frame, whatever the API."""
    if not isinstance(payload, dict):
        return []
    out: list[str] = []
    for choice in payload.get("choices") or []:
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            out.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            fn = call.get("function") or {}
            if fn.get("name"):
                out.append(f"[call {fn['name']}]")
            if isinstance(fn.get("arguments"), str):
                out.append(fn["arguments"])
    kind = payload.get("type")
    if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
        out.append(str(payload.get("delta", "")))
    delta = payload.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        out.append(str(delta.get("text") or delta.get("partial_json") or ""))
    block = payload.get("content_block")
    if (
        kind == "content_block_start"
        and isinstance(block, dict)
        and block.get("type") == "tool_use"
    ):
        out.append(f"[call {block.get('name')}]")
    return out


def _clip(text: str, n: int) -> str:
    return clip(text, n)
