"""pydantic-ai's own agent loop against the emulator and a cassette, on every API it has a model
for (OpenAI Chat and Responses, Anthropic, Gemini, Bedrock Converse, and Anthropic through
Bedrock's InvokeModel with ``AsyncAnthropicBedrock``): a tool round (one call, parallel calls;
JSON and streamed) with usage, a 429 retried, a cut stream, a malformed call, garbled streamed
arguments, and a recorded run replayed with redaction and a fault."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import Fault, ProviderEmulator, assert_retries, call, turn, use_cassette
from openprogram_testing.transport.faults import GarbleToolArguments, HttpError
from tests.frameworks._frameworks import BROKEN, SECRET, need, results, roles, tool_round

pydantic_ai = need("pydantic_ai")
openai = need("openai")
anthropic = need("anthropic")
from pydantic_ai.models.anthropic import AnthropicModel  # noqa: E402
from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel  # noqa: E402
from pydantic_ai.providers.anthropic import AnthropicProvider  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

APIS = ["openai_chat", "openai_responses", "anthropic", "gemini", "bedrock", "bedrock_invoke"]
"""``bedrock_invoke``: Anthropic's Messages through Bedrock's InvokeModel (``/invoke``,
``/invoke-with-response-stream``), the emulator's ``anthropic`` wire."""
WIRE = {**{api: api for api in APIS}, "bedrock_invoke": "anthropic"}


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


def _model(api: str, emu: ProviderEmulator, *, retries: int = 0) -> Any:
    """pydantic-ai's model for ``api``, its SDK client pointed at the emulator, retrying
    ``retries`` times (0: none, so a fault reaches the loop)."""
    if api == "openai_chat":
        return chat(emu.openai_base_url, max_retries=retries)
    if api == "openai_responses":
        client = openai.AsyncOpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=retries)
        return OpenAIResponsesModel("m", provider=OpenAIProvider(openai_client=client))
    if api in ("anthropic", "bedrock_invoke"):
        sdk: Any = (
            anthropic.AsyncAnthropic(
                api_key="t", base_url=emu.anthropic_base_url, max_retries=retries
            )
            if api == "anthropic"
            else anthropic.AsyncAnthropicBedrock(
                aws_access_key="t",
                aws_secret_key="t",
                aws_region="us-east-1",
                base_url=emu.base_url,
                max_retries=retries,
            )
        )
        model = "claude-sonnet-4-5" if api == "anthropic" else "anthropic.claude-sonnet-4-5:0"
        return AnthropicModel(model, provider=AnthropicProvider(anthropic_client=sdk))
    if api == "gemini":
        from google.genai import Client, types
        from pydantic_ai.models.google import GoogleModel
        from pydantic_ai.providers.google import GoogleProvider

        # google-genai retries on its own schedule (it reads no retry-after): a fixed 0.2 s
        retry = types.HttpRetryOptions(
            attempts=retries + 1, initial_delay=0.2, max_delay=0.2, jitter=0
        )
        options = types.HttpOptions(base_url=emu.base_url, retry_options=retry)
        client = Client(api_key="test", http_options=options)
        return GoogleModel("gemini-2.5-flash", provider=GoogleProvider(client=client))
    import boto3
    from botocore.config import Config
    from pydantic_ai.models.bedrock import BedrockConverseModel
    from pydantic_ai.providers.bedrock import BedrockProvider

    bedrock = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        endpoint_url=emu.base_url,
        aws_access_key_id="test",
        aws_secret_access_key="test",
        config=Config(retries={"max_attempts": retries + 1, "mode": "standard"}),
    )
    return BedrockConverseModel(
        "amazon.nova-micro-v1:0", provider=BedrockProvider(bedrock_client=bedrock)
    )


async def _run(agent: Any, prompt: str, *, stream: bool) -> Any:
    if not stream:
        return await agent.run(prompt)

    async def handler(ctx: Any, events: Any) -> None:
        async for _ in events:
            pass

    return await agent.run(prompt, event_stream_handler=handler)


STREAM = pytest.mark.parametrize("stream", [False, True], ids=["json", "stream"])


@STREAM
@pytest.mark.parametrize("parallel", [False, True], ids=["one_call", "parallel"])
@pytest.mark.parametrize("api", APIS)
async def test_tool_round_with_usage(provider_emulator, api, parallel, stream):
    provider_emulator.add(*tool_round(parallel=parallel))
    a, ran = _agent(_model(api, provider_emulator))
    result = await _run(a, "add", stream=stream)
    assert result.output == "The sum is 5." and sorted(ran) == [(2, 3), (4, 5)][: 1 + parallel]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (30, 8)
    assert roles(provider_emulator)[1] == ["user", "assistant"] + ["toolResult"] * (1 + parallel)
    assert "5" in results(provider_emulator, 1)[0]
    assert provider_emulator.requests[0].model_request.system_prompt == "Be exact."
    assert [r.api for r in provider_emulator.requests] == [WIRE[api]] * 2
    if stream:
        assert all(r.stream for r in provider_emulator.requests)
    if api == "bedrock_invoke":  # pydantic-ai's Anthropic model always streams
        assert provider_emulator.requests[0].path.endswith("/invoke-with-response-stream")


@pytest.mark.parametrize("api", APIS)
async def test_429_is_retried(provider_emulator, api):
    """The SDK under pydantic-ai retries; OpenAI's and Anthropic's clients wait the
    ``retry-after`` they are told, google-genai its own fixed delay, botocore its jittered
    backoff (neither of the last two reads the header)."""
    provider_emulator.add(Fault.http_error(429, headers={"retry-after": "0.2"}), *tool_round())
    a, ran = _agent(_model(api, provider_emulator, retries=1))
    assert (await a.run("add")).output == "The sum is 5." and ran == [(2, 3)]
    reads_retry_after = api not in ("gemini", "bedrock")
    timing = assert_retries(
        provider_emulator.requests[:2],
        attempts=2,
        min_gap_s=0.2 if api != "bedrock" else None,
        honours_retry_after=reads_retry_after,
    )
    assert timing.statuses == (429, 200)


@pytest.mark.parametrize("api", APIS)
async def test_cut_stream_fails_the_run_and_runs_no_tool(provider_emulator, api):
    provider_emulator.add(
        turn("Adding.", call("add", {"a": 2, "b": 3}), chunk_size=1),
        faults=[Fault.truncate_after(4, disconnect=True)],
    )
    a, ran = _agent(_model(api, provider_emulator))
    with pytest.raises(Exception) as failure:
        await _run(a, "add", stream=True)
    assert not isinstance(failure.value, AssertionError), failure.value
    assert ran == [] and len(provider_emulator.requests) == 1
    assert provider_emulator.requests[0].stream


@STREAM
@pytest.mark.parametrize("api", APIS)
async def test_malformed_call_goes_back_to_the_model(provider_emulator, api, stream):
    """Each API answers broken arguments its own way: the text (OpenAI, and Anthropic and
    Converse streams), the salvaged object ``{"a": 2}`` (Anthropic and Converse JSON bodies,
    ``stopReason: malformed_tool_use`` on Converse), Gemini's ``MALFORMED_FUNCTION_CALL`` with no
    parts.  Either way pydantic-ai asks the model again, and its next answer ends the run
    without the tool having run."""
    provider_emulator.add(turn(call("add", raw=BROKEN)), "recovered")
    a, ran = _agent(_model(api, provider_emulator))
    result = await _run(a, "add 2+3", stream=stream)
    assert result.output == "recovered" and ran == []
    second = roles(provider_emulator)[1]
    if api == "gemini":  # no call to answer: pydantic-ai asks again in a user turn
        assert second == ["user", "user"]
        return
    assert second == ["user", "assistant", "toolResult"]
    (feedback,) = results(provider_emulator, 1)
    assert ("b" in feedback and "required" in feedback.lower()) or "json" in feedback.lower()


@pytest.mark.parametrize("api", [a for a in APIS if a != "gemini"])
async def test_garbled_streamed_arguments_go_back_to_the_model(provider_emulator, api):
    """``GarbleToolArguments(0)`` on every stream whose arguments arrive as text (through
    ``invoke-with-response-stream`` too): pydantic-ai's validation fails, the model is asked
    again, and the tool never runs with the garbled arguments."""
    provider_emulator.add(
        turn(call("add", {"a": 2, "b": 3}), chunk_size=3), faults=[GarbleToolArguments(0)]
    )
    provider_emulator.add("recovered")
    a, ran = _agent(_model(api, provider_emulator))
    assert (await _run(a, "add", stream=True)).output == "recovered" and ran == []
    if api == "bedrock_invoke":
        assert provider_emulator.requests[0].path.endswith("/invoke-with-response-stream")
    (feedback,) = results(provider_emulator, 1)
    assert "json" in feedback.lower() or "invalid" in feedback.lower()


async def test_garbling_a_gemini_stream_is_refused_naming_the_endpoint():
    """Gemini's calls arrive whole: there is no argument text to garble, so the fault is
    refused (HTTP 500, not retried) instead of served as a no-op."""
    with ProviderEmulator() as emu:
        emu.add(turn(call("add", {"a": 2, "b": 3})), faults=[GarbleToolArguments(0)])
        a, ran = _agent(_model("gemini", emu))
        with pytest.raises(Exception, match="GarbleToolArguments"):
            await _run(a, "add", stream=True)
    (violation,) = emu.violations
    assert "streamGenerateContent" in str(violation) and ran == []


async def test_recorded_run_replays_redacted_and_with_a_fault(tmp_path: Path):
    path = tmp_path / "pydantic_ai_round.yaml"
    with ProviderEmulator(tool_round()) as emu:
        base_url = emu.openai_base_url
        with use_cassette(path, record_mode="once"):
            a, _ = _agent(chat(base_url, api_key=SECRET))
            assert (await a.run("add")).output == "The sum is 5."
    assert SECRET not in path.read_text()
    # the emulator is gone: only the cassette can answer
    with use_cassette(path):
        a, ran = _agent(chat(base_url))
        assert (await a.run("add")).output == "The sum is 5." and ran == [(2, 3)]
    with use_cassette(path, mutations={1: [HttpError(500)]}):
        a, ran = _agent(chat(base_url))
        with pytest.raises(pydantic_ai.exceptions.ModelHTTPError):
            await a.run("add")
    assert ran == [(2, 3)]  # the first answer played; the second became a 500
