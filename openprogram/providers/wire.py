"""Tool definitions, ``tool_choice`` and ``parallel_tool_calls`` on the wire.

Pure functions, no SDK imports: each returns the JSON fragment to merge into one API's request
body.  Five APIs are covered: OpenAI Chat Completions, OpenAI Responses, Anthropic Messages,
Gemini ``generateContent`` and Bedrock Converse.

Decisions where the spec leaves a choice:

- **Nothing without tools.**  When the request carries no tools the fragment is ``{}``: no
  ``tools``, no ``tool_choice``, no parallel knob, whatever was asked.
- **``"auto"`` is explicit, ``None`` is omitted.**  ``tool_choice="auto"`` is sent in the API's
  explicit form; ``tool_choice=None`` (the loop's default) sends no choice at all, which every API
  treats as auto.
- **Parallel knob.**  OpenAI (both APIs) get ``"parallel_tool_calls": <bool>`` whenever the caller
  set it (``True`` or ``False``).  Anthropic only has a "disable" flag: ``False`` puts
  ``"disable_parallel_tool_use": true`` inside the choice object (creating ``{"type": "auto"}``
  when no choice was given), ``True`` sends nothing; it is never combined with ``"none"``.
  Gemini and Bedrock have no such knob: the setting is ignored.
- **Bedrock ``"none"``.**  Converse has no "none" choice.  We keep ``toolConfig.tools`` (Bedrock
  rejects a history holding toolUse/toolResult blocks without it), send no ``toolChoice``, and add
  the system text :data:`BEDROCK_NO_TOOLS_INSTRUCTION` under ``"system"``; the caller appends
  those system blocks to its own.
- **Gemini tool definitions** use ``parametersJsonSchema`` (full JSON Schema) rather than the
  OpenAPI-subset ``parameters``, so the schemas our tools generate pass unchanged.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, TypeAlias, get_args

from ..config import TOOL_CHOICE_STRINGS, normalize_tool_choice
from ..types import ToolSpec

WireAPI: TypeAlias = Literal["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock"]
"""The request formats :func:`tools_fragment` knows."""

WIRE_APIS: tuple[str, ...] = get_args(WireAPI)


BEDROCK_NO_TOOLS_INSTRUCTION = "Do not call any tools in this reply; answer with text only."
"""System text sent to Bedrock for ``tool_choice="none"`` (Converse has no "none" choice)."""

__all__ = [
    "BEDROCK_NO_TOOLS_INSTRUCTION",
    "TOOL_CHOICE_STRINGS",
    "WIRE_APIS",
    "WireAPI",
    "normalize_tool_choice",
    "tool_choice_fragment",
    "tool_definitions",
    "tools_fragment",
]


def _check_api(api: str) -> None:
    if api not in WIRE_APIS:
        raise ValueError(f"unknown wire API {api!r}: expected one of {', '.join(WIRE_APIS)}")


def tool_definitions(api: WireAPI, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """The API's list of tool definitions for ``tools`` (for Gemini: one ``functionDeclarations``
    entry; for Bedrock: the ``toolConfig.tools`` list)."""
    _check_api(api)
    if api == "openai_chat":
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]
    if api == "openai_responses":
        return [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in tools
        ]
    if api == "anthropic":
        return [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]
    if api == "gemini":
        return [
            {
                "functionDeclarations": [
                    {
                        "name": t.name,
                        "description": t.description,
                        "parametersJsonSchema": t.parameters,
                    }
                    for t in tools
                ]
            }
        ]
    return [
        {
            "toolSpec": {
                "name": t.name,
                "description": t.description,
                "inputSchema": {"json": t.parameters},
            }
        }
        for t in tools
    ]


def tool_choice_fragment(
    api: WireAPI,
    tool_choice: str | dict[str, Any] | None,
    parallel_tool_calls: bool | None = None,
    *,
    has_tools: bool = True,
) -> dict[str, Any]:
    """The request fields that carry ``tool_choice`` and ``parallel_tool_calls`` (not the tool
    definitions).  ``{}`` when ``has_tools`` is false.  For Gemini and Bedrock the choice lives
    inside ``toolConfig``; :func:`tools_fragment` merges it with the definitions."""
    _check_api(api)
    choice = normalize_tool_choice(tool_choice)
    if not has_tools:
        return {}
    out: dict[str, Any] = {}
    if api in ("openai_chat", "openai_responses"):
        if isinstance(choice, dict):
            if api == "openai_chat":
                out["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
            else:
                out["tool_choice"] = {"type": "function", "name": choice["name"]}
        elif choice is not None:
            out["tool_choice"] = choice
        if parallel_tool_calls is not None:
            out["parallel_tool_calls"] = bool(parallel_tool_calls)
        return out
    if api == "anthropic":
        obj: dict[str, Any] | None
        if choice is None:
            obj = None
        elif isinstance(choice, dict):
            obj = {"type": "tool", "name": choice["name"]}
        else:
            obj = {"type": {"auto": "auto", "required": "any", "none": "none"}[choice]}
        if parallel_tool_calls is False and choice != "none":
            obj = obj or {"type": "auto"}
            obj["disable_parallel_tool_use"] = True
        if obj is not None:
            out["tool_choice"] = obj
        return out
    if api == "gemini":
        if choice is None:
            return out
        if isinstance(choice, dict):
            config: dict[str, Any] = {"mode": "ANY", "allowedFunctionNames": [choice["name"]]}
        else:
            config = {"mode": {"auto": "AUTO", "required": "ANY", "none": "NONE"}[choice]}
        out["toolConfig"] = {"functionCallingConfig": config}
        return out
    # bedrock
    if choice is None:
        return out
    if choice == "none":
        out["system"] = [{"text": BEDROCK_NO_TOOLS_INSTRUCTION}]
        return out
    if isinstance(choice, dict):
        out["toolConfig"] = {"toolChoice": {"tool": {"name": choice["name"]}}}
    else:
        out["toolConfig"] = {"toolChoice": {"auto": {}} if choice == "auto" else {"any": {}}}
    return out


def tools_fragment(
    api: WireAPI,
    tools: Sequence[ToolSpec],
    tool_choice: str | dict[str, Any] | None = None,
    parallel_tool_calls: bool | None = None,
) -> dict[str, Any]:
    """Everything tool-related for one request: definitions, choice, parallel knob — merged into
    the API's layout.  ``{}`` when ``tools`` is empty.  A function choice must name one of
    ``tools`` (``ValueError`` otherwise)."""
    _check_api(api)
    normalize_tool_choice(tool_choice, [t.name for t in tools] if tools else None)
    if not tools:
        return {}
    definitions = tool_definitions(api, tools)
    choice = tool_choice_fragment(api, tool_choice, parallel_tool_calls, has_tools=True)
    if api == "gemini":
        out: dict[str, Any] = {"tools": definitions}
        out.update(choice)
        return out
    if api == "bedrock":
        tool_config: dict[str, Any] = {"tools": definitions}
        tool_config.update(choice.pop("toolConfig", {}))
        return {"toolConfig": tool_config, **choice}
    return {"tools": definitions, **choice}
