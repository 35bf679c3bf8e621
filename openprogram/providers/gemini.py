"""Gemini adapter on the official ``google-genai`` SDK (async client, Developer API or Vertex AI).

Streaming (default) reads ``client.aio.models.generate_content_stream`` (the SDK calls
``:streamGenerateContent?alt=sse``); ``stream=False`` calls ``generate_content``.  Every chunk is
a whole ``GenerateContentResponse``; only candidate 0 is read:

- ``text`` parts stream into one text block, ``thought: true`` parts into one thinking block
  (an empty text part, which Gemini sends with its final chunk, adds nothing);
- each ``functionCall`` part is a complete call (parallel calls come in one chunk or one per
  chunk: they accumulate).  Gemini 2.x/3-preview send no call ``id``: the adapter makes one from
  the response id and the call's position (``call_<responseId>_<n>``), unique per message and the
  same on every replay of a recording.  A part's ``thoughtSignature`` is kept on the call
  (``ToolCall.signature``, the base64 text it arrived as) or on the thinking block, and sent back
  with it;
- ``usageMetadata`` is cumulative and repeated on every chunk: the last one that carries counts
  wins (Vertex sends only ``trafficType`` until the final chunk).  Output tokens are
  ``candidatesTokenCount + thoughtsTokenCount`` (what Gemini bills), input tokens exclude
  ``cachedContentTokenCount`` (reported as cache reads);
- there is no end sentinel: the message is finished when the body ends after a chunk that carried
  ``finishReason``.  A body that ends without one is an error ("stream ended without a final
  event").  ``STOP`` with function calls is ``toolUse`` (Gemini has no tool-use reason),
  ``MAX_TOKENS`` is ``length``; a safety/recitation/blocklist stop or a blocked prompt
  (``promptFeedback.blockReason``) is an ``error`` naming the reason, and so are the other
  abnormal stops (``MALFORMED_FUNCTION_CALL`` is retryable: a new sample usually succeeds).

Requests: the history becomes ``contents`` (``user``/``model`` turns, consecutive same-role turns
merged: the answers to parallel calls go back together in one turn); tool results are
``functionResponse`` parts (``{"output": text}``, or ``{"error": text}`` for failed tools) with
the call's id and name; images are ``inlineData`` parts.  Thinking and signatures are sent back
only on messages this adapter produced (another provider's signature would be rejected).  The
system prompt goes to ``systemInstruction``, tools and ``tool_choice`` as the wire mapping says
(``parallel_tool_calls`` has no Gemini knob and is ignored), ``max_tokens`` to
``maxOutputTokens``; ``options.extras`` are merged into the ``GenerateContentConfig`` (wire or
SDK names, e.g. ``{"thinkingConfig": {"includeThoughts": True}}``).  The request is validated
against the SDK's own types before it is sent.
"""

from __future__ import annotations

import base64
import binascii
import json
import uuid
import weakref
from collections.abc import Mapping
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
from ._http import metered_transport, readable_text
from ._sdk import (
    Events,
    SDKProvider,
    StreamParser,
    is_transport_error,
    role_turns,
)
from .base import (
    Context,
    MessageBuilder,
    StreamOptions,
    error_retryable,
    error_text,
    parse_retry_after,
)
from .wire import tools_fragment

__all__ = ["GeminiProvider", "gemini_contents", "google_retry_delay"]

_BLOCKED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "LANGUAGE",
        "IMAGE_SAFETY",
        "IMAGE_PROHIBITED_CONTENT",
        "IMAGE_RECITATION",
    }
)
_RETRYABLE_STOPS = frozenset({"MALFORMED_FUNCTION_CALL"})


class GeminiProvider(SDKProvider):
    """``GeminiProvider(client=None, *, api_key=None, base_url=None, stream=True, max_retries=0,
    vertexai=None, project=None, location=None, timeout=None, http_client=None,
    **client_kwargs)``.

    ``client`` — a ``google.genai.Client`` (or its ``.aio``) used as is.  Otherwise one is built
    per event loop: ``api_key`` (or ``GEMINI_API_KEY``/``GOOGLE_API_KEY``) for the Developer API;
    ``vertexai=True, project=..., location=...`` (credentials from Application Default
    Credentials) for Vertex AI; ``base_url`` and ``http_client`` (an ``httpx``/``httpx2``
    ``AsyncClient``) go to the SDK's ``http_options``, ``timeout`` is in seconds.
    ``max_retries`` defaults to 0 (the loop sees every failure); ``n`` turns on the SDK's own
    retries with ``n + 1`` attempts.  Other keyword arguments go to ``genai.Client``.
    """

    provider_name = "google"
    api = "google-gemini"

    def __init__(self, client: Any = None, **kwargs: Any) -> None:
        if client is not None and hasattr(client, "aio"):
            client = client.aio  # a google.genai.Client: use its async side
        super().__init__(client, **kwargs)
        self._closed: weakref.WeakSet[Any] = weakref.WeakSet()

    # -- client -----------------------------------------------------------------------------
    def _make_client(self, **kwargs: Any) -> Any:
        from google import genai
        from google.genai import types

        options = kwargs.pop("http_options", None)
        if isinstance(options, types.HttpOptions):
            http: dict[str, Any] = options.model_dump(exclude_none=True)
        else:
            http = dict(options or {})
        base_url = kwargs.pop("base_url", None)
        if base_url is not None:
            http["base_url"] = base_url
        retries = int(kwargs.pop("max_retries", 0) or 0)
        if retries > 0:
            http.setdefault("retry_options", {"attempts": retries + 1})
        timeout = kwargs.pop("timeout", None)
        if timeout is not None:
            http["timeout"] = int(float(timeout) * 1000)
        http_client = kwargs.pop("http_client", None)
        if http_client is not None:
            http["httpx_async_client"] = http_client
        elif not http.get("aiohttp_client"):
            http["async_client_args"] = _on_httpx2(http.get("async_client_args"))
        return genai.Client(**kwargs, http_options=types.HttpOptions(**http)).aio

    def _base_url(self, client: Any) -> str:
        api_client = getattr(client, "_api_client", None)
        options = getattr(api_client, "_http_options", None)
        return str(
            getattr(options, "base_url", None) or "https://generativelanguage.googleapis.com/"
        )

    def _is_closed(self, client: Any) -> bool:
        return client in self._closed

    async def _close(self, client: Any) -> None:
        self._closed.add(client)
        await client.aclose()

    # -- request ----------------------------------------------------------------------------
    def build_request(self, model: str, context: Context, options: StreamOptions) -> dict[str, Any]:
        """``{"model", "contents", "config"}`` in wire (camelCase) names: the keyword arguments
        of ``generate_content[_stream]`` once validated into the SDK's types."""
        config: dict[str, Any] = {"automaticFunctionCalling": {"disable": True}}
        if context.system_prompt:
            config["systemInstruction"] = {"parts": [{"text": context.system_prompt}]}
        config.update(
            tools_fragment(
                "gemini", context.tools, options.tool_choice, options.parallel_tool_calls
            )
        )
        if options.max_tokens is not None:
            config["maxOutputTokens"] = options.max_tokens
        if options.temperature is not None:
            config["temperature"] = options.temperature
        config.update(options.extras)
        return {"model": model, "contents": gemini_contents(context, self.api), "config": config}

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        from google.genai import types

        contents = [types.Content.model_validate(c) for c in params["contents"]]
        config = types.GenerateContentConfig.model_validate(params["config"])
        if stream:
            return await client.models.generate_content_stream(
                model=params["model"], contents=contents, config=config
            )
        return await client.models.generate_content(
            model=params["model"], contents=contents, config=config
        )

    # -- responses --------------------------------------------------------------------------
    def _parser(self, builder: MessageBuilder) -> StreamParser:
        return GeminiStreamParser(builder)

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        parser = GeminiStreamParser(builder)
        out = parser.feed(data)
        return out + parser.finish()

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        from google.genai import errors

        return errors.APIError, TimeoutError, ConnectionError

    def _failed_call(self, exc: Exception, response: Any) -> Exception:
        """google-genai raises something that has lost the status when it trips over an error
        body (one that is not UTF-8): the error is rebuilt from the response the call received."""
        from google.genai import errors

        if response is None or isinstance(exc, errors.APIError):
            return exc
        return errors.APIError(response.status_code, _error_document(response), response)

    def _error_event(self, builder: MessageBuilder, exc: BaseException) -> AssistantMessageEvent:
        from google.genai import errors

        if isinstance(exc, errors.APIError):
            status = int(exc.code) if isinstance(exc.code, int) and exc.code else None
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            prefix = f"HTTP {status}" if status else "API error"
            if exc.status:
                prefix += f" ({exc.status})"
            text = exc.message or error_text(exc)
            return builder.error(
                f"{prefix}: {text}",
                status=status,
                retryable=error_retryable(status, headers),
                retry_after_s=parse_retry_after(headers) or google_retry_delay(exc.details),
            )
        if isinstance(exc, errors.UnknownApiResponseError | json.JSONDecodeError):
            return builder.error(f"malformed stream frame: {error_text(exc)}", retryable=True)
        kind = is_transport_error(exc)
        if kind == "timeout":
            return builder.error(f"request timed out: {error_text(exc)}", retryable=True)
        if kind == "connection":
            cause = exc.__cause__
            detail = f" ({error_text(cause)})" if cause is not None else ""
            return builder.error(f"connection error: {error_text(exc)}{detail}", retryable=True)
        return super()._error_event(builder, exc)


def _on_httpx2(args: Mapping[str, Any] | None) -> dict[str, Any]:
    """``async_client_args`` that keep google-genai on its ``httpx2`` transport, metered (the
    caller's transport wrapped, else a new one).  The SDK switches to aiohttp whenever aiohttp is
    installed (any project with litellm or a web framework has it) unless it is given a
    transport; one transport everywhere is the one the adapter's guarantees are built and tested
    on (closing a failed stream's response, the event size bound, reading an error body whatever
    its encoding, cassette replay)."""
    out = dict(args or {})
    out["transport"] = metered_transport(out.get("transport"), library="httpx2")
    return out


def _error_document(response: Any) -> Any:
    """The JSON error document of an HTTP error response read whatever its encoding, or the
    ``{"message", "status"}`` the SDK makes of a body that is not JSON."""
    try:
        body = bytes(response.content)
    except Exception:  # the body was never read
        body = b""
    text = readable_text(body, getattr(response, "charset_encoding", None))
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if isinstance(document, Mapping | list):
        return document
    return {"message": text.strip(), "status": getattr(response, "reason_phrase", None) or None}


def google_retry_delay(details: Any) -> float | None:
    """Seconds from a ``google.rpc.RetryInfo`` entry (``"retryDelay": "37s"``) of a Google API
    error body, the hint Gemini gives on 429 instead of a ``retry-after`` header."""
    if isinstance(details, list) and len(details) == 1:
        details = details[0]
    if not isinstance(details, Mapping):
        return None
    inner = details.get("error", details)
    entries = inner.get("details") if isinstance(inner, Mapping) else None
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, Mapping) or not str(entry.get("@type", "")).endswith("RetryInfo"):
            continue
        delay = entry.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
        if isinstance(delay, Mapping):
            return float(delay.get("seconds") or 0) + float(delay.get("nanos") or 0) / 1e9
    return None


def _blocked_categories(ratings: Any) -> str | None:
    """``"blocked: HARM_CATEGORY_X, ..."`` from a candidate's safety ratings (the SDK does not
    pass ``finishMessage`` on, so this is the detail a safety stop can name)."""
    names = [
        _value(r.get("category")) or "?"
        for r in ratings or ()
        if isinstance(r, Mapping) and r.get("blocked")
    ]
    return f"blocked: {', '.join(names)}" if names else None


def _value(raw: Any) -> str | None:
    """An SDK enum (or its wire string) as the wire string."""
    if raw is None:
        return None
    return str(getattr(raw, "value", raw))


def _signature_text(raw: Any) -> str | None:
    if raw is None or raw == b"" or raw == "":
        return None
    if isinstance(raw, bytes | bytearray):
        return base64.b64encode(bytes(raw)).decode("ascii")
    return str(raw)


def _signature_bytes(text: str) -> bytes | None:
    """Our stored signature (standard or URL-safe base64) as the bytes the SDK re-encodes."""
    padded = text + "=" * (-len(text) % 4)
    try:
        return base64.b64decode(padded, altchars=b"-_" if ("-" in text or "_" in text) else None)
    except (binascii.Error, ValueError):
        return None


class GeminiStreamParser(StreamParser):
    """Feeds ``GenerateContentResponse`` chunks (as wire-named dicts) into the builder."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.open_kind: str | None = None  # "text" | "thinking"
        self.open_index = -1
        self.calls = 0
        self.usage = Usage()
        self.finish_reason: str | None = None
        self.finish_message: str | None = None
        self.blocked: tuple[str, str | None] | None = None
        self.response_id: str | None = None

    def _close_open(self, out: Events, signature: str | None = None) -> None:
        if self.open_kind == "text":
            out.append(self.b.text_end(self.open_index))
        elif self.open_kind == "thinking":
            out.append(self.b.thinking_end(self.open_index, signature))
        self.open_kind = None

    def _call_id(self, given: Any) -> str:
        if isinstance(given, str) and given:
            return given
        stem = self.response_id or uuid.uuid4().hex[:16]
        return f"call_{stem}_{self.calls}"

    def feed(self, data: dict[str, Any]) -> Events:
        out: Events = []
        if isinstance(data.get("responseId"), str):
            self.response_id = data["responseId"]
        self._usage(data.get("usageMetadata"))
        feedback = data.get("promptFeedback") or {}
        if feedback.get("blockReason"):
            self.blocked = (
                _value(feedback["blockReason"]) or "BLOCKED",
                feedback.get("blockReasonMessage"),
            )
        candidates = data.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        content = candidate.get("content") or {}
        for part in content.get("parts") or []:
            self._part(part, out)
        if candidate.get("finishReason"):
            self.finish_reason = _value(candidate["finishReason"])
            self.finish_message = candidate.get("finishMessage") or _blocked_categories(
                candidate.get("safetyRatings")
            )
        return out

    def _part(self, part: dict[str, Any], out: Events) -> None:
        b = self.b
        signature = _signature_text(part.get("thoughtSignature"))
        call = part.get("functionCall")
        if call:
            self._close_open(out)
            index, ev = b.toolcall_start(self._call_id(call.get("id")), call.get("name") or "")
            self.calls += 1
            args = call.get("args")
            arguments = dict(args) if isinstance(args, Mapping) else {}
            out.append(ev)
            out.append(b.toolcall_delta(index, json.dumps(arguments, ensure_ascii=False)))
            out.append(b.toolcall_end(index, arguments))
            if signature:
                b.message.content[index].signature = signature  # type: ignore[union-attr]
            return
        text = part.get("text")
        if part.get("thought"):
            if self.open_kind != "thinking":
                self._close_open(out)
                self.open_index, ev = b.thinking_start()
                self.open_kind = "thinking"
                out.append(ev)
            if text:
                out.append(b.thinking_delta(self.open_index, text))
            if signature:
                self._close_open(out, signature)
            return
        if text:
            if self.open_kind != "text":
                self._close_open(out)
                self.open_index, ev = b.text_start()
                self.open_kind = "text"
                out.append(ev)
            out.append(b.text_delta(self.open_index, text))

    def _usage(self, raw: Any) -> None:
        if not isinstance(raw, Mapping) or not any(
            k in raw for k in ("promptTokenCount", "candidatesTokenCount", "totalTokenCount")
        ):
            return
        prompt = int(raw.get("promptTokenCount") or 0)
        cached = int(raw.get("cachedContentTokenCount") or 0)
        self.usage = Usage(
            input_tokens=prompt - cached,
            output_tokens=int(raw.get("candidatesTokenCount") or 0)
            + int(raw.get("thoughtsTokenCount") or 0),
            cache_read_tokens=cached,
        )

    def finish(self) -> Events:
        self.finished = True
        b = self.b
        out: Events = []
        self._close_open(out)
        b.message.usage = self.usage
        if self.blocked is not None:
            blocked, detail = self.blocked
            text = f"prompt blocked ({blocked})" + (f": {detail}" if detail else "")
            return [*out, b.error(text, retryable=False)]
        reason = self.finish_reason
        if reason is None:
            return [*out, *super().finish()]
        if reason == "STOP":
            return [*out, b.done(None, self.usage)]
        if reason == "MAX_TOKENS":
            return [*out, b.done("length", self.usage)]
        detail = f": {self.finish_message}" if self.finish_message else ""
        if reason in _BLOCKED:
            text = f"response blocked ({reason}){detail}"
        else:
            text = f"generation stopped ({reason}){detail}"
        return [*out, b.error(text, retryable=reason in _RETRYABLE_STOPS)]


def gemini_contents(context: Context, api: str = GeminiProvider.api) -> list[dict[str, Any]]:
    """Our history as Gemini ``contents`` (wire names; signatures as bytes, as the SDK types
    hold them).  Thinking and signatures go back only on messages whose ``api`` is ``api``."""
    return role_turns(
        context,
        api,
        _user_part,
        _model_part,
        _function_response,
        parts_key="parts",
        assistant_role="model",
    )


def _function_response(message: ToolResultMessage) -> list[dict[str, Any]]:
    """A ``functionResponse`` part, then the result's images as parts of their own."""
    response = {"error": message.text} if message.is_error else {"output": message.text}
    parts: list[dict[str, Any]] = [
        {
            "functionResponse": {
                "id": message.tool_call_id,
                "name": message.tool_name,
                "response": response,
            }
        }
    ]
    parts += [_user_part(p) for p in message.content if isinstance(p, ImageContent)]
    return parts


def _user_part(block: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(block, ImageContent):
        data = base64.b64decode(block.data_b64)
        return {"inlineData": {"mimeType": block.mime_type, "data": data}}
    return {"text": block.text} if block.text else {}


def _model_part(block: TextContent | ThinkingContent | ToolCall, own: bool) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"text": block.text} if block.text else {}
    if isinstance(block, ThinkingContent):
        if not own or block.redacted or not (block.thinking or block.signature):
            return {}
        part: dict[str, Any] = {"text": block.thinking, "thought": True}
        signature = _signature_bytes(block.signature) if block.signature else None
        if signature:
            part["thoughtSignature"] = signature
        return part
    part = {"functionCall": {"id": block.id, "name": block.name, "args": block.arguments}}
    if own and block.signature:
        signature = _signature_bytes(block.signature)
        if signature:
            part["thoughtSignature"] = signature
    return part
