"""What a run of the loop is given: the conversation (``AgentContext``), the configuration
(``LoopConfig``) and the round cap.  Shared by the loop and the per-call machinery
(``openprogram.calls``); re-exported by ``openprogram.loop``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .approvals import ApprovalGate, check_timeout
from .cancel import CancelToken
from .providers.base import Provider, ToolChoice
from .runs import STEERING_MODES, MessageSource, RunInfo, SteeringMode, check_steering_mode
from .types import Message, ToolSpec

MAX_INNER_ITERATIONS = 50
"""Hard cap on model calls per run, against idle spinning."""


TOOL_CHOICE_STRINGS: tuple[str, ...] = ("auto", "required", "none")


def normalize_tool_choice(
    tool_choice: Any, tool_names: Sequence[str] | None = None, *, strict: bool = False
) -> ToolChoice | None:
    """Check ``tool_choice`` and return it in canonical form: the one check for a run's
    options (``Runtime.exec``) and for the wire fragments every adapter maps.

    ``None``, ``"auto"``, ``"required"``, ``"none"`` or ``{"type": "function", "name": X}``;
    unless ``strict``, the OpenAI Chat shape ``{"type": "function", "function": {"name": X}}``
    too (normalised).  With ``tool_names`` (the tools offered), X must be one of them and
    ``"required"`` needs at least one.  Anything else is a ``ValueError`` saying what is allowed.
    """
    if tool_choice is None:
        return None
    if isinstance(tool_choice, str):
        if tool_choice not in TOOL_CHOICE_STRINGS:
            raise ValueError(
                f"unknown tool_choice {tool_choice!r}; expected 'auto', 'required', 'none' "
                "or {'type': 'function', 'name': <tool name>}"
            )
        if tool_choice == "required" and tool_names is not None and not tool_names:
            raise ValueError("tool_choice='required' but the run has no tools")
        return tool_choice
    if isinstance(tool_choice, dict):
        name = tool_choice.get("name")
        if name is None and not strict and isinstance(tool_choice.get("function"), dict):
            name = tool_choice["function"].get("name")
        if (
            tool_choice.get("type") != "function"
            or not isinstance(name, str)
            or not name
            or (strict and set(tool_choice) != {"type", "name"})
        ):
            raise ValueError(
                f"malformed tool_choice {tool_choice!r}; the dict form is "
                "{'type': 'function', 'name': <tool name>}"
            )
        if tool_names is not None and name not in tool_names:
            listed = ", ".join(tool_names) if tool_names else "(no tools)"
            raise ValueError(
                f"tool_choice names tool {name!r}, which is not among this run's tools: {listed}"
            )
        return {"type": "function", "name": name}
    raise ValueError(
        "tool_choice must be 'auto', 'required', 'none' or a dict, "
        f"got {type(tool_choice).__name__}"
    )


@dataclass(slots=True)
class AgentContext:
    """The conversation a run works on.  ``messages`` is appended in place by the run.

    ``provider_tools``: the tool array the provider is sent, when it is not every tool's spec
    (``Runtime`` sets it when some tool on the menu is deferred: callable, but its schema held
    back until ``tool_search`` loads it; ``openprogram.tool_search``).  ``None``: the specs of
    ``tools``.  Read once per run, so the array cannot change within a run."""

    system_prompt: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: Sequence[Any] = ()
    provider_tools: Sequence[ToolSpec] | None = None


@dataclass(slots=True)
class LoopConfig:
    """How a run talks to its provider and to the outside world.

    ``get_steering_messages``/``get_follow_up_messages`` may be sync or async and return user
    messages (or plain strings); one that declares a positional parameter is called with a
    ``PollPoint``.  ``steering_mode="skip"`` (default) skips the rest of a tool batch when steering
    arrives mid-batch; ``"after_batch"`` finishes the batch first.  ``run_info`` names the run in
    the poll points (``Runtime`` sets it).  ``approval_gate`` decides the calls of tools that
    require approval, waiting at most ``approval_timeout_s`` (``openprogram.approvals``).
    """

    provider: Provider
    model: str = ""
    max_iterations: int | None = None
    get_steering_messages: MessageSource | None = None
    get_follow_up_messages: MessageSource | None = None
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    cancel: CancelToken | None = None
    tool_timeout_s: float | None = None
    steering_mode: SteeringMode = "skip"
    max_tokens: int | None = None
    temperature: float | None = None
    extras: dict[str, Any] = field(default_factory=dict)
    run_info: RunInfo | None = None
    approval_gate: ApprovalGate | None = None
    approval_timeout_s: float | None = None

    def __post_init__(self) -> None:
        """A config that could not run raises here, where it is written, not at some round of
        the run: a ``TypeError``/``ValueError`` naming the field.  Cheap (a few comparisons:
        W3-like workloads build one per run); the values are kept as given."""
        if not hasattr(self.provider, "stream"):
            raise TypeError(
                f"provider {self.provider!r} has no stream(model, context, options) method"
            )
        if self.steering_mode not in STEERING_MODES:
            check_steering_mode(self.steering_mode)
        check_max_iterations(self.max_iterations)
        check_parallel_tool_calls(self.parallel_tool_calls)
        if self.tool_choice is not None:
            normalize_tool_choice(self.tool_choice)
        for source in (self.get_steering_messages, self.get_follow_up_messages):
            if source is not None and not callable(source):
                raise TypeError(f"expected a callable, got {source!r}")
        if self.tool_timeout_s is not None:
            check_tool_timeout(self.tool_timeout_s)
        if self.approval_timeout_s is not None:
            check_timeout(self.approval_timeout_s)


def check_max_iterations(value: object) -> None:
    """``max_iterations``: ``None`` (the cap) or an int (clamped by ``effective_cap``)."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
        raise TypeError(f"max_iterations must be an int or None, got {value!r}")


def check_parallel_tool_calls(value: object) -> None:
    if value is not None and not isinstance(value, bool):
        raise TypeError(f"parallel_tool_calls must be True, False or None, got {value!r}")


def check_tool_timeout(value: object) -> None:
    """``tool_timeout_s``: ``None`` (no timeout) or seconds > 0."""
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int | float) or not value > 0
    ):
        raise ValueError(f"tool_timeout_s must be a number of seconds > 0, got {value!r}")


def effective_cap(max_iterations: int | None) -> int:
    """``None`` → ``MAX_INNER_ITERATIONS`` (50); otherwise ``max_iterations`` clamped to
    ``1..MAX_INNER_ITERATIONS``."""
    if max_iterations is None:
        return MAX_INNER_ITERATIONS
    return max(1, min(MAX_INNER_ITERATIONS, int(max_iterations)))


__all__ = [
    "MAX_INNER_ITERATIONS",
    "AgentContext",
    "LoopConfig",
    "SteeringMode",
    "check_max_iterations",
    "check_parallel_tool_calls",
    "check_tool_timeout",
    "effective_cap",
]
