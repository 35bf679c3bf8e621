"""Conformance: replay every shared real-world recording through the matching adapter.

Each interaction's recorded response body (gzip-decoded when the recording kept
``Content-Encoding: gzip``) is served by an ``httpx2.MockTransport`` to the real SDK client;
streaming recordings are replayed in stream mode, sync recordings with ``stream=False``.  The
expected values below were read from the recordings by hand (tool-call ids, names, argument
JSON, text, finish/stop reason, usage counters).  Streaming bodies are replayed a second time cut
into 7-byte pieces: the message must not change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx2
import pytest

from openprogram.providers import guard
from openprogram.providers.base import Context
from openprogram.types import UserMessage
from tests.providers._adapters_http import (
    Recorder,
    anthropic_provider,
    chat_provider,
    collect,
    responses_provider,
)
from tests.providers._helper import (
    answer_round,
    check_message,
    recorded_body,
    recorded_interactions,
    recorded_response,
    recorded_rounds,
    secrets_round,
)

CHAT_MISSING_MODEL = (
    "The model `this-model-does-not-exist-12345` does not exist or you do not have access to it."
)
CHAT = {
    "llm/test_tool_use_basic.yaml": [
        (
            "toolUse",
            "",
            [("call_1EYWDzueHEp8OsB8jJSEp7WB", "multiply", {"a": 1231, "b": 2331})],
            (54, 20),
        ),
        answer_round("The result of \\( 1231 \\times 2331 \\) is \\( 2,869,461 \\).", (87, 26)),
    ],
    "llm/test_tool_use_chain_of_two_calls.yaml": [
        (
            "toolUse",
            "",
            [("call_TTY8UFNo7rNCaOBUNtlRSvMG", "lookup_population", {"country": "Crumpet"})],
            (92, 17),
        ),
        (
            "toolUse",
            "",
            [("call_aq9UyiSFkzX6W8Ydc33DoI9Y", "can_have_dragons", {"population": 123124})],
            (118, 18),
        ),
        answer_round("YES", (146, 3)),
    ],
    "magentic/test_openai_chat_model_complete_streamed_response.yaml": [
        (
            "toolUse",
            "One of my favorite cities is Paris. I'll get the current weather for Paris now.",
            [("call_QgHUYg30lU8RAkIADo1bLA3P", "get_weather", {"location": "Paris"})],
            (58, 32),
        ),
    ],
    "mirascope/test_call_with_tools/openai_gpt_4o_completions/stream.yaml": [
        secrets_round("call_M26z19sncd7b4LBgzKRRbaUE", "call_KPXe5NX7IcKkaBUhc6dto2QV", (75, 53)),
        answer_round(
            'The secrets associated with the passwords are:\n\n- "mellon": Welcome to Moria!\n- "radiance": Life before Death',
            (149, 28),
        ),
        secrets_round("call_NnkmjbtYL9gdZnGOMxYEl0A3", "call_uvC42eCVUOg2Y35G9FQKjAOB", (75, 53)),
        answer_round(
            'The secrets associated with the passwords are as follows:\n\n- "mellon": Welcome to Moria!\n- "radiance": Life before Death',
            (149, 30),
        ),
        secrets_round("call_H8jJ3J1KO9iBRstIu9VtSmif", "call_alG3VrzLF9cAEppE4xxqeefv", (75, 53)),
        answer_round(
            'The secrets associated with the passwords are as follows:\n- For "mellon": "Welcome to Moria!"\n- For "radiance": "Life before Death"',
            (149, 35),
        ),
    ],
    "mirascope/test_call_with_tools/openai_gpt_4o_completions/sync.yaml": [
        secrets_round("call_v6LacIrChvs6ITVpIZqy5tFc", "call_onyWzk4mLTGKzW9cthmf4Llq", (75, 53)),
        answer_round(
            'The secrets associated with the passwords are as follows:\n- For "mellon": Welcome to Moria!\n- For "radiance": Life before Death',
            (149, 32),
        ),
        secrets_round("call_kORjJVpmh91BGUtfuEyWTNHq", "call_rwWftDkV0SjAa03c30QMCbHv", (75, 53)),
        answer_round(
            'Here are the secrets associated with the passwords you provided:\n\n- For "mellon": "Welcome to Moria!"\n- For "radiance": "Life before Death"',
            (149, 36),
        ),
        secrets_round("call_9WLrrxKdNop28QihgVejs7vX", "call_FvwByGJHFMUkSCsWZ30WgOYh", (75, 53)),
        answer_round(
            'Here are the secrets associated with the passwords:\n\n- For "mellon": Welcome to Moria!\n- For "radiance": Life before Death',
            (149, 31),
        ),
    ],
    "mirascope/test_model_not_found_stream/openai_gpt_4o_completions.yaml": [
        ("error", 404, False, CHAT_MISSING_MODEL),
        ("error", 404, False, CHAT_MISSING_MODEL),
    ],
    "opentelemetry-python-contrib/test_chat_completion_404.yaml": [
        (
            "error",
            404,
            False,
            "The model `this-model-does-not-exist` does not exist or you do not have access to it.",
        ),
    ],
}

RESPONSES_MISSING_MODEL = "The requested model 'this-model-does-not-exist-12345' does not exist."

RESPONSES = {
    "llm/test_responses_tool_use_streaming.yaml": [
        (
            "toolUse",
            "",
            [("call_sVidsfFJ6zlzRpelrPkTPlpd", "multiply", {"a": 1231, "b": 2331})],
            (58, 23),
        ),
        answer_round("1231 × 2331 = **2,869,461**", (94, 18)),
    ],
    "mirascope/test_call_with_tools/openai_gpt_4o_responses/stream.yaml": [
        secrets_round("call_sKC7OABqf2A2PTLCm0CLeRWV", "call_OdR3s3xop0vtgkDyWRMLafuH", (36, 54)),
        answer_round(
            "Here are the secrets associated with each password:\n\n- **mellon**: Welcome to Moria!\n- **radiance**: Life before Death",
            (136, 32),
        ),
        secrets_round("call_X6173PYkiubC8YJRPzr8osHX", "call_OiUVT2dz7nh3PHrEPGnvLPyi", (36, 54)),
        answer_round(
            "Here are the secrets associated with the passwords:\n\n- **mellon:** Welcome to Moria!\n- **radiance:** Life before Death",
            (136, 30),
        ),
        secrets_round("call_JFcMnB3B0uvpADG11Egu9VT3", "call_bFXbNfOOKMw0esfOPep1dwdW", (36, 54)),
        answer_round(
            'Here are the secrets associated with the passwords:\n\n- **mellon**: "Welcome to Moria!"\n- **radiance**: "Life before Death"',
            (136, 35),
        ),
    ],
    "mirascope/test_call_with_tools/openai_gpt_4o_responses/sync.yaml": [
        secrets_round("call_bzXaB1HDWsWy7n6bMrxJzNNa", "call_Dd4wvykCr6NttXKxRK0BFH96", (36, 54)),
        answer_round(
            'Here are the secrets:\n\n- For password "mellon": Welcome to Moria!\n- For password "radiance": Life before Death',
            (136, 30),
        ),
        secrets_round("call_QSN7tSAfBLgrTP3cvjbf7kTZ", "call_nZTyOck74QejXCmecXxhMUly", (36, 54)),
        answer_round(
            "Here are the secrets associated with the passwords:\n\n- **mellon:** Welcome to Moria!\n- **radiance:** Life before Death",
            (136, 30),
        ),
        secrets_round("call_ZuiErmwO3jdjHdDKTX2LH96R", "call_KaOQQvNXdvVZSn8ZaOW8FQDE", (36, 54)),
        answer_round(
            'Here are the secrets:\n\n1. **Password: mellon** - "Welcome to Moria!"\n2. **Password: radiance** - "Life before Death"',
            (136, 36),
        ),
    ],
    "mirascope/test_model_not_found/openai_gpt_4o_responses.yaml": [
        ("error", 400, False, RESPONSES_MISSING_MODEL),
        ("error", 400, False, RESPONSES_MISSING_MODEL),
    ],
}

ANTHROPIC = {
    "dd-trace-py/anthropic_completion_error.yaml": [
        ("error", 400, False, "messages.0: Input does not match the expected shape."),
    ],
    "magentic/test_anthropic_chat_model_complete_streamed_response.yaml": [
        (
            "toolUse",
            "<thinking>\nTo get the weather for a random city, I will need to:\n1. Pick a random city name\n2. Pass that city name to the get_weather tool to retrieve the weather\n\nI have enough information to complete both of those steps without asking the user for any additional input. I will proceed with the tool calls in that order.\n</thinking>",
            [("toolu_016tMRxcvkC82nkYxLpk2cHm", "get_weather", {"location": "Madrid, Spain"})],
            (610, 131),
        ),
    ],
    "mirascope/test_authentication_error_stream/anthropic_claude_sonnet_4_0.yaml": [
        ("error", 401, False, "invalid x-api-key"),
    ],
    "mirascope/test_call_with_tools/anthropic_beta_claude_sonnet_4_0/async_stream.yaml": [
        secrets_round(
            "toolu_011bPS5j9gFZsM7URe1242DY",
            "toolu_01Q2suTpa6uBzfa9JB9FjSa3",
            (416, 111),
            "I'll retrieve the secrets for both passwords using parallel tool calls.",
        ),
        answer_round(
            'Here are the secrets associated with each password:\n\n- Password "mellon": "Welcome to Moria!"\n- Password "radiance": "Life before Death"',
            (604, 38),
        ),
    ],
    "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml": [
        secrets_round(
            "toolu_015cUijgET79LXjgeYQerN2h",
            "toolu_01XZTimPexA7h3EVKesnKt5T",
            (416, 109),
            "I'll retrieve the secrets for both passwords you provided.",
        ),
        answer_round(
            'Here are the secrets retrieved for each password:\n\n1. **Password "mellon"**: "Welcome to Moria!"\n2. **Password "radiance"**: "Life before Death"\n\nBoth secrets have been successfully retrieved!',
            (602, 52),
        ),
    ],
    "mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/sync.yaml": [
        secrets_round(
            "toolu_01BUvqBj8Yb34pNAbCJJY1oc",
            "toolu_01VPuQJ1LonDBYXrr8pqPkqQ",
            (416, 109),
            "I'll retrieve the secrets for both passwords you provided.",
        ),
        answer_round(
            'Here are the secrets retrieved for each password:\n\n- Password "mellon": **Welcome to Moria!**\n- Password "radiance": **Life before Death**',
            (602, 39),
        ),
    ],
}

CASES = [
    *[(name, chat_provider, rows) for name, rows in CHAT.items()],
    *[(name, responses_provider, rows) for name, rows in RESPONSES.items()],
    *[(name, anthropic_provider, rows) for name, rows in ANTHROPIC.items()],
]


# what the adapters read from an error response besides its body
RETRY_HEADERS = ("retry-after", "retry-after-ms")


@pytest.mark.parametrize(("name", "factory", "expected"), CASES, ids=[c[0] for c in CASES])
async def test_replay_recording(
    conformance_cassettes: Path, name: str, factory: Any, expected: list[tuple[Any, ...]]
) -> None:
    for interaction, want, uri in recorded_rounds(conformance_cassettes, name, expected):
        request = interaction["request"]
        stream = bool(json.loads(request["body"]).get("stream"))
        for chunk in (None, 7) if stream else (None,):
            rec = Recorder(recorded_response(interaction["response"], chunk, RETRY_HEADERS))
            provider = factory(rec, stream)
            with guard.allow_model_requests(False), guard.replaying():
                _, message = await collect(provider, Context(messages=[UserMessage(content="x")]))
            check_message(message, want)
            # our adapter called the same endpoint the recording was made against
            assert rec.requests[0].url.path == uri.path
            assert bool(json.loads(rec.requests[0].content).get("stream")) is stream


def test_every_recording_is_covered(conformance_cassettes: Path) -> None:
    from tests.providers.test_conformance_google_aws import ANTHROPIC_ON_BEDROCK, BEDROCK, GEMINI

    names = {
        str(p.relative_to(conformance_cassettes)) for p in conformance_cassettes.rglob("*.yaml")
    }
    tables = [CHAT, RESPONSES, ANTHROPIC, GEMINI, BEDROCK, ANTHROPIC_ON_BEDROCK]
    assert sum(len(t) for t in tables) == len(names)  # no recording replayed twice
    assert names == set().union(*tables)


class _Cuts(httpx2.AsyncByteStream):
    def __init__(self, data: bytes, cuts: list[int]) -> None:
        self.data, self.cuts = data, sorted(set(cuts))

    async def __aiter__(self):  # type: ignore[override]
        start = 0
        for cut in [*self.cuts, len(self.data)]:
            if cut > start:
                yield self.data[start:cut]
                start = cut


RECHUNKED = [
    ("mirascope/test_call_with_tools/openai_gpt_4o_completions/stream.yaml", chat_provider),
    ("mirascope/test_call_with_tools/openai_gpt_4o_responses/stream.yaml", responses_provider),
    ("mirascope/test_call_with_tools/anthropic_claude_sonnet_4_0/stream.yaml", anthropic_provider),
]


@pytest.mark.parametrize(("name", "factory"), RECHUNKED, ids=[n for n, _ in RECHUNKED])
def test_any_chunking_gives_the_same_message(
    conformance_cassettes: Path, name: str, factory: Any
) -> None:
    """Invariant 10: the SSE parsers give identical messages for any chunking."""
    import asyncio

    from hypothesis import given, settings
    from hypothesis import strategies as st

    interaction = recorded_interactions(conformance_cassettes / name)[0]
    data = recorded_body(interaction["response"])
    headers = {"content-type": "text/event-stream"}

    async def replay(stream: httpx2.AsyncByteStream | None) -> dict[str, Any]:
        response = (
            httpx2.Response(200, headers=headers, content=data)
            if stream is None
            else httpx2.Response(200, headers=headers, stream=stream)
        )
        _, message = await collect(
            factory(Recorder(response)), Context(messages=[UserMessage(content="x")])
        )
        return message.model_dump()

    whole = asyncio.run(replay(None))
    assert whole["stop_reason"] == "toolUse"

    @settings(max_examples=15, deadline=None, database=None)
    @given(st.lists(st.integers(min_value=1, max_value=len(data) - 1), max_size=60))
    def check(cuts: list[int]) -> None:
        assert asyncio.run(replay(_Cuts(data, cuts))) == whole

    check()
