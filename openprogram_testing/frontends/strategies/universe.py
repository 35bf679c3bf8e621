"""The small universe generated examples are drawn from: tool names, the one argument schema,
texts, values and messages, and the loop texts the reference model predicts.

Tiny domains keep generation cheap and make every failure shrink to something a person reads at
a glance (three tool names, one-digit ints, a handful of texts).
"""

from __future__ import annotations

from typing import Any, Literal

from openprogram.loop import ABORTED_TEXT, STREAM_ENDED_TEXT

TOOL_NAMES = ("t0", "t1", "t2")
UNKNOWN_TOOL = "missing_tool"
X_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}
"""Every generated tool takes one integer ``x``: enough to produce valid calls, schema violations
(wrong type, missing, extra property) and echo results that depend on the input."""

SCHEMA_VIOLATIONS: tuple[dict[str, Any], ...] = ({}, {"x": "a"}, {"x": 1, "y": 2}, {"x": 1.5})
RAW_ARGUMENTS = ("{", "not json", "[1]", '{"x": 1')
TEXTS = ("ok", "done", "Hello!", "two words", "ü ✓ 日本", "")
RETURN_VALUES: tuple[Any, ...] = ("ok", 7, "", None, "multi\nline", {"v": 1}, [1, 2])
RAISE_MESSAGES = ("boom", "bad input", "division by zero")
ERROR_MESSAGES = ("overloaded", "internal error", "rate limited")

NOT_FOUND = "Tool {name} not found"
RAN_OUT = "unexpected model call"
CUT_TEXT = STREAM_ENDED_TEXT
ABORTED = ABORTED_TEXT
VALIDATION_PREFIX = 'Validation failed for tool "{name}":'

ToolBehaviour = Literal["returns", "echo", "raises", "sequence"]
CallKind = Literal["valid", "schema", "raw", "unknown"]
Ending = Literal["stop", "length", "error", "aborted", "cut"]
ALL_ENDINGS: tuple[Ending, ...] = ("stop", "length", "error", "aborted", "cut")
