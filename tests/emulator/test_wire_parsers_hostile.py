"""Request parsing is lenient: any JSON object a client sends becomes a ``ModelRequest`` (odd
entries skipped), never an exception, for every wire format."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram_testing.transport.wire import FORMATS

KEYS = [
    "messages",
    "contents",
    "system",
    "systemInstruction",
    "tools",
    "toolConfig",
    "tool_choice",
    "input",
    "instructions",
    "role",
    "content",
    "parts",
    "text",
    "functionCall",
    "functionResponse",
    "toolUse",
    "toolResult",
    "toolSpec",
    "inputSchema",
    "json",
    "args",
    "name",
    "id",
    "type",
    "tool_calls",
    "function",
    "arguments",
    "inferenceConfig",
    "generationConfig",
    "maxTokens",
    "maxOutputTokens",
    "temperature",
    "reasoningContent",
    "image",
    "source",
    "inlineData",
    "functionCallingConfig",
    "mode",
    "allowedFunctionNames",
    "functionDeclarations",
    "status",
    "call_id",
    "output",
    "summary",
    "tool_use_id",
]

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.sampled_from(KEYS) | st.text(max_size=3), inner, max_size=5)
    ),
    max_leaves=30,
)
bodies = st.dictionaries(st.sampled_from(KEYS), json_values, max_size=6)


@pytest.mark.parametrize("name", sorted(FORMATS))
@settings(max_examples=100, deadline=None)
@given(body=bodies)
def test_any_json_object_parses(name: str, body: dict[str, Any]) -> None:
    parsed = FORMATS[name].parse(body)
    assert isinstance(parsed.messages, list) and isinstance(parsed.tools, list)
