"""Every text the loop itself writes into a conversation, defined once.

Tool results and error messages produced by the loop (not by a tool or a provider) are part of
the contract: the model reads them, and tests, traces and scenario expectations compare them.
The harness imports them from here instead of restating them.  Texts that depend on the call are
functions, so the wording stays in one place.
"""

from __future__ import annotations

ABORTED_TEXT = "Request was aborted"
"""The ``error_message`` of an assistant message cut short by cancellation."""

NOT_CALLED_TEXT = "Request was aborted before the model was called"
"""The ``error_message`` of the ``aborted`` message of a round the cancel token stopped before its
model call."""

STREAM_ENDED_TEXT = "stream ended without a final event"
"""The ``error_message`` of a provider stream that ended without a terminal event."""

SKIPPED_TEXT = "Skipped due to queued user message."
"""The result of a call skipped because steering arrived earlier in its batch."""

CANCELLED_TEXT = "Cancelled"
"""The result of the running call and of every remaining call of an aborted batch."""

NOT_JSON_TEXT = "arguments are not valid JSON"
"""The validation problem (at ``root``) of argument text that does not parse."""

TOO_DEEP_TEXT = "arguments are not valid JSON (nested too deeply)"
"""The validation problem of argument JSON nested beyond what the parser accepts."""

SOURCE_FAILED_PREFIX = "Steering or follow-up source failed: "
"""Starts the ``error_message`` of the synthetic ``error`` message that closes the first round
when the steering source raises before the first model call."""


def tool_not_found_text(name: str) -> str:
    """The result of a call to a tool the run does not have."""
    return f"Tool {name} not found"


def timed_out_text(name: str, seconds: float) -> str:
    """The result of a call that exceeded ``tool_timeout_s``."""
    return f"Tool {name} timed out after {seconds:g}s"


def not_object_text(kind: str) -> str:
    """The validation problem of argument JSON that parses to something other than an object."""
    return f"arguments must be a JSON object, got {kind}"


def validation_header(name: str) -> str:
    """The first line of the invalid-arguments result."""
    return f'Validation failed for tool "{name}":'


def unserialisable_text(name: str, reason: str) -> str:
    """The result of a call whose return value cannot be turned into text."""
    return f"Tool {name} returned a value that cannot be turned into text: {reason}"


__all__ = [
    "ABORTED_TEXT",
    "CANCELLED_TEXT",
    "NOT_CALLED_TEXT",
    "NOT_JSON_TEXT",
    "SKIPPED_TEXT",
    "SOURCE_FAILED_PREFIX",
    "STREAM_ENDED_TEXT",
    "TOO_DEEP_TEXT",
    "not_object_text",
    "timed_out_text",
    "tool_not_found_text",
    "unserialisable_text",
    "validation_header",
]
