"""``ScriptedProvider``: a fake model that plays an ordered script of turns.

It goes through the same ``MessageBuilder`` as the real adapters, so the event sequence the loop
sees is the one a real stream produces.  Every request is recorded (a snapshot of the history,
the tools, ``tool_choice``…) for assertions.  It is strict: a model call beyond the script is an
``UnexpectedModelCall`` (the call ends with an ``error`` turn naming it, and ``assert_complete()``
raises it), and turns left over at the end are ``UnconsumedTurns``.

    provider = ScriptedProvider([
        turn(call("add", {"a": 1, "b": 2})),
        turn("The answer is 3."),
    ])
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from openprogram import _fastjson
from openprogram.cancel import CancelToken
from openprogram.events import AssistantMessageEvent
from openprogram.providers.base import Context, MessageBuilder, StreamOptions, ToolChoice
from openprogram.texts import ABORTED_TEXT
from openprogram.types import Message, TextContent, ThinkingContent, ToolSpec, Usage

from .offered import menu_violation
from .script_errors import (
    ScriptError,
    ToolNotOffered,
    UnconsumedTurns,
    UnexpectedModelCall,
    summarize_message,
)


@dataclass(slots=True)
class ScriptedCall:
    """A scripted tool call.  ``id=None`` gets a deterministic id (``call_0``, ``call_1``, …,
    counted per provider).  ``raw`` sends argument text verbatim (e.g. invalid JSON) instead of
    ``json.dumps(arguments)``.  ``unknown=True`` says the call names a tool the model call does
    not offer on purpose (to test the "not found" path); without it such a call is refused
    (``ToolNotOffered``), as a scenario refuses one without ``unknown_tool: true``."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    id: str | None = None
    raw: str | None = None
    unknown: bool = False

    @property
    def argument_text(self) -> str:
        return self.raw if self.raw is not None else _fastjson.dumps(self.arguments)


@dataclass(slots=True)
class ScriptedThinking:
    text: str
    signature: str | None = None
    redacted: bool = False


Part: TypeAlias = str | TextContent | ThinkingContent | ScriptedThinking | ScriptedCall


@dataclass(slots=True)
class ScriptedTurn:
    """One model response.

    - ``parts``: text, thinking and tool calls, streamed in order.
    - ``stop``: the terminal reason (default: ``toolUse`` with tool calls, else ``stop``).
    - ``error``/``error_status``/``error_retryable``/``error_retry_after_s``: end with an ``error``
      event after streaming ``parts`` (``aborted=True`` makes it an ``aborted`` stop).
    - ``cut``: the stream ends after ``parts`` with no terminal event.
    - ``raises``: the provider raises this exception after streaming ``parts``.
    - ``chunk_size``: split text and argument JSON into deltas of this many characters.
    - ``delay_s``: sleep before every event.
    """

    parts: list[Part] = field(default_factory=list)
    stop: Literal["stop", "length", "toolUse"] | None = None
    usage: Usage | None = None
    error: str | None = None
    error_status: int | None = None
    error_retryable: bool | None = None
    error_retry_after_s: float | None = None
    aborted: bool = False
    cut: bool = False
    raises: BaseException | None = None
    chunk_size: int | None = None
    delay_s: float | None = None


class ModelRequest:
    """What one model call received (a snapshot: later rounds do not change it).

    The scripted provider records one per model call, so it does not copy the history each
    time: ``messages`` is a prefix (the first ``len`` messages at the time of the call) of one
    list the provider only ever appends to, and requests with an unchanged tool list share one
    copy of it.  A copy per call kept every in-flight run's whole history alive once per round,
    which the cyclic collector then walked (see ``docs/decisions.md``, "Concurrent runs and the
    collector").  ``messages`` and ``tools`` return a fresh list on each access.
    """

    __slots__ = (
        "_history",
        "_length",
        "_tools",
        "extras",
        "index",
        "max_tokens",
        "model",
        "parallel_tool_calls",
        "system_prompt",
        "temperature",
        "tool_choice",
    )

    def __init__(
        self,
        index: int,
        model: str,
        system_prompt: str | None,
        messages: Sequence[Message],
        tools: Sequence[ToolSpec],
        tool_choice: ToolChoice | None,
        parallel_tool_calls: bool | None,
        max_tokens: int | None = None,
        temperature: float | None = None,
        extras: dict[str, Any] | None = None,
    ) -> None:
        self.index = index
        self.model = model
        self.system_prompt = system_prompt
        self._history: list[Message] = list(messages)
        self._length = len(self._history)
        self._tools: list[ToolSpec] = list(tools)
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.extras: dict[str, Any] = {} if extras is None else extras

    @classmethod
    def shared(
        cls,
        index: int,
        model: str,
        system_prompt: str | None,
        history: list[Message],
        length: int,
        tools: list[ToolSpec],
        tool_choice: ToolChoice | None,
        parallel_tool_calls: bool | None,
        max_tokens: int | None,
        temperature: float | None,
        extras: dict[str, Any],
    ) -> ModelRequest:
        """A request whose messages are ``history[:length]`` and whose tools are ``tools``,
        without copying either: the caller promises never to change the first ``length``
        entries of ``history`` (it may append) nor ``tools``."""
        self = cls.__new__(cls)
        self.index = index
        self.model = model
        self.system_prompt = system_prompt
        self._history = history
        self._length = length
        self._tools = tools
        self.tool_choice = tool_choice
        self.parallel_tool_calls = parallel_tool_calls
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.extras = extras
        return self

    @property
    def messages(self) -> list[Message]:
        return self._history[: self._length]

    @messages.setter
    def messages(self, value: Sequence[Message]) -> None:
        self._history = list(value)
        self._length = len(self._history)

    @property
    def tools(self) -> list[ToolSpec]:
        return list(self._tools)

    @tools.setter
    def tools(self, value: Sequence[ToolSpec]) -> None:
        self._tools = list(value)

    @property
    def last_message(self) -> Message | None:
        return self._history[self._length - 1] if self._length else None

    @property
    def tool_names(self) -> list[str]:
        return [t.name for t in self._tools]

    def _fields(self) -> tuple[Any, ...]:
        return (
            self.index,
            self.model,
            self.system_prompt,
            self.messages,
            self._tools,
            self.tool_choice,
            self.parallel_tool_calls,
            self.max_tokens,
            self.temperature,
            self.extras,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ModelRequest):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value

    def __repr__(self) -> str:
        return (
            f"ModelRequest(index={self.index!r}, model={self.model!r}, "
            f"system_prompt={self.system_prompt!r}, messages={self.messages!r}, "
            f"tools={self._tools!r}, tool_choice={self.tool_choice!r}, "
            f"parallel_tool_calls={self.parallel_tool_calls!r}, max_tokens={self.max_tokens!r}, "
            f"temperature={self.temperature!r}, extras={self.extras!r})"
        )


Responder: TypeAlias = Callable[
    [ModelRequest], "ScriptedTurn | str | Awaitable[ScriptedTurn | str]"
]
TurnLike: TypeAlias = "ScriptedTurn | str | Responder"


# -- builders ---------------------------------------------------------------------------------


def call(
    name: str,
    arguments: dict[str, Any] | None = None,
    *,
    id: str | None = None,
    raw: str | None = None,
    unknown: bool = False,
) -> ScriptedCall:
    """A scripted call of tool ``name`` (``unknown=True``: deliberate, see ``ScriptedCall``)."""
    return ScriptedCall(name, dict(arguments or {}), id, raw, bool(unknown))


def think(text: str, *, signature: str | None = None, redacted: bool = False) -> ScriptedThinking:
    return ScriptedThinking(text=text, signature=signature, redacted=redacted)


def turn(
    *parts: Part,
    stop: Literal["stop", "length", "toolUse"] | None = None,
    usage: Usage | None = None,
    chunk_size: int | None = None,
    delay_s: float | None = None,
    cut: bool = False,
) -> ScriptedTurn:
    return ScriptedTurn(
        parts=list(parts), stop=stop, usage=usage, chunk_size=chunk_size, delay_s=delay_s, cut=cut
    )


def error_turn(
    message: str = "provider error",
    *parts: Part,
    status: int | None = None,
    retryable: bool | None = None,
    retry_after_s: float | None = None,
) -> ScriptedTurn:
    return ScriptedTurn(
        parts=list(parts),
        error=message,
        error_status=status,
        error_retryable=retryable,
        error_retry_after_s=retry_after_s,
    )


def aborted_turn(*parts: Part, message: str = ABORTED_TEXT) -> ScriptedTurn:
    return ScriptedTurn(parts=list(parts), error=message, aborted=True)


def cut_turn(*parts: Part, chunk_size: int | None = None) -> ScriptedTurn:
    return ScriptedTurn(parts=list(parts), cut=True, chunk_size=chunk_size)


def raising_turn(exc: BaseException, *parts: Part) -> ScriptedTurn:
    return ScriptedTurn(parts=list(parts), raises=exc)


# -- the provider -----------------------------------------------------------------------------


class ScriptedProvider:
    """Plays ``turns`` in order, one per model call.  A turn may be a ``ScriptedTurn``, a plain
    string (a text reply) or a responder ``fn(request) -> turn`` computed from the request."""

    def __init__(
        self,
        turns: Iterable[TurnLike] = (),
        *,
        chunk_size: int | None = None,
        delay_s: float = 0.0,
        strict: bool = True,
        name: str = "scripted",
        api: str = "scripted",
    ) -> None:
        self.turns: list[TurnLike] = list(turns)
        self.chunk_size = chunk_size
        self.delay_s = delay_s
        self.strict = strict
        self.name = name
        self.api = api
        self.requests: list[ModelRequest] = []
        self.violations: list[ScriptError] = []
        self._played = 0
        self._next_id = 0
        self._reported = 0
        self._history: list[Message] = []
        self._tools: list[ToolSpec] | None = None

    # -- script management ----------------------------------------------------------------
    def add(self, *turns: TurnLike) -> ScriptedProvider:
        self.turns.extend(turns)
        return self

    @property
    def played(self) -> int:
        return self._played

    @property
    def remaining(self) -> int:
        return len(self.turns) - self._played

    def assert_complete(self) -> None:
        """Raise the first strictness violation not raised yet (see ``raise_new_violations``),
        or ``UnconsumedTurns`` if turns are left."""
        __tracebackhide__ = True
        self.raise_new_violations()
        if self.remaining > 0:
            left = ", ".join(describe_turn(t) for t in self.turns[self._played :])
            raise UnconsumedTurns(
                f"{self.remaining} scripted turn(s) were never played "
                f"(played {self._played} of {len(self.turns)}): {left}"
            )

    def raise_new_violations(self) -> None:
        """Raise the first violation (an unexpected model call) not raised before.  The runner
        fixtures call it right after a run, so the test fails there, naming the model call,
        instead of at teardown; a violation is raised once."""
        __tracebackhide__ = True
        if self._reported < len(self.violations):
            first = self.violations[self._reported]
            self._reported = len(self.violations)
            raise first

    # -- the provider contract --------------------------------------------------------------
    def stream(
        self, model: str, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        return _Playback(self, model, context, options)

    def _record(self, model: str, context: Context, options: StreamOptions) -> ModelRequest:
        """Record what this model call received (when its stream is first iterated)."""
        # positional: once per model call, and keyword calls cost twice as much
        request = ModelRequest.shared(
            len(self.requests),  # index
            model,
            context.system_prompt,
            self._snapshot_history(context.messages),
            len(context.messages),
            self._snapshot_tools(context.tools),
            options.tool_choice,
            options.parallel_tool_calls,
            options.max_tokens,
            options.temperature,
            dict(options.extras),
        )
        self.requests.append(request)
        return request

    def _snapshot_history(self, messages: list[Message]) -> list[Message]:
        """The provider's own append-only copy of ``messages``, whose first ``len(messages)``
        entries are this call's snapshot.  While the caller only appends (the loop does, within
        a run), only the new tail is copied; a history changed in any other way (edited,
        shortened, another run's) starts a new copy, so earlier snapshots never change."""
        history = self._history
        known = len(history)
        if known and len(messages) >= known and messages[known - 1] is history[-1]:
            # The new tail goes on first, so that the comparison is of two lists of one
            # length: pointer by pointer in C, identical entries never touched, where comparing
            # against ``messages[:known]`` built that slice, a reference taken and dropped on
            # every message of the history, each round.  Earlier snapshots read only their own
            # prefix, so a tail taken back after a failed comparison never reaches them.
            if len(messages) > known:
                history.extend(messages[known:])
            if history == messages:
                return history
            del history[known:]
        history = self._history = list(messages)
        return history

    def _snapshot_tools(self, tools: list[ToolSpec]) -> list[ToolSpec]:
        """A copy of ``tools``, shared by consecutive requests offering the same specs."""
        previous = self._tools
        if previous is not None and len(previous) == len(tools) and previous == tools:
            return previous
        copy = self._tools = list(tools)
        return copy

    def _events(
        self, builder: MessageBuilder, scripted: ScriptedTurn, chunk: int | None
    ) -> Iterator[AssistantMessageEvent]:
        yield builder.start()
        for part in scripted.parts:
            if isinstance(part, ScriptedCall):  # (the kinds are disjoint: the commonest first)
                call_id = part.id if part.id is not None else self._new_id()
                index, event = builder.toolcall_start(call_id, part.name)
                yield event
                text = part.argument_text
                if text:
                    if chunk and 0 < chunk < len(text):
                        for piece in chunk_text(text, chunk):
                            yield builder.toolcall_delta(index, piece)
                    else:
                        yield builder.toolcall_delta(index, text)
                yield builder.toolcall_end(index)
            elif isinstance(part, _TEXT_PARTS):
                text = part if isinstance(part, str) else part.text
                index, event = builder.text_start()
                yield event
                for piece in chunk_text(text, chunk):
                    yield builder.text_delta(index, piece)
                yield builder.text_end(index)
            elif isinstance(part, _THINKING_PARTS):
                text = part.text if isinstance(part, ScriptedThinking) else part.thinking
                index, event = builder.thinking_start(redacted=part.redacted)
                yield event
                for piece in chunk_text(text, chunk):
                    yield builder.thinking_delta(index, piece)
                yield builder.thinking_end(index, part.signature)
            else:
                raise TypeError(f"unsupported scripted part {part!r}")

    def _new_id(self) -> str:
        value = f"call_{self._next_id}"
        self._next_id += 1
        return value


class _Playback:
    """One scripted model call: the events of its turn, as an async iterator.

    A class, not an async generator, because one is built per model call: an async generator
    also costs asyncio's first-iteration hook (a weak reference added to, and later removed
    from, the event loop's set of live generators) and, as the loop leaves a stream at its
    terminal event, a ``GeneratorExit`` thrown through its frame when the loop closes it
    (``docs/decisions.md``, "The loop's own cost per round").  It behaves as the generator did:
    nothing happens (the request is not recorded) until it is first iterated; each event is
    built when it is asked for, so the partial message grows as it would on the wire; a cancel
    token set while it streams ends it with an ``aborted`` event; after its terminal event, a
    cut or a scripted exception it is over.  It has no ``aclose``: there is nothing to release.
    """

    __slots__ = (
        "_builder",
        "_cancel",
        "_context",
        "_delay",
        "_events",
        "_index",
        "_model",
        "_options",
        "_provider",
        "_turn",
    )

    def __init__(
        self, provider: ScriptedProvider, model: str, context: Context, options: StreamOptions
    ) -> None:
        self._provider: ScriptedProvider | None = provider  # None once begun
        self._model = model
        self._context = context
        self._options = options
        self._events: Iterator[AssistantMessageEvent] | None = None  # None when not playing
        self._turn: ScriptedTurn | None = None
        self._builder: MessageBuilder | None = None
        self._cancel: CancelToken | None = None
        self._delay = 0.0
        self._index = 0  # the request's index, once recorded

    def __aiter__(self) -> _Playback:
        return self

    async def __anext__(self) -> AssistantMessageEvent:
        events = self._events
        if events is None:
            if self._provider is None:  # over: after its terminal event, or a raise
                raise StopAsyncIteration
            provider = self._provider
            self._provider = None  # begun: from here on, a raise (a responder's) ends the stream
            turn = self._begin(provider)
            if turn is None:  # past the script: the error turn is set up
                events = self._events
            else:
                if not isinstance(turn, ScriptedTurn):  # an async responder's awaitable
                    turn = _as_turn(await turn)
                events = self._events = self._play(provider, turn)
            assert events is not None
        event = next(events, None)
        if event is not None:
            if self._delay:
                await asyncio.sleep(self._delay)
            cancel = self._cancel
            if cancel is not None and cancel.is_set():
                self._events = None
                return self._builder.aborted()  # type: ignore[union-attr]
            return event
        # the parts are played: the turn's ending
        self._events = None
        scripted: ScriptedTurn = self._turn  # type: ignore[assignment]
        if scripted.raises is not None:
            raise scripted.raises
        if scripted.cut:
            raise StopAsyncIteration
        if self._delay:
            await asyncio.sleep(self._delay)
        builder: MessageBuilder = self._builder  # type: ignore[assignment]
        if scripted.error is not None:
            return builder.error(
                scripted.error,
                reason="aborted" if scripted.aborted else "error",
                status=scripted.error_status,
                retryable=scripted.error_retryable,
                retry_after_s=scripted.error_retry_after_s,
            )
        return builder.done(scripted.stop, scripted.usage)

    def _begin(self, provider: ScriptedProvider) -> ScriptedTurn | Awaitable[Any] | None:
        """Record the request and pick the turn: what a responder returned, or its awaitable
        (an async responder, awaited by ``__anext__``; a plain function so that the others
        cost no coroutine per model call).  Past the end of the script the turn is an error
        naming the unexpected call (recorded as a violation), set up here to be played without
        delays or cancel checks (``None`` is returned)."""
        request = provider._record(self._model, self._context, self._options)
        self._index = request.index
        if provider._played >= len(provider.turns):
            violation = UnexpectedModelCall(
                f"unexpected model call #{request.index} (0-based): the script has "
                f"{len(provider.turns)} turn(s), all played; "
                f"last message: {summarize_message(request.last_message)}"
            )
            provider.violations.append(violation)
            scripted = self._turn = ScriptedTurn(error=str(violation))
            builder = self._builder = MessageBuilder(self._model, provider.name, provider.api)
            self._events = provider._events(builder, scripted, None)
            return None
        spec = provider.turns[provider._played]
        provider._played += 1
        if type(spec) is ScriptedTurn:
            return spec
        value = _respond(spec, request)
        if type(value) is ScriptedTurn:
            return value
        if not isinstance(value, _TURN_VALUES) and inspect.isawaitable(value):
            return value
        return _as_turn(value)

    def _play(
        self, provider: ScriptedProvider, scripted: ScriptedTurn
    ) -> Iterator[AssistantMessageEvent]:
        """Start playing ``scripted``: the events of its parts, built one at a time.  A call
        the request's menu contradicts (``ToolNotOffered``) is refused: the turn becomes an
        error naming it, recorded as a violation."""
        calls = [(p.name, p.unknown) for p in scripted.parts if isinstance(p, ScriptedCall)]
        refused = menu_violation(
            calls, self._context.tools, self._index, provider._played - 1, self._context.messages
        )
        if refused is not None:
            provider.violations.append(refused)
            scripted = ScriptedTurn(error=str(refused))
        self._turn = scripted
        builder = self._builder = MessageBuilder(self._model, provider.name, provider.api)
        self._cancel = self._options.cancel
        self._delay = scripted.delay_s if scripted.delay_s is not None else provider.delay_s
        chunk = scripted.chunk_size if scripted.chunk_size is not None else provider.chunk_size
        return provider._events(builder, scripted, chunk)


_TURN_VALUES = (ScriptedTurn, str)
_TEXT_PARTS = (str, TextContent)
_THINKING_PARTS = (ScriptedThinking, ThinkingContent)
"""Tuples, not ``X | Y``: a union written inside ``isinstance`` is rebuilt on every call, and
these checks run for every part of every scripted turn."""


def _respond(spec: TurnLike, request: ModelRequest) -> Any:
    """A scripted turn as it is, or what its responder returns (possibly an awaitable)."""
    if callable(spec) and not isinstance(spec, ScriptedTurn):
        return spec(request)
    return spec


async def resolve_turn(spec: TurnLike, request: ModelRequest) -> ScriptedTurn:
    """The turn for ``request``, awaiting an async responder (used off the hot path: the
    emulator's handler threads)."""
    value = _respond(spec, request)
    if not isinstance(value, _TURN_VALUES) and inspect.isawaitable(value):
        value = await value
    return _as_turn(value)


def _as_turn(value: Any) -> ScriptedTurn:
    """What a turn entry (or its responder) produced, as a ``ScriptedTurn``."""
    if isinstance(value, ScriptedTurn):
        return value
    if isinstance(value, str):
        return ScriptedTurn(parts=[value])
    raise TypeError(f"a responder must return a ScriptedTurn or str, got {type(value).__name__}")


def chunk_text(text: str, size: int | None) -> Sequence[str]:
    """``text`` in pieces of ``size`` characters (one piece when ``size`` is unset): the deltas
    a scripted turn streams, shared by the provider emulator so both split text alike."""
    if not text:
        return ()
    if not size or size <= 0 or size >= len(text):
        return (text,)
    return [text[i : i + size] for i in range(0, len(text), size)]


def describe_turn(spec: TurnLike) -> str:
    """A short description of a script entry for "turns never requested" errors."""
    if isinstance(spec, str):
        return f"text {spec[:30]!r}"
    if isinstance(spec, ScriptedTurn):
        kinds = [
            f"call {p.name}"
            if isinstance(p, ScriptedCall)
            else "text"
            if isinstance(p, str | TextContent)
            else "thinking"
            for p in spec.parts
        ]
        if spec.error is not None:
            kinds.append("error")
        return "[" + ", ".join(kinds) + "]"
    return f"responder {getattr(spec, '__name__', spec)!r}"


__all__ = [
    "ModelRequest",
    "Responder",
    "ScriptError",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedThinking",
    "ScriptedTurn",
    "ToolNotOffered",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "aborted_turn",
    "call",
    "chunk_text",
    "cut_turn",
    "describe_turn",
    "error_turn",
    "raising_turn",
    "resolve_turn",
    "summarize_message",
    "think",
    "turn",
]
