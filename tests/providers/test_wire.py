"""the contract, cell by cell: tool_choice / parallel_tool_calls / tool definitions per API."""

from __future__ import annotations

import pytest

from openprogram.providers.wire import (
    BEDROCK_NO_TOOLS_INSTRUCTION,
    WIRE_APIS,
    normalize_tool_choice,
    tool_choice_fragment,
    tool_definitions,
    tools_fragment,
)
from openprogram.types import ToolSpec

FN = {"type": "function", "name": "get_weather"}
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
TOOLS = [ToolSpec(name="get_weather", description="Weather for a city.", parameters=SCHEMA)]

# (api, tool_choice) -> exact fragment (with tools present, parallel not set)
TABLE = {
    ("openai_chat", "auto"): {"tool_choice": "auto"},
    ("openai_chat", "required"): {"tool_choice": "required"},
    ("openai_chat", "none"): {"tool_choice": "none"},
    ("openai_chat", "fn"): {
        "tool_choice": {"type": "function", "function": {"name": "get_weather"}}
    },
    ("openai_responses", "auto"): {"tool_choice": "auto"},
    ("openai_responses", "required"): {"tool_choice": "required"},
    ("openai_responses", "none"): {"tool_choice": "none"},
    ("openai_responses", "fn"): {"tool_choice": {"type": "function", "name": "get_weather"}},
    ("anthropic", "auto"): {"tool_choice": {"type": "auto"}},
    ("anthropic", "required"): {"tool_choice": {"type": "any"}},
    ("anthropic", "none"): {"tool_choice": {"type": "none"}},
    ("anthropic", "fn"): {"tool_choice": {"type": "tool", "name": "get_weather"}},
    ("gemini", "auto"): {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}},
    ("gemini", "required"): {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
    ("gemini", "none"): {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}},
    ("gemini", "fn"): {
        "toolConfig": {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
        }
    },
    ("bedrock", "auto"): {"toolConfig": {"toolChoice": {"auto": {}}}},
    ("bedrock", "required"): {"toolConfig": {"toolChoice": {"any": {}}}},
    ("bedrock", "none"): {"system": [{"text": BEDROCK_NO_TOOLS_INSTRUCTION}]},
    ("bedrock", "fn"): {"toolConfig": {"toolChoice": {"tool": {"name": "get_weather"}}}},
}


@pytest.mark.parametrize(("api", "choice"), sorted(TABLE))
def test_choice_cell(api: str, choice: str) -> None:
    value = FN if choice == "fn" else choice
    assert tool_choice_fragment(api, value) == TABLE[(api, choice)]


# parallel_tool_calls=False column
PARALLEL_FALSE = {
    ("openai_chat", "auto"): {"tool_choice": "auto", "parallel_tool_calls": False},
    ("openai_chat", None): {"parallel_tool_calls": False},
    ("openai_responses", "required"): {"tool_choice": "required", "parallel_tool_calls": False},
    ("openai_responses", None): {"parallel_tool_calls": False},
    ("anthropic", "auto"): {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
    ("anthropic", "required"): {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
    ("anthropic", "fn"): {
        "tool_choice": {"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True}
    },
    ("anthropic", None): {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
    # not with none
    ("anthropic", "none"): {"tool_choice": {"type": "none"}},
    # no knob: ignored
    ("gemini", "auto"): {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}},
    ("gemini", None): {},
    ("bedrock", "required"): {"toolConfig": {"toolChoice": {"any": {}}}},
    ("bedrock", None): {},
}


@pytest.mark.parametrize(("api", "choice"), list(PARALLEL_FALSE))
def test_parallel_false_cell(api: str, choice: str | None) -> None:
    value = FN if choice == "fn" else choice
    assert tool_choice_fragment(api, value, False) == PARALLEL_FALSE[(api, choice)]


def test_parallel_true_is_explicit_for_openai_and_silent_elsewhere() -> None:
    assert tool_choice_fragment("openai_chat", None, True) == {"parallel_tool_calls": True}
    assert tool_choice_fragment("openai_responses", None, True) == {"parallel_tool_calls": True}
    assert tool_choice_fragment("anthropic", "auto", True) == {"tool_choice": {"type": "auto"}}
    assert tool_choice_fragment("gemini", None, True) == {}
    assert tool_choice_fragment("bedrock", None, True) == {}


@pytest.mark.parametrize("api", WIRE_APIS)
def test_none_choice_is_omitted(api: str) -> None:
    assert tool_choice_fragment(api, None) == {}


@pytest.mark.parametrize("api", WIRE_APIS)
@pytest.mark.parametrize("choice", ["auto", "required", "none", FN])
def test_nothing_sent_without_tools(api: str, choice: object) -> None:
    assert tool_choice_fragment(api, choice, False, has_tools=False) == {}
    assert tools_fragment(api, [], choice if choice != FN else "required", False) == {}


def test_tool_definitions_per_api() -> None:
    assert tool_definitions("openai_chat", TOOLS) == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "parameters": SCHEMA,
            },
        }
    ]
    assert tool_definitions("openai_responses", TOOLS) == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city.",
            "parameters": SCHEMA,
            "strict": False,
        }
    ]
    assert tool_definitions("anthropic", TOOLS) == [
        {"name": "get_weather", "description": "Weather for a city.", "input_schema": SCHEMA}
    ]
    assert tool_definitions("gemini", TOOLS) == [
        {
            "functionDeclarations": [
                {
                    "name": "get_weather",
                    "description": "Weather for a city.",
                    "parametersJsonSchema": SCHEMA,
                }
            ]
        }
    ]
    assert tool_definitions("bedrock", TOOLS) == [
        {
            "toolSpec": {
                "name": "get_weather",
                "description": "Weather for a city.",
                "inputSchema": {"json": SCHEMA},
            }
        }
    ]


def test_tools_fragment_merges_layouts() -> None:
    assert tools_fragment("openai_chat", TOOLS, "required", False) == {
        "tools": tool_definitions("openai_chat", TOOLS),
        "tool_choice": "required",
        "parallel_tool_calls": False,
    }
    assert tools_fragment("anthropic", TOOLS) == {"tools": tool_definitions("anthropic", TOOLS)}
    assert tools_fragment("gemini", TOOLS, FN) == {
        "tools": tool_definitions("gemini", TOOLS),
        "toolConfig": {
            "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
        },
    }
    assert tools_fragment("bedrock", TOOLS, "auto", False) == {
        "toolConfig": {"tools": tool_definitions("bedrock", TOOLS), "toolChoice": {"auto": {}}}
    }
    assert tools_fragment("bedrock", TOOLS, "none") == {
        "toolConfig": {"tools": tool_definitions("bedrock", TOOLS)},
        "system": [{"text": BEDROCK_NO_TOOLS_INSTRUCTION}],
    }


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ("sometimes", "unknown tool_choice 'sometimes'"),
        ({"type": "function"}, "malformed tool_choice"),
        ({"type": "tool", "name": "x"}, "malformed tool_choice"),
        (3, "must be 'auto', 'required', 'none' or a dict, got int"),
    ],
)
def test_bad_tool_choice_is_a_clear_value_error(bad: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        normalize_tool_choice(bad)  # type: ignore[arg-type]


def test_function_choice_must_name_a_tool() -> None:
    with pytest.raises(
        ValueError, match="'nope', which is not among this run's tools: get_weather"
    ):
        tools_fragment("openai_chat", TOOLS, {"type": "function", "name": "nope"})


def test_chat_shaped_function_choice_is_accepted() -> None:
    chat_shape = {"type": "function", "function": {"name": "get_weather"}}
    assert normalize_tool_choice(chat_shape) == FN
    assert tool_choice_fragment("anthropic", chat_shape) == TABLE[("anthropic", "fn")]


def test_unknown_api() -> None:
    with pytest.raises(ValueError, match="unknown wire API 'cohere'"):
        tool_choice_fragment("cohere", "auto")  # type: ignore[arg-type]
