"""The fake MCP server is strict: each way a call can be unexpected is answered with an error
result the model sees *and* fails ``assert_complete`` naming the call and what was expected;
scripted answers never asked for fail it too; a clean run passes.  The fixture fails the test at
teardown (shown through pytester)."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram import Registry, Runtime
from openprogram_testing import ScriptedProvider, call, turn
from openprogram_testing.mcp import (
    FakeMCPServer,
    MCPResult,
    UnconsumedMCPResults,
    UnexpectedMCPCall,
    image,
    resource,
    text,
)

pytest_plugins = ["pytester"]

RECORDED = {
    "tools": [
        {
            "name": "search",
            "description": "Search the notes.",
            "inputSchema": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        }
    ]
}


def run(fake: FakeMCPServer, *calls: Any) -> list[Any]:
    provider = ScriptedProvider([turn(*calls), "done"])
    with fake.connection(always_load=True) as server:
        Runtime(provider, registry=Registry()).exec("go", tools=[server])
    return [m for m in provider.requests[-1].messages if m.role == "toolResult"]


def test_a_recorded_listing_with_scripted_answers_passes_when_followed() -> None:
    fake = FakeMCPServer.from_tools_list("notes", RECORDED)
    fake.script("search", "first", {"hits": 2}, arguments={"query": "mcp"})
    fake.script(
        "search",
        MCPResult([text("see"), image("aGk=", "image/png"), resource("note://1", "body")]),
    )
    answers = run(
        fake,
        call("notes__search", {"query": "mcp"}),
        call("notes__search", {"query": "mcp"}),
        call("notes__search", {"query": "anything"}),
    )
    assert [a.text for a in answers[:2]] == ["first", '{"hits": 2}']
    assert answers[1].details["structured"] == {"hits": 2}
    kinds = [type(b).__name__ for b in answers[2].content]
    assert kinds == ["TextContent", "ImageContent", "TextContent"]
    assert answers[2].content[2].text == "[resource: note://1]\nbody"
    fake.assert_complete()


def test_arguments_other_than_scripted_fail_naming_both() -> None:
    fake = FakeMCPServer.from_tools_list("notes", RECORDED)
    fake.script("search", "x", arguments={"query": "mcp"})
    (answer,) = run(fake, call("notes__search", {"query": "other"}))
    assert answer.is_error and answer.text.startswith("unexpected call: ")
    with pytest.raises(UnexpectedMCPCall) as caught:
        fake.assert_complete()
    assert str(caught.value) == (
        'fake MCP server \'notes\' got an unexpected call search({"query": "other"}): '
        'the script expected the arguments {"query": "mcp"}'
    )


def test_a_call_past_the_script_fails_and_a_function_answers_instead() -> None:
    fake = FakeMCPServer.from_tools_list("notes", RECORDED)
    fake.script("search", "only once")
    run(fake, call("notes__search", {"query": "a"}), call("notes__search", {"query": "b"}))
    with pytest.raises(UnexpectedMCPCall, match="its script for 'search' is used up"):
        fake.assert_complete()

    with_function = FakeMCPServer("notes")

    @with_function.tool
    def search(query: str) -> str:
        """Search."""
        return f"found {query}"

    with_function.script("search", "scripted first")
    answers = run(with_function, *[call("notes__search", {"query": q}) for q in "ab"])
    assert [a.text for a in answers] == ["scripted first", "found b"]
    with_function.assert_complete()


def test_answers_never_asked_for_fail() -> None:
    fake = FakeMCPServer.from_tools_list("notes", RECORDED)
    fake.script("search", "a", "b")
    run(fake, call("notes__search", {"query": "a"}))
    with pytest.raises(UnconsumedMCPResults, match=r"never asked for \(search: 1\)"):
        fake.assert_complete()
    with pytest.raises(KeyError, match="lists no tool 'missing'"):
        fake.script("missing", "x")


def test_the_fixture_fails_the_test_at_teardown(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
from openprogram import Registry, Runtime
from openprogram_testing import ScriptedProvider, call, turn

def test_strict(fake_mcp_server):
    fake = fake_mcp_server("notes", [{"name": "search", "inputSchema": {"type": "object"}}])
    fake.script("search", "a", arguments={"q": 1})
    provider = ScriptedProvider([turn(call("notes__search", {"q": 2})), "done"])
    Runtime(provider, registry=Registry()).exec("go", tools=[fake.connection(always_load=True)])

def test_clean(fake_mcp_server):
    fake = fake_mcp_server("notes", [{"name": "search", "inputSchema": {"type": "object"}}])
    fake.script("search", "a")
    provider = ScriptedProvider([turn(call("notes__search", {})), "done"])
    Runtime(provider, registry=Registry()).exec("go", tools=[fake.connection(always_load=True)])
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(
        ["*UnexpectedMCPCall: fake MCP server 'notes' got an unexpected call search({\"q\": 2})*"]
    )


def _with_output_schema(properties: dict[str, Any]) -> FakeMCPServer:
    tool = {
        **RECORDED["tools"][0],
        "outputSchema": {"type": "object", "properties": properties},
    }
    return FakeMCPServer.from_tools_list("notes", [tool])


def test_a_plain_answer_of_a_tool_with_an_output_schema_carries_it_structured() -> None:
    """A tool recorded from an ``MCPServer`` (a ``str`` return is listed with the output schema
    ``{result: string}``) answers a scripted text as that server does: the SDK's client
    accepts it and the agent sees the text."""
    fake = _with_output_schema({"result": {"type": "string"}})
    fake.script("search", "1 note", arguments={"query": "mcp"})
    (result,) = run(fake, call("notes__search", {"query": "mcp"}))
    assert (result.text, result.is_error) == ("1 note", False)
    assert result.details["structured"] == {"result": "1 note"}
    fake.assert_complete()


def test_an_answer_an_output_schema_does_not_allow_is_served_as_scripted() -> None:
    """With any other output schema a plain text is sent as it is, and the SDK's client
    refuses it: the fake serves what was scripted, as a broken server would."""
    fake = _with_output_schema({"hits": {"type": "integer"}})
    fake.script("search", "1 note", arguments={"query": "mcp"})
    (result,) = run(fake, call("notes__search", {"query": "mcp"}))
    assert result.is_error and "did not return structured content" in result.text
