"""What a run of the loop is given: the conversation (``AgentContext``), the configuration
(``LoopConfig``) and the round cap.  Shared by the loop and the per-call machinery
(``openprogram.calls``); re-exported by ``openprogram.loop``."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from .cancel import CancelToken
from .providers.base import Provider, ToolChoice
from .runs import MessageSource, RunInfo
from .types import Message

MAX_INNER_ITERATIONS = 50
"""Hard cap on model calls per run, against idle spinning."""

SteeringMode: TypeAlias = Literal["skip", "after_batch"]


@dataclass(slots=True)
class AgentContext:
    """The conversation a run works on.  ``messages`` is appended in place by the run."""

    system_prompt: str | None = None
    messages: list[Message] = field(default_factory=list)
    tools: Sequence[Any] = ()


@dataclass(slots=True)
class LoopConfig:
    """How a run talks to its provider and to the outside world.

    ``get_steering_messages``/``get_follow_up_messages`` may be sync or async and return user
    messages (or plain strings); one that declares a positional parameter is called with a
    ``PollPoint``.  ``steering_mode="skip"`` (default) skips the rest of a tool batch when steering
    arrives mid-batch; ``"after_batch"`` finishes the batch first.  ``run_info`` names the run in
    the poll points (``Runtime`` sets it).
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


def effective_cap(max_iterations: int | None) -> int:
    """``None`` → 50; otherwise ``max(1, min(50, max_iterations))``."""
    if max_iterations is None:
        return MAX_INNER_ITERATIONS
    return max(1, min(MAX_INNER_ITERATIONS, int(max_iterations)))


__all__ = [
    "MAX_INNER_ITERATIONS",
    "AgentContext",
    "LoopConfig",
    "SteeringMode",
    "effective_cap",
]
