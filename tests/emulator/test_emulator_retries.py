"""Recorded requests carry their arrival time and answer; ``assert_retries`` checks a client's
retries (count, spacing, ``retry-after`` honoured) from them, failing on a client that does not."""

from __future__ import annotations

import time

import httpx
import pytest

from openprogram_testing import ProviderEmulator, RetryTimingError, assert_retries
from openprogram_testing.emulator import Fault, retry_timing

openai = pytest.importorskip("openai")

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def test_the_openai_sdk_honours_retry_after():
    """The SDK's own retries, seen from the server: two attempts, 0.3 s apart at least."""
    with ProviderEmulator() as emu:
        emu.add(Fault.http_error(429, headers={"retry-after": "0.3"}), "ok")
        client = openai.OpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=2)
        reply = client.chat.completions.create(**BODY)
        assert reply.choices[0].message.content == "ok"
        timing = assert_retries(emu, attempts=2, min_gap_s=0.3, max_gap_s=5)
        emu.assert_complete()
    assert timing.statuses == (429, 200) and timing.retry_after_s == (0.3, None)
    assert [r.status for r in emu.requests] == [429, 200]
    assert emu.requests[0].response_headers["retry-after"] == "0.3"


def _post_twice(emu: ProviderEmulator, wait_s: float) -> None:
    url = emu.openai_base_url + "/chat/completions"
    httpx.post(url, json=BODY, timeout=10)
    time.sleep(wait_s)
    httpx.post(url, json=BODY, timeout=10)


def test_a_client_that_ignores_retry_after_fails_the_check():
    with ProviderEmulator() as emu:
        emu.add(Fault.http_error(429, headers={"retry-after": "5"}), "ok")
        _post_twice(emu, 0)
    with pytest.raises(RetryTimingError, match="asked for retry-after 5s") as err:
        assert_retries(emu, attempts=2)
    assert err.value.timing.statuses == (429, 200)
    assert "attempt 0: HTTP 429, retry-after 5s" in str(err.value)
    assert_retries(emu, attempts=2, honours_retry_after=False)  # only that check failed


def test_count_and_spacing_failures_name_what_was_seen():
    with ProviderEmulator() as emu:
        emu.add(Fault.http_error(500), Fault.http_error(500), "ok")
        _post_twice(emu, 0.05)
    with pytest.raises(RetryTimingError, match="expected 3 attempt\\(s\\), got 2"):
        assert_retries(emu, attempts=3)
    with pytest.raises(RetryTimingError, match="sooner than 1s"):
        assert_retries(emu, min_gap_s=1)
    with pytest.raises(RetryTimingError, match=r"later than 0\.001s"):
        assert_retries(emu, max_gap_s=0.001)
    gap = retry_timing(emu).gaps_s[0]
    assert 0.05 <= gap < 5
    assert emu.requests[1].received_at - emu.requests[0].received_at == gap


def test_retry_after_ms_and_dropped_connections():
    with ProviderEmulator() as emu:
        emu.add(
            Fault.http_error(503, headers={"retry-after-ms": "40"}),
            Fault.truncate_after(0, disconnect=True),
            "ok",
        )
        url = emu.openai_base_url + "/chat/completions"
        httpx.post(url, json=BODY, timeout=10)
        time.sleep(0.05)
        with pytest.raises(httpx.HTTPError):
            httpx.post(url, json=BODY, timeout=10)
        httpx.post(url, json=BODY, timeout=10)
    timing = assert_retries(emu.requests, attempts=3)
    assert timing.statuses == (503, None, 200)
    assert timing.retry_after_s == (0.04, None, None)
