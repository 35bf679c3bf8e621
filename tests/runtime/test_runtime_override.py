"""``Runtime.override``: a test swaps the model of a ``Runtime`` the application built itself
(often at import time, over a real provider) without touching the application — every run
started inside the block, nested runs and tool bodies on other threads included, and nothing
outside it; the ``runtime_override`` fixture does the same for a whole test."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from openprogram import ProviderError, Runtime
from openprogram_testing import ScriptedProvider
from tests.runtime._agents import research_agent, research_script


class RealProvider:
    """The application's provider: reaching it from a test is the bug the override prevents."""

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, model: str, context: Any, options: Any) -> Any:
        self.calls += 1
        raise AssertionError("the application's real provider was called")
        yield  # pragma: no cover


APP_PROVIDER = RealProvider()
APP_RUNTIME = Runtime(APP_PROVIDER, "gpt-real")  # built at import time, as applications do


def app_answer(question: str) -> str:
    """The application's entry point: it uses its own runtime."""
    return APP_RUNTIME.exec(question, tools=[])


def test_runs_inside_the_block_use_the_override_and_runs_outside_do_not() -> None:
    fake = ScriptedProvider(["from the fake"])
    before = APP_PROVIDER.calls
    with Runtime.override(provider=fake):
        assert app_answer("hello") == "from the fake"
        assert APP_RUNTIME.active_provider is fake
    assert fake.requests[0].model == "gpt-real"  # the model is the runtime's unless overridden
    assert APP_PROVIDER.calls == before
    assert APP_RUNTIME.active_provider is APP_PROVIDER
    with pytest.raises(ProviderError, match="real provider was called"):
        app_answer("hello")  # the block is closed: the runtime's own provider again
    assert APP_PROVIDER.calls == before + 1


def test_the_override_reaches_nested_runs_and_sync_tool_bodies() -> None:
    registry, tools = research_agent()  # research's body runs a nested exec from a sync tool
    runtime = Runtime(RealProvider(), "m", registry=registry)
    fake = ScriptedProvider(research_script((1, 2)))
    with Runtime.override(provider=fake, model="test-model"):
        assert runtime.exec("go", tools=tools) == "outer answer"
    fake.assert_complete()
    assert [r.model for r in fake.requests] == ["test-model"] * 4


def test_nested_blocks_innermost_wins_field_by_field() -> None:
    outer, inner = ScriptedProvider(["outer"]), ScriptedProvider(["inner"])
    with Runtime.override(provider=outer, model="m-outer"):
        with Runtime.override(provider=inner):
            assert app_answer("q") == "inner"
        assert app_answer("q") == "outer"
    assert inner.requests[0].model == "m-outer" and outer.requests[0].model == "m-outer"


async def test_a_concurrent_run_outside_the_block_keeps_its_provider() -> None:
    fake, other = ScriptedProvider(["overridden"]), ScriptedProvider(["own"])
    runtime = Runtime(other, "m")
    started = asyncio.Event()

    async def outside() -> str:
        await started.wait()
        return await runtime.aexec("q", tools=[])

    async def inside() -> str:
        with Runtime.override(provider=fake):
            started.set()
            await asyncio.sleep(0)
            return await runtime.aexec("q", tools=[])

    task = asyncio.create_task(outside())  # created before the block: its own context
    assert await inside() == "overridden"
    assert await task == "own"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"provider": object()}, "has no stream"),
        ({"provider": "openai"}, "has no stream"),
        ({"model": 3}, "model must be a str"),
    ],
)
def test_a_bad_override_is_refused_before_the_block(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(TypeError, match=message):
        with Runtime.override(**kwargs):
            pytest.fail("the block must not run")


def test_the_override_survives_an_exception_in_the_block() -> None:
    fake = ScriptedProvider([])
    with pytest.raises(KeyError):
        with Runtime.override(provider=fake):
            raise KeyError("boom")
    assert APP_RUNTIME.active_provider is APP_PROVIDER


def test_the_fixture_points_the_application_at_the_test_provider(
    runtime_override: Any, scripted_provider: ScriptedProvider
) -> None:
    before = APP_PROVIDER.calls
    scripted_provider.add("scripted")
    assert app_answer("hello") == "scripted"
    other = ScriptedProvider(["from another"])
    runtime_override(other, model="m2")
    assert app_answer("again") == "from another"
    assert other.requests[0].model == "m2"
    assert APP_PROVIDER.calls == before
