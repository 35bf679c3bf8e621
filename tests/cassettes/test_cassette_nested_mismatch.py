"""A prompt changed in a *nested* run: the failure ``exec`` raises leads with that first
difference and names the run it happened in, not the outer run's later request (compared with
the interaction the nested one left unplayed: ``recorded "<nested prompt>", got "<outer
prompt>"`` with a wrong ``ignore_paths`` hint)."""

from __future__ import annotations

from pathlib import Path

from openprogram import ProviderError, Registry, Runtime, agentic_function, function
from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing import ProviderEmulator, call, run_exec, turn
from openprogram_testing.cassettes import CassetteError, use_cassette

SCRIPT = [
    turn(call("summarize", {"city": "Oslo"})),  # outer run
    turn(call("lookup", {"city": "Oslo"})),  # nested run
    "Oslo is cold.",  # nested run ends
    "Cold in Oslo.",  # outer run ends
]


def _runtime(base_url: str, nested_prompt: str) -> Runtime:
    registry = Registry()

    @function(registry=registry)
    def lookup(city: str) -> str:
        """Current weather of a city."""
        return f"{city}: 3 C"

    @agentic_function(registry=registry)
    def summarize(city: str, runtime: Runtime) -> str:
        """Summarise the weather of a city."""
        return runtime.exec(nested_prompt + city, tools=[lookup])

    provider = OpenAIChatProvider(api_key="test-key", base_url=base_url)
    return Runtime(provider, "gpt-4o-mini", registry=registry)


async def test_a_nested_prompt_change_leads_with_the_nested_difference(tmp_path: Path) -> None:
    path = tmp_path / "nested.yaml"
    with ProviderEmulator(SCRIPT) as emulator:
        url = emulator.openai_base_url
        with use_cassette(path, record_mode="once"):
            tree = await run_exec(_runtime(url, "Weather of "), "How is it?", toolset="full")
    assert tree.result == "Cold in Oslo." and len(tree.runs) == 2

    failure: BaseException | None = None
    try:
        with use_cassette(path):
            tree = await run_exec(
                _runtime(url, "Look up the weather of "),
                "How is it?",
                toolset="full",
                raises=False,
            )
            failure = tree.exception
    except CassetteError as exc:  # raised again when the block ends
        failure = failure or exc
    assert isinstance(failure, ProviderError), failure
    message = str(failure)
    # the first difference, in the run where it happened
    assert "(a model call of run summarize)" in message, message
    assert 'recorded "Weather of Oslo", got "Look up the weather of Oslo"' in message, message
    assert message.index("(a model call of run summarize)") < message.index("Then POST")
    assert "a model call of the outermost run, made after that failure" in message, message
    # never the outer retry's comparison with the nested interaction, nor its hint
    assert 'got "How is it?"' not in message, message
