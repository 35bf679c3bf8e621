"""MCP wire shapes to the loop's (no SDK needed): names valid under every provider's rules,
schemas normalised or refused with a reason, results converted and clipped; and the servers
config file, whose every problem names the file, the server and the field."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openprogram.mcp import MCPConfigError, load_mcp_servers, mcp_tool_name, normalize_schema
from openprogram.mcp.convert import SchemaProblem, check_server_name, convert_result, listed_tools
from openprogram.types import ImageContent, TextContent

PROVIDER_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
"""The intersection of OpenAI's, Anthropic's, Bedrock's and Gemini's tool-name rules."""


@pytest.mark.parametrize(
    ("tool", "expected"),
    [
        ("read", "files__read"),
        ("read.file", "files__read_file"),
        ("ünï cødé/x", "files___n__c_d__x"),
    ],
)
def test_tool_names(tool: str, expected: str) -> None:
    assert mcp_tool_name("files", tool) == expected


def test_long_or_empty_names_stay_valid_and_apart() -> None:
    long_a, long_b = "a" * 100 + "1", "a" * 100 + "2"
    names = {mcp_tool_name("files", t) for t in (long_a, long_b, "")}
    assert len(names) == 3
    assert all(PROVIDER_NAME.fullmatch(n) for n in names)


@pytest.mark.parametrize("name", ["", "1files", "a__b", "x" * 33, "sp ace", None])
def test_server_names_must_be_valid_as_written(name: object) -> None:
    with pytest.raises(ValueError, match="an MCP server name must be"):
        check_server_name(name)


def test_schemas() -> None:
    assert normalize_schema(None) == {"type": "object", "properties": {}}
    given = {"properties": {"x": {"type": "string"}}}
    out = normalize_schema(given)
    assert out == {"type": "object", "properties": {"x": {"type": "string"}}}
    assert out["properties"] is not given["properties"]  # a copy
    for bad, why in [
        ([], "inputSchema is list, not a JSON object"),
        ({"type": "string"}, "inputSchema has type 'string'"),
        ({"type": "object", "properties": 5}, "'properties' is not an object"),
        ({"type": "object", "properties": {"x": {"type": 5}}}, "invalid JSON Schema"),
    ]:
        with pytest.raises(SchemaProblem, match=re.escape(why)):
            normalize_schema(bad)
    deep: dict[str, object] = {}
    node = deep
    for _ in range(5000):
        node["not"] = {}
        node = node["not"]  # type: ignore[assignment]
    with pytest.raises(SchemaProblem, match="nested too deeply"):
        normalize_schema({"type": "object", "properties": {"x": deep}})


def test_listing_skips_unusable_tools_with_their_reason() -> None:
    tools, skipped = listed_tools(
        "s",
        [
            {"name": "ok", "title": "Okay"},
            {"name": "bad", "inputSchema": {"type": "array"}},
            {"name": 7},
        ],
    )
    assert [(t.name, t.description) for t in tools] == [("s__ok", "Okay")]
    assert [(s.remote_name, s.reason) for s in skipped] == [
        ("bad", "inputSchema has type 'array'; a tool's arguments are an object"),
        ("7", "its name is not a string"),
    ]


def test_results() -> None:
    result = convert_result(
        "s",
        "t",
        {
            "content": [
                {"type": "text", "text": "hi"},
                {"type": "image", "data": "aGk=", "mimeType": "image/gif"},
                {
                    "type": "resource",
                    "resource": {"uri": "file:///a.png", "blob": "aGk=", "mimeType": "image/png"},
                },
                {"type": "resource", "resource": {"uri": "file:///a.bin", "blob": "AAAA"}},
                {"type": "resource_link", "uri": "file:///b", "name": "b"},
                {"type": "audio", "data": "AAAA", "mimeType": "audio/wav"},
                {"type": "mystery"},
            ],
            "isError": True,
        },
        1000,
    )
    assert result.is_error and result.details == {"mcp_server": "s", "mcp_tool": "t"}
    assert isinstance(result.content, list)
    assert result.content[1] == ImageContent("aGk=", "image/gif")
    assert result.content[2] == ImageContent("aGk=", "image/png")
    assert [b.text for b in result.content if isinstance(b, TextContent)] == [
        "hi",
        "[resource: file:///a.bin, binary, 4 base64 characters]",
        "[resource link: file:///b (b)]",
        "[audio audio/wav, 4 base64 characters]",
        "[unsupported MCP content of type 'mystery']",
    ]
    structured = convert_result("s", "t", {"content": [], "structuredContent": {"a": 1}}, 1000)
    assert structured.content == [TextContent('{"a": 1}')]
    assert structured.details["structured"] == {"a": 1}
    assert convert_result("s", "t", {}, 10).content == ""


def test_large_results_are_clipped_with_a_note() -> None:
    big = convert_result(
        "s",
        "t",
        {
            "content": [
                {"type": "text", "text": "x" * 50},
                {"type": "image", "data": "A" * 80, "mimeType": "image/png"},
            ]
        },
        60,
    )
    assert isinstance(big.content, list)
    texts = [b.text for b in big.content if isinstance(b, TextContent)]
    assert texts[0] == "x" * 50
    assert texts[-1] == "[clipped: the result had 130 characters; the first 60 are shown]"
    assert not any(isinstance(b, ImageContent) for b in big.content)


def _config(tmp_path: Path, servers: object) -> Path:
    path = tmp_path / "mcp_servers.json"
    path.write_text(json.dumps({"servers": servers}), encoding="utf-8")
    return path


def test_the_config_file(tmp_path: Path) -> None:
    path = _config(
        tmp_path,
        {
            "files": {
                "type": "local",
                "command": ["python", "s.py"],
                "env": {"K": "v"},
                "timeout_seconds": 5,
            },
            "off": {"command": ["x"], "enabled": False},
            "web": {
                "type": "remote",
                "url": "http://127.0.0.1:1/mcp",
                "headers": {"X-Key": "k"},
                "always_load": True,
            },
        },
    )
    files, web = load_mcp_servers(path)
    assert (files.name, files.server, files.env, files.call_timeout_s) == (
        "files",
        ["python", "s.py"],
        {"K": "v"},
        5.0,
    )
    assert files.connect_timeout_s == 5.0 and not files.connected
    assert (web.name, web.server, web.headers, web.always_load) == (
        "web",
        "http://127.0.0.1:1/mcp",
        {"X-Key": "k"},
        True,
    )
    assert (
        load_mcp_servers(None) == []
        or Path.home().joinpath(".openprogram/mcp_servers.json").is_file()
    )


@pytest.mark.parametrize(
    ("servers", "problem"),
    [
        ({"a": {"command": "python s.py"}}, "server 'a': a local server needs \"command\""),
        ({"a": {"type": "ftp"}}, 'server \'a\': "type" must be "local" or "remote", got \'ftp\''),
        ({"a": {"type": "remote", "url": "ftp://x"}}, "server 'a': a remote server needs \"url\""),
        (
            {"a": {"command": ["x"], "timeout_seconds": -1}},
            "server 'a': \"timeout_seconds\" must be a number > 0",
        ),
        (
            {"a": {"command": ["x"], "env": {"K": 1}}},
            "server 'a': \"env\" must be an object of strings",
        ),
        ({"a": {"command": ["x"], "comand": 1}}, "server 'a': unknown key(s) ['comand']"),
        ({"a b": {"command": ["x"]}}, "server 'a b': an MCP server name must be"),
        ([], 'needs a "servers" object'),
    ],
)
def test_config_problems_name_the_file_server_and_field(
    tmp_path: Path, servers: object, problem: str
) -> None:
    path = _config(tmp_path, servers)
    with pytest.raises(MCPConfigError) as caught:
        load_mcp_servers(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert problem in str(caught.value)


def test_a_config_that_is_not_json_or_missing(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text("{", encoding="utf-8")
    with pytest.raises(MCPConfigError, match="is not JSON"):
        load_mcp_servers(path)
    with pytest.raises(MCPConfigError, match="cannot be read"):
        load_mcp_servers(tmp_path / "absent.json")


def test_listing_meta_always_load_and_search_hint() -> None:
    schema = {"type": "object", "properties": {}}
    listed, _ = listed_tools(
        "s",
        [
            {"name": "a", "inputSchema": schema, "_meta": {"anthropic/alwaysLoad": True}},
            {
                "name": "b",
                "inputSchema": schema,
                "_meta": {"anthropic/alwaysLoad": "yes", "anthropic/searchHint": "x" * 500},
            },
            {"name": "c", "inputSchema": schema, "_meta": ["not", "a", "mapping"]},
            {"name": "d", "inputSchema": schema, "_meta": {"anthropic/searchHint": 7}},
        ],
    )
    assert [(t.always_load, t.search_hint) for t in listed] == [
        (True, None),
        (False, "x" * 200),
        (False, None),
        (False, None),
    ]
