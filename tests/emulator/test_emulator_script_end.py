"""Past the end of the script: what strict and non-strict emulators answer, and the header that
marks every such answer."""

from __future__ import annotations

import json

import httpx
import pytest

from openprogram_testing.emulator import EXHAUSTED_HEADER, ProviderEmulator
from openprogram_testing.transport.scripted import UnexpectedModelCall

USER = {"model": "m", "messages": [{"role": "user", "content": "still there?"}]}


def post(emu: ProviderEmulator, body: dict[str, object] = USER) -> httpx.Response:
    return httpx.post(emu.openai_base_url + "/chat/completions", json=body, timeout=10)


def text(response: httpx.Response) -> str:
    return str(response.json()["choices"][0]["message"]["content"])


def test_non_strict_without_fallback_answers_past_the_end_instead_of_500() -> None:
    with ProviderEmulator(["scripted"], strict=False) as emu:
        first, second = post(emu), post(emu)
        emu.assert_complete()  # non-strict: nothing to complain about
    assert (first.status_code, text(first)) == (200, "scripted")
    assert EXHAUSTED_HEADER not in first.headers
    assert (second.status_code, text(second)) == (200, "echo: still there?")
    assert second.headers[EXHAUSTED_HEADER] == "true"
    assert [r.turn for r in emu.requests] == [0, None]


def test_non_strict_streams_past_the_end_too() -> None:
    with ProviderEmulator(strict=False) as emu:
        r = post(emu, {**USER, "stream": True})
    assert r.status_code == 200 and r.headers[EXHAUSTED_HEADER] == "true"
    deltas = [
        json.loads(line[6:])["choices"][0]["delta"].get("content") or ""
        for line in r.text.splitlines()
        if line.startswith("data: {")
    ]
    assert "".join(deltas) == "echo: still there?"


@pytest.mark.parametrize("strict", [True, False])
def test_a_fallback_answers_past_the_end_with_the_header(strict: bool) -> None:
    with ProviderEmulator(["a"], strict=strict, fallback="from the fallback") as emu:
        responses = [post(emu) for _ in range(3)]
        emu.assert_complete()
    assert [text(r) for r in responses] == ["a", "from the fallback", "from the fallback"]
    assert [r.headers.get(EXHAUSTED_HEADER) for r in responses] == [None, "true", "true"]


def test_strict_answers_500_past_the_end_with_the_header() -> None:
    with ProviderEmulator(["a"]) as emu:
        post(emu)
        late = post(emu)
    assert late.status_code == 500 and late.headers[EXHAUSTED_HEADER] == "true"
    assert "unexpected model call #1" in late.json()["error"]["message"]
    with pytest.raises(UnexpectedModelCall):
        emu.assert_complete()


def test_the_header_is_absent_while_the_script_lasts_even_on_faults() -> None:
    from openprogram_testing.emulator import Fault

    with ProviderEmulator(strict=False) as emu:
        emu.add(Fault.http_error(429), "ok")
        assert post(emu).status_code == 429
        ok = post(emu)
    assert EXHAUSTED_HEADER not in ok.headers and text(ok) == "ok"


def test_mutations_built_directly_are_checked_when_added() -> None:
    from openprogram_testing.transport.faults import HttpError, MalformedFrame, Stall, TruncateAfter

    for fault in (HttpError(700), TruncateAfter(-1), Stall(-1.0), MalformedFrame(True)):
        with pytest.raises(ValueError):
            ProviderEmulator().add("x", faults=[fault])
