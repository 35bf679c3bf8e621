"""LangGraph's ``create_react_agent`` loop over langchain-openai's ``ChatOpenAI`` against the
emulator and a cassette, on Chat Completions and on Responses (``use_responses_api=True``): a
tool round with usage (streamed and not), parallel calls, a 429 retried after its retry-after, a
cut stream, a malformed call, garbled streamed arguments, and a recorded run replayed with
redaction and a fault."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import Fault, ProviderEmulator, assert_retries, call, turn, use_cassette
from openprogram_testing.transport.faults import GarbleToolArguments, HttpError
from tests.frameworks._frameworks import BROKEN, SECRET, need, results, roles, tool_round

langchain_openai = need("langchain_openai")
prebuilt = need("langgraph.prebuilt")
tools = need("langchain_core.tools")
openai = need("openai")


def _agent(
    base_url: str, *, streaming: bool = False, responses: bool = False, **options: Any
) -> tuple[Any, list[Any]]:
    ran: list[tuple[int, int]] = []

    @tools.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    settings = {"api_key": "test", "max_retries": 0, **options}
    # stream_usage: ChatOpenAI asks for the usage chunk of a stream only when told to
    llm = langchain_openai.ChatOpenAI(
        model="m",
        base_url=base_url,
        streaming=streaming,
        stream_usage=True,
        use_responses_api=responses,
        **settings,
    )
    with warnings.catch_warnings():  # moved to langchain.agents in LangGraph 1.0, still served
        warnings.simplefilter("ignore")
        return prebuilt.create_react_agent(llm, [add], prompt="Be exact."), ran


def _ask(prompt: str) -> dict[str, Any]:
    return {"messages": [("user", prompt)]}


APIS = ["openai_chat", "openai_responses"]
MODELS = pytest.mark.parametrize(
    "responses", [api == "openai_responses" for api in APIS], ids=["chat", "responses"]
)


@MODELS
@pytest.mark.parametrize("streaming", [False, True], ids=["json", "stream"])
def test_tool_round_with_usage(provider_emulator, responses, streaming):
    provider_emulator.add(*tool_round())
    url = provider_emulator.openai_base_url
    agent, ran = _agent(url, streaming=streaming, responses=responses)
    messages = agent.invoke(_ask("add 2+3"))["messages"]
    assert _text(messages[-1]) == "The sum is 5." and ran == [(2, 3)]
    usage = [m.usage_metadata for m in messages if getattr(m, "usage_metadata", None)]
    assert [(u["input_tokens"], u["output_tokens"]) for u in usage] == [(10, 5), (20, 3)]
    assert roles(provider_emulator) == [["user"], ["user", "assistant", "toolResult"]]
    api = "openai_responses" if responses else "openai_chat"
    assert [(r.api, r.stream) for r in provider_emulator.requests] == [(api, streaming)] * 2


def _text(message: Any) -> str:
    """A message's text (its content is a string on Chat, content blocks on Responses)."""
    return str(message.text)


@MODELS
def test_parallel_calls(provider_emulator, responses):
    provider_emulator.add(*tool_round(parallel=True))
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    messages = agent.invoke(_ask("add 2+3 and 4+5"))["messages"]
    assert _text(messages[-1]) == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert results(provider_emulator, 1) == ["5", "9"]


@MODELS
def test_429_retried_after_retry_after(provider_emulator, responses):
    provider_emulator.add(Fault.http_error(429, headers={"retry-after": "0.2"}), *tool_round())
    url = provider_emulator.openai_base_url
    agent, _ = _agent(url, responses=responses, max_retries=1)
    assert _text(agent.invoke(_ask("add 2+3"))["messages"][-1]) == "The sum is 5."
    timing = assert_retries(provider_emulator.requests[:2], attempts=2, min_gap_s=0.2)
    assert timing.statuses == (429, 200)


@MODELS
def test_cut_stream_fails_the_run_and_runs_no_tool(provider_emulator, responses):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.truncate_after(4, disconnect=True)],
    )
    agent, ran = _agent(provider_emulator.openai_base_url, streaming=True, responses=responses)
    with pytest.raises(openai.APIConnectionError):
        agent.invoke(_ask("add 2+3"))
    assert ran == []


@MODELS
def test_malformed_call_ends_as_an_invalid_tool_call(provider_emulator, responses):
    """ChatOpenAI keeps unparsable arguments aside (``invalid_tool_calls``); the prebuilt loop
    then has no call to run and ends on that message."""
    provider_emulator.add(turn(call("add", raw=BROKEN)))
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    last = agent.invoke(_ask("add 2+3"))["messages"][-1]
    (invalid,) = last.invalid_tool_calls
    assert (invalid["name"], invalid["args"]) == ("add", BROKEN) and ran == []


@MODELS
def test_garbled_streamed_arguments_end_as_an_invalid_tool_call(provider_emulator, responses):
    provider_emulator.add(
        turn(call("add", {"a": 2, "b": 3}), chunk_size=3), faults=[GarbleToolArguments(0)]
    )
    agent, ran = _agent(provider_emulator.openai_base_url, streaming=True, responses=responses)
    last = agent.invoke(_ask("add 2+3"))["messages"][-1]
    (invalid,) = last.invalid_tool_calls
    assert invalid["name"] == "add" and ran == []


def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "langgraph_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        base_url = emu.openai_base_url
        with use_cassette(path, record_mode="once"):
            agent, _ = _agent(base_url, api_key=SECRET)
            assert agent.invoke(_ask("add 2+3"))["messages"][-1].content == "The sum is 5."
    assert SECRET not in path.read_text()
    with use_cassette(path):  # the emulator is gone: only the cassette can answer
        agent, ran = _agent(base_url)
        assert agent.invoke(_ask("add 2+3"))["messages"][-1].content == "The sum is 5."
    assert ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        agent, ran = _agent(base_url)
        with pytest.raises(openai.InternalServerError):
            agent.invoke(_ask("add 2+3"))
    assert ran == [(2, 3)]
