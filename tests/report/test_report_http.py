"""The HTTP traffic of clients that are not openprogram (an OpenAI SDK client or pydantic-ai at
the provider emulator, a replay through a cassette) is in the HTML report, redacted as a
cassette is."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from openprogram_testing.base.recording import HttpExchange
from openprogram_testing.frontends.report.record import http_records

pytest_plugins = ["pytester"]

KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2


def blocks(page: str) -> dict[str, object]:
    found = re.findall(r'<script type="application/json" id="([^"]+)">(.*?)</script>', page, re.S)
    return {key: json.loads(text) for key, text in found}


def test_records_are_redacted_ordered_and_timed() -> None:
    later = HttpExchange(
        "emulator", 1, "POST", "http://127.0.0.1:1/v1/chat/completions?api_key=" + KEY, 10.25,
        {"content-type": "application/json"}, {"messages": [{"content": "my key is " + KEY}]},
        200, {"content-type": "text/event-stream"}, b'data: {"choices": []}\n\n',
    )  # fmt: skip
    first = HttpExchange(
        "emulator", 0, "POST", "http://127.0.0.1:1/v1/chat/completions", 10.0,
        {"authorization": "Bearer " + KEY, "content-type": "application/json"},
        b'{"model": "m", "api_key": "' + KEY.encode() + b'"}', 429,
        {"content-type": "application/json", "retry-after": "0.2"}, b'{"error": "slow down"}',
    )  # fmt: skip
    records = http_records([later, first])
    assert KEY not in json.dumps(records)
    one, two = records
    assert (one["index"], one["at_ms"], two["at_ms"]) == (0, 0.0, 250.0)
    assert one["request"]["headers"]["authorization"] == "REDACTED"
    assert json.loads(one["request"]["body"]) == {"model": "m", "api_key": "REDACTED"}
    assert one["response"]["status"] == 429 and one["response"]["headers"]["retry-after"] == "0.2"
    assert "REDACTED" in two["url"] and "my key is" in two["request"]["body"]
    assert two["response"]["body"].startswith("data: ")


def test_binary_bodies_are_named_not_dumped() -> None:
    (record,) = http_records([
        HttpExchange("emulator", 0, "POST", "http://h/model/m/converse-stream", 1.0, {}, None,
                     200, {"content-type": "application/vnd.amazon.eventstream"}, b"\x00\x01" * 8)
    ])  # fmt: skip
    assert record["response"]["body"] == "[16 bytes of application/vnd.amazon.eventstream]"
    assert record["request"]["body"] == ""


SUITE = """
import pytest
from openai import OpenAI
from openprogram_testing import ProviderEmulator, turn, use_cassette

KEY = "sk-proj-" + "a1B2c3D4e5F6g7H8i9J0" * 2


def ask(base_url):
    client = OpenAI(base_url=base_url, api_key=KEY, max_retries=0)
    reply = client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "Weather in Paris?"}]
    )
    return reply.choices[0].message.content


def test_emulated(provider_emulator):
    provider_emulator.add(turn("Sunny in Paris."))
    assert ask(provider_emulator.openai_base_url) == "Sunny in Paris."


def test_record(pytestconfig):
    path = pytestconfig.rootpath / "cassettes" / "weather.yaml"
    with ProviderEmulator([turn("Sunny in Paris.")]) as emulator:
        with use_cassette(path, record_mode="all"):
            assert ask(emulator.openai_base_url) == "Sunny in Paris."


@pytest.mark.op_cassette("weather")
def test_replayed(cassette):
    assert ask("http://127.0.0.1:9/v1") == "Sunny in Paris."


def test_quiet():
    pass
"""


def test_the_report_shows_each_tests_http_exchanges(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(test_http=SUITE)
    out = pytester.path / "report.html"
    result = pytester.runpytest("--openprogram-html", str(out), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
    page = out.read_text()
    assert "a1B2c3D4e5F6g7H8i9J0" not in page  # the key never reaches the page
    data = blocks(page)
    rows = {r["name"].split("::")[-1]: r for r in data["summary"]}  # type: ignore[union-attr]
    assert {name: row["http"] for name, row in rows.items()} == {
        "test_emulated": 1, "test_record": 1, "test_replayed": 1, "test_quiet": 0,
    }  # fmt: skip
    (emulated,) = data[f"d-{rows['test_emulated']['i']}"]["http"]  # type: ignore[index]
    assert emulated["source"] == "emulator" and emulated["method"] == "POST"
    assert emulated["url"].endswith("/v1/chat/completions")
    assert emulated["request"]["headers"]["authorization"] == "REDACTED"
    assert json.loads(emulated["request"]["body"])["messages"] == [
        {"role": "user", "content": "Weather in Paris?"}
    ]
    assert emulated["response"]["status"] == 200
    assert "Sunny in Paris." in emulated["response"]["body"]
    (replayed,) = data[f"d-{rows['test_replayed']['i']}"]["http"]  # type: ignore[index]
    assert replayed["source"] == "cassette" and replayed["response"]["status"] == 200
    assert "Weather in Paris?" in replayed["request"]["body"]
    assert "Sunny in Paris." in replayed["response"]["body"]


def test_a_test_with_loop_runs_keeps_to_its_timeline(pytester: pytest.Pytester) -> None:
    """Its model calls are in its runs already (and a long run's requests repeat the history):
    the traffic is not stored a second time."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    pytester.makepyfile(
        test_loop="""
from openprogram_testing import turn
from openprogram_testing.core.trace import run_loop_sync

def test_loop(provider_emulator):
    from openprogram.providers.openai_chat import OpenAIChatProvider
    provider_emulator.add(turn("hi"))
    provider = OpenAIChatProvider(api_key="k", base_url=provider_emulator.openai_base_url)
    run_loop_sync(provider, "go")
"""
    )
    out = pytester.path / "report.html"
    result = pytester.runpytest("--openprogram-html", str(out), "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    (row,) = blocks(out.read_text())["summary"]  # type: ignore[misc]
    assert row["runs"] == 1 and row["http"] == 0


def test_exchanges_cost_nothing_without_a_listener(tmp_path: Path) -> None:
    from openprogram_testing import ProviderEmulator, turn
    from openprogram_testing.base.recording import (
        add_exchange_listener,
        exchanges_wanted,
        remove_exchange_listener,
    )

    assert not exchanges_wanted()
    seen: list[HttpExchange] = []

    def broken(exchange: HttpExchange) -> None:
        raise RuntimeError("listener bug")

    add_exchange_listener(seen.append)
    add_exchange_listener(broken)
    try:
        import httpx

        with ProviderEmulator([turn("hi")]) as emulator, pytest.warns(RuntimeWarning):
            reply = httpx.post(
                emulator.openai_base_url + "/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            )
        assert reply.status_code == 200  # a failing listener never fails the request
    finally:
        remove_exchange_listener(broken)
        remove_exchange_listener(seen.append)
    remove_exchange_listener(seen.append)  # a second removal is ignored
    assert [x.status for x in seen] == [200] and not exchanges_wanted()
