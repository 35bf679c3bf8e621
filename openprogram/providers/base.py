"""The provider contract and the one helper every provider uses to emit events.

A provider is anything with ``stream(model, context, options)`` returning an async iterator of
``AssistantMessageEvent``.  It must never raise for API or transport failures: it ends the stream
with an ``error`` event whose message carries ``error_status``/``error_retryable``/
``error_retry_after_s``.  ``MessageBuilder`` makes that easy and keeps every provider's event
sequence identical in shape (the scripted provider, the emulator-backed adapters and cassette
replays all go through it), so tests of one hold for the others.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from .. import _fastjson
from ..cancel import CancelToken
from ..events import AssistantMessageEvent, ProviderEventType
from ..texts import REPLACEMENT, clip, whole_text, whole_values
from ..types import (
    AssistantContent,
    AssistantMessage,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolSpec,
    Usage,
)

ToolChoice: TypeAlias = str | dict[str, Any]
"""``"auto"`` | ``"required"`` | ``"none"`` | ``{"type": "function", "name": X}``."""


@dataclass(slots=True)
class Context:
    """What a provider sees: the system prompt, the history (the loop's own list, appended in
    place, never copied) and the tool definitions."""

    system_prompt: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)


@dataclass(slots=True)
class StreamOptions:
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_tokens: int | None = None
    temperature: float | None = None
    cancel: CancelToken | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    def stream(
        self, model: str, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]: ...


TerminalReason: TypeAlias = Literal["stop", "length", "toolUse"]


class MessageBuilder:
    """Builds one streamed ``AssistantMessage`` and the events that describe it.

    Each method mutates the partial message in place and returns the event to yield.  Tool-call
    argument fragments are buffered and parsed once at ``toolcall_end``; JSON that does not parse
    leaves ``arguments={}`` and keeps the text in ``ToolCall.raw_arguments`` so the loop can feed
    an invalid-arguments result back instead of crashing.

    Text enters the conversation here, so this is where a lone UTF-16 surrogate is dealt with
    (no file, terminal or report can hold one): a pair whose halves arrive in two deltas (JSON's
    ``"smile \\ud83d"`` then ``"\\ude00 done"``) is joined (the high half waits for the next
    delta), and any half left alone becomes U+FFFD (``openprogram.texts.whole_text``), in text,
    thinking, tool-call arguments and error messages alike.
    """

    __slots__ = ("_held", "_open", "message")

    def __init__(self, model: str = "", provider: str = "", api: str = "") -> None:
        # positional (content, stop_reason, usage, model, provider, api): once per response
        self.message = AssistantMessage([], "stop", Usage(), model, provider, api)
        # The open blocks: index -> "text" / "thinking", or a tool call's buffered argument
        # fragments (one dict for both: a builder is made per response).
        self._open: dict[int, str | list[str]] = {}
        # High surrogates held back per block; made by the first delta that needs it (rare).
        self._held: dict[int, str] | None = None

    def _whole(self, index: int, delta: str) -> str:
        """``delta`` as whole text: a high surrogate held back from the last delta of block
        ``index`` goes first, and one ending this delta is held back for the next."""
        held = self._held
        if held is None:
            held = self._held = {}
        text = held.pop(index, "") + delta
        if text and "\ud800" <= text[-1] <= "\udbff":
            held[index] = text[-1]
            text = text[:-1]
        return whole_text(text)

    def _release(self, index: int) -> str:
        """What a block ends with: U+FFFD for a high surrogate that no low one followed."""
        held = self._held
        return REPLACEMENT if held and held.pop(index, "") else ""

    # Events are built positionally (type, content_index, delta, tool_call, reason, partial)
    # and inline: one per streamed event, where a keyword call or a helper call costs about as
    # much as the construction itself.
    def start(self) -> AssistantMessageEvent:
        return AssistantMessageEvent("start", None, None, None, None, self.message)

    def _open_block(
        self, block: AssistantContent, kind: str, event_type: ProviderEventType
    ) -> tuple[int, AssistantMessageEvent]:
        """Append ``block``, open until its ``*_end`` (or ``close_open_blocks``); returns its
        index and its ``*_start`` event (``toolcall_start`` does the same inline)."""
        content = self.message.content
        content.append(block)
        i = len(content) - 1
        self._open[i] = kind
        return i, AssistantMessageEvent(event_type, i, None, None, None, self.message)

    # -- text -------------------------------------------------------------------------------
    def text_start(self) -> tuple[int, AssistantMessageEvent]:
        return self._open_block(TextContent(""), "text", "text_start")

    def text_delta(self, index: int, delta: str) -> AssistantMessageEvent:
        if self._held or not delta.isascii():
            delta = self._whole(index, delta)
        block = self.message.content[index]
        block.text += delta  # type: ignore[union-attr]
        return AssistantMessageEvent("text_delta", index, delta, None, None, self.message)

    def text_end(self, index: int) -> AssistantMessageEvent:
        if self._held:
            self.message.content[index].text += self._release(index)  # type: ignore[union-attr]
        self._open.pop(index, None)
        return AssistantMessageEvent("text_end", index, None, None, None, self.message)

    # -- thinking ---------------------------------------------------------------------------
    def thinking_start(self, redacted: bool = False) -> tuple[int, AssistantMessageEvent]:
        block = ThinkingContent(thinking="", redacted=redacted)
        return self._open_block(block, "thinking", "thinking_start")

    def thinking_delta(self, index: int, delta: str) -> AssistantMessageEvent:
        if self._held or not delta.isascii():
            delta = self._whole(index, delta)
        block = self.message.content[index]
        block.thinking += delta  # type: ignore[union-attr]
        return AssistantMessageEvent("thinking_delta", index, delta, None, None, self.message)

    def thinking_end(self, index: int, signature: str | None = None) -> AssistantMessageEvent:
        if self._held:
            self.message.content[index].thinking += self._release(index)  # type: ignore[union-attr]
        if signature is not None:
            self.message.content[index].signature = signature  # type: ignore[union-attr]
        self._open.pop(index, None)
        return AssistantMessageEvent("thinking_end", index, None, None, None, self.message)

    # -- tool calls -------------------------------------------------------------------------
    def toolcall_start(self, id: str, name: str) -> tuple[int, AssistantMessageEvent]:
        # (``_open_block`` inline: one per streamed call)
        message = self.message
        content = message.content
        content.append(ToolCall(id, name))
        i = len(content) - 1
        self._open[i] = []  # the argument fragments, joined and parsed at ``toolcall_end``
        return i, AssistantMessageEvent("toolcall_start", i, None, None, None, message)

    def toolcall_delta(self, index: int, fragment: str) -> AssistantMessageEvent:
        fragments = self._open[index]
        if type(fragments) is not list:
            raise KeyError(index)  # not an open tool call
        fragments.append(fragment)
        return AssistantMessageEvent("toolcall_delta", index, fragment, None, None, self.message)

    def toolcall_end(
        self, index: int, arguments: Mapping[str, Any] | None = None
    ) -> AssistantMessageEvent:
        """Close call ``index``.  ``arguments`` overrides the buffered fragments when the wire
        already delivered parsed arguments (non-streaming responses)."""
        call: ToolCall = self.message.content[index]  # type: ignore[assignment]
        fragments = self._open.pop(index, None)
        raw = "".join(fragments) if type(fragments) is list else ""
        if arguments is not None:
            call.arguments = whole_values(dict(arguments))
        else:
            parsed, ok = parse_arguments(raw)
            if ok:
                # a lone surrogate can only come from a non-ASCII character or a \u escape
                call.arguments = (
                    parsed if raw.isascii() and "\\u" not in raw else whole_values(parsed)
                )
            else:
                call.raw_arguments = whole_text(raw)
        return AssistantMessageEvent("toolcall_end", index, None, call, None, self.message)

    # -- terminal ---------------------------------------------------------------------------
    def close_open_blocks(self) -> list[AssistantMessageEvent]:
        """End every block still open (wire formats that do not close blocks explicitly)."""
        out: list[AssistantMessageEvent] = []
        for i, kind in list(self._open.items()):
            if kind == "text":
                out.append(self.text_end(i))
            elif kind == "thinking":
                out.append(self.thinking_end(i))
            else:  # a tool call's fragments
                out.append(self.toolcall_end(i))
        return out

    def done(
        self, reason: TerminalReason | None = None, usage: Usage | None = None
    ) -> AssistantMessageEvent:
        """Terminal success event.  With no ``reason``: ``toolUse`` if the message holds tool
        calls, else ``stop``."""
        msg = self.message
        if usage is not None:
            msg.usage = usage
        if reason is None:
            reason = "stop"
            for block in msg.content:
                if block.type == "toolCall":
                    reason = "toolUse"
                    break
        msg.stop_reason = reason
        return AssistantMessageEvent("done", None, None, None, reason, msg, msg)

    def error(
        self,
        error_message: str,
        *,
        reason: Literal["error", "aborted"] = "error",
        status: int | None = None,
        retryable: bool | None = None,
        retry_after_s: float | None = None,
    ) -> AssistantMessageEvent:
        msg = self.message
        msg.stop_reason = reason
        msg.error_message = whole_text(clip(error_message))  # a server's whole body, too
        msg.error_status = status
        msg.error_retryable = retryable
        msg.error_retry_after_s = retry_after_s
        return AssistantMessageEvent(type="error", reason=reason, message=msg, partial=msg)

    def aborted(self, error_message: str = "Request was aborted") -> AssistantMessageEvent:
        return self.error(error_message, reason="aborted")


def parse_arguments(raw: str) -> tuple[dict[str, Any], bool]:
    """Parse tool-call argument JSON.  Empty text means "no arguments" (Anthropic sends none for
    an argument-less call).  Returns ``(arguments, ok)``; a non-object is not ok."""
    try:
        value = _fastjson.loads(raw)
    except (ValueError, RecursionError):  # RecursionError: JSON nested ~1,000 levels deep
        return {}, not raw.strip()
    if isinstance(value, dict):
        return value, True
    return {}, False


RETRYABLE_STATUSES = frozenset({408, 409, 425, 429, 500, 502, 503, 504, 529})


def is_retryable_status(status: int | None) -> bool:
    """Whether a failed request is worth retrying: rate limits, overload and server errors."""
    return status is not None and (status in RETRYABLE_STATUSES or status >= 500)


def error_retryable(status: int | None, headers: Mapping[str, str] | None = None) -> bool:
    """Whether a failed request is worth retrying, as the official SDKs decide it: the server's
    ``x-should-retry: true|false`` header wins; otherwise :func:`is_retryable_status` (a failure
    without any status, e.g. an error event inside a 200 stream, counts as retryable)."""
    if headers:
        for key, value in headers.items():
            if key.lower() == "x-should-retry":
                flag = str(value).strip().lower()
                if flag == "true":
                    return True
                if flag == "false":
                    return False
                break
    if status is None:
        return True
    return is_retryable_status(status)


def parse_retry_after(headers: Mapping[str, str] | None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    if not headers:
        return None
    lower = {k.lower(): v for k, v in headers.items()}
    ms = lower.get("retry-after-ms")
    if ms is not None:
        try:
            return float(ms) / 1000.0
        except ValueError:
            pass
    value = lower.get("retry-after")
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        pass
    import datetime as _dt
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    delta = (when - _dt.datetime.now(_dt.UTC)).total_seconds()
    return max(0.0, delta)


def error_text(exc: BaseException) -> str:
    """``str(exc)``, or the class name when that is empty (a bare ``RuntimeError()``) or when
    the exception's ``__str__`` itself raises."""
    try:
        text = str(exc)
    except Exception:
        return type(exc).__name__
    return text or type(exc).__name__


__all__ = [
    "Context",
    "MessageBuilder",
    "Provider",
    "StreamOptions",
    "ToolChoice",
    "error_retryable",
    "error_text",
    "is_retryable_status",
    "parse_arguments",
    "parse_retry_after",
]
