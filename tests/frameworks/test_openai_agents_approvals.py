"""openai-agents' own approval flow against the emulator, on both of its models: a tool with
``needs_approval`` (``True``, or an async check of the arguments) interrupts the run
(``result.interruptions``); ``RunState.approve`` / ``RunState.reject(rejection_message=...)``
and a resumed ``Runner.run(agent, state)`` run the call as decided; the emulator sees what
reached the model.  A rejected call never runs."""

from __future__ import annotations

from typing import Any

import pytest

from openprogram_testing import ProviderEmulator, call, turn
from tests.frameworks._frameworks import need, results

agents = need("agents")
openai = need("openai")
agents.set_tracing_disabled(True)

MODELS = pytest.mark.parametrize("responses", [False, True], ids=["chat", "responses"])


def _agent(base_url: str, *, responses: bool) -> tuple[Any, list[tuple[str, str]]]:
    ran: list[tuple[str, str]] = []

    @agents.function_tool(needs_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        ran.append(("delete", path))
        return f"deleted {path}"

    async def outside_tmp(ctx: Any, params: dict[str, Any], call_id: str) -> bool:
        return not str(params.get("to", "")).startswith("/tmp/")

    @agents.function_tool(needs_approval=outside_tmp)
    def move(path: str, to: str) -> str:
        """Move a file; outside /tmp only with approval."""
        ran.append(("move", f"{path}->{to}"))
        return f"moved {path} to {to}"

    sdk = openai.AsyncOpenAI(base_url=base_url, api_key="test", max_retries=0)
    model_class = agents.OpenAIResponsesModel if responses else agents.OpenAIChatCompletionsModel
    agent = agents.Agent(
        name="tidier",
        instructions="Tidy up.",
        tools=[delete, move],
        model=model_class(model="m", openai_client=sdk),
    )
    return agent, ran


@MODELS
async def test_reject_and_approve(provider_emulator: ProviderEmulator, responses: bool) -> None:
    provider_emulator.add(
        turn(
            call("delete", {"path": "/etc/passwd"}, id="c1"),
            call("move", {"path": "a", "to": "/home/b"}, id="c2"),
            call("move", {"path": "c", "to": "/tmp/d"}, id="c3"),
        ),
        turn("Done what I was allowed to."),
    )
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    first = await agents.Runner.run(agent, "tidy up")
    pending = {item.raw_item.call_id: item for item in first.interruptions}
    # the check let c3 through: only c1 and c2 wait, and nothing that waits has run
    assert sorted(pending) == ["c1", "c2"]
    assert ("delete", "/etc/passwd") not in ran and ("move", "a->/home/b") not in ran
    state = first.to_state()
    state.reject(pending["c1"], rejection_message="never /etc")
    state.approve(pending["c2"])
    second = await agents.Runner.run(agent, state)
    assert second.final_output == "Done what I was allowed to."
    assert sorted(ran) == [("move", "a->/home/b"), ("move", "c->/tmp/d")]
    assert sorted(results(provider_emulator, 1)) == [
        "moved a to /home/b",
        "moved c to /tmp/d",
        "never /etc",
    ]
    assert len(provider_emulator.requests) == 2  # no model call while the approvals waited


@MODELS
async def test_a_rejected_call_never_runs(
    provider_emulator: ProviderEmulator, responses: bool
) -> None:
    provider_emulator.add(turn(call("delete", {"path": "/"}, id="c1")), turn("Not deleted."))
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    first = await agents.Runner.run(agent, "delete everything")
    [item] = first.interruptions
    assert item.tool_name == "delete"
    state = first.to_state()
    state.reject(item)
    second = await agents.Runner.run(agent, state)
    assert second.final_output == "Not deleted." and ran == []
    [text] = results(provider_emulator, 1)
    assert "not approved" in text or "rejected" in text, text  # the SDK's own rejection text
