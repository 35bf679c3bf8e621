"""``Runtime``: ``exec``/``aexec`` — one call, one run of the loop.

``runtime.exec(content, ...)`` resolves a tool menu, validates ``tool_choice``, runs
``openprogram.loop.agent_loop`` on a fresh conversation (system prompt + ``content``) and returns
the text of the last assistant message.  Everything that can be checked is checked before the
first model call.

Tool menu, in order:

1. ``tools=[...]`` (explicit entries; ``[]`` = no tools) or ``toolset="name"`` (``"full"``,
   ``"none"`` or a registry toolset); passing both is a ``ValueError``;
2. otherwise, inside a tool body run by an outer ``exec``: the outer call's menu, inherited through
   the ``_current_tools`` context variable (the menu *after* the outer trimming, so a nested call
   never offers more than its parent was allowed);
3. otherwise the registry's ``"full"`` toolset — tools are on by default;

then ``tools_source``/``tools_deny``/``tools_allow`` trim it (``openprogram.registry.trim_tools``).
Tool groups (an ``MCPConnection`` in ``tools=``; the toolsets ``"mcp"``/``"mcp:{name}"`` and the
MCP servers attached with ``mcp_servers=``) are opened first, once per ``exec``
(``openprogram.groups``); ``close()``/``with`` closes the attached servers.

Nesting: each ``exec`` runs one layer deeper; more than ``max_depth`` layers (default 5, the
outermost counts) raise ``RecursionError`` before any model call.  Context variables are set
with tokens and reset in ``finally``, so neither an error nor a concurrent run (asyncio task or
thread) ever sees another run's tools or depth.  A sync ``exec`` goes through
``openprogram.run_sync`` (safe inside a running loop).

Runs: every loop run an ``exec`` starts (the work run, nested runs, each ask of a ``choices=``
decision) gets a ``RunInfo``; ``on_run_event`` / ``observe()`` receive ``(RunInfo, event)`` for all
of them.  Queues: ``steer()`` and ``follow_up()`` feed the outermost work run (docs/decisions.md).
``choices=[...]``: see ``openprogram.choices``.
"""

from __future__ import annotations

import contextlib
import inspect
import itertools
import sys
import threading
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

from ._sync import sync_twin
from .approvals import ApprovalGate, check_timeout, overriding_gate
from .cancel import CancelToken
from .choices import CHOOSE_TOOL, Choice, DecisionError, build_choices, decide
from .config import (
    check_max_iterations,
    check_parallel_tool_calls,
    check_tool_timeout,
    normalize_tool_choice,
)
from .events import AgentEvent, ToolExecutionStart
from .functions import current_runtime
from .gating import check_flag
from .gating import names as tool_names
from .groups import ServerOwner, check_servers, open_groups
from .loop import AgentContext, AgentStream, LoopConfig, SteeringMode, agent_loop
from .outcome import ProviderError, RunRecord, last_assistant, raise_for_termination
from .providers.base import Provider, ToolChoice
from .registry import Registry, default_registry, resolve_menu
from .runs import (
    DrainMode,
    HandoverObserver,
    MessageQueue,
    MessageSource,
    RunInfo,
    RunKind,
    check_drain_mode,
    check_steering_mode,
    polls_source,
    with_queue,
)
from .tool_search import LoadedTools, offer, with_catalog
from .tools import AgentTool, normalize_tools
from .types import Message, UserMessage, user_messages

if TYPE_CHECKING:
    from .mcp import MCPConnection

DEFAULT_MAX_DEPTH = 5

STACK_RESERVE = 150
"""Interpreter frames a nested ``exec`` must have left under the recursion limit to start: one
level of a run (the loop, a model call through an SDK adapter, a tool call, the event hooks)
takes about 40, and the rest is room for the program's own code."""


class NestingTooDeep(BaseException):
    """A nested ``exec`` the interpreter's stack cannot hold: ``max_depth`` allows it, but fewer
    than ``STACK_RESERVE`` frames are left under ``sys.getrecursionlimit()``.  Started anyway,
    the run would hit ``RecursionError`` somewhere inside (a model call, a tool call) and have
    it fed back to the model as an ordinary error while every run went on.  A ``BaseException``
    (like ``KeyboardInterrupt``), so that a tool answering every ``Exception`` cannot swallow
    it: every run up to the caller of the outermost ``exec`` ends ``aborted`` and re-raises
    it.  Carries the ``depth`` reached, ``max_depth`` and the ``recursion_limit``."""

    def __init__(self, depth: int, max_depth: int, recursion_limit: int) -> None:
        self.depth = depth
        self.max_depth = max_depth
        self.recursion_limit = recursion_limit
        super().__init__(
            f"Runtime.exec nesting reached depth {depth} of max_depth={max_depth}, and the "
            f"interpreter's recursion limit ({recursion_limit}) leaves no room for another "
            "level: lower max_depth, or raise the limit with sys.setrecursionlimit"
        )


RunObserver = Callable[[RunInfo, AgentEvent], Any]
"""Receives every event of every run with the run's ``RunInfo``; may be async (awaited).  One
with a ``handed_over`` method (a ``HandoverObserver``) is told each ``Handover`` too."""


_current_tools: ContextVar[tuple[AgentTool, ...] | None] = ContextVar(
    "openprogram_current_tools", default=None
)
"""The tool menu of the ``exec`` whose tool body is running (``None`` outside any run)."""
_current_depth: ContextVar[int] = ContextVar("openprogram_exec_depth", default=0)
_current_cancel: ContextVar[CancelToken | None] = ContextVar(
    "openprogram_exec_cancel", default=None
)


def _stack_depth() -> int:
    """Frames on this thread's stack (what the recursion limit counts): walked once per nested
    ``exec``, a few dozen frames per level."""
    frame = sys._getframe()
    count = 0
    while frame is not None:
        count += 1
        frame = frame.f_back  # type: ignore[assignment]
    return count


class _ActiveRun:
    """The running work run of an ``exec`` and the tool call it is executing (seen from its
    events), so a nested ``exec`` started by that call can name its parent.  (Not the loop's
    ``openprogram.calls.RunState``, the mutable state inside one run of the loop.)"""

    __slots__ = ("call_id", "call_name", "info")

    def __init__(self, info: RunInfo) -> None:
        self.info = info
        self.call_id: str | None = None
        self.call_name: str | None = None


_current_run: ContextVar[_ActiveRun | None] = ContextVar("openprogram_exec_run", default=None)

_override: ContextVar[tuple[Provider | None, str | None] | None] = ContextVar(
    "openprogram_runtime_override", default=None
)
"""``(provider, model)`` that every run started in this context uses instead of its runtime's own
(``Runtime.override``); ``None`` for either keeps the runtime's."""
_observing: ContextVar[tuple[RunObserver, ...]] = ContextVar(
    "openprogram_run_observers", default=()
)
"""Observers of every run of any ``Runtime`` started in this context (``Runtime.observe_all``)."""
_open_blocks = [0]
"""How many ``observe_all`` blocks are open in this process, in any context: a run that starts
while one is open and sees none in its own context warns that it is not observed."""
_open_blocks_lock = threading.Lock()

UNOBSERVED_RUN = (
    "a Runtime run started while a Runtime.observe_all block (capture_runs, a report option) is "
    "open, outside that block's context: the block does not see it. A thread started inside "
    "the block without a copy of the context runs outside it; start it with "
    "contextvars.copy_context().run(...) (or run the agent through asyncio.to_thread or "
    "openprogram.run_sync, which copy it)."
)
"""The ``RuntimeWarning`` of a run that an open ``observe_all`` block cannot see."""
_run_ids = itertools.count(1)


class Runtime(ServerOwner):
    """Runs ``exec`` calls against one provider and model.

    ``registry`` (default: the shared registry) supplies the ``"full"`` and named toolsets;
    ``tool_timeout_s``, ``steering_mode``, ``max_tokens``, ``temperature`` and ``extras`` go to
    every run's ``LoopConfig``; ``cancel`` is a default cancel token for its runs.
    ``approval_gate`` decides the calls of tools that require approval, within
    ``approval_timeout_s`` (``openprogram.approvals``).

    Observing: ``on_event`` receives every loop event of every run (nested ones included);
    ``on_run_event`` (and any callback registered with ``observe()``) receives
    ``(RunInfo, event)`` so nested runs can be told apart.

    Steering: ``steer()``/``follow_up()`` queue messages for the outermost work run, drained one
    per poll or all at once (``steering_drain``/``follow_up_drain``: ``"one_at_a_time"``, the
    default, or ``"all"``).  ``get_steering_messages``/``get_follow_up_messages`` are polled
    after the queues: in the outermost work run only, unless the source declares a parameter
    (it then receives a ``PollPoint`` naming the run and is polled in nested runs too).
    """

    def __init__(
        self,
        provider: Provider,
        model: str = "",
        *,
        system_prompt: str | None = None,
        max_depth: int = DEFAULT_MAX_DEPTH,
        registry: Registry | None = None,
        tool_timeout_s: float | None = None,
        steering_mode: SteeringMode = "skip",
        max_tokens: int | None = None,
        temperature: float | None = None,
        cancel: CancelToken | None = None,
        extras: dict[str, Any] | None = None,
        on_event: Callable[[AgentEvent], Any] | None = None,
        on_run_event: RunObserver | None = None,
        get_steering_messages: MessageSource | None = None,
        get_follow_up_messages: MessageSource | None = None,
        steering_drain: DrainMode = "one_at_a_time",
        follow_up_drain: DrainMode = "one_at_a_time",
        mcp_servers: Sequence[MCPConnection] = (),
        approval_gate: ApprovalGate | None = None,
        approval_timeout_s: float | None = None,
        disabled_tools: Sequence[str] = (),
        only_available: bool = False,
    ) -> None:
        if not hasattr(provider, "stream"):
            raise TypeError(f"provider {provider!r} has no stream(model, context, options) method")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be an int >= 1, got {max_depth!r}")
        check_steering_mode(steering_mode)
        check_tool_timeout(tool_timeout_s)
        for source in (
            get_steering_messages,
            get_follow_up_messages,
            on_event,
            on_run_event,
            approval_gate,
        ):
            if source is not None and not callable(source):
                raise TypeError(f"expected a callable, got {source!r}")
        check_drain_mode(steering_drain)
        check_drain_mode(follow_up_drain)
        self.provider = provider
        self.model = model
        self.system_prompt = system_prompt
        self.max_depth = max_depth
        self.registry = registry if registry is not None else default_registry
        self.tool_timeout_s = tool_timeout_s
        self.steering_mode: SteeringMode = steering_mode
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.cancel = cancel
        self.extras = dict(extras or {})
        self.on_event = on_event
        self.get_steering_messages = get_steering_messages
        self.get_follow_up_messages = get_follow_up_messages
        self.last_run: RunRecord | None = None
        self._observers: tuple[RunObserver, ...] = (on_run_event,) if on_run_event else ()
        self._steering = MessageQueue(steering_drain)
        self._follow_ups = MessageQueue(follow_up_drain)
        self.mcp_servers: tuple[MCPConnection, ...] = check_servers(mcp_servers)
        self.approval_gate = approval_gate
        self.approval_timeout_s = check_timeout(approval_timeout_s)
        self.disabled_tools: frozenset[str] = tool_names(disabled_tools, "disabled_tools")
        self.only_available = check_flag(only_available, "only_available")
        self.loaded_tools = LoadedTools()
        """The deferred tools ``tool_search`` has loaded in this runtime's runs: each run's
        provider array includes the ones loaded before it started (``clear()`` forgets)."""

    def __repr__(self) -> str:
        return f"Runtime(provider={self.provider!r}, model={self.model!r})"

    @staticmethod
    @contextlib.contextmanager
    def override(
        *,
        provider: Provider | None = None,
        model: str | None = None,
        approval_gate: ApprovalGate | None = None,
    ) -> Iterator[None]:
        """Every run of *any* ``Runtime`` started inside the ``with`` block uses ``provider`` (and
        ``model``) instead of its own, wherever that ``Runtime`` was built.

        Why: an application usually builds its ``Runtime`` (and a real provider) in its own code,
        often at import time, where a test cannot hand it a fake; this swaps the model for the
        test without touching the application, as pydantic-ai's ``Agent.override`` does.  The
        override lives in a context variable, so it reaches nested runs, tool bodies on other
        threads (their context is copied) and asyncio tasks started inside, and never a
        concurrent run outside the block.  Blocks nest; the innermost wins, field by field.
        ``approval_gate`` replaces the approval gate of every loop run started inside the same
        way, ``agent_loop`` runs included (a test's scripted reviewer, ``openprogram.approvals``).
        """
        if provider is not None and not hasattr(provider, "stream"):
            raise TypeError(f"provider {provider!r} has no stream(model, context, options) method")
        if model is not None and not isinstance(model, str):
            raise TypeError(f"model must be a str, got {type(model).__name__}")
        outer = _override.get()
        if outer is not None:
            provider = provider if provider is not None else outer[0]
            model = model if model is not None else outer[1]
        token = _override.set((provider, model))
        try:
            if approval_gate is None:
                yield
            else:
                with overriding_gate(approval_gate):
                    yield
        finally:
            _override.reset(token)

    @staticmethod
    @contextlib.contextmanager
    def observe_all(observer: RunObserver) -> Iterator[RunObserver]:
        """Call ``observer(run_info, event)`` for every event of every run of *any* ``Runtime``
        started inside the ``with`` block, wherever that ``Runtime`` was built; an observer with
        a ``handed_over`` method is told each ``Handover`` too, as with ``observe()``.

        Why: a test that calls an application's own entry point cannot reach the ``Runtime`` the
        application builds (often at import time) to ``observe()`` it; this sees its runs
        anyway, as ``override`` swaps its provider.  The observer lives in a context variable,
        so it reaches nested runs, tool bodies on other threads and asyncio tasks started
        inside, and never a concurrent run outside the block.  A run reads the observers once,
        when it starts.  Blocks nest; every open block's observer is called.  A plain
        ``threading.Thread`` starts with an empty context, so a run on one started inside the
        block is outside it: such a run (any run that starts while a block is open somewhere in
        the process and sees none) warns ``UNOBSERVED_RUN`` rather than go missing unseen."""
        if not callable(observer):
            raise TypeError(f"observe_all() takes a callable, got {observer!r}")
        token = _observing.set((*_observing.get(), observer))
        with _open_blocks_lock:
            _open_blocks[0] += 1
        try:
            yield observer
        finally:
            with _open_blocks_lock:
                _open_blocks[0] -= 1
            _observing.reset(token)

    @property
    def active_provider(self) -> Provider:
        """The provider this runtime's runs use here: an enclosing ``Runtime.override``'s, else
        its own."""
        override = _override.get()
        return override[0] if override is not None and override[0] is not None else self.provider

    # -- observing and steering -------------------------------------------------------------------
    @contextlib.contextmanager
    def observe(self, observer: RunObserver) -> Iterator[RunObserver]:
        """Call ``observer(run_info, event)`` for every event of every run started while the
        ``with`` block is open (nested runs and ``choices=`` asks included), then stop.

        An observer with a ``handed_over(handover)`` method is also told, when it happens, each
        time a run takes messages from the ``steer()``/``follow_up()`` queues: a ``Handover``
        naming the run, the ``PollPoint`` and the messages (the loop delivers them later, or
        reports them undelivered)."""
        if not callable(observer):
            raise TypeError(f"observe() takes a callable, got {observer!r}")
        self._observers = (*self._observers, observer)
        try:
            yield observer
        finally:
            observers = list(self._observers)
            observers.remove(observer)
            self._observers = tuple(observers)

    def steer(self, message: str | UserMessage | Sequence[str | UserMessage]) -> None:
        """Queue steering for the outermost work run: delivered at the next point its loop polls
        steering (after the running tool call, or at the start of the next run)."""
        self._steering.put(user_messages(message, "a message given to steer()"))

    def follow_up(self, message: str | UserMessage | Sequence[str | UserMessage]) -> None:
        """Queue a follow-up for the outermost work run: delivered when it would otherwise end."""
        self._follow_ups.put(user_messages(message, "a message given to follow_up()"))

    @property
    def steering_drain(self) -> DrainMode:
        return self._steering.mode

    @steering_drain.setter
    def steering_drain(self, mode: DrainMode) -> None:
        check_drain_mode(mode)
        self._steering.mode = mode

    @property
    def follow_up_drain(self) -> DrainMode:
        return self._follow_ups.mode

    @follow_up_drain.setter
    def follow_up_drain(self, mode: DrainMode) -> None:
        check_drain_mode(mode)
        self._follow_ups.mode = mode

    @property
    def queued_steering(self) -> list[UserMessage]:
        """Steering queued and not yet taken by a run."""
        return self._steering.snapshot()

    @property
    def queued_follow_ups(self) -> list[UserMessage]:
        """Follow-ups queued and not yet taken by a run."""
        return self._follow_ups.snapshot()

    def clear_queues(self) -> tuple[list[UserMessage], list[UserMessage]]:
        """Empty both queues; returns what they held ``(steering, follow_ups)``."""
        return self._steering.clear(), self._follow_ups.clear()

    # -- async and sync ---------------------------------------------------------------------------
    async def aexec(
        self,
        content: str | UserMessage | Sequence[str | UserMessage],
        tools: Sequence[Any] | None = None,
        toolset: str | None = None,
        tools_source: str | Sequence[str] | None = None,
        tools_allow: Sequence[str] | None = None,
        tools_deny: Sequence[str] | None = None,
        tool_choice: ToolChoice | None = "auto",
        parallel_tool_calls: bool | None = None,
        max_iterations: int | None = None,
        choices: Sequence[Any] | None = None,
        *,
        cancel: CancelToken | None = None,
        only_available: bool | None = None,
    ) -> Any:
        """Run the loop on ``content`` and return the last assistant message's text.

        Errors before any model call: ``RecursionError`` (nesting deeper than ``max_depth``),
        ``TypeError`` (an invalid tool entry, named), ``ValueError`` (unknown toolset, both
        ``tools=`` and ``toolset=``, bad ``tool_choice``, bad ``choices``).  After the run:
        termination ``error`` raises ``ProviderError``, ``aborted`` raises ``CancelledRun``,
        ``max_iterations`` returns the last assistant text (possibly empty); ``last_run`` records
        the termination, model calls, new messages and undelivered messages.

        ``choices=[...]``: after the work, the model must pick exactly one choice (a forced call
        of the ``choose`` tool); the picked value, or the picked function's result, is returned
        and ``last_run.choice`` holds its label.  See ``openprogram.choices``.
        """
        depth = _current_depth.get()
        if depth >= self.max_depth:
            raise RecursionError(
                f"Runtime.exec nesting is limited to {self.max_depth} levels and {depth} are "
                "already running: an @agentic_function probably calls runtime.exec without end "
                "(raise max_depth= on the Runtime if the nesting is intended)"
            )
        if depth and _stack_depth() + STACK_RESERVE > sys.getrecursionlimit():
            raise NestingTooDeep(depth, self.max_depth, sys.getrecursionlimit())
        _check_content(content)
        tools, toolset = await open_groups(
            tools, toolset, self.mcp_servers, self.registry, _current_tools.get() is not None
        )
        only_available = check_flag(only_available, "only_available", self.only_available)
        menu = self._resolve_menu(
            tools, toolset, tools_source, tools_allow, tools_deny, only_available
        )
        offered = offer(menu, self.loaded_tools)
        names = [t.name for t in offered.specs]
        system_prompt = with_catalog(self.system_prompt, offered.catalog)
        choice = normalize_tool_choice(tool_choice, names, strict=True)
        check_parallel_tool_calls(parallel_tool_calls)
        check_max_iterations(max_iterations)
        decision = build_choices(choices) if choices is not None else None

        parent = _current_run.get()
        info = RunInfo(
            f"run-{next(_run_ids)}",
            parent.info.run_id if parent is not None else None,
            depth,
            parent.call_id if parent is not None else None,
            parent.call_name if parent is not None else None,
            tools=tuple(names),
            system_prompt=system_prompt,
            tool_choice=choice,
            tool_specs=tuple(offered.specs),
            deferred=offered.deferred,
        )
        state = _ActiveRun(info)
        token = cancel or self.cancel or _current_cancel.get()
        reset_tools = _current_tools.set(tuple(menu))
        reset_depth = _current_depth.set(depth + 1)
        reset_cancel = _current_cancel.set(token)
        reset_runtime = current_runtime.set(self)
        reset_run = _current_run.set(state)
        try:
            context = AgentContext(
                system_prompt,
                [],
                offered.tools,
                offered.specs if offered.split else None,
            )
            config = self._config(choice, parallel_tool_calls, max_iterations, token, info)
            stream = agent_loop(content, context, config)
            new_messages = list(await self._drain(stream, config, state))
            last = last_assistant(new_messages)
            record = RunRecord(
                termination=stream.termination or "completed",
                model_calls=stream.model_calls,
                messages=new_messages,
                undelivered=list(stream.undelivered),
                text=last.text if last is not None else "",
                tools=names,
                run=info,
            )
            self.last_run = record
            raise_for_termination(record.termination, last)
            if decision is None:
                return record.text
            return await self._decide(decision, context, record, token, info)
        finally:
            _current_run.reset(reset_run)
            current_runtime.reset(reset_runtime)
            _current_cancel.reset(reset_cancel)
            _current_depth.reset(reset_depth)
            _current_tools.reset(reset_tools)

    exec = sync_twin(
        aexec,
        "exec",
        """Sync twin of ``aexec`` (same arguments, same result, same errors), run through
        ``openprogram.run_sync``: safe with or without a running event loop in this thread.""",
    )

    # -- internals --------------------------------------------------------------------------------
    def _config(
        self,
        tool_choice: ToolChoice | None,
        parallel_tool_calls: bool | None,
        max_iterations: int | None,
        cancel: CancelToken | None,
        info: RunInfo,
    ) -> LoopConfig:
        """The loop configuration of one run (steering sources: see ``_sources``)."""
        steering, follow_up = self._sources(info)
        override = _override.get()
        provider, model = self.provider, self.model
        if override is not None:
            provider = override[0] if override[0] is not None else provider
            model = override[1] if override[1] is not None else model
        return LoopConfig(
            provider=provider,
            model=model,
            max_iterations=max_iterations,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            cancel=cancel,
            tool_timeout_s=self.tool_timeout_s,
            steering_mode=self.steering_mode,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            extras=self.extras,
            get_steering_messages=steering,
            get_follow_up_messages=follow_up,
            run_info=info,
            approval_gate=self.approval_gate,
            approval_timeout_s=self.approval_timeout_s,
        )

    def _sources(self, info: RunInfo) -> tuple[MessageSource | None, MessageSource | None]:
        """The steering and follow-up sources of one run.

        The outermost work run polls the runtime's queue, then the configured source.  A nested
        run (or a ``choices`` ask) polls only a configured source that takes a ``PollPoint``: one
        that does not could not tell the runs apart and would take messages meant for the
        outermost run.  The configured source is polled first so that, if it raises, nothing
        has been taken from the queue.
        """
        steering = self.get_steering_messages
        follow_up = self.get_follow_up_messages
        if not info.outermost:
            return (
                steering if polls_source(steering, info) else None,
                follow_up if polls_source(follow_up, info) else None,
            )
        told = tuple(
            tell
            for o in (*self._observers, *_observing.get())
            if (tell := getattr(o, "handed_over", None)) is not None
        )
        return (
            with_queue(self._steering, steering, told),
            with_queue(self._follow_ups, follow_up, told),
        )

    async def _drain(
        self, stream: AgentStream, config: LoopConfig, state: _ActiveRun | None = None
    ) -> list[Message]:
        """Run the stream to its end, feeding the observers; returns the run's new messages.
        Tracks the tool call being executed in ``state`` (a nested ``exec`` names it)."""
        on_event = self.on_event
        watching = _observing.get()
        if not watching and _open_blocks[0]:
            warnings.warn(UNOBSERVED_RUN, RuntimeWarning, stacklevel=2)
        observers = (*self._observers, *watching)
        info = config.run_info
        try:
            async for event in stream:
                if state is not None and type(event) is ToolExecutionStart:
                    state.call_id = event.tool_call_id
                    state.call_name = event.tool_name
                # ``is not None`` first: most observers return nothing, and ``isawaitable`` on
                # ``None`` costs an ABC check per event per observer.
                if on_event is not None:
                    outcome = on_event(event)
                    if outcome is not None and inspect.isawaitable(outcome):
                        await outcome
                if observers and info is not None:
                    for observer in observers:
                        outcome = observer(info, event)
                        if outcome is not None and inspect.isawaitable(outcome):
                            await outcome
        except BaseException:
            # A callback or an observer raised (it fails the run): the run stops where it
            # stands, and closing it now releases its provider stream here, on this loop,
            # rather than in a finalizer the garbage collector runs at some later point.
            await stream.aclose()
            raise
        if state is not None:
            state.call_id = state.call_name = None
        return await stream.result()

    async def _decide(
        self,
        decision: list[Choice],
        context: AgentContext,
        record: RunRecord,
        cancel: CancelToken | None,
        work: RunInfo,
    ) -> Any:
        def make_config() -> LoopConfig:
            choice = {"type": "function", "name": CHOOSE_TOOL}
            info = RunInfo(
                f"run-{next(_run_ids)}",
                work.run_id,
                work.depth,
                kind=_CHOICES,
                tools=_CHOOSE,
                system_prompt=context.system_prompt,
                tool_choice=choice,
                tool_specs=tuple(t.spec for t in normalize_tools(context.tools)),
            )
            return self._config(choice, False, 1, cancel, info)

        return await decide(decision, context, record, make_config, self._drain, self)

    def _resolve_menu(
        self,
        tools: Sequence[Any] | None,
        toolset: str | None,
        source: str | Sequence[str] | None,
        allow: Sequence[str] | None,
        deny: Sequence[str] | None,
        only_available: bool,
    ) -> Sequence[AgentTool]:
        return resolve_menu(
            self.registry,
            tools,
            toolset,
            _current_tools.get(),
            source=source,
            allow=allow,
            deny=deny,
            disabled=self.disabled_tools,
            only_available=only_available,
        )


_CHOICES: RunKind = "choices"
_CHOOSE = (CHOOSE_TOOL,)


def _check_content(content: Any) -> None:
    if isinstance(content, str | UserMessage):
        return
    if isinstance(content, Sequence) and not isinstance(content, bytes):
        if not content:
            raise ValueError("exec needs content: got an empty list of messages")
        for item in content:
            if not isinstance(item, str | UserMessage):
                raise TypeError(
                    f"exec content must be strings or UserMessages, got {type(item).__name__}"
                )
        return
    raise TypeError(
        f"exec content must be a string, a UserMessage or a list of them, "
        f"got {type(content).__name__}"
    )


__all__ = [
    "CHOOSE_TOOL",
    "DEFAULT_MAX_DEPTH",
    "STACK_RESERVE",
    "DecisionError",
    "HandoverObserver",
    "NestingTooDeep",
    "ProviderError",
    "RunObserver",
    "RunRecord",
    "Runtime",
]
