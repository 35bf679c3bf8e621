"""pydantic-ai's own approval flow against the emulator: a tool declared
``requires_approval=True`` (and one raising ``ApprovalRequired`` for some arguments) ends the run
with ``DeferredToolRequests``; the next run, given ``DeferredToolResults`` with ``ToolApproved``,
``ToolApproved(override_args=...)`` or ``ToolDenied(message)``, runs the call as decided and the
emulator sees exactly what reached the model.  A call that is denied never runs."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram_testing import ProviderEmulator, call, turn
from tests.frameworks._frameworks import need, results

pydantic_ai = need("pydantic_ai")
openai = need("openai")
anthropic = need("anthropic")
from pydantic_ai import (  # noqa: E402
    ApprovalRequired,
    DeferredToolRequests,
    DeferredToolResults,
    RunContext,
    ToolApproved,
    ToolDenied,
)
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

APIS = pytest.mark.parametrize("api", ["openai_chat", "anthropic"])


def _model(api: str, emu: ProviderEmulator) -> Any:
    if api == "openai_chat":
        client = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=0)
        return OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))
    sdk = anthropic.AsyncAnthropic(api_key="t", base_url=emu.anthropic_base_url, max_retries=0)
    return AnthropicModel("claude-sonnet-4-5", provider=AnthropicProvider(anthropic_client=sdk))


def _agent(model: Any) -> tuple[Any, list[tuple[str, str]]]:
    ran: list[tuple[str, str]] = []
    agent = pydantic_ai.Agent(model, output_type=[str, DeferredToolRequests])

    @agent.tool_plain(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(("delete", path))
        return f"deleted {path}"

    @agent.tool
    def move(ctx: RunContext[None], path: str, to: str) -> str:
        """Move a file; outside /tmp only with approval."""
        if not to.startswith("/tmp/") and not ctx.tool_call_approved:
            raise ApprovalRequired(metadata={"why": f"{to} is outside /tmp"})
        ran.append(("move", f"{path}->{to}"))
        return f"moved {path} to {to}"

    return agent, ran


async def _ask(agent: Any) -> tuple[Any, DeferredToolRequests]:
    first = await agent.run("tidy up")
    assert isinstance(first.output, DeferredToolRequests)
    return first, first.output


@APIS
async def test_deny_modify_approve(provider_emulator: ProviderEmulator, api: str) -> None:
    provider_emulator.add(
        turn(
            call("delete", {"path": "/etc/passwd"}, id="c1"),
            call("move", {"path": "a", "to": "/home/b"}, id="c2"),
            call("delete", {"path": "/tmp/x"}, id="c3"),
            call("move", {"path": "c", "to": "/tmp/d"}, id="c4"),
        ),
        turn("Done what I was allowed to."),
    )
    agent, ran = _agent(_model(api, provider_emulator))
    first, requests = await _ask(agent)
    # the calls that need approval waited; the one that did not (c4) ran at once
    assert sorted(c.tool_call_id for c in requests.approvals) == ["c1", "c2", "c3"]
    assert requests.metadata == {"c2": {"why": "/home/b is outside /tmp"}}
    assert ran == [("move", "c->/tmp/d")]
    decisions = DeferredToolResults(
        approvals={
            "c1": ToolDenied("never /etc"),
            "c2": ToolApproved(override_args={"path": "a", "to": "/tmp/b"}),
            "c3": True,
        }
    )
    second = await agent.run(message_history=first.all_messages(), deferred_tool_results=decisions)
    assert second.output == "Done what I was allowed to."
    assert sorted(ran) == [("delete", "/tmp/x"), ("move", "a->/tmp/b"), ("move", "c->/tmp/d")]
    sent = results(provider_emulator, 1)
    assert sorted(sent) == sorted(
        ["never /etc", "moved a to /tmp/b", "deleted /tmp/x", "moved c to /tmp/d"]
    )
    assert len(provider_emulator.requests) == 2  # no model call while the approvals waited


@APIS
async def test_a_denied_call_never_runs(provider_emulator: ProviderEmulator, api: str) -> None:
    provider_emulator.add(turn(call("delete", {"path": "/"}, id="c1")), turn("Not deleted."))
    agent, ran = _agent(_model(api, provider_emulator))
    first, requests = await _ask(agent)
    assert [c.tool_name for c in requests.approvals] == ["delete"]
    second = await agent.run(
        message_history=first.all_messages(),
        deferred_tool_results=DeferredToolResults(approvals={"c1": False}),
    )
    assert second.output == "Not deleted." and ran == []
    assert results(provider_emulator, 1) == ["The tool call was denied."]


async def test_an_unanswered_approval_is_refused_by_the_framework(
    provider_emulator: ProviderEmulator,
) -> None:
    """The strictness the harness's scripted reviewer mirrors: pydantic-ai refuses to resume
    with a pending approval left unanswered."""
    provider_emulator.add(turn(call("delete", {"path": "/"}, id="c1")))
    agent, ran = _agent(_model("openai_chat", provider_emulator))
    first, _ = await _ask(agent)
    with pytest.raises(pydantic_ai.UserError, match="c1"):
        await agent.run(
            message_history=first.all_messages(), deferred_tool_results=DeferredToolResults()
        )
    assert ran == []
