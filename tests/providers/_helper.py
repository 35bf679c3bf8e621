"""Shared pieces of the provider tests: the arithmetic tools and the one-message context every
adapter test sends, the two full loops (over a mocked transport and over the loopback emulator)
that each adapter's tests run the same way, and the readers of the shared real-world recordings
the conformance tests replay."""

from __future__ import annotations

import base64
import gzip
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, urlsplit

import httpx2
import yaml

from openprogram import AgentContext, AgentEvent, AgentStream, LoopConfig, agent_loop
from openprogram.providers.base import Context
from openprogram.types import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ToolResultMessage,
    ToolSpec,
    UserMessage,
)
from openprogram_testing.emulator import ProviderEmulator

CTX = Context(messages=[UserMessage(content="hi")])
PNG = base64.b64encode(b"\x89PNG fake").decode()


def two_number_spec(name: str, description: str | None, number: str = "integer") -> dict[str, Any]:
    """The spec of a tool taking two required numbers ``a`` and ``b`` of JSON type ``number``:
    the shape of every arithmetic tool these tests give a model (the cassettes recorded it)."""
    return {
        "name": name,
        **({"description": description} if description is not None else {}),
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": number}, "b": {"type": number}},
            "required": ["a", "b"],
        },
    }


ADD_SPEC = ToolSpec(**two_number_spec("add", "Add two integers."))
ADD = {"spec": ADD_SPEC.model_dump(), "execute": lambda args: args["a"] + args["b"]}
# what the cassette tests' tool answers: its result as text, as the recordings have it
ADD_TEXT = {
    "spec": two_number_spec("add", "Add two integers."),
    "execute": lambda arguments: str(arguments["a"] + arguments["b"]),
}
MUL = {
    "spec": two_number_spec("mul", "Multiply.", "number"),
    "execute": lambda args: args["a"] * args["b"],
}


def request_history(
    own: AssistantMessage, results: list[ToolResultMessage], lost: AssistantMessage
) -> Context:
    """The transcript the request-building tests send (with the ``add`` tool): a user turn with
    text and an image, the adapter's ``own`` assistant turn and its tool ``results``, a ``lost``
    assistant turn that ended badly, then a follow-up question."""
    return Context(
        system_prompt="Be brief.",
        messages=[
            UserMessage(
                content=[
                    TextContent(text="look"),
                    ImageContent(data_b64=PNG, mime_type="image/png"),
                ]
            ),
            own,
            *results,
            lost,
            UserMessage(content="and?"),
        ],
        tools=[ADD_SPEC],
    )


async def run_add_loop(provider: Any) -> tuple[list[AgentEvent], AgentStream, list[Message]]:
    """Run "What is 2+3?" with the ``add`` tool (``tool_choice="auto"``) to its end: the tool
    round then text round every adapter's full-loop test answers from its mocked transport."""
    stream = agent_loop(
        "What is 2+3?",
        AgentContext(system_prompt="Use tools.", tools=[ADD]),
        LoopConfig(provider=provider, model="m", tool_choice="auto"),
    )
    events = [e async for e in stream]
    return events, stream, await stream.result()


async def run_mul_loop(
    script: list[Any], build: Callable[..., Any], *, stream: bool, model: str = "m", **config: Any
) -> tuple[AgentStream, list[Message], list[Any]]:
    """Run "6*7?" with the ``mul`` tool (``tool_choice="required"``) through the provider
    ``build(emulator, stream=...)`` makes against a loopback emulator playing ``script``; every
    turn of the script must be consumed.  Returns the run, its messages and the requests."""
    with ProviderEmulator(script) as emu:
        async with build(emu, stream=stream) as provider:
            run = agent_loop(
                "6*7?",
                AgentContext(tools=[MUL]),
                LoopConfig(provider=provider, model=model, tool_choice="required", **config),
            )
            messages = await run.result()
        emu.assert_complete()
        requests = list(emu.requests)
    return run, messages, requests


# -- shared real-world recordings --------------------------------------------------------------


def recording_header(headers: dict[str, Any], name: str) -> str | None:
    """A header of a recorded response by lower-case ``name`` (recorders write any case, a list
    or a single value, text or bytes)."""
    for key, value in (headers or {}).items():
        if key.lower() == name:
            value = value[0] if isinstance(value, list) else value
            return value.decode() if isinstance(value, bytes) else str(value)
    return None


def recorded_interactions(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as f:
        return yaml.safe_load(f)["interactions"]  # type: ignore[no-any-return]


def recorded_rounds(
    folder: Path, name: str, expected: list[tuple[Any, ...]]
) -> list[tuple[dict[str, Any], tuple[Any, ...], SplitResult]]:
    """Each interaction of the recording ``folder/name`` with its expected conformance row and
    its request's split URI; the table must have one row per recorded interaction."""
    interactions = recorded_interactions(folder / name)
    assert len(interactions) == len(expected)
    return [
        (interaction, want, urlsplit(interaction["request"]["uri"]))
        for interaction, want in zip(interactions, expected, strict=True)
    ]


def recorded_body(response: dict[str, Any]) -> bytes:
    """The bytes the server sent: pydantic-ai's ``parsed_body`` as JSON, else the body string
    gzip-decoded when the recording kept ``Content-Encoding: gzip``."""
    if "parsed_body" in response:
        return json.dumps(response["parsed_body"]).encode()
    raw = response["body"]["string"]
    data = raw.encode("utf-8") if isinstance(raw, str) else bytes(raw)
    if recording_header(response["headers"], "content-encoding") == "gzip":
        data = gzip.decompress(data)
    return data


class PiecesStream(httpx2.AsyncByteStream):
    """A response body served in ``size``-byte pieces (a stream must parse the same however the
    network cuts it)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    async def __aiter__(self):  # type: ignore[override]
        for i in range(0, len(self.data), self.size):
            yield self.data[i : i + self.size]


def recorded_response(
    response: dict[str, Any], chunk: int | None, keep: tuple[str, ...] = ()
) -> httpx2.Response:
    """The recorded ``response`` as an ``httpx2.Response`` with its content type and the headers
    named in ``keep``; in ``chunk``-byte pieces unless ``chunk`` is ``None``."""
    data = recorded_body(response)
    headers = {
        "content-type": recording_header(response["headers"], "content-type") or "application/json"
    }
    for name in keep:
        if (value := recording_header(response["headers"], name)) is not None:
            headers[name] = value
    status = response["status"]["code"]
    if chunk is None:
        return httpx2.Response(status, headers=headers, content=data)
    return httpx2.Response(status, headers=headers, stream=PiecesStream(data, chunk))


def check_message(message: Any, expected: tuple[Any, ...]) -> None:
    """Check a replayed message against a conformance row: ``("error", status, retryable,
    text)`` or ``(stop_reason, text, [(id, name, arguments)], (input_tokens, output_tokens))``
    where ``text`` may be ``(prefix, length)`` for a long answer."""
    if expected[0] == "error":
        _, status, retryable, text = expected
        assert (message.stop_reason, message.error_status, message.error_retryable) == (
            "error",
            status,
            retryable,
        )
        assert text in (message.error_message or "")
        assert message.tool_calls == []
        return
    reason, text, calls, (input_tokens, output_tokens) = expected
    assert message.stop_reason == reason, message.error_message
    if isinstance(text, tuple):
        prefix, length = text
        assert message.text.startswith(prefix) and len(message.text) == length
    else:
        assert message.text == text
    assert [(c.id, c.name, c.arguments) for c in message.tool_calls] == calls
    assert all(c.raw_arguments is None for c in message.tool_calls)
    assert (message.usage.input_tokens, message.usage.output_tokens) == (
        input_tokens,
        output_tokens,
    )


def secrets_round(
    mellon: str, radiance: str, usage: tuple[int, int], text: str = ""
) -> tuple[Any, ...]:
    """A conformance row for the recordings' ``secret_retrieval_tool`` round: one call for the
    password "mellon" and one for "radiance", with the ids the API gave them."""
    return (
        "toolUse",
        text,
        [
            (mellon, "secret_retrieval_tool", {"password": "mellon"}),
            (radiance, "secret_retrieval_tool", {"password": "radiance"}),
        ],
        usage,
    )


def answer_round(text: str | tuple[str, int], usage: tuple[int, int]) -> tuple[Any, ...]:
    """A conformance row for a final answer: stop reason ``stop``, this text, no tool calls."""
    return ("stop", text, [], usage)
