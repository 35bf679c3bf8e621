"""MCP wire shapes to the loop's: tool names, input schemas and call results.

Everything here works on the JSON (wire) form of MCP objects (``model_dump(mode="json",
by_alias=True)`` of the SDK's models, or a recorded ``tools/list``), never on the SDK's classes:
this module imports no part of the ``mcp`` SDK, so it is cheap, and a result from any transport
(or a recording) converts the same way.

Names: a server's tool ``t`` becomes ``{server}__{t}`` (upstream's form).  The name must be valid
under every provider's rules at once (OpenAI, Anthropic and Bedrock: ``[A-Za-z0-9_-]{1,64}``;
Gemini also wants a letter or ``_`` first), so any other character becomes ``_`` and a name past
64 characters is cut and ends in a hash of the whole original, keeping names apart.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..tools import ToolResult, json_schema_validator
from ..types import ImageContent, TextContent, UserContent

MAX_NAME = 64
"""The longest tool name every provider accepts (OpenAI, Bedrock and Gemini: 64)."""

_SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,31}")
_INVALID = re.compile(r"[^A-Za-z0-9_-]")

ERROR_PREFIX = "[mcp error]"


def check_server_name(name: object) -> str:
    """A server name is chosen by the user and becomes the prefix of every tool name, so it must
    already be valid (a letter, then letters, digits, ``_`` or ``-``; at most 32 characters) and
    must not contain ``__``, the separator: rewriting it silently would make toolset names
    (``mcp:{name}``) and tool names disagree with what the user wrote."""
    if not isinstance(name, str) or not _SERVER_NAME.fullmatch(name) or "__" in name:
        raise ValueError(
            f"an MCP server name must be a letter followed by up to 31 letters, digits, '_' or "
            f"'-' (no '__', the separator of tool names), got {name!r}"
        )
    return name


def mcp_tool_name(server: str, tool: str) -> str:
    """``{server}__{tool}``, made valid under every provider's tool-name rules."""
    name = f"{server}__{_INVALID.sub('_', tool)}"
    if len(name) <= MAX_NAME and tool:
        return name
    digest = hashlib.sha256(f"{server}\0{tool}".encode()).hexdigest()[:10]
    return f"{name[: MAX_NAME - 11]}_{digest}"


class SchemaProblem(ValueError):
    """A tool's ``inputSchema`` that cannot be offered to a model."""


def normalize_schema(schema: Any) -> dict[str, Any]:
    """A deep copy of an MCP tool's ``inputSchema`` fit for a provider: an object schema that is
    valid JSON Schema (Draft 2020-12), with ``properties`` present.  Anything else is a
    ``SchemaProblem`` saying why (the tool is then left out, not offered half-described)."""
    if schema is None:
        return {"type": "object", "properties": {}}
    if not isinstance(schema, Mapping):
        raise SchemaProblem(f"inputSchema is {type(schema).__name__}, not a JSON object")
    kind = schema.get("type", "object")
    if kind != "object":
        raise SchemaProblem(f"inputSchema has type {kind!r}; a tool's arguments are an object")
    try:
        out = copy.deepcopy(dict(schema))
    except RecursionError:
        raise SchemaProblem("inputSchema is nested too deeply") from None
    out["type"] = "object"
    if not isinstance(out.get("properties", {}), Mapping):
        raise SchemaProblem("inputSchema 'properties' is not an object")
    out.setdefault("properties", {})
    try:
        json_schema_validator(out)
    except ValueError as exc:
        raise SchemaProblem(str(exc)) from None
    except RecursionError:
        raise SchemaProblem("inputSchema is nested too deeply") from None
    return out


@dataclass(frozen=True, slots=True)
class ListedTool:
    """One tool of a server's ``tools/list``, as the loop will offer it."""

    server: str
    remote_name: str
    name: str
    description: str
    parameters: dict[str, Any]
    always_load: bool = False
    """The tool's ``_meta["anthropic/alwaysLoad"]`` is ``true``: never deferred."""
    search_hint: str | None = None
    """The tool's ``_meta["anthropic/searchHint"]``, scored by ``tool_search``."""


ALWAYS_LOAD_META = "anthropic/alwaysLoad"
SEARCH_HINT_META = "anthropic/searchHint"
SEARCH_HINT_MAX = 200
"""A search hint is a short phrase; a longer one is cut (it is scored on every search)."""


def _listing_meta(raw: Mapping[str, Any]) -> tuple[bool, str | None]:
    """``(always_load, search_hint)`` from a listed tool's ``_meta``: only a literal ``true``
    loads always, only a string is a hint; anything else is ignored, as a missing key is."""
    meta = raw.get("_meta")
    if not isinstance(meta, Mapping):
        return False, None
    hint = meta.get(SEARCH_HINT_META)
    return meta.get(ALWAYS_LOAD_META) is True, (
        hint[:SEARCH_HINT_MAX] if isinstance(hint, str) and hint else None
    )


@dataclass(frozen=True, slots=True)
class SkippedTool:
    """A listed tool left off the menu, and why (its schema, most often)."""

    server: str
    remote_name: str
    reason: str


def listed_tools(
    server: str, tools: Sequence[Mapping[str, Any]]
) -> tuple[list[ListedTool], list[SkippedTool]]:
    """The wire ``tools`` of ``server`` as loop tools, and the ones left out.  Two remote names
    that become the same loop name (``a.b`` and ``a_b``) are a ``ValueError`` naming both: the
    model could not tell them apart."""
    out: list[ListedTool] = []
    skipped: list[SkippedTool] = []
    seen: dict[str, str] = {}
    for raw in tools:
        remote = raw.get("name")
        if not isinstance(remote, str):
            skipped.append(SkippedTool(server, repr(remote)[:80], "its name is not a string"))
            continue
        try:
            parameters = normalize_schema(raw.get("inputSchema"))
        except SchemaProblem as exc:
            skipped.append(SkippedTool(server, remote, str(exc)))
            continue
        name = mcp_tool_name(server, remote)
        if name in seen:
            raise ValueError(
                f"MCP server {server!r} lists tools {seen[name]!r} and {remote!r}, which both "
                f"become the tool name {name!r}"
            )
        seen[name] = remote
        description = raw.get("description") or raw.get("title") or name
        always_load, search_hint = _listing_meta(raw)
        out.append(
            ListedTool(server, remote, name, str(description), parameters, always_load, search_hint)
        )
    return out, skipped


# -- results --------------------------------------------------------------------------------------


def error_text(name: str, kind: str, message: str) -> str:
    """Upstream's error result text: ``[mcp error] {tool}: {ExceptionType}: {message}``."""
    return f"{ERROR_PREFIX} {name}: {kind}: {message}"


def convert_result(
    server: str, remote: str, result: Mapping[str, Any], max_chars: int
) -> ToolResult:
    """A ``CallToolResult`` (wire form) as a ``ToolResult``: text and images as they are, an
    embedded text resource as its text under its URI, a blob resource, audio or a resource link as
    a line naming it, ``structuredContent`` as JSON text when the content is empty (and always in
    ``details``), ``isError`` kept.  Text and image data past ``max_chars`` characters in all are
    clipped with a line saying how much the server sent, so one answer cannot flood the
    conversation."""
    blocks: list[UserContent] = []
    budget = _Budget(max_chars)
    content = result.get("content") or []
    for block in content if isinstance(content, list) else []:
        if isinstance(block, Mapping):
            blocks.extend(_convert_block(block, budget))
    structured = result.get("structuredContent")
    if not blocks and structured is not None:
        blocks.extend(budget.text(json.dumps(structured, ensure_ascii=False)))
    if budget.dropped:
        blocks.append(
            TextContent(
                f"[clipped: the result had {budget.total} characters; the first "
                f"{budget.limit} are shown]"
            )
        )
    details: dict[str, Any] = {"mcp_server": server, "mcp_tool": remote}
    if structured is not None:
        details["structured"] = structured
    return ToolResult(content=blocks or "", details=details, is_error=bool(result.get("isError")))


class _Budget:
    """The characters a result may still use; counts what was sent and what was dropped."""

    __slots__ = ("dropped", "left", "limit", "total")

    def __init__(self, limit: int) -> None:
        self.limit = self.left = limit
        self.total = 0
        self.dropped = False

    def text(self, text: str, *, sent: bool = True) -> list[UserContent]:
        """``text`` within the budget; ``sent=False`` for a line written here in place of
        something the server sent (not counted as sent)."""
        if sent:
            self.total += len(text)
        if len(text) <= self.left:
            self.left -= len(text)
            return [TextContent(text)]
        self.dropped = True
        kept, self.left = text[: self.left], 0
        return [TextContent(kept)] if kept else []

    def image(self, data: str, mime: str) -> list[UserContent]:
        self.total += len(data)
        if len(data) <= self.left:
            self.left -= len(data)
            return [ImageContent(data, mime)]
        self.dropped = True
        note = f"[image {mime}, {len(data)} base64 characters: too large to show]"
        return self.text(note, sent=False)


def _convert_block(block: Mapping[str, Any], budget: _Budget) -> list[UserContent]:
    kind = block.get("type")
    if kind == "text":
        return budget.text(str(block.get("text", "")))
    if kind == "image":
        return budget.image(str(block.get("data", "")), str(block.get("mimeType") or "image/png"))
    if kind == "audio":
        size = len(str(block.get("data", "")))
        return budget.text(f"[audio {block.get('mimeType')}, {size} base64 characters]")
    if kind == "resource_link":
        return budget.text(f"[resource link: {block.get('uri')} ({block.get('name')})]")
    if kind == "resource":
        resource = block.get("resource")
        if not isinstance(resource, Mapping):
            return budget.text("[resource: no contents]")
        uri, mime = resource.get("uri"), resource.get("mimeType")
        if "text" in resource:
            return budget.text(f"[resource: {uri}]\n{resource.get('text')}")
        blob = str(resource.get("blob", ""))
        if isinstance(mime, str) and mime.startswith("image/"):
            return budget.image(blob, mime)
        return budget.text(f"[resource: {uri}, {mime or 'binary'}, {len(blob)} base64 characters]")
    return budget.text(f"[unsupported MCP content of type {kind!r}]")


__all__ = [
    "ERROR_PREFIX",
    "MAX_NAME",
    "ListedTool",
    "SchemaProblem",
    "SkippedTool",
    "check_server_name",
    "convert_result",
    "error_text",
    "listed_tools",
    "mcp_tool_name",
    "normalize_schema",
]
