"""The real-call guard: switch, context overrides, replay and loopback pass-through."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Iterator

import pytest

from openprogram.providers import guard
from openprogram.providers.guard import ModelRequestsBlocked


@pytest.fixture(autouse=True)
def _restore_default() -> Iterator[None]:
    before = guard.get_allow_model_requests()
    yield
    guard.set_allow_model_requests(before)


def test_default_allows_everything() -> None:
    guard.set_allow_model_requests(True)
    guard.check("https://api.openai.com/v1")


def test_disallowed_blocks_remote_hosts_with_helpful_message() -> None:
    guard.set_allow_model_requests(False)
    with pytest.raises(ModelRequestsBlocked) as info:
        guard.check("https://api.anthropic.com")
    text = str(info.value)
    assert "https://api.anthropic.com" in text
    assert "use_cassette" in text and "ProviderEmulator" in text


def test_blocked_is_not_an_exception() -> None:
    # The loop converts every Exception into an error message; this must escape it.
    assert not issubclass(ModelRequestsBlocked, Exception)
    assert issubclass(ModelRequestsBlocked, BaseException)


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:8123/v1",
        "http://localhost:1",
        "http://[::1]:80",
        "http://127.9.9.9",
        "http://a.localhost",
    ],
)
def test_loopback_always_passes(url: str) -> None:
    guard.set_allow_model_requests(False)
    guard.check(url)


@pytest.mark.parametrize(
    "url", ["http://10.0.0.1", "https://api.openai.com", "http://127.0.0.1.evil.com", ""]
)
def test_non_loopback(url: str) -> None:
    assert not guard.is_loopback(url)


def test_replaying_passes_and_nests() -> None:
    guard.set_allow_model_requests(False)
    with guard.replaying():
        with guard.replaying():
            guard.check("https://api.openai.com")
        guard.check("https://api.openai.com")
    with pytest.raises(ModelRequestsBlocked):
        guard.check("https://api.openai.com")


def test_context_manager_overrides_global_both_ways() -> None:
    guard.set_allow_model_requests(False)
    with guard.allow_model_requests(True):
        guard.check("https://api.openai.com")
        with guard.allow_model_requests(False), pytest.raises(ModelRequestsBlocked):
            guard.check("https://api.openai.com")
    with pytest.raises(ModelRequestsBlocked):
        guard.check("https://api.openai.com")
    guard.set_allow_model_requests(True)
    with guard.allow_model_requests(False), pytest.raises(ModelRequestsBlocked):
        guard.check("https://api.openai.com")


async def test_context_override_does_not_leak_between_tasks() -> None:
    guard.set_allow_model_requests(False)
    seen: dict[str, bool] = {}
    gate = asyncio.Event()

    async def allowed() -> None:
        with guard.allow_model_requests(True):
            gate.set()
            await asyncio.sleep(0)
            seen["allowed"] = guard.model_requests_allowed()

    async def other() -> None:
        await gate.wait()
        seen["other"] = guard.model_requests_allowed()

    await asyncio.gather(allowed(), other())
    assert seen == {"allowed": True, "other": False}


def test_global_is_seen_by_threads_and_copied_context_carries_override() -> None:
    guard.set_allow_model_requests(False)
    results: list[bool] = []
    with guard.allow_model_requests(True):
        ctx = contextvars.copy_context()
        plain = threading.Thread(target=lambda: results.append(guard.model_requests_allowed()))
        copied = threading.Thread(
            target=lambda: results.append(ctx.run(guard.model_requests_allowed))
        )
        for thread in (plain, copied):
            thread.start()
            thread.join()
    assert results == [False, True]


def test_env_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENPROGRAM_ALLOW_MODEL_REQUESTS", "0")
    assert guard._env_default() is False
    monkeypatch.setenv("OPENPROGRAM_ALLOW_MODEL_REQUESTS", "1")
    assert guard._env_default() is True
    monkeypatch.delenv("OPENPROGRAM_ALLOW_MODEL_REQUESTS")
    assert guard._env_default() is True


def test_get_returns_the_global_default_not_the_override() -> None:
    guard.set_allow_model_requests(False)
    with guard.allow_model_requests(True):
        assert guard.get_allow_model_requests() is False
        assert guard.model_requests_allowed() is True
    guard.set_allow_model_requests(True)
    assert guard.get_allow_model_requests() is True
