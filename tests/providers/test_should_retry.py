"""``x-should-retry`` is obeyed before the status, as the official SDKs do."""

from __future__ import annotations

import pytest

from openprogram.providers.base import Context, error_retryable
from openprogram.types import UserMessage
from tests.providers._adapters_http import FACTORIES, Recorder, collect, json_response


@pytest.mark.parametrize(
    ("status", "headers", "expected"),
    [
        (500, {"x-should-retry": "false"}, False),
        (500, {"X-Should-Retry": "FALSE"}, False),
        (400, {"x-should-retry": "true"}, True),
        (429, {}, True),
        (400, {}, False),
        (400, {"x-should-retry": "maybe"}, False),  # not a boolean: the status decides
        (None, None, True),  # an error without a status (an error event inside a 200 stream)
    ],
)
def test_error_retryable(
    status: int | None, headers: dict[str, str] | None, expected: bool
) -> None:
    assert error_retryable(status, headers) is expected


@pytest.mark.parametrize("api", FACTORIES)
@pytest.mark.parametrize("stream", [True, False])
@pytest.mark.parametrize(
    ("status", "flag", "expected"),
    [(500, "false", False), (409, "false", False), (400, "true", True)],
)
async def test_adapters_obey_the_header(
    api: str, stream: bool, status: int, flag: str, expected: bool
) -> None:
    body = (
        {"type": "error", "error": {"type": "api_error", "message": "boom"}}
        if api == "anthropic"
        else {"error": {"message": "boom", "type": "server_error", "param": None, "code": None}}
    )
    rec = Recorder(json_response(body, status, {"x-should-retry": flag}))
    _, msg = await collect(
        FACTORIES[api](rec, stream), Context(messages=[UserMessage(content="x")])
    )
    assert (msg.error_status, msg.error_retryable) == (status, expected)
