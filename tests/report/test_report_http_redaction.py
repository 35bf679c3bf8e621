"""The report's HTTP exchanges never show a secret, whatever a gateway calls its credential
header or field: bare names (``Token``, ``X-Auth``), credential-named fields, and the fields of
a form-encoded OAuth token request."""

from __future__ import annotations

import json

import pytest

from openprogram_testing.base.recording import HttpExchange
from openprogram_testing.frontends.report.record import http_records

SECRET = "s3cretValue0042QQQQzzzz"


@pytest.mark.parametrize(
    "header",
    ["Token", "Secret", "Password", "Passphrase", "Auth", "X-Auth", "X-Access-Key",
     "Credential", "X-Credentials", "x-api-key", "Private-Token"],
)  # fmt: skip
def test_a_credential_header_of_any_spelling_never_reaches_the_page(header: str) -> None:
    exchange = HttpExchange(
        "emulator", 0, "POST", "https://gw/v1", 0.0, request_headers={header: SECRET},
        request_body={"echo": f"I was sent {SECRET}"}, status=200, response_body="ok",
    )  # fmt: skip
    (record,) = http_records([exchange])
    assert SECRET not in json.dumps(record)
    assert record["request"]["headers"][header] == "REDACTED"


@pytest.mark.parametrize(
    "body",
    [
        {"accessKey": SECRET},
        {"outer": {"access_key": SECRET}},
        {"credentials": SECRET},
        {"passphrase": SECRET},
        {"pwd": SECRET},
    ],
)
def test_a_credential_field_never_reaches_the_page(body: dict[str, object]) -> None:
    exchange = HttpExchange("emulator", 0, "POST", "https://gw/v1", 0.0, request_body=body)
    (record,) = http_records([exchange])
    assert SECRET not in json.dumps(record) and "REDACTED" in record["request"]["body"]


def test_a_form_encoded_token_request_loses_its_secrets() -> None:
    exchange = HttpExchange(
        "cassette", 0, "POST", "https://auth/oauth/token", 0.0,
        request_headers={"Content-Type": "application/x-www-form-urlencoded"},
        request_body=f"grant_type=client_credentials&client_id=app&client_secret={SECRET}",
        status=200, response_body={"access_token": "tok" + SECRET},
    )  # fmt: skip
    (record,) = http_records([exchange])
    assert SECRET not in json.dumps(record)
    body = record["request"]["body"]
    assert "grant_type=client_credentials&client_id=app&client_secret=REDACTED" == body


@pytest.mark.parametrize(
    "body",
    [
        {"token": [SECRET]},
        {"credentials": {"value": SECRET}},
        {"outer": [{"client_secret": {"current": SECRET, "previous": [SECRET + "old"]}}]},
    ],
)
def test_a_credential_field_holding_a_list_or_object_loses_every_string_in_it(
    body: dict[str, object],
) -> None:
    exchange = HttpExchange(
        "emulator", 0, "POST", "https://gw/v1", 0.0, request_body=body,
        status=200, response_body={"echo": SECRET},
    )  # fmt: skip
    (record,) = http_records([exchange])
    assert SECRET not in json.dumps(record)
    assert "REDACTED" in record["request"]["body"] and "REDACTED" in record["response"]["body"]
