"""openai-agents' own runner against the emulator and a cassette, on both of its models (Chat
Completions and Responses): a tool round with usage (streamed and not), parallel calls, a 429
retried after its retry-after, a cut stream, a malformed call, garbled streamed arguments, and a
recorded run replayed with redaction and a fault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import Fault, ProviderEmulator, assert_retries, call, turn, use_cassette
from openprogram_testing.transport.faults import GarbleToolArguments, HttpError
from tests.frameworks._frameworks import BROKEN, SECRET, need, results, roles, tool_round

agents = need("agents")
openai = need("openai")
agents.set_tracing_disabled(True)


def _agent(base_url: str, *, responses: bool = False, **client: Any) -> tuple[Any, list[Any]]:
    ran: list[tuple[int, int]] = []

    @agents.function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    options = {"api_key": "test", "max_retries": 0, **client}
    sdk = openai.AsyncOpenAI(base_url=base_url, **options)
    model_class = agents.OpenAIResponsesModel if responses else agents.OpenAIChatCompletionsModel
    model = model_class(model="m", openai_client=sdk)
    # Chat Completions streams carry usage only when asked for (stream_options.include_usage)
    settings = agents.ModelSettings(include_usage=True)
    agent = agents.Agent(
        name="adder", instructions="Be exact.", tools=[add], model=model, model_settings=settings
    )
    return agent, ran


async def _streamed(agent: Any, prompt: str) -> Any:
    run = agents.Runner.run_streamed(agent, prompt)
    async for _ in run.stream_events():
        pass
    return run


APIS = ["openai_chat", "openai_responses"]
MODELS = pytest.mark.parametrize(
    "responses", [api == "openai_responses" for api in APIS], ids=["chat", "responses"]
)


@MODELS
@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
async def test_tool_round_with_usage(provider_emulator, responses, stream):
    provider_emulator.add(*tool_round())
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    run = await (_streamed(agent, "add 2+3") if stream else agents.Runner.run(agent, "add 2+3"))
    assert run.final_output == "The sum is 5." and ran == [(2, 3)]
    usage = run.context_wrapper.usage
    assert (usage.requests, usage.input_tokens, usage.output_tokens) == (2, 30, 8)
    assert roles(provider_emulator) == [["user"], ["user", "assistant", "toolResult"]]
    api = "openai_responses" if responses else "openai_chat"
    assert [r.api for r in provider_emulator.requests] == [api, api]
    assert [r.stream for r in provider_emulator.requests] == [stream, stream]


@MODELS
async def test_parallel_calls(provider_emulator, responses):
    provider_emulator.add(*tool_round(parallel=True))
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    result = await agents.Runner.run(agent, "add 2+3 and 4+5")
    assert result.final_output == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert results(provider_emulator, 1) == ["5", "9"]


@MODELS
async def test_429_retried_after_retry_after(provider_emulator, responses):
    provider_emulator.add(Fault.http_error(429, headers={"retry-after": "0.2"}), *tool_round())
    agent, _ = _agent(provider_emulator.openai_base_url, responses=responses, max_retries=1)
    result = await agents.Runner.run(agent, "add 2+3")
    assert result.final_output == "The sum is 5."
    timing = assert_retries(provider_emulator.requests[:2], attempts=2, min_gap_s=0.2)
    assert timing.statuses == (429, 200)


@MODELS
async def test_cut_stream_fails_the_run_and_runs_no_tool(provider_emulator, responses):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.truncate_after(4, disconnect=True)],
    )
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    with pytest.raises(openai.APIConnectionError):
        await _streamed(agent, "add 2+3")
    assert ran == []


@MODELS
async def test_malformed_call_goes_back_to_the_model(provider_emulator, responses):
    provider_emulator.add(turn(call("add", raw=BROKEN)), "recovered")
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    result = await agents.Runner.run(agent, "add 2+3")
    assert result.final_output == "recovered" and ran == []
    (feedback,) = results(provider_emulator, 1)
    assert "error occurred while running the tool" in feedback


@MODELS
async def test_garbled_streamed_arguments_go_back_to_the_model(provider_emulator, responses):
    provider_emulator.add(
        turn(call("add", {"a": 2, "b": 3}), chunk_size=3), faults=[GarbleToolArguments(0)]
    )
    provider_emulator.add("recovered")
    agent, ran = _agent(provider_emulator.openai_base_url, responses=responses)
    assert (await _streamed(agent, "add 2+3")).final_output == "recovered" and ran == []
    (feedback,) = results(provider_emulator, 1)
    assert "error occurred while running the tool" in feedback


async def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "openai_agents_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        base_url = emu.openai_base_url
        with use_cassette(path, record_mode="once"):
            agent, _ = _agent(base_url, api_key=SECRET)
            assert (await agents.Runner.run(agent, "add 2+3")).final_output == "The sum is 5."
    assert SECRET not in path.read_text()
    with use_cassette(path):  # the emulator is gone: only the cassette can answer
        agent, ran = _agent(base_url)
        assert (await agents.Runner.run(agent, "add 2+3")).final_output == "The sum is 5."
    assert ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        agent, ran = _agent(base_url)
        with pytest.raises(openai.InternalServerError):
            await agents.Runner.run(agent, "add 2+3")
    assert ran == [(2, 3)]
