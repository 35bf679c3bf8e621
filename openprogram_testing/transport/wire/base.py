"""What every wire format shares: frames, a scripted turn resolved for the wire, the request
parsing helpers, and the :class:`WireFormat` interface each format module implements."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias

import pydantic_core

from openprogram.providers.base import ToolChoice, parse_arguments
from openprogram.providers.wire import WireAPI
from openprogram.types import (
    ImageContent,
    Message,
    TextContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserContent,
)
from openprogram_testing.transport.scripted import chunk_text

if TYPE_CHECKING:
    from .eventstream import Message as EventMessage

EXHAUSTED_HEADER = "x-emulator-script-exhausted"
"""Set to ``true`` on every answer the emulator gives past the end of its script; the cassette
recorder reads it to warn of a recording made of such answers (so it lives here, in the layer
both read, not in the emulator)."""

CREATED = 1_700_000_000
"""The fixed ``created`` timestamp of every response (deterministic output)."""


@dataclass(slots=True)
class Frame:
    """One event of a stream before it is framed: its name (SSE ``event:``, event-stream
    ``:event-type``), its data (a JSON-able value, or a literal string such as ``[DONE]``) and
    whether it ends the stream."""

    event: str | None
    data: Any
    terminal: bool = False
    exception: bool = False
    """An error event (event-stream ``:message-type exception``)."""


@dataclass(slots=True)
class TextPart:
    text: str


@dataclass(slots=True)
class ThinkingPart:
    text: str
    signature: str | None
    redacted: bool


@dataclass(slots=True)
class CallPart:
    id: str
    name: str
    arguments: str
    empty: bool
    """No arguments were scripted (Anthropic sends no input fragment then)."""
    id_given: bool = True
    """The id was scripted, not made up (Gemini sends ids only then, like its 2.x models)."""

    @property
    def malformed(self) -> bool:
        """The scripted argument text is not a JSON object (``call(..., raw=...)``): each API
        signals such a call its own way (see :func:`arguments_object`)."""
        return not parse_arguments(self.arguments)[1]


Part: TypeAlias = TextPart | ThinkingPart | CallPart
Ending: TypeAlias = Literal["done", "error", "cut", "drop"]


@dataclass(slots=True)
class WireTurn:
    """A scripted turn resolved against one request: the content and how the response ends."""

    parts: list[Part]
    stop: Literal["stop", "length", "toolUse"] = "stop"
    usage: Usage = field(default_factory=Usage)
    chunk: int | None = None
    delay: float = 0.0
    ending: Ending = "done"
    error: str | None = None
    error_status: int = 500
    retry_after_s: float | None = None

    @property
    def malformed_call(self) -> CallPart | None:
        """The first call whose scripted arguments are not a JSON object, if any."""
        return next((p for p in self.parts if isinstance(p, CallPart) and p.malformed), None)


@dataclass(slots=True)
class RenderContext:
    """The request a turn answers, as the renderers need it."""

    body: dict[str, Any]
    model: str
    index: int
    request_id: str


@dataclass(slots=True)
class ParsedRequest:
    """A request body in the harness's wire-neutral terms."""

    system: list[str]
    messages: list[Message]
    tools: list[ToolSpec]
    tool_choice: ToolChoice | None
    parallel_tool_calls: bool | None
    max_tokens: int | None = None
    temperature: float | None = None


@dataclass(slots=True)
class ErrorAnswer:
    """An HTTP error response in an API's own shape."""

    status: int
    body: Any
    headers: dict[str, str] = field(default_factory=dict)


class Framing(Protocol):
    """How frames go on the wire: SSE (:class:`~.sse.SSE`) or AWS event stream
    (:class:`~.eventstream.EventStream`)."""

    @property
    def content_type(self) -> str: ...

    def encode(self, frame: Frame, *, corrupt: bool = False) -> bytes: ...


class WireFormat:
    """One API on the wire.  Subclasses render turns (stream frames or a JSON body), parse
    request bodies back, answer errors in the API's shape and say which frame ends a stream."""

    api: WireAPI
    framing: Framing
    request_id_header = "x-request-id"

    def frames(self, turn: WireTurn, ctx: RenderContext) -> Iterator[Frame]:
        raise NotImplementedError

    def body(self, turn: WireTurn, ctx: RenderContext) -> dict[str, Any]:
        raise NotImplementedError

    def body_headers(self, turn: WireTurn) -> dict[str, str]:
        """Headers that come with a JSON body (beside the request id): none but on APIs that
        report usage in headers."""
        return {}

    def parse(self, body: dict[str, Any]) -> ParsedRequest:
        raise NotImplementedError

    def error(self, status: int, message: str | None, request_id: str, model: str) -> ErrorAnswer:
        raise NotImplementedError

    def is_terminal(self, frame: str) -> bool:
        """Whether a recorded SSE frame (its text) ends the stream."""
        raise NotImplementedError

    def is_terminal_message(self, message: EventMessage) -> bool:
        """Whether a decoded event-stream message ends the stream (event-stream formats)."""
        return False


def pieces(turn: WireTurn, text: str) -> Sequence[str]:
    """``text`` in the turn's delta size (the scripted provider's split)."""
    return chunk_text(text, turn.chunk)


def dumps(value: Any) -> str:
    """Compact JSON, as the providers send it."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def loads_or_none(text: str | None) -> Any:
    """``text`` parsed as JSON, or ``None`` when there is no text or it is not JSON: recorded
    bodies and frames may be cut short or corrupted on purpose, and their readers skip what
    does not parse."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def as_dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def dicts(value: Any) -> list[dict[str, Any]]:
    """The dict entries of a list (anything else: none): request parsing is lenient."""
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", ""))
        for b in dicts(content)
        if b.get("type") in ("text", "input_text", "output_text", None)
    )


_DATA_URL = re.compile(r"^data:(?P<mime>[\w/+.-]+);base64,(?P<data>.*)$", re.DOTALL)


def user_content(content: Any) -> str | list[UserContent]:
    """User content of the OpenAI and Anthropic shapes (text, data-URL and base64 images)."""
    if isinstance(content, str):
        return content
    out: list[UserContent] = []
    for b in dicts(content):
        kind = b.get("type")
        if kind in ("text", "input_text"):
            out.append(TextContent(text=str(b.get("text", ""))))
        elif kind in ("image_url", "input_image"):
            url = b.get("image_url")
            url = url.get("url") if isinstance(url, dict) else url
            m = _DATA_URL.match(url) if isinstance(url, str) else None
            if m:
                out.append(ImageContent(data_b64=m["data"], mime_type=m["mime"]))
        elif kind == "image":
            src = as_dict(b.get("source"))
            if src.get("type") == "base64":
                out.append(
                    ImageContent(
                        data_b64=str(src.get("data", "")), mime_type=str(src.get("media_type", ""))
                    )
                )
    return out


def make_call(call_id: Any, name: Any, arguments: Any) -> ToolCall:
    """A tool call from its wire form: arguments as an object or as JSON text."""
    if isinstance(arguments, dict):
        return ToolCall(id=str(call_id or ""), name=str(name or ""), arguments=arguments)
    text = arguments if isinstance(arguments, str) else ""
    parsed, ok = parse_arguments(text)
    return ToolCall(
        id=str(call_id or ""),
        name=str(name or ""),
        arguments=parsed,
        raw_arguments=None if ok else text,
    )


def tool_spec(name: Any, description: Any, parameters: Any) -> ToolSpec | None:
    if not isinstance(name, str) or not name:
        return None
    spec = ToolSpec(name=name, description=description if isinstance(description, str) else "")
    if isinstance(parameters, dict):
        spec.parameters = parameters
    return spec


def tool_specs(
    declarations: Iterable[dict[str, Any]], parameters: Callable[[dict[str, Any]], Any]
) -> list[ToolSpec]:
    """The tools a request declares: every API puts ``name`` and ``description`` in one object
    per tool but keeps the JSON schema under its own key, which ``parameters`` picks out of that
    object.  Nameless declarations are skipped (request parsing is lenient)."""
    return [
        spec
        for d in declarations
        if (spec := tool_spec(d.get("name"), d.get("description"), parameters(d))) is not None
    ]


def tool_result(
    names: dict[str, str], call_id: Any, text: str, *, is_error: bool = False
) -> ToolResultMessage:
    """A tool result as a request body sends it back: the body names only the call id, so the
    tool's name comes from ``names`` (call id → name of the assistant calls parsed before it)."""
    cid = str(call_id or "")
    return ToolResultMessage(
        tool_call_id=cid,
        tool_name=names.get(cid, ""),
        content=[TextContent(text=text)],
        is_error=is_error,
    )


def first_int(body: dict[str, Any], *keys: str) -> int | None:
    value = next((body[k] for k in keys if isinstance(body.get(k), int)), None)
    return value if not isinstance(value, bool) else None


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def arguments_object(arguments: str) -> dict[str, Any]:
    """Call arguments as the JSON object the APIs with structured input send (Anthropic
    ``tool_use.input``, Gemini ``functionCall.args``, Converse ``toolUse.input``): their SDKs
    type the field as an object, so text that is not a JSON object never goes there as a
    string.  What the server keeps of broken text is what a partial JSON parse salvages (the
    keys completed before the break, as the Anthropic SDK makes of the same text streamed), or
    no arguments."""
    parsed, ok = parse_arguments(arguments)
    if ok:
        return parsed
    try:
        salvaged = pydantic_core.from_json(arguments, allow_partial=True)
    except (ValueError, RecursionError):
        return {}
    return salvaged if isinstance(salvaged, dict) else {}
