"""AWS Bedrock Converse adapter on the official ``boto3``/``botocore`` SDK.

Streaming (default) calls ``converse_stream`` and reads its event stream; ``stream=False`` calls
``converse``.  botocore is synchronous, so the call and the reads run on a daemon worker thread
that hands every event to the event loop (``call_soon_threadsafe``); the loop is never blocked.
Cancelling (the run's cancel signal, or cancelling the consuming task) returns at once; the
worker stops at its next event, and one stalled inside a read has its socket shut down; the
thread is a daemon, so it never keeps the process alive (botocore's ``read_timeout`` bounds it).
Why a thread and not an async AWS client: ``docs/decisions.md``.

Stream events: ``messageStart``; ``contentBlockStart`` only for ``toolUse`` blocks (text blocks
start with their first ``contentBlockDelta``); deltas carry ``text``, ``toolUse.input`` (JSON
text fragments, the first may be ``""``; none at all means ``{}``) or ``reasoningContent``
(``text``, ``signature``, ``redactedContent``); ``contentBlockStop``; ``messageStop`` with the
stop reason; then ``metadata`` with usage, which ends the message.  A stream that ends before
``metadata`` is an error ("stream ended without a final event"), even after ``messageStop``:
the terminal frame is the last one, and a cut there lost the usage.  Stop reasons:
``end_turn``/``stop_sequence`` are ``stop`` (``toolUse`` when
the message holds calls), ``tool_use`` is ``toolUse``, ``max_tokens`` and
``model_context_window_exceeded`` are ``length``; ``guardrail_intervened``/``content_filtered``
and the ``malformed_*`` reasons are errors naming the reason.

Requests: ``messages`` with ``user``/``assistant`` turns (consecutive same-role turns merged);
tool results are ``toolResult`` blocks (``status: "error"`` for failed tools; an empty result is
sent as the text ``(no output)`` because Converse rejects blank text); images are ``image``
blocks with raw bytes; reasoning goes back as ``reasoningContent`` with its signature (redacted
reasoning as ``redactedContent``) only on messages this adapter produced.  ``system`` carries
the system prompt, ``inferenceConfig`` ``maxTokens``/``temperature``, ``toolConfig`` the tools and
choice as the wire mapping says (``parallel_tool_calls`` has no Converse knob and is ignored;
``"none"`` adds a system instruction).  ``options.extras`` are merged into the request's top
level (e.g. ``additionalModelRequestFields``, ``guardrailConfig``).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import json
import os
import socket
import threading
from collections.abc import Mapping
from typing import Any

from ..events import AssistantMessageEvent
from ..texts import clip
from ..types import (
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    Usage,
)
from ._http import readable_text
from ._sdk import Events, SDKProvider, StreamParser, role_turns
from .base import (
    Context,
    MessageBuilder,
    StreamOptions,
    TerminalReason,
    error_retryable,
    error_text,
    parse_retry_after,
)
from .wire import tools_fragment

__all__ = ["BedrockProvider", "bedrock_messages", "bedrock_retryable"]

# Status of the Bedrock Runtime errors (they also arrive as exception events inside a 200 stream,
# where botocore knows no HTTP status).
_CODE_STATUS = {
    "validationexception": 400,
    "accessdeniedexception": 403,
    "expiredtokenexception": 403,
    "unrecognizedclientexception": 403,
    "resourcenotfoundexception": 404,
    "modeltimeoutexception": 408,
    "modelerrorexception": 424,
    "modelstreamerrorexception": 424,
    "modelnotreadyexception": 429,
    "throttlingexception": 429,
    "servicequotaexceededexception": 429,
    "internalserverexception": 500,
    "serviceunavailableexception": 503,
}
# Retryable beyond their status: botocore's own throttling/transient codes plus Bedrock's.
_BEDROCK_RETRYABLE = frozenset(
    {"modelnotreadyexception", "modeltimeoutexception", "modelstreamerrorexception"}
)
# Members every well-formed converse-stream event carries.
_REQUIRED_MEMBERS = {
    "messageStart": ("role",),
    "contentBlockStart": ("start", "contentBlockIndex"),
    "contentBlockDelta": ("delta", "contentBlockIndex"),
    "contentBlockStop": ("contentBlockIndex",),
    "messageStop": ("stopReason",),
    "metadata": ("usage",),
}
_BLOCKED_STOPS = frozenset({"guardrail_intervened", "content_filtered"})
_IMAGE_FORMATS = {
    "image/png": "png",
    "image/jpeg": "jpeg",
    "image/gif": "gif",
    "image/webp": "webp",
}


def bedrock_retryable(code: str | None, status: int | None, headers: Any = None) -> bool:
    """Retryable as botocore's standard retry mode decides it (its throttling and transient
    error codes), Bedrock's model-not-ready/timeout codes, else by status."""
    from botocore.retries.standard import ThrottledRetryableChecker, TransientRetryableChecker

    if code:
        lowered = code.lower()
        throttled = {c.lower() for c in ThrottledRetryableChecker._THROTTLED_ERROR_CODES}
        transient = {c.lower() for c in TransientRetryableChecker._TRANSIENT_ERROR_CODES}
        if lowered in throttled or lowered in transient or lowered in _BEDROCK_RETRYABLE:
            return True
    return error_retryable(status, headers) if status is not None else False


class _Worker:
    """State shared between the event loop and the worker thread of one call."""

    __slots__ = ("cancelled", "done", "lock", "response")

    def __init__(self) -> None:
        self.cancelled = False
        self.response: Any = None  # the EventStream being read, to close on cancel
        self.lock = threading.Lock()
        self.done = threading.Event()  # set by the worker when it has finished

    def close(self) -> None:
        with self.lock:
            response, self.response = self.response, None
        if response is not None:
            with contextlib.suppress(Exception):
                response.close()

    def abort(self) -> None:
        """Stop the call from the event loop without blocking it.  The worker checks
        ``cancelled`` after every event; one that does not come back within a grace period is
        blocked in a read (a stall), so its socket is shut down, which ends that read at once
        (closing the response instead would block on the reader's lock).  A worker that just
        read the last frame finishes by itself: its connection goes back to the pool intact."""
        self.cancelled = True
        threading.Thread(target=self._reap, name="openprogram-bedrock-reaper", daemon=True).start()

    def _reap(self) -> None:
        if self.done.wait(_GRACE_S):
            return
        with self.lock:
            sock = _socket_of(self.response)
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        self.close()


_GRACE_S = 0.5


def _socket_of(response: Any) -> socket.socket | None:
    """The TCP socket under a botocore EventStream: urllib3 response → connection → socket, or,
    when urllib3 no longer holds the connection (urllib3 2.x lets go of it for an answer with
    ``Connection: close``, which is read until the socket closes), the socket file the response
    reads from (``http.client`` response → buffered reader → socket)."""
    raw = getattr(response, "_raw_stream", None)
    connection = getattr(raw, "_connection", None) or getattr(raw, "connection", None)
    sock = getattr(connection, "sock", None)
    if not isinstance(sock, socket.socket):
        reader = getattr(getattr(raw, "_fp", None), "fp", None)
        sock = getattr(getattr(reader, "raw", None), "_sock", None)
    return sock if isinstance(sock, socket.socket) else None


class BedrockProvider(SDKProvider):
    """``BedrockProvider(client=None, *, region_name=None, base_url=None, stream=True,
    max_retries=0, session=None, config=None, **client_kwargs)``.

    ``client`` — a botocore ``bedrock-runtime`` client used as is.  Otherwise one is built on
    first use with ``boto3`` from the normal AWS credential chain (environment, shared config and
    credentials files, SSO, container and instance roles; or ``session=boto3.Session(...)``),
    ``region_name``, ``base_url`` (the endpoint URL) and ``config`` (a ``botocore.config.Config``,
    merged).  ``max_retries`` defaults to 0 (botocore's own retries off, the loop sees every
    failure); ``n`` allows ``n`` retries in botocore's standard mode.  Other keyword arguments go
    to ``session.client("bedrock-runtime", ...)`` (``aws_access_key_id``...).  The SDK is
    synchronous: see the module docstring for how streaming stays non-blocking.
    """

    provider_name = "amazon-bedrock"
    api = "bedrock-converse"

    def __init__(self, client: Any = None, **kwargs: Any) -> None:
        if "api_key" in kwargs and kwargs["api_key"] is not None:
            raise TypeError(
                "BedrockProvider takes AWS credentials, not api_key: use the AWS credential "
                "chain, session=boto3.Session(...), or aws_access_key_id=/aws_secret_access_key="
            )
        kwargs.pop("api_key", None)
        super().__init__(client, **kwargs)

    # -- client -----------------------------------------------------------------------------
    def _make_client(self, **kwargs: Any) -> Any:
        import boto3
        from botocore.config import Config

        session = kwargs.pop("session", None) or boto3.session.Session()
        if not kwargs.get("region_name") and os.environ.get("AWS_REGION"):
            # what the AWS SDKs and the Lambda/ECS runtimes set; botocore reads only
            # AWS_DEFAULT_REGION and the profile
            kwargs["region_name"] = os.environ["AWS_REGION"]
        retries = int(kwargs.pop("max_retries", 0) or 0)
        config = Config(retries={"total_max_attempts": retries + 1, "mode": "standard"})
        given = kwargs.pop("config", None)
        if given is not None:
            config = config.merge(given)
        base_url = kwargs.pop("base_url", None)
        if base_url is not None:
            kwargs["endpoint_url"] = base_url
        return session.client("bedrock-runtime", config=config, **kwargs)

    def _base_url(self, client: Any) -> str:
        return str(client.meta.endpoint_url)

    def _is_closed(self, client: Any) -> bool:
        return False  # a botocore client is thread-safe and bound to no event loop

    async def _close(self, client: Any) -> None:
        close = getattr(client, "close", None)
        if close is not None:
            close()

    # -- request ----------------------------------------------------------------------------
    def build_request(self, model: str, context: Context, options: StreamOptions) -> dict[str, Any]:
        """The keyword arguments of ``converse``/``converse_stream`` (wire names)."""
        params: dict[str, Any] = {"modelId": model, "messages": bedrock_messages(context, self.api)}
        fragment = tools_fragment(
            "bedrock", context.tools, options.tool_choice, options.parallel_tool_calls
        )
        system = [{"text": context.system_prompt}] if context.system_prompt else []
        system += fragment.pop("system", [])
        if system:
            params["system"] = system
        for tool in fragment.get("toolConfig", {}).get("tools", ()):
            if not tool["toolSpec"].get("description"):  # optional, but never empty
                tool["toolSpec"].pop("description", None)
        params.update(fragment)
        inference: dict[str, Any] = {}
        if options.max_tokens is not None:
            inference["maxTokens"] = options.max_tokens
        if options.temperature is not None:
            inference["temperature"] = options.temperature
        if inference:
            params["inferenceConfig"] = inference
        params.update(options.extras)
        return params

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        raise NotImplementedError  # the worker thread makes the call: see _pump

    async def _pump(
        self, client: Any, params: dict[str, Any], queue: asyncio.Queue[tuple[str, Any]]
    ) -> None:
        """Run the blocking SDK call on a daemon thread feeding ``queue``; return when it is
        done, or at once when cancelled (closing the response under the thread)."""
        _read_error_bodies_leniently(client)
        loop = asyncio.get_running_loop()
        finished: asyncio.Future[None] = loop.create_future()
        worker = _Worker()
        streaming = self.streaming

        def post(kind: str, value: Any) -> None:
            with contextlib.suppress(RuntimeError):  # the loop may be gone after a cancel
                loop.call_soon_threadsafe(queue.put_nowait, (kind, value))

        def run() -> None:
            sock: socket.socket | None = None
            clean = False
            try:
                if not streaming:
                    result = client.converse(**params)
                    if not worker.cancelled:
                        post("item", result)
                        post("end", None)
                    return
                response = client.converse_stream(**params)["stream"]
                with worker.lock:
                    worker.response = response
                sock = _socket_of(response)  # now: urllib3 lets go of it at the body's end
                if worker.cancelled:
                    return
                ending = _Ending()
                for event in response:
                    if worker.cancelled:
                        return
                    ending.see(event)
                    post("item", event)
                clean = ending.clean
                if not clean:  # before the consumer hears of the end
                    _drop(sock)
                post("end", None)
            except BaseException as exc:  # everything ends as an error event
                _drop(sock)
                if not worker.cancelled:
                    post("exc", exc)
            finally:
                if not clean:  # a read left early (cancelled, a refused frame): never pooled
                    _drop(sock)
                worker.close()
                worker.done.set()
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(_resolve, finished)

        thread = threading.Thread(target=run, name="openprogram-bedrock", daemon=True)
        thread.start()
        try:
            await finished
        finally:
            # cancelling this task cancels ``finished`` too: "not resolved by the worker"
            if finished.cancelled() or not finished.done():
                worker.abort()

    # -- responses --------------------------------------------------------------------------
    def _parser(self, builder: MessageBuilder) -> StreamParser:
        return BedrockStreamParser(builder)

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        return _convert_response(builder, data)

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        from botocore import exceptions

        return exceptions.ClientError, exceptions.ReadTimeoutError, exceptions.ConnectionError

    def _error_event(self, builder: MessageBuilder, exc: BaseException) -> AssistantMessageEvent:
        from botocore import eventstream, exceptions

        if isinstance(exc, exceptions.ClientError):
            error = exc.response.get("Error") or {}
            meta = exc.response.get("ResponseMetadata") or {}
            code = str(error.get("Code") or "") or None
            status = meta.get("HTTPStatusCode")
            if isinstance(exc, exceptions.EventStreamError) or not isinstance(status, int):
                status = _CODE_STATUS.get((code or "").lower(), status)
            if code and code.isdigit():  # the error type header was dropped: code is the status
                code = None
            headers = meta.get("HTTPHeaders")
            text = error.get("Message") or error_text(exc)
            prefix = f"HTTP {status}" if isinstance(status, int) else "API error"
            if code:
                prefix += f" ({code})"
            return builder.error(
                f"{prefix}: {text}",
                status=status if isinstance(status, int) else None,
                retryable=bedrock_retryable(code, status, headers),
                retry_after_s=parse_retry_after(headers),
            )
        import urllib3.exceptions as http_errors  # reading a botocore stream raises these

        timeouts = (
            exceptions.ReadTimeoutError,
            exceptions.ConnectTimeoutError,
            http_errors.TimeoutError,
        )
        if isinstance(exc, timeouts):
            return builder.error(f"request timed out: {error_text(exc)}", retryable=True)
        connection = (exceptions.ConnectionError, exceptions.HTTPClientError, http_errors.HTTPError)
        if isinstance(exc, connection):
            return builder.error(f"connection error: {error_text(exc)}", retryable=True)
        if isinstance(exc, eventstream.ParserError):
            return builder.error(f"malformed stream frame: {error_text(exc)}", retryable=True)
        if isinstance(exc, exceptions.NoCredentialsError | exceptions.NoRegionError):
            return builder.error(f"AWS configuration: {error_text(exc)}", retryable=False)
        if isinstance(exc, exceptions.ParamValidationError):
            return builder.error(f"invalid request: {error_text(exc)}", retryable=False)
        return super()._error_event(builder, exc)


def _read_error_bodies_leniently(client: Any) -> None:
    """Have ``client`` hand botocore's error parser a UTF-8 JSON object: botocore decodes an
    error body as strict UTF-8 and reads it as an object, so a Latin-1 or UTF-16 body, or JSON
    that is not an object (``0``, ``[]``), would end in ``UnicodeDecodeError``/``AttributeError``
    with the status lost; text that is not JSON becomes the message, as botocore does it.  A
    ``before-parse`` handler, registered once per client."""
    events = getattr(getattr(client, "meta", None), "events", None)
    if events is not None:
        events.register(
            "before-parse.bedrock-runtime",
            _readable_error_body,
            unique_id="openprogram-readable-error-body",
        )


def _readable_error_body(response_dict: dict[str, Any], **_: Any) -> None:
    status = response_dict.get("status_code")
    body = response_dict.get("body")
    if not isinstance(status, int) or status < 300 or not isinstance(body, bytes | bytearray):
        return
    headers = response_dict.get("headers") or {}
    content_type = next((v for k, v in headers.items() if k.lower() == "content-type"), "")
    charset = content_type.partition("charset=")[2].split(";")[0].strip(" \"'") or None
    text = readable_text(bytes(body), charset)
    try:
        document = json.loads(text)
    except ValueError:
        document = None
    if text.strip() and not isinstance(document, dict):  # JSON, but not an object: a message
        text = json.dumps({"message": text.strip()})
    response_dict["body"] = text.encode("utf-8")


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _stop(reason: str | None, builder: MessageBuilder) -> TerminalReason | str:
    """Our terminal reason, or the Bedrock reason itself when it is an error."""
    if reason == "tool_use":
        return "toolUse"
    if reason in ("max_tokens", "model_context_window_exceeded"):
        return "length"
    if reason in (None, "end_turn", "stop_sequence"):
        return "toolUse" if builder.message.tool_calls else "stop"
    return reason


def _terminal(builder: MessageBuilder, reason: str | None, usage: Usage) -> AssistantMessageEvent:
    mapped = _stop(reason, builder)
    if mapped in ("stop", "length", "toolUse"):
        return builder.done(mapped, usage)  # type: ignore[arg-type]
    builder.message.usage = usage
    kind = "response blocked" if mapped in _BLOCKED_STOPS else "generation stopped"
    return builder.error(f"{kind} ({mapped})", retryable=str(mapped).startswith("malformed"))


def _usage(raw: Any) -> Usage:
    if not isinstance(raw, Mapping):
        return Usage()
    return Usage(
        input_tokens=int(raw.get("inputTokens") or 0),
        output_tokens=int(raw.get("outputTokens") or 0),
        cache_read_tokens=int(raw.get("cacheReadInputTokens") or 0),
        cache_write_tokens=int(raw.get("cacheWriteInputTokens") or 0),
    )


def _b64(raw: Any) -> str:
    return base64.b64encode(raw).decode("ascii") if isinstance(raw, bytes | bytearray) else str(raw)


def frame_problem(data: Mapping[str, Any]) -> str | None:
    """What makes a ``converse_stream`` event unreadable, or ``None``: a member every real event
    of its kind carries is missing (botocore parses a payload that is not JSON into an empty
    event, so their absence means a corrupt frame), or a ``contentBlockIndex`` is not a
    non-negative integer.  The parser ends the call with an error on it, and the worker thread
    reading the stream drops the connection instead of pooling it (``_Ending``)."""
    for name, members in data.items():
        if not isinstance(members, Mapping):
            members = {}
        missing = [m for m in _REQUIRED_MEMBERS.get(name, ()) if m not in members]
        if missing:
            return f"{name} event without {', '.join(missing)}"
        index = members.get("contentBlockIndex", 0)
        if isinstance(index, bool) or not isinstance(index, int) or index < 0:
            return f"{name} event whose contentBlockIndex is {clip(repr(index), 40)}, not an index"
    return None


class _Ending:
    """How a stream read on the worker thread ended: cleanly only after ``messageStop`` then
    ``metadata`` with no unreadable event on the way.  Any other ending (the body ended early,
    a frame the parser refuses, an exception) leaves the connection in a state no next request
    may inherit, so the worker shuts its socket down rather than let urllib3 pool it."""

    __slots__ = ("bad", "ended", "stopped")

    def __init__(self) -> None:
        self.bad = self.stopped = self.ended = False

    def see(self, event: Any) -> None:
        if not isinstance(event, Mapping) or frame_problem(event) is not None:
            self.bad = True
        elif "messageStop" in event:
            self.stopped = True
        elif "metadata" in event and self.stopped:
            self.ended = True

    @property
    def clean(self) -> bool:
        return self.ended and not self.bad


def _drop(sock: socket.socket | None) -> None:
    """Shut a connection's socket down (the server sees it closed; urllib3 finds it dropped and
    never reuses it)."""
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class BedrockStreamParser(StreamParser):
    """Feeds ``converse_stream`` events (``{"<eventName>": {...}}`` dicts) into the builder."""

    def __init__(self, builder: MessageBuilder) -> None:
        super().__init__(builder)
        self.blocks: dict[int, tuple[str, int]] = {}  # wire index -> (kind, builder index)
        self.signatures: dict[int, str] = {}
        self.stop_reason: str | None = None
        self.stopped = False

    def feed(self, data: dict[str, Any]) -> Events:
        b = self.b
        problem = frame_problem(data)
        if problem is not None:
            self.finished = True
            return [b.error(f"malformed stream frame: {problem}", retryable=True)]
        if "contentBlockStart" in data:
            event = data["contentBlockStart"]
            tool = (event.get("start") or {}).get("toolUse")
            if tool is None:
                return []
            index, ev = b.toolcall_start(tool.get("toolUseId") or "", tool.get("name") or "")
            self.blocks[int(event.get("contentBlockIndex", 0))] = ("toolUse", index)
            return [ev]
        if "contentBlockDelta" in data:
            event = data["contentBlockDelta"]
            return self._delta(int(event.get("contentBlockIndex", 0)), event.get("delta") or {})
        if "contentBlockStop" in data:
            wi = int(data["contentBlockStop"].get("contentBlockIndex", 0))
            if wi not in self.blocks:
                return []
            kind, index = self.blocks.pop(wi)
            if kind == "text":
                return [b.text_end(index)]
            if kind == "thinking":
                return [b.thinking_end(index, self.signatures.pop(wi, None))]
            return [b.toolcall_end(index)]
        if "messageStop" in data:
            self.stop_reason = data["messageStop"].get("stopReason")
            self.stopped = True
            return []
        if "metadata" in data:
            if not self.stopped:
                return []
            self.finished = True
            out = b.close_open_blocks()
            out.append(_terminal(b, self.stop_reason, _usage(data["metadata"].get("usage"))))
            return out
        return []  # messageStart, unknown events

    def _delta(self, wi: int, delta: dict[str, Any]) -> Events:
        b = self.b
        out: Events = []
        if "text" in delta:
            if wi not in self.blocks:
                index, ev = b.text_start()
                self.blocks[wi] = ("text", index)
                out.append(ev)
            text = delta.get("text") or ""
            if text:
                out.append(b.text_delta(self.blocks[wi][1], text))
            return out
        if "toolUse" in delta:
            if wi not in self.blocks:
                return out
            fragment = (delta.get("toolUse") or {}).get("input") or ""
            if fragment:
                out.append(b.toolcall_delta(self.blocks[wi][1], fragment))
            return out
        reasoning = delta.get("reasoningContent")
        if isinstance(reasoning, Mapping):
            if wi not in self.blocks:
                redacted = "redactedContent" in reasoning
                index, ev = b.thinking_start(redacted=redacted)
                self.blocks[wi] = ("thinking", index)
                out.append(ev)
            index = self.blocks[wi][1]
            if reasoning.get("text"):
                out.append(b.thinking_delta(index, reasoning["text"]))
            if reasoning.get("signature"):
                self.signatures[wi] = self.signatures.get(wi, "") + reasoning["signature"]
            if reasoning.get("redactedContent") is not None:
                self.signatures[wi] = _b64(reasoning["redactedContent"])
        return out


def _convert_response(b: MessageBuilder, data: dict[str, Any]) -> Events:
    """A ``converse`` response as the same events a stream would give.  Every Converse reply
    has ``output`` and ``stopReason``: without them the body was no reply (botocore parses an
    HTML page, ``{}`` or an empty body into an empty one), an error, not an empty success."""
    missing = [k for k in ("output", "stopReason") if not data.get(k)]
    if missing or not isinstance(data.get("output"), Mapping):
        problem = (
            f"malformed response: a Converse reply without {' or '.join(missing or ['output'])}"
        )
        return [b.error(problem, retryable=True)]
    out: Events = []
    message = (data.get("output") or {}).get("message") or {}
    for block in message.get("content") or []:
        if "text" in block:
            if block["text"]:
                i, ev = b.text_start()
                out += [ev, b.text_delta(i, block["text"]), b.text_end(i)]
        elif "toolUse" in block:
            tool = block["toolUse"]
            i, ev = b.toolcall_start(tool.get("toolUseId") or "", tool.get("name") or "")
            arguments = tool.get("input")
            arguments = dict(arguments) if isinstance(arguments, Mapping) else {}
            out += [ev, b.toolcall_delta(i, json.dumps(arguments)), b.toolcall_end(i, arguments)]
        elif "reasoningContent" in block:
            reasoning = block["reasoningContent"]
            if "redactedContent" in reasoning:
                i, ev = b.thinking_start(redacted=True)
                out += [ev, b.thinking_end(i, _b64(reasoning["redactedContent"]))]
            else:
                text = reasoning.get("reasoningText") or {}
                i, ev = b.thinking_start()
                out.append(ev)
                if text.get("text"):
                    out.append(b.thinking_delta(i, text["text"]))
                out.append(b.thinking_end(i, text.get("signature")))
    out.append(_terminal(b, data.get("stopReason"), _usage(data.get("usage"))))
    return out


def bedrock_messages(context: Context, api: str = BedrockProvider.api) -> list[dict[str, Any]]:
    """Our history as Converse ``messages``; reasoning goes back only on messages whose
    ``api`` is ``api``."""
    return role_turns(context, api, _user_block, _assistant_block, _tool_result)


def _tool_result(message: ToolResultMessage) -> list[dict[str, Any]]:
    content = [p for p in map(_user_block, message.content) if p]
    result: dict[str, Any] = {
        "toolUseId": message.tool_call_id,
        "content": content or [{"text": "(no output)"}],
        "status": "error" if message.is_error else "success",
    }
    return [{"toolResult": result}]


def _user_block(part: TextContent | ImageContent) -> dict[str, Any]:
    if isinstance(part, ImageContent):
        fmt = _IMAGE_FORMATS.get(part.mime_type, part.mime_type.rpartition("/")[2])
        return {"image": {"format": fmt, "source": {"bytes": base64.b64decode(part.data_b64)}}}
    return {"text": part.text} if part.text else {}


def _assistant_block(block: TextContent | ThinkingContent | ToolCall, own: bool) -> dict[str, Any]:
    if isinstance(block, TextContent):
        return {"text": block.text} if block.text else {}
    if isinstance(block, ThinkingContent):
        if not own or not block.signature:
            return {}
        if block.redacted:
            try:
                data = base64.b64decode(block.signature)
            except (binascii.Error, ValueError):
                return {}
            return {"reasoningContent": {"redactedContent": data}}
        text = {"text": block.thinking, "signature": block.signature}
        return {"reasoningContent": {"reasoningText": text}}
    return {"toolUse": {"toolUseId": block.id, "name": block.name, "input": block.arguments}}
