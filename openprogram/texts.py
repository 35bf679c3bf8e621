"""Every text the loop itself writes into a conversation, defined once.

Tool results and error messages produced by the loop (not by a tool or a provider) are part of
the contract: the model reads them, and tests, traces and scenario expectations compare them.
The harness imports them from here instead of restating them.  Texts that depend on the call are
functions, so the wording stays in one place.

Two rules about text itself live here too, because the runtime and the harness must apply the same
ones: ``whole_text`` (what a lone UTF-16 surrogate becomes: U+FFFD) and ``clip`` (how a value too
long to show is cut: its head and the number of characters left out).
"""

from __future__ import annotations

from typing import Any

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


def not_run_text(name: str, why: str) -> str:
    """The result of a call that requires approval and was not approved: ``why`` says what the
    approval came to (``approval_denied_text``, ``approval_timed_out_text``, ...), so the model
    reads that the tool never ran and why."""
    return f"Tool {name} was not run: {why}"


def approval_denied_text(message: str) -> str:
    """Why a denied call was not run; ``message`` is the reviewer's (``Deny(message)``)."""
    return f"the call was denied: {message}" if message else "the call was denied"


def approval_timed_out_text(seconds: float) -> str:
    """Why a call whose approval gate gave no decision within ``approval_timeout_s`` was not
    run."""
    return f"no approval decision within {seconds:g}s"


def approval_failed_text(reason: str) -> str:
    """Why a call whose approval gate raised (or answered with something that is not a
    decision) was not run."""
    return f"the approval gate failed: {reason}"


NO_GATE_TEXT = "it requires approval and no approval gate is configured"
"""Why a call of a tool that requires approval was not run in a run without an approval gate."""

CHANGED_ARGUMENTS_TEXT = "the arguments the reviewer changed it to are invalid"
"""Why a call approved with changed arguments the tool's schema refuses was not run (the
validation problems follow)."""


REPLACEMENT = "\ufffd"
"""What a lone surrogate becomes (the Unicode replacement character)."""


def rejoined(text: str) -> str:
    """``text`` with surrogate pairs written as two halves (JSON's ``"\\ud83d\\ude00"``, read by
    a parser that does not join them) turned into the one character they stand for; a lone half
    stays as it is."""
    if text.isascii():
        return text
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "surrogatepass")


def whole_text(text: str) -> str:
    """``text`` that every encoder can write: surrogate pairs joined, and each lone surrogate
    (half of a pair cut apart, or a ``"\\ud800"`` escape) replaced by U+FFFD.

    No UTF-8 file, terminal, XML report or pytest-xdist channel accepts a lone surrogate, so one
    that reaches any of them would end the writer with ``UnicodeEncodeError``.  Text enters the
    conversation through this (``MessageBuilder``, tool results), and every writer of the harness
    passes what it writes through it again, for text that came another way."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def whole_values(value: Any) -> Any:
    """``value`` with ``whole_text`` applied to every string in it (keys included), through
    dicts, lists and tuples: JSON-like data (tool arguments, report records) that every writer
    can write.  Values without a lone surrogate come back as they are."""
    if isinstance(value, str):
        return whole_text(value)
    if isinstance(value, dict):
        return {whole_values(k): whole_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_values(v) for v in value]
    if isinstance(value, tuple):
        return tuple(whole_values(v) for v in value)
    return value


CLIP_LIMIT = 2_000
"""Characters of one value that messages show by default (see ``clip``)."""


def clip(text: str, limit: int = CLIP_LIMIT) -> str:
    """``text`` cut to its first ``limit`` characters, followed by how many were cut
    (``…(+19998000 chars)``), so a runaway value (a 20 MB reply, a tool result the size of a
    file) cannot make a failure message, a terminal or a report unusable.  The one way every
    message of the project shortens a value."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}…(+{len(text) - limit} chars)"


def clipped_repr(value: object, limit: int = CLIP_LIMIT) -> str:
    """``repr(value)`` of a string clipped to ``limit`` characters (other values: their
    ``repr``, clipped): the form failure messages quote values in."""
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}…(+{len(value) - limit} chars)"
    return clip(repr(value), limit)


__all__ = [
    "ABORTED_TEXT",
    "CANCELLED_TEXT",
    "CHANGED_ARGUMENTS_TEXT",
    "CLIP_LIMIT",
    "NOT_CALLED_TEXT",
    "NOT_JSON_TEXT",
    "NO_GATE_TEXT",
    "REPLACEMENT",
    "SKIPPED_TEXT",
    "SOURCE_FAILED_PREFIX",
    "STREAM_ENDED_TEXT",
    "TOO_DEEP_TEXT",
    "approval_denied_text",
    "approval_failed_text",
    "approval_timed_out_text",
    "clip",
    "clipped_repr",
    "not_object_text",
    "not_run_text",
    "rejoined",
    "timed_out_text",
    "tool_not_found_text",
    "unserialisable_text",
    "validation_header",
    "whole_text",
    "whole_values",
]
