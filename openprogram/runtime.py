"""``Runtime``: ``exec``/``aexec`` — one call, one run of the loop (SPEC §6, §7).

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

Nesting: each ``exec`` runs one layer deeper; more than ``max_depth`` layers (default 5, the
outermost counts) raise ``RecursionError`` before any model call.  Context variables are set
with tokens and reset in ``finally``, so neither an error nor a concurrent run (asyncio task or
thread) ever sees another run's tools or depth.  A sync ``exec`` called while an event loop runs
in the current thread (a sync tool body run by the loop) runs its loop on a helper thread with a
copy of the current context.

``choices=[...]``: a forced decision after the work — see ``Runtime.aexec``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import enum
import inspect
import json
import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from .cancel import CancelledRun, CancelToken
from .events import AgentEvent
from .functions import Function, _current_runtime, parse_docstring
from .loop import (
    AgentContext,
    AgentStream,
    LoopConfig,
    MessageSource,
    SteeringMode,
    agent_loop,
    agent_loop_continue,
)
from .providers.base import Provider, ToolChoice
from .registry import Registry, agent_tools, default_registry, trim_tools
from .tools import AgentTool, ToolError, as_agent_tool
from .types import (
    AssistantMessage,
    Message,
    Termination,
    ToolResultMessage,
    UserMessage,
)

DEFAULT_MAX_DEPTH = 5
CHOOSE_TOOL = "choose"
"""Name of the synthetic tool the model must call to pick a choice (``choices=``)."""
CHOICE_ATTEMPTS = 2
"""One ask plus one re-ask."""

_current_tools: ContextVar[tuple[AgentTool, ...] | None] = ContextVar(
    "openprogram_current_tools", default=None
)
"""The tool menu of the ``exec`` whose tool body is running (``None`` outside any run)."""
_current_depth: ContextVar[int] = ContextVar("openprogram_exec_depth", default=0)
_current_cancel: ContextVar[CancelToken | None] = ContextVar(
    "openprogram_exec_cancel", default=None
)


class ProviderError(Exception):
    """A run ended with termination ``error``: the provider failed (HTTP error, broken
    stream...).  Carries the provider's ``message``, HTTP ``status``, whether it is
    ``retryable``, ``retry_after_s`` and the failed ``assistant_message``."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool | None = None,
        retry_after_s: float | None = None,
        assistant_message: AssistantMessage | None = None,
    ) -> None:
        self.message = message
        self.status = status
        self.retryable = retryable
        self.retry_after_s = retry_after_s
        self.assistant_message = assistant_message
        detail = [f"status {status}"] if status is not None else []
        if retryable:
            detail.append("retryable")
        if retry_after_s is not None:
            detail.append(f"retry after {retry_after_s:g}s")
        suffix = f" ({', '.join(detail)})" if detail else ""
        super().__init__(f"provider error{suffix}: {message}")


class DecisionError(Exception):
    """``choices=``: the model did not pick exactly one valid choice, even after a re-ask."""

    def __init__(self, message: str, *, choices: Sequence[str], attempts: Sequence[str]) -> None:
        super().__init__(message)
        self.choices = list(choices)
        self.attempts = list(attempts)


@dataclass(slots=True)
class RunRecord:
    """What the last ``exec`` did (``Runtime.last_run``)."""

    termination: Termination
    model_calls: int
    messages: list[Message]
    undelivered: list[UserMessage]
    text: str
    tools: list[str] = field(default_factory=list)
    choice: str | None = None


@dataclass(slots=True)
class _Choice:
    label: str
    value: Any
    function: Callable[..., Any] | None
    description: str


class Runtime:
    """Runs ``exec`` calls against one provider and model.

    ``registry`` (default: the shared registry) supplies the ``"full"`` and named toolsets;
    ``tool_timeout_s``, ``steering_mode``, ``max_tokens``, ``temperature`` and ``extras`` go to
    every run's ``LoopConfig``; ``get_steering_messages``/``get_follow_up_messages`` only to the
    outermost work run; ``cancel`` is a default cancel token for its runs; ``on_event``
    (optional) receives every loop event of every run, nested ones included.
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
        get_steering_messages: MessageSource | None = None,
        get_follow_up_messages: MessageSource | None = None,
    ) -> None:
        if not hasattr(provider, "stream"):
            raise TypeError(f"provider {provider!r} has no stream(model, context, options) method")
        if isinstance(max_depth, bool) or not isinstance(max_depth, int) or max_depth < 1:
            raise ValueError(f"max_depth must be an int >= 1, got {max_depth!r}")
        if steering_mode not in ("skip", "after_batch"):
            raise ValueError(
                f"steering_mode must be 'skip' or 'after_batch', got {steering_mode!r}"
            )
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

    def __repr__(self) -> str:
        return f"Runtime(provider={self.provider!r}, model={self.model!r})"

    # -- sync -----------------------------------------------------------------------------------
    def exec(
        self,
        content: str | UserMessage | Sequence[str | UserMessage],
        tools: Sequence[Any] | None = None,
        toolset: str | None = None,
        tools_source: str | None = None,
        tools_allow: Sequence[str] | None = None,
        tools_deny: Sequence[str] | None = None,
        tool_choice: ToolChoice | None = "auto",
        parallel_tool_calls: bool | None = None,
        max_iterations: int | None = None,
        choices: Sequence[Any] | None = None,
        *,
        cancel: CancelToken | None = None,
    ) -> Any:
        """Sync twin of ``aexec`` (same arguments, same result, same errors).

        With no event loop running in this thread it runs on this thread's own reusable event
        loop (``asyncio.run`` would build and tear down a loop per call); inside a running loop
        (a sync tool body, or async code) it runs the nested loop on a helper thread (one
        persistent helper per calling thread, with its own loop) in a copy of the current
        context, so the nested call inherits the outer tools and depth and cannot deadlock or hit
        "event loop is already running".
        """

        def coroutine() -> Any:
            return self.aexec(
                content,
                tools,
                toolset,
                tools_source,
                tools_allow,
                tools_deny,
                tool_choice,
                parallel_tool_calls,
                max_iterations,
                choices,
                cancel=cancel,
            )

        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return _run_on_thread_loop(coroutine())
        return _run_on_helper_thread(contextvars.copy_context(), coroutine)

    # -- async ----------------------------------------------------------------------------------
    async def aexec(
        self,
        content: str | UserMessage | Sequence[str | UserMessage],
        tools: Sequence[Any] | None = None,
        toolset: str | None = None,
        tools_source: str | None = None,
        tools_allow: Sequence[str] | None = None,
        tools_deny: Sequence[str] | None = None,
        tool_choice: ToolChoice | None = "auto",
        parallel_tool_calls: bool | None = None,
        max_iterations: int | None = None,
        choices: Sequence[Any] | None = None,
        *,
        cancel: CancelToken | None = None,
    ) -> Any:
        """Run the loop on ``content`` and return the last assistant message's text.

        Errors before any model call: ``RecursionError`` (nesting deeper than ``max_depth``),
        ``TypeError`` (an invalid tool entry, named), ``ValueError`` (unknown toolset, both
        ``tools=`` and ``toolset=``, bad ``tool_choice``, bad ``choices``).  After the run:
        termination ``error`` raises ``ProviderError``, ``aborted`` raises ``CancelledRun``,
        ``max_iterations`` returns the last assistant text (possibly empty); ``last_run`` records
        the termination, model calls, new messages and undelivered messages.

        ``choices=[...]`` — the decision protocol.  Each choice is an ``@function``/callable
        (label: its tool name or ``__name__``), a string (label = value), an ``Enum`` member
        (label = its name) or a ``(label, value)`` pair.  After the work run (any termination but
        ``error``/``aborted``), the same conversation continues with:

        1. a user message ``Pick exactly one of these choices by calling the `choose` tool:``
           followed by one line per choice ``- label`` or ``- label: description``;
        2. one model call offering only the tool ``choose`` with parameters
           ``{"choice": {"type": "string", "enum": [labels]}}`` (required, nothing else), and
           ``tool_choice={"type": "function", "name": "choose"}``, ``parallel_tool_calls=False``;
        3. a valid pick is exactly one ``choose`` call whose arguments validate; its tool result
           is ``Picked {label}.``.  Otherwise the model is re-asked once: after an invalid call
           the error tool result is fed back (validation text, ``Tool X not found``, or
           ``Pick exactly one choice: call choose once.`` for extra calls); after a text-only
           reply the user message ``You must call the `choose` tool with exactly one of: a, b.``
           is added.  A second invalid attempt raises ``DecisionError``;
        4. the result: a function choice is called (no model arguments; ``runtime`` injected if
           declared; awaited if async) and its return value returned; a value choice returns the
           value.  ``last_run.choice`` holds the label.
        """
        depth = _current_depth.get()
        if depth >= self.max_depth:
            raise RecursionError(
                f"Runtime.exec nesting is limited to {self.max_depth} levels and {depth} are "
                "already running: an @agentic_function probably calls runtime.exec without end "
                "(raise max_depth= on the Runtime if the nesting is intended)"
            )
        _check_content(content)
        menu = self._resolve_menu(tools, toolset, tools_source, tools_allow, tools_deny)
        names = [t.name for t in menu]
        choice = validate_tool_choice(tool_choice, names)
        if parallel_tool_calls is not None and not isinstance(parallel_tool_calls, bool):
            raise TypeError(
                f"parallel_tool_calls must be True, False or None, got {parallel_tool_calls!r}"
            )
        if max_iterations is not None and (
            isinstance(max_iterations, bool) or not isinstance(max_iterations, int)
        ):
            raise TypeError(f"max_iterations must be an int or None, got {max_iterations!r}")
        decision = _build_choices(choices) if choices is not None else None

        token = cancel or self.cancel or _current_cancel.get()
        reset_tools = _current_tools.set(tuple(menu))
        reset_depth = _current_depth.set(depth + 1)
        reset_cancel = _current_cancel.set(token)
        reset_runtime = _current_runtime.set(self)
        try:
            context = AgentContext(system_prompt=self.system_prompt, messages=[], tools=menu)
            config = self._config(
                choice, parallel_tool_calls, max_iterations, token, outermost=depth == 0
            )
            stream = agent_loop(content, context, config)
            new_messages = list(await self._drain(stream))
            last = _last_assistant(new_messages)
            record = RunRecord(
                termination=stream.termination or "completed",
                model_calls=stream.model_calls,
                messages=new_messages,
                undelivered=list(stream.undelivered),
                text=last.text if last is not None else "",
                tools=names,
            )
            self.last_run = record
            _raise_for_termination(record.termination, last)
            if decision is None:
                return record.text
            return await self._decide(decision, context, record, token)
        finally:
            _current_runtime.reset(reset_runtime)
            _current_cancel.reset(reset_cancel)
            _current_depth.reset(reset_depth)
            _current_tools.reset(reset_tools)

    # -- internals --------------------------------------------------------------------------------
    def _config(
        self,
        tool_choice: ToolChoice | None,
        parallel_tool_calls: bool | None,
        max_iterations: int | None,
        cancel: CancelToken | None,
        *,
        outermost: bool = False,
    ) -> LoopConfig:
        """The loop configuration of one run.  Steering/follow-up sources feed only the outermost
        work run: a nested run polling the same queue would take messages meant for its parent."""
        return LoopConfig(
            provider=self.provider,
            model=self.model,
            max_iterations=max_iterations,
            tool_choice=tool_choice,
            parallel_tool_calls=parallel_tool_calls,
            cancel=cancel,
            tool_timeout_s=self.tool_timeout_s,
            steering_mode=self.steering_mode,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            extras=self.extras,
            get_steering_messages=self.get_steering_messages if outermost else None,
            get_follow_up_messages=self.get_follow_up_messages if outermost else None,
        )

    async def _drain(self, stream: AgentStream) -> list[Message]:
        """Run the stream to its end; returns the run's new messages."""
        on_event = self.on_event
        if on_event is None:
            return await stream
        async for event in stream:
            outcome = on_event(event)
            if inspect.isawaitable(outcome):
                await outcome
        return await stream.result()

    def _resolve_menu(
        self,
        tools: Sequence[Any] | None,
        toolset: str | None,
        source: str | None,
        allow: Sequence[str] | None,
        deny: Sequence[str] | None,
    ) -> list[AgentTool]:
        if tools is not None and toolset is not None:
            raise ValueError("pass tools= or toolset=, not both")
        if tools is not None:
            menu = agent_tools(tools)
        elif toolset is not None:
            if not isinstance(toolset, str):
                raise TypeError(f"toolset= takes a toolset name, got {toolset!r}")
            menu = [f.to_agent_tool() for f in self.registry.toolset(toolset)]
        else:
            inherited = _current_tools.get()
            if inherited is not None:
                menu = list(inherited)
            else:
                menu = [f.to_agent_tool() for f in self.registry.toolset("full")]
        if source is not None or allow is not None or deny is not None:
            menu = trim_tools(menu, source=source, allow=allow, deny=deny)
        seen: set[str] = set()
        for tool in menu:
            if tool.name in seen:
                raise ValueError(f"two tools are named {tool.name!r}; tool names must be unique")
            seen.add(tool.name)
        return menu

    async def _decide(
        self,
        choices: list[_Choice],
        context: AgentContext,
        record: RunRecord,
        cancel: CancelToken | None,
    ) -> Any:
        by_label = {c.label: c for c in choices}
        labels = list(by_label)
        picks: list[str] = []

        def choose(arguments: dict[str, Any]) -> str:
            if picks:
                raise ToolError(f"Pick exactly one choice: call {CHOOSE_TOOL} once.")
            picks.append(arguments["choice"])
            return f"Picked {arguments['choice']}."

        tool = as_agent_tool(
            {
                "spec": {
                    "name": CHOOSE_TOOL,
                    "description": "Pick exactly one of the choices.",
                    "parameters": {
                        "type": "object",
                        "properties": {"choice": {"type": "string", "enum": labels}},
                        "required": ["choice"],
                        "additionalProperties": False,
                    },
                },
                "execute": choose,
            }
        )
        context.tools = [tool]
        config = self._config({"type": "function", "name": CHOOSE_TOOL}, False, 1, cancel)
        attempts: list[str] = []
        for attempt in range(CHOICE_ATTEMPTS):
            picks.clear()
            if attempt == 0:
                stream = agent_loop(choice_instruction(choices), context, config)
            elif isinstance(context.messages[-1], AssistantMessage):
                stream = agent_loop(
                    f"You must call the `{CHOOSE_TOOL}` tool with exactly one of: "
                    f"{', '.join(labels)}.",
                    context,
                    config,
                )
            else:
                stream = agent_loop_continue(context, config)
            new = list(await self._drain(stream))
            record.messages.extend(new)
            record.model_calls += stream.model_calls
            last = _last_assistant(new)
            record.text = last.text if last is not None else ""
            if stream.termination in ("error", "aborted"):
                record.termination = stream.termination
                _raise_for_termination(stream.termination, last)
            results = [m for m in new if isinstance(m, ToolResultMessage)]
            calls = last.tool_calls if last is not None else []
            if (
                len(calls) == 1
                and calls[0].name == CHOOSE_TOOL
                and len(picks) == 1
                and results
                and not results[-1].is_error
            ):
                label = picks[0]
                record.choice = label
                record.termination = "completed"
                return await self._pick_result(by_label[label])
            attempts.append(_describe_attempt(last, results))
        record.termination = "completed"
        raise DecisionError(
            f"the model did not pick exactly one valid choice after {CHOICE_ATTEMPTS} attempts "
            f"(choices: {', '.join(labels)}); "
            + "; ".join(f"attempt {i + 1}: {text}" for i, text in enumerate(attempts)),
            choices=labels,
            attempts=attempts,
        )

    async def _pick_result(self, choice: _Choice) -> Any:
        fn = choice.function
        if fn is None:
            return choice.value
        if isinstance(fn, Function):
            value = fn.call_injected(self)
        elif _declares_runtime(fn):
            value = fn(runtime=self)
        else:
            value = fn()
        if inspect.isawaitable(value):
            value = await value
        return value


# -- helpers ---------------------------------------------------------------------------------------

_thread_loops = threading.local()


class _ThreadLoop:
    """One event loop per thread for sync ``exec``; closed when its thread ends."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        loop = self.loop
        if not loop.is_closed() and not loop.is_running():
            loop.close()


def _run_on_thread_loop(coro: Any) -> Any:
    """``asyncio.run`` semantics (a task with a copy of the current context; tasks it leaves
    behind are cancelled) on this thread's reusable loop."""
    holder: _ThreadLoop | None = getattr(_thread_loops, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _thread_loops.holder = _ThreadLoop()
    loop = holder.loop
    task = loop.create_task(coro)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(task)
        raise
    finally:
        leftovers = asyncio.all_tasks(loop)
        if leftovers:
            for leftover in leftovers:
                leftover.cancel()
            loop.run_until_complete(asyncio.gather(*leftovers, return_exceptions=True))


_Job = tuple[contextvars.Context, Callable[[], Any], "Future[Any]"]


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    """A helper thread's body: run each job's coroutine on this thread's loop, in the job's
    context, until the owner goes away."""
    while True:
        job = jobs.get()
        if job is None:
            return
        context, make_coroutine, future = job
        try:
            future.set_result(context.run(_run_made, make_coroutine))
        except BaseException as exc:  # handed to the waiting owner thread
            future.set_exception(exc)
        del job, context, make_coroutine, future


def _run_made(make_coroutine: Callable[[], Any]) -> Any:
    return _run_on_thread_loop(make_coroutine())


class _Helper:
    """The persistent helper thread of one owner thread (sync ``exec`` inside a running loop).

    The owner is blocked while its helper works (it is waiting for the result), so one helper
    per owner suffices; a nested sync ``exec`` on the helper gets the helper's own helper.  The
    thread does not reference this object: when the owner thread ends, its thread-local data
    is released, ``__del__`` posts the stop sentinel and the helper thread exits.
    """

    __slots__ = ("busy", "jobs")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.busy = False
        threading.Thread(
            target=_serve, args=(self.jobs,), name="openprogram-exec", daemon=True
        ).start()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.jobs.put(None)


_helpers = threading.local()


def _run_on_helper_thread(context: contextvars.Context, make_coroutine: Callable[[], Any]) -> Any:
    helper: _Helper | None = getattr(_helpers, "helper", None)
    if helper is None:
        helper = _helpers.helper = _Helper()
    elif helper.busy:  # re-entered while waiting (not reachable from a blocked loop): own helper
        helper = _Helper()
    future: Future[Any] = Future()
    helper.busy = True
    try:
        helper.jobs.put((context, make_coroutine, future))
        return future.result()
    finally:
        helper.busy = False


_STRING_CHOICES = ("auto", "required", "none")


def validate_tool_choice(tool_choice: Any, tool_names: Sequence[str]) -> ToolChoice | None:
    """Check ``tool_choice`` against the resolved tools; returns it unchanged.

    ``"auto"``, ``"required"``, ``"none"``, ``{"type": "function", "name": X}`` (X among the
    tools) or ``None`` (let the provider decide).  Anything else is a ``ValueError``.
    """
    if tool_choice is None:
        return None
    if isinstance(tool_choice, str):
        if tool_choice not in _STRING_CHOICES:
            raise ValueError(
                f"unknown tool_choice {tool_choice!r}; expected 'auto', 'required', 'none' "
                "or {'type': 'function', 'name': <tool name>}"
            )
        if tool_choice == "required" and not tool_names:
            raise ValueError("tool_choice='required' but the run has no tools")
        return tool_choice
    if isinstance(tool_choice, dict):
        name = tool_choice.get("name")
        if (
            set(tool_choice) != {"type", "name"}
            or tool_choice.get("type") != "function"
            or not isinstance(name, str)
            or not name
        ):
            raise ValueError(
                f"malformed tool_choice {tool_choice!r}; the dict form is exactly "
                "{'type': 'function', 'name': <tool name>}"
            )
        if name not in tool_names:
            listed = ", ".join(tool_names) if tool_names else "(no tools)"
            raise ValueError(
                f"tool_choice names tool {name!r}, which is not among this run's tools: {listed}"
            )
        return tool_choice
    raise ValueError(
        "tool_choice must be 'auto', 'required', 'none' or a dict, "
        f"got {type(tool_choice).__name__}"
    )


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


def choice_instruction(choices: Sequence[_Choice]) -> str:
    lines = [f"Pick exactly one of these choices by calling the `{CHOOSE_TOOL}` tool:"]
    for c in choices:
        lines.append(f"- {c.label}: {c.description}" if c.description else f"- {c.label}")
    return "\n".join(lines)


def _build_choices(choices: Any) -> list[_Choice]:
    if isinstance(choices, str | bytes) or not isinstance(choices, Sequence):
        raise TypeError(f"choices= takes a list, got {type(choices).__name__}")
    if not choices:
        raise ValueError("choices= is empty: give at least one function or value to pick from")
    out: list[_Choice] = []
    for entry in choices:
        if isinstance(entry, Function):
            required = entry.required_parameters()
            if required:
                raise TypeError(
                    f"choice {entry.name!r} has required parameter(s) {', '.join(required)}; "
                    "choice functions are called without model arguments"
                )
            out.append(_Choice(entry.name, entry, entry, entry.description))
        elif isinstance(entry, enum.Enum):
            out.append(_Choice(entry.name, entry, None, ""))
        elif isinstance(entry, str):
            out.append(_Choice(entry, entry, None, ""))
        elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
            out.append(_Choice(entry[0], entry[1], None, ""))
        elif callable(entry) and hasattr(entry, "__name__"):
            out.append(
                _Choice(entry.__name__, entry, entry, parse_docstring(inspect.getdoc(entry))[0])
            )
        else:
            raise TypeError(
                f"invalid choice {entry!r}: expected an @function/callable, a string, an Enum "
                "member or a (label, value) pair"
            )
    labels = [c.label for c in out]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ValueError(f"choices= has duplicate label(s): {', '.join(duplicates)}")
    if any(not label for label in labels):
        raise ValueError("choices= has an empty label")
    return out


def _declares_runtime(fn: Callable[..., Any]) -> bool:
    try:
        return "runtime" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def _last_assistant(messages: Sequence[Message]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


def _raise_for_termination(termination: str | None, last: AssistantMessage | None) -> None:
    if termination == "error":
        if last is not None and last.stop_reason == "error":
            raise ProviderError(
                last.error_message or "unknown provider error",
                status=last.error_status,
                retryable=last.error_retryable,
                retry_after_s=last.error_retry_after_s,
                assistant_message=last,
            )
        raise ProviderError("the run ended with an error")
    if termination == "aborted":
        reason = (
            last.error_message
            if last is not None and last.error_message
            else "the run was cancelled"
        )
        raise CancelledRun(reason)


def _describe_attempt(last: AssistantMessage | None, results: list[ToolResultMessage]) -> str:
    if last is None:
        return "no reply"
    calls = last.tool_calls
    if not calls:
        text = last.text
        return f"replied with text only: {text[:80]!r}" if text else "replied with nothing"
    parts = []
    for i, call in enumerate(calls):
        shown = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
        result = _result_summary(results[i]) if i < len(results) else "no result"
        parts.append(f"{call.name}({shown}) -> {result}")
    return ", ".join(parts)


def _result_summary(result: ToolResultMessage) -> str:
    """``ok``, the validation problems (``choice: 'x' is not one of [...]``) or the error text."""
    if not result.is_error:
        return "ok"
    lines = result.text.splitlines()
    problems = [line[4:] for line in lines[1:] if line.startswith("  - ")]
    if lines and lines[0].startswith("Validation failed") and problems:
        return "invalid arguments: " + " / ".join(problems)
    return lines[0] if lines else "error"


__all__ = [
    "CHOOSE_TOOL",
    "DEFAULT_MAX_DEPTH",
    "DecisionError",
    "ProviderError",
    "RunRecord",
    "Runtime",
    "validate_tool_choice",
]
