"""The provider wire formats, one module each, shared by the emulator, the fault mutations and
the cassette tools.

Each format (:class:`~.openai_chat.OpenAIChat`, :class:`~.openai_responses.OpenAIResponses`,
:class:`~.anthropic.Anthropic`, :class:`~.gemini.Gemini`, :class:`~.bedrock.BedrockConverse`,
and Anthropic-on-Bedrock :class:`~.bedrock.BedrockInvoke`) renders scripted turns to frames or a
JSON body, parses request bodies back, answers errors in the API's shape and says which frame
ends a stream.  The framing layers are :mod:`.sse` and :mod:`.eventstream`.  :func:`route` maps
a request path onto the format served there.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from openprogram.providers.apis import PROVIDER_APIS
from openprogram.providers.wire import WireAPI

from . import eventstream, sse
from .anthropic import Anthropic
from .base import (
    CREATED,
    EXHAUSTED_HEADER,
    CallPart,
    ErrorAnswer,
    Frame,
    ParsedRequest,
    Part,
    RenderContext,
    TextPart,
    ThinkingPart,
    WireFormat,
    WireTurn,
    dumps,
)
from .bedrock import BedrockConverse, BedrockInvoke
from .gemini import Gemini
from .openai_chat import OpenAIChat
from .openai_responses import OpenAIResponses

__all__ = [
    "CREATED",
    "ENDPOINTS",
    "EXHAUSTED_HEADER",
    "FORMATS",
    "Anthropic",
    "BedrockConverse",
    "BedrockInvoke",
    "CallPart",
    "ErrorAnswer",
    "Frame",
    "Gemini",
    "OpenAIChat",
    "OpenAIResponses",
    "ParsedRequest",
    "Part",
    "RenderContext",
    "Route",
    "TextPart",
    "ThinkingPart",
    "WireFormat",
    "WireTurn",
    "detect_format",
    "dumps",
    "eventstream",
    "route",
    "sse",
]

FORMATS: dict[str, WireFormat] = {
    "openai_chat": OpenAIChat(),
    "openai_responses": OpenAIResponses(),
    "anthropic": Anthropic(),
    "gemini": Gemini(),
    "bedrock": BedrockConverse(),
    "bedrock_invoke": BedrockInvoke(),
}
"""Every format by name (``bedrock_invoke``: Anthropic Messages through Bedrock InvokeModel)."""

ENDPOINTS: dict[str, WireAPI] = {path: api.name for api in PROVIDER_APIS for path in api.paths}
"""Path → API served there (``{…}``: a path parameter; Gemini also answers its Vertex AI
paths, ``…/models/{model}:generateContent`` under any prefix), from the table of provider
APIs."""

_FIXED = {api.paths[0]: api.name for api in PROVIDER_APIS if api.endpoint is not None}
_GEMINI = re.compile(r"/models/(?P<model>[^/:]+):(?P<op>generateContent|streamGenerateContent)$")
_BEDROCK = re.compile(
    r"^/model/(?P<model>[^/]+)/(?P<op>converse|converse-stream|invoke|invoke-with-response-stream)$"
)


@dataclass(frozen=True, slots=True)
class Route:
    """What a request path asks for: the format, whether it streams (``None``: the body's
    ``stream`` flag says) and the model named in the path."""

    wire: WireFormat
    stream: bool | None = None
    model: str | None = None

    @property
    def api(self) -> WireAPI:
        return self.wire.api


def route(path: str) -> Route | None:
    """The format served at ``path`` (without query string), or ``None``."""
    path = path.rstrip("/") or "/"
    fixed = _FIXED.get(path)
    if fixed is not None:
        return Route(FORMATS[fixed])
    m = _GEMINI.search(path)
    if m is not None:
        return Route(FORMATS["gemini"], m["op"] == "streamGenerateContent", unquote(m["model"]))
    m = _BEDROCK.match(path)
    if m is not None:
        op = m["op"]
        name = "bedrock" if op.startswith("converse") else "bedrock_invoke"
        return Route(FORMATS[name], op.endswith("stream"), unquote(m["model"]))
    return None


def detect_format(frames: list[str], path: str | None = None) -> WireFormat:
    """Which SSE format a recorded stream speaks: from the request path when known, else from
    its frames (OpenAI Chat when nothing tells)."""
    if path:
        found = route(path.split("?", 1)[0])
        if found is not None:
            return found.wire
        for suffix, name in (
            ("/chat/completions", "openai_chat"),
            ("/responses", "openai_responses"),
            ("/messages", "anthropic"),
        ):
            if path.rstrip("/").endswith(suffix):
                return FORMATS[name]
    for frame in frames:
        event = sse.frame_event(frame) or ""
        if event.startswith("response."):
            return FORMATS["openai_responses"]
        if event in ("message_start", "content_block_start", "message_stop", "ping"):
            return FORMATS["anthropic"]
        payload: Any = sse.frame_json(frame)
        if isinstance(payload, dict):
            kind = str(payload.get("type", ""))
            if kind.startswith("response."):
                return FORMATS["openai_responses"]
            if kind in ("message_start", "content_block_start", "content_block_delta"):
                return FORMATS["anthropic"]
            if payload.get("object") == "chat.completion.chunk":
                return FORMATS["openai_chat"]
            if "candidates" in payload or "usageMetadata" in payload:
                return FORMATS["gemini"]
    return FORMATS["openai_chat"]
