"""pydantic-ai's own agent loop against the emulator and a cassette: a tool round with usage,
parallel calls, a 429 retried after its retry-after, a cut stream, a malformed call (OpenAI
Chat and Anthropic), and a recorded run replayed with redaction and a fault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import Fault, ProviderEmulator, assert_retries, call, turn, use_cassette
from openprogram_testing.faults import HttpError
from tests.frameworks._frameworks import BROKEN, SECRET, need, results, roles, tool_round

pydantic_ai = need("pydantic_ai")
openai = need("openai")
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402


def _agent(model: Any) -> tuple[Any, list[tuple[int, int]]]:
    ran: list[tuple[int, int]] = []
    a = pydantic_ai.Agent(model, instructions="Be exact.")

    @a.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    return a, ran


def chat(base_url: str, *, api_key: str = "test", max_retries: int = 0) -> Any:
    client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, max_retries=max_retries)
    return OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client))


async def test_tool_round_with_usage(provider_emulator):
    provider_emulator.add(*tool_round())
    a, ran = _agent(chat(provider_emulator.openai_base_url))
    result = await a.run("add 2+3")
    assert result.output == "The sum is 5." and ran == [(2, 3)]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 8)
    assert roles(provider_emulator) == [["user"], ["user", "assistant", "toolResult"]]
    assert provider_emulator.requests[0].model_request.system_prompt == "Be exact."


async def test_parallel_calls_streamed(provider_emulator):
    provider_emulator.add(*tool_round(parallel=True))
    a, ran = _agent(chat(provider_emulator.openai_base_url))
    events: list[Any] = []

    async def handler(ctx: Any, stream: Any) -> None:
        events.extend([e async for e in stream])

    result = await a.run("add 2+3 and 4+5", event_stream_handler=handler)
    assert result.output == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert events  # streamed, event by event
    assert results(provider_emulator, 1) == ["5", "9"]
    assert all(r.stream for r in provider_emulator.requests)


async def test_429_retried_after_retry_after(provider_emulator):
    provider_emulator.add(Fault.status(429, headers={"retry-after": "0.2"}), *tool_round())
    a, ran = _agent(chat(provider_emulator.openai_base_url, max_retries=1))
    result = await a.run("add 2+3")
    assert result.output == "The sum is 5."
    assert_retries(provider_emulator.requests[:2], attempts=2, min_gap_s=0.2)


async def test_cut_stream_fails_the_run_and_runs_no_tool(provider_emulator):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.disconnect_after(4)],
    )
    a, ran = _agent(chat(provider_emulator.openai_base_url))
    with pytest.raises(pydantic_ai.exceptions.ModelAPIError):
        async with a.run_stream("add 2+3") as run:
            await run.get_output()
    assert ran == []


@pytest.mark.parametrize("api", ["openai_chat", "anthropic"])
async def test_malformed_call_goes_back_to_the_model(provider_emulator, api):
    """OpenAI sends the broken text; Anthropic's JSON body the salvaged object ``{"a": 2}``:
    either way pydantic-ai's validation asks the model again, and the next answer ends the run."""
    provider_emulator.add(turn(call("add", raw=BROKEN)), "recovered")
    if api == "anthropic":
        provider = AnthropicProvider(api_key="test", base_url=provider_emulator.anthropic_base_url)
        model: Any = AnthropicModel("claude-sonnet-4-5", provider=provider)
    else:
        model = chat(provider_emulator.openai_base_url)
    a, ran = _agent(model)
    result = await a.run("add 2+3")
    assert result.output == "recovered" and ran == []
    assert roles(provider_emulator)[1] == ["user", "assistant", "toolResult"]
    (feedback,) = results(provider_emulator, 1)
    assert ("b" in feedback and "required" in feedback.lower()) or "json" in feedback.lower()


async def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "pydantic_ai_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        base_url = emu.openai_base_url
        with use_cassette(path, record_mode="once"):
            a, _ = _agent(chat(base_url, api_key=SECRET))
            assert (await a.run("add 2+3")).output == "The sum is 5."
    assert SECRET not in path.read_text()
    # the emulator is gone: only the cassette can answer
    with use_cassette(path):
        a, ran = _agent(chat(base_url))
        assert (await a.run("add 2+3")).output == "The sum is 5." and ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        a, ran = _agent(chat(base_url))
        with pytest.raises(pydantic_ai.exceptions.ModelHTTPError):
            await a.run("add 2+3")
    assert ran == [(2, 3)]  # the first answer played; the second became a 500


def _model(api: str, emu: ProviderEmulator) -> Any:
    """pydantic-ai's model for ``api``, its client pointed at the emulator."""
    if api == "openai_chat":
        return chat(emu.openai_base_url)
    if api == "openai_responses":
        provider: Any = OpenAIProvider(base_url=emu.openai_base_url, api_key="test")
        return pydantic_ai.models.openai.OpenAIResponsesModel("m", provider=provider)
    if api == "anthropic":
        provider = AnthropicProvider(api_key="test", base_url=emu.anthropic_base_url)
        return AnthropicModel("claude-sonnet-4-5", provider=provider)
    if api == "gemini":
        from google.genai import Client, types
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        client = Client(api_key="test", http_options=types.HttpOptions(base_url=emu.base_url))
        return GoogleModel("gemini-2.5-flash", provider=GoogleProvider(client=client))
    import boto3
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.providers.bedrock import BedrockProvider

    bedrock = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=emu.base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    return BedrockConverseModel(
        "amazon.nova-micro-v1:0", provider=BedrockProvider(bedrock_client=bedrock)
    )


APIS = ["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock"]


async def _run(agent: Any, prompt: str, *, stream: bool) -> Any:
    if not stream:
        return await agent.run(prompt)

    async def handler(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    return await agent.run(prompt, event_stream_handler=handler)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", APIS)
async def test_parallel_tool_round_on_every_api(provider_emulator, api, stream):
    provider_emulator.add(*tool_round(parallel=True))
    a, ran = _agent(_model(api, provider_emulator))
    result = await _run(a, "add 2+3 and 4+5", stream=stream)
    assert result.output == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 8)
    assert roles(provider_emulator)[1] == ["user", "assistant", "toolResult", "toolResult"]
    assert [r.api for r in provider_emulator.requests] == [api] * 2
    if stream:  # (pydantic-ai's Anthropic model streams its plain requests too)
        assert all(r.stream for r in provider_emulator.requests)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])
@pytest.mark.parametrize("api", ["gemini", "bedrock"])
async def test_malformed_call_signals_are_recovered_from(provider_emulator, api, stream):
    """Gemini's ``MALFORMED_FUNCTION_CALL`` (no parts: pydantic-ai asks for text or a call
    again) and Converse's ``malformed_tool_use`` (the salvaged input fails validation, or the
    streamed text fails to parse): either way the next request carries the news and the run
    ends on the model's next answer, without running the tool."""
    provider_emulator.add(turn(call("add", raw=BROKEN)), "recovered")
    a, ran = _agent(_model(api, provider_emulator))
    result = await _run(a, "add 2+3", stream=stream)
    assert result.output == "recovered" and ran == []
    second = roles(provider_emulator)[1]
    assert second == (["user", "user"] if api == "gemini" else ["user", "assistant", "toolResult"])
