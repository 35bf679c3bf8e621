"""How a finished run becomes the result of ``Runtime.exec``: the run record, and the errors
raised for the terminations that are not a result (``error``, ``aborted``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from .cancel import CancelledRun
from .runs import RunInfo
from .types import AssistantMessage, Message, Termination, UserMessage


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


@dataclass(slots=True)
class RunRecord:
    """What the last ``exec`` did (``Runtime.last_run``); ``run`` names its work run."""

    termination: Termination
    model_calls: int
    messages: list[Message]
    undelivered: list[UserMessage]
    text: str
    tools: list[str] = field(default_factory=list)
    choice: str | None = None
    run: RunInfo | None = None


def last_assistant(messages: Sequence[Message]) -> AssistantMessage | None:
    for message in reversed(messages):
        if isinstance(message, AssistantMessage):
            return message
    return None


def raise_for_termination(termination: str | None, last: AssistantMessage | None) -> None:
    """``error`` raises ``ProviderError`` (with the provider's status and retry hints when the
    last message carries them); ``aborted`` raises ``CancelledRun``; anything else returns."""
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


__all__ = ["ProviderError", "RunRecord", "last_assistant", "raise_for_termination"]
