"""Machinery shared by the SDK-backed adapters (OpenAI Chat, OpenAI Responses, Anthropic,
Gemini, Bedrock).

One adapter = a request builder, a stream parser (SDK event → provider events, through
``MessageBuilder``) and a converter for non-streaming responses.  This module owns everything
else, identically for all of them (Gemini and Bedrock override the client hooks, Bedrock also
the pump, which runs its synchronous SDK on a worker thread): the lazily-built SDK client, the
real-call guard, running the SDK call in a *pump task* (so cancellation can close the HTTP
stream at any point, even while the server stalls), and turning every failure into a terminal
``error`` event.

SDK objects are turned into plain dicts (``to_dict``) before parsing: the parsers then work on
the documented wire shapes, tolerate unknown fields, and the same code handles streamed chunks and
non-streamed bodies.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import weakref
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any, ClassVar

from ..events import AssistantMessageEvent
from ..texts import clip
from ..types import (
    AssistantContent,
    AssistantMessage,
    ImageContent,
    TextContent,
    ToolCall,
    ToolResultMessage,
    Usage,
    UserContent,
    UserMessage,
)
from . import guard
from ._http import (
    MAX_EVENT_BYTES,
    EventTooLarge,
    http_library,
    metered_transport,
    pump_scope,
    warn_unmetered,
)
from .base import (
    Context,
    MessageBuilder,
    StreamOptions,
    error_retryable,
    error_text,
    parse_retry_after,
)
from .wire import WireAPI, tools_fragment

__all__ = [
    "STREAM_ENDED",
    "OpenAISDKProvider",
    "SDKProvider",
    "StreamParser",
    "is_transport_error",
]

STREAM_ENDED = "stream ended without a final event"

Events = list[AssistantMessageEvent]

_ERROR_TYPE_STATUS = {
    # Anthropic/OpenAI error types that can arrive inside a 200 stream.
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "server_error": 500,
    "overloaded_error": 529,
}


def as_dict(obj: Any) -> dict[str, Any]:
    """An SDK model (or dict) as a plain dict in wire names, unset fields left out."""
    if isinstance(obj, Mapping):
        return dict(obj)
    if hasattr(obj, "model_dump"):
        return obj.model_dump(  # type: ignore[no-any-return]
            by_alias=True, exclude_unset=True, warnings=False, mode="python"
        )
    raise TypeError(f"unexpected SDK object {type(obj).__name__}")


def arguments_json(call: ToolCall) -> str:
    """The JSON text of a call's arguments as the model sent them (raw text when it did not
    parse, so the model sees its own mistake)."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def data_url(image: ImageContent) -> str:
    return f"data:{image.mime_type};base64,{image.data_b64}"


def openai_user_message(
    message: UserMessage, part: Callable[[UserContent], dict[str, Any]]
) -> dict[str, Any]:
    """A user message as both OpenAI APIs take it: a plain string as is, blocks as a list of
    the API's ``part``s."""
    if isinstance(message.content, str):
        return {"role": "user", "content": message.content}
    return {"role": "user", "content": [part(p) for p in message.content]}


def role_turns(
    context: Context,
    api: str,
    user_part: Callable[[UserContent], dict[str, Any] | None],
    assistant_part: Callable[[AssistantContent, bool], dict[str, Any] | None],
    tool_result: Callable[[ToolResultMessage], list[dict[str, Any]]],
    *,
    parts_key: str = "content",
    assistant_role: str = "assistant",
) -> list[dict[str, Any]]:
    """Our history as the alternating-role turns of Anthropic, Gemini and Bedrock, which walk
    it alike and differ only in how one part is spelled.

    A user message's blocks (a plain string is one text block) become ``user_part``s; an
    assistant message's blocks ``assistant_part``s, told whether the message came from this
    same ``api`` (only then may its signatures go back); a tool result the parts
    ``tool_result`` makes of it, in a user turn.  Empty parts are dropped, and so are
    assistant messages that ended in ``error``/``aborted``.  The APIs want the roles to
    alternate, so parts of the same role as the previous turn join it (the tool results and
    steering message after a batch become one user turn); no parts, no turn.  ``parts_key``
    is the field that holds the parts and ``assistant_role`` the role of the model's turns
    (Gemini: ``parts`` and ``model``)."""
    turns: list[dict[str, Any]] = []

    def add(role: str, parts: list[dict[str, Any]]) -> None:
        if not parts:
            return
        if turns and turns[-1]["role"] == role:
            turns[-1][parts_key].extend(parts)
        else:
            turns.append({"role": role, parts_key: parts})

    for message in context.messages:
        if isinstance(message, UserMessage):
            blocks = (
                [TextContent(message.content)]
                if isinstance(message.content, str)
                else message.content
            )
            add("user", [p for p in map(user_part, blocks) if p])
        elif isinstance(message, AssistantMessage):
            if message.stop_reason in ("error", "aborted"):
                continue
            own = message.api == api
            add(assistant_role, [p for b in message.content if (p := assistant_part(b, own))])
        elif isinstance(message, ToolResultMessage):
            add("user", tool_result(message))
    return turns


class StreamParser:
    """Feeds SDK stream events (as dicts) into a ``MessageBuilder``.

    ``feed`` returns the events to yield; once it returned a terminal event ``finished`` is true
    and the adapter stops reading.  ``finish`` is called when the SDK stream ended without one.
    """

    def __init__(self, builder: MessageBuilder) -> None:
        self.b = builder
        self.finished = False

    def feed(self, data: dict[str, Any]) -> Events:
        raise NotImplementedError

    def finish(self) -> list[AssistantMessageEvent]:
        self.finished = True
        return [self.b.error(STREAM_ENDED, retryable=True)]


class _Aborted(Exception):
    pass


class SDKProvider:
    """Base of the three SDK adapters.

    ``client`` — an SDK async client to use as is (tests pass one built on an
    ``httpx2.MockTransport``); otherwise one is built on first use from ``api_key``, ``base_url``,
    ``max_retries`` and ``client_kwargs``.  ``max_retries`` defaults to 0: the SDKs retry 408/409/
    429/5xx and connection errors themselves (2 times, with backoff) before anything reaches us,
    which would hide failures from the loop and from fault-injection tests.  Pass
    ``max_retries=2`` (or more) to get the SDK's retries back.  ``stream=False`` makes
    non-streaming calls and converts the JSON response into the same events.
    ``max_event_bytes`` bounds what a stream may send without completing an event
    (:data:`~openprogram.providers._http.MAX_EVENT_BYTES`; ``None``: no bound): past it the turn
    ends in a retryable error instead of the SDK buffering without end.
    """

    provider_name: ClassVar[str] = ""
    api: ClassVar[str] = ""

    def __init__(
        self,
        client: Any = None,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        stream: bool = True,
        max_retries: int = 0,
        max_event_bytes: int | None = MAX_EVENT_BYTES,
        **client_kwargs: Any,
    ) -> None:
        self.max_event_bytes = max_event_bytes
        self._unmetered_told = False  # UnmeteredStreamWarning given once per provider
        self._client = client  # the given client, else the one used last
        self._given = client is not None
        self._loop_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary()
        )
        self._client_args: dict[str, Any] = dict(client_kwargs, max_retries=max_retries)
        if api_key is not None:
            self._client_args["api_key"] = api_key
        if base_url is not None:
            self._client_args["base_url"] = base_url
        self.streaming = stream

    # -- to implement per API -------------------------------------------------------------
    def _make_client(self, **kwargs: Any) -> Any:
        raise NotImplementedError

    def build_request(self, model: str, context: Context, options: StreamOptions) -> dict[str, Any]:
        """The request body (without ``stream``), as keyword arguments of the SDK's create()."""
        raise NotImplementedError

    async def _call(self, client: Any, params: dict[str, Any], stream: bool) -> Any:
        raise NotImplementedError

    def _parser(self, builder: MessageBuilder) -> StreamParser:
        raise NotImplementedError

    def _convert(self, builder: MessageBuilder, data: dict[str, Any]) -> Events:
        raise NotImplementedError

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        """(status error, timeout error, connection error) classes of the SDK."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------
    @property
    def client(self) -> Any:
        """The SDK client for the running event loop.

        A client passed to the constructor is used everywhere as is.  Otherwise each event loop
        gets its own client, built on first use: an async HTTP client's connection pool belongs
        to the loop it was used on, so reusing it from another loop (``asyncio.run`` per call, a
        sync ``exec`` nested on a helper thread) fails with "Event loop is closed".  A client
        closed with :meth:`aclose` is replaced on next use.
        """
        if self._given:
            return self._client
        try:
            loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        current = self._loop_clients.get(loop) if loop is not None else None
        if current is None or self._is_closed(current):
            unbound = self._client
            if (
                unbound is not None
                and not self._is_closed(unbound)
                and all(c is not unbound for c in self._loop_clients.values())
            ):
                current = unbound  # built outside any loop (e.g. to read base_url): adopt it
            else:
                current = self._make_client(**self._client_args)
            if loop is not None:
                self._loop_clients[loop] = current
        self._client = current
        return current

    @property
    def base_url(self) -> str:
        return self._base_url(self.client)

    # -- client hooks (the OpenAI and Anthropic clients share these; others override) -------
    def _base_url(self, client: Any) -> str:
        return str(client.base_url)

    def _is_closed(self, client: Any) -> bool:
        return bool(client.is_closed())

    async def _close(self, client: Any) -> None:
        await client.close()

    async def aclose(self) -> None:
        """Close the SDK client of the running loop (its HTTP connection pool); a client passed
        to the constructor is closed too.  The provider stays usable: the next call builds a
        new client."""
        if self._given:
            await self._close(self._client)
            return
        loop = asyncio.get_running_loop()
        current = self._loop_clients.pop(loop, None)
        if (
            current is None
            and self._client is not None
            and all(c is not self._client for c in self._loop_clients.values())
        ):
            current = self._client
        if current is not None:
            await self._close(current)

    async def __aenter__(self) -> SDKProvider:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def stream(
        self, model: str, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        builder = MessageBuilder(model=model, provider=self.provider_name, api=self.api)
        yield builder.start()
        cancel = options.cancel
        if cancel is not None and cancel.is_set():
            yield builder.aborted()
            return
        try:
            params = self.build_request(model, context, options)
            client = self.client
        except Exception as exc:
            yield builder.error(f"could not build the request: {error_text(exc)}")
            return
        guard.check(self._base_url(client))

        queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        pump = asyncio.ensure_future(self._pump(client, params, queue))
        waiter = asyncio.ensure_future(cancel.wait()) if cancel is not None else None
        parser = self._parser(builder) if self.streaming else None
        terminal: AssistantMessageEvent | None = None
        try:
            while terminal is None:
                kind, value = await self._next(queue, waiter)
                if kind == "exc":
                    terminal = self._failure(builder, value)
                elif kind == "end":
                    if parser is not None:
                        events = parser.finish()
                    else:
                        events = [builder.error(STREAM_ENDED, retryable=True)]
                    *rest, terminal = events
                    for event in rest:
                        yield event
                else:
                    data = as_dict(value)
                    events = self._convert(builder, data) if parser is None else parser.feed(data)
                    for event in events:
                        if event.is_terminal:
                            terminal = event
                            break
                        yield event
        except _Aborted:
            terminal = builder.aborted()
        except Exception as exc:  # a parser tripping over an unexpected shape
            terminal = self._failure(builder, exc)
        finally:
            # Close the HTTP stream *before* handing out the terminal event: a consumer that
            # stops iterating at the terminal event must not leave the connection open.
            if waiter is not None:
                waiter.cancel()
            if not pump.done():
                pump.cancel()
            await _settle(pump)
        yield terminal

    async def _next(
        self, queue: asyncio.Queue[tuple[str, Any]], waiter: asyncio.Future[None] | None
    ) -> tuple[str, Any]:
        if not queue.empty() or waiter is None:
            if waiter is not None and waiter.done():
                raise _Aborted
            return await queue.get()
        getter = asyncio.ensure_future(queue.get())
        pending: set[asyncio.Future[Any]] = {getter, waiter}
        done, _ = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
        if getter in done:
            return getter.result()
        getter.cancel()
        raise _Aborted

    async def _pump(
        self, client: Any, params: dict[str, Any], queue: asyncio.Queue[tuple[str, Any]]
    ) -> None:
        """Make the SDK call and push every item into ``queue`` — all in this one task, so the
        SDK's HTTP stream is opened, read and closed by the same task (cancelling it closes the
        connection).  The outcome (``end`` or ``exc``) is posted only once everything the call
        opened is closed: the consumer cancels the pump when it sees it."""
        failure: Exception | None = None
        limit = self.max_event_bytes if self.streaming else None
        async with pump_scope(limit) as scope:
            try:
                result = await self._call(client, params, self.streaming)
                if self.streaming:
                    try:
                        async for item in result:
                            scope.delivered()
                            queue.put_nowait(("item", item))
                        if limit is not None and not scope.opened:
                            self._tell_unmetered()  # a stream read, and no byte of it counted
                    finally:
                        closer = getattr(result, "aclose", None) or getattr(result, "close", None)
                        if closer is not None:
                            with contextlib.suppress(Exception):
                                await closer()
                else:
                    queue.put_nowait(("item", result))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failure = self._failed_call(exc, scope.failed)
        queue.put_nowait(("exc", failure) if failure is not None else ("end", None))

    def _tell_unmetered(self) -> None:
        """A stream came through an HTTP client that is not on a metered transport: the bound
        cannot hold for it, which is said once per provider rather than ignored."""
        if not self._unmetered_told:
            self._unmetered_told = True
            warn_unmetered(type(self).__name__)

    def _failed_call(self, exc: Exception, response: Any) -> Exception:
        """What a failed SDK call raised, given the HTTP error response the call received (if
        any): an adapter whose SDK can lose an error's status reads it from ``response``."""
        return exc

    def _failure(self, builder: MessageBuilder, exc: BaseException) -> AssistantMessageEvent:
        """The terminal event of a failed call: a stream over the event limit (whatever the SDK
        wrapped it in), else what the adapter makes of the SDK's exception."""
        cause: BaseException | None = exc
        for _ in range(8):
            if cause is None:
                break
            if isinstance(cause, EventTooLarge):
                return builder.error(str(cause), retryable=True)
            cause = cause.__cause__ or cause.__context__
        return self._error_event(builder, exc)

    def _error_event(self, builder: MessageBuilder, exc: BaseException) -> AssistantMessageEvent:
        status_cls, timeout_cls, connection_cls = self._sdk_errors()
        if isinstance(exc, status_cls) or (
            isinstance(getattr(exc, "body", None), Mapping) and not isinstance(exc, connection_cls)
        ):
            # a status error, or an SDK error built from an error object inside a 200 stream
            status = int(getattr(exc, "status_code", 0) or 0) or None
            body = getattr(exc, "body", None)
            api_message, err_type = _body_error(body)
            if status == 200 or status is None:  # an error event inside a 200 stream
                status = _ERROR_TYPE_STATUS.get(err_type or "", status)
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None)
            err_type = err_type or _amzn_error_type(headers)
            text = api_message or getattr(exc, "message", None) or error_text(exc)
            prefix = f"HTTP {status}" if status else "API error"
            if err_type:
                prefix += f" ({err_type})"
            return builder.error(
                f"{prefix}: {text}",
                status=status,
                retryable=error_retryable(status, headers),
                retry_after_s=parse_retry_after(headers),
            )
        if isinstance(exc, timeout_cls | TimeoutError) or _is_httpx2(exc, "TimeoutException"):
            return builder.error(f"request timed out: {error_text(exc)}", retryable=True)
        if isinstance(exc, connection_cls) or _is_httpx2(exc, "TransportError"):
            cause = exc.__cause__
            detail = f" ({error_text(cause)})" if cause is not None else ""
            return builder.error(f"connection error: {error_text(exc)}{detail}", retryable=True)
        if isinstance(exc, json.JSONDecodeError) or _is_eventstream_error(exc):
            return builder.error(f"malformed stream frame: {error_text(exc)}", retryable=True)
        return builder.error(f"{type(exc).__name__}: {error_text(exc)}")


async def _settle(pump: asyncio.Future[None]) -> None:
    """Wait for the (cancelled) pump task; a cancellation of *our* task still propagates."""
    try:
        await pump
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise
    except Exception:
        pass


def openai_usage(raw: Any, input_key: str, output_key: str) -> Usage:
    """OpenAI usage (Chat: ``prompt_tokens``/``completion_tokens``; Responses: ``input_tokens``/
    ``output_tokens``).  OpenAI counts cached tokens inside the input; we report them apart."""
    if not isinstance(raw, dict):
        return Usage()
    details = raw.get(f"{input_key}_details") or {}
    cached = int(details.get("cached_tokens") or 0)
    return Usage(
        input_tokens=int(raw.get(input_key) or 0) - cached,
        output_tokens=int(raw.get(output_key) or 0),
        cache_read_tokens=cached,
    )


class OpenAISDKProvider(SDKProvider):
    """What both OpenAI adapters share: the ``openai`` SDK's client (``AsyncOpenAI``) and error
    classes, and a request that differs between the two APIs only in the fields carrying the
    conversation (``_history``), the wire format of the tools and the name of the output-token
    limit.

    ``OpenAIChatProvider(client=None, *, api_key=None, base_url=None, stream=True,
    max_retries=0, **client_kwargs)``, likewise ``OpenAIResponsesProvider``: see
    :class:`SDKProvider`.
    """

    provider_name = "openai"
    wire_api: ClassVar[WireAPI]
    max_tokens_field: ClassVar[str]

    def _history(self, context: Context) -> dict[str, Any]:
        """The request fields that carry the system prompt and the messages."""
        raise NotImplementedError

    def build_request(self, model: str, context: Context, options: StreamOptions) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": model,
            **self._history(context),
            **tools_fragment(
                self.wire_api, context.tools, options.tool_choice, options.parallel_tool_calls
            ),
        }
        if options.max_tokens is not None:
            params[self.max_tokens_field] = options.max_tokens
        if options.temperature is not None:
            params["temperature"] = options.temperature
        if options.extras:
            params["extra_body"] = dict(options.extras)
        return params

    def _make_client(self, **kwargs: Any) -> Any:
        import openai

        return openai.AsyncOpenAI(**with_metered_http_client(kwargs, openai))

    def _sdk_errors(self) -> tuple[type[BaseException], type[BaseException], type[BaseException]]:
        import openai

        return openai.APIStatusError, openai.APITimeoutError, openai.APIConnectionError


def with_metered_http_client(kwargs: dict[str, Any], sdk: Any) -> dict[str, Any]:
    """``kwargs`` for an OpenAI or Anthropic SDK client with, unless the caller gave one, the
    SDK's own default HTTP client built on a :func:`metered_transport` (the SDK's connection
    limits kept), so ``max_event_bytes`` holds on every stream the client makes."""
    if kwargs.get("http_client") is not None:
        return kwargs
    default = sdk.DefaultAsyncHttpxClient
    library = http_library(default)
    if library is None:  # an SDK on an HTTP library we do not know: its own client, unbounded
        return kwargs
    inner = library.AsyncHTTPTransport(limits=sdk.DEFAULT_CONNECTION_LIMITS)
    return {**kwargs, "http_client": default(transport=metered_transport(inner))}


def is_transport_error(exc: BaseException) -> str | None:
    """``"timeout"`` / ``"connection"`` when ``exc`` is an ``httpx``, ``httpx2`` or ``aiohttp``
    transport failure (the SDKs run on any of them: google-genai picks aiohttp when it is
    installed), else ``None``.  Decided from the class hierarchy, so no HTTP library is imported
    here."""
    names = {
        cls.__name__
        for cls in type(exc).__mro__
        if cls.__module__.split(".")[0] in ("httpx", "httpx2", "aiohttp")
    }
    if not names:
        return None
    if names & {"TimeoutException", "ServerTimeoutError"}:
        return "timeout"
    if names & {"TransportError", "StreamError", "ClientConnectionError", "ClientPayloadError"}:
        return "connection"
    return None


def _is_eventstream_error(exc: BaseException) -> bool:
    """A botocore event-stream framing error (bad CRC, cut message): the Anthropic SDK's
    Bedrock client decodes InvokeModel streams with botocore and lets these through."""
    return any(
        cls.__module__ == "botocore.eventstream" and cls.__name__ == "ParserError"
        for cls in type(exc).__mro__
    )


def _is_httpx2(exc: BaseException, name: str) -> bool:
    import httpx2  # the SDKs' transport; only reached after an SDK call failed

    cls = getattr(httpx2, name, None)
    return isinstance(cls, type) and isinstance(exc, cls)


def _amzn_error_type(headers: object) -> str | None:
    """The AWS error type of an answer whose body has none: Bedrock (Claude through the
    ``anthropic`` SDK's Bedrock client) sends ``{"message": ...}`` and names the type only in
    ``x-amzn-ErrorType`` (``ThrottlingException:http://internal.amazon.com/...``), cut at ``:``."""
    if not isinstance(headers, Mapping):
        return None
    raw = headers.get("x-amzn-errortype") or headers.get("x-amzn-ErrorType")
    if not isinstance(raw, str):
        return None
    return raw.split(":", 1)[0].strip() or None


def _body_error(body: object) -> tuple[str | None, str | None]:
    """(message, type) from an API error body: ``{"message", "type"}`` (OpenAI, already
    unwrapped by the SDK) or ``{"type": "error", "error": {"type", "message"}}`` (Anthropic).
    A body the SDK kept as text because a byte-order mark stopped its JSON parser is parsed
    here."""
    if isinstance(body, str) and body.startswith("\ufeff"):
        text = body[1:]
        try:
            body = json.loads(text)
        except ValueError:
            body = text
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        message = body.get("message")
        err_type = body.get("type") or body.get("code")
        return (
            message if isinstance(message, str) and message else None,
            err_type if isinstance(err_type, str) and err_type != "error" else None,
        )
    if isinstance(body, str) and body.strip():
        return clip(body.strip(), 500), None
    return None, None
