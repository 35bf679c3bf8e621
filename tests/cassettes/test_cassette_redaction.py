"""Redaction: key-shaped values and keys in use are replaced; prose is never rewritten."""

from __future__ import annotations

import pytest

from openprogram_testing.cassettes import REDACTED, find_leak, redact_text

PROSE = [
    "The key insight is that token limits matter.",
    "A bearer of bad news; the token budget; key=value pairs are common in configs.",
    "Ask the task-runner about sk- prefixes, or the skeleton key.",
    "Visit https://example.com/path?page=2&sort=asc for details.",
    "The org-wide policy and proj_ideas folder.",
    "email me at someone@example.com",
    "Use the `api_key` parameter; tokens: 1234; max_tokens=100",
]


@pytest.mark.parametrize("text", PROSE)
def test_prose_survives_unchanged(text: str) -> None:
    assert redact_text(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("key sk-proj-AbCdEf0123456789xyzXYZ ok", f"key {REDACTED} ok"),
        ("x-api-key: sk-ant-api03-AbCdEf0123456789_xyz-XYZ", f"x-api-key: {REDACTED}"),
        ("Authorization: Bearer eyJhbGciOi.J9abc123", f"Authorization: Bearer {REDACTED}"),
        ("https://user:pa55@api.example.com/v1", f"https://{REDACTED}@api.example.com/v1"),
        ('{"org": "org-AbCdEfGhIjKlMnOpQrStUvWx"}', f'{{"org": "{REDACTED}"}}'),
    ],
)
def test_key_shaped_values_are_replaced(text: str, expected: str) -> None:
    assert redact_text(text) == expected


def test_values_in_use_are_replaced_verbatim_and_url_encoded() -> None:
    secret = "my plain/secret value"
    text = f"a {secret} b my%20plain%2Fsecret%20value c"
    assert redact_text(text, [secret]) == f"a {REDACTED} b {REDACTED} c"
    assert redact_text("Bearer short", ["Bearer short"]) == "Bearer short"  # < 8 characters
    assert redact_text("the word test stays", ["test"]) == "the word test stays"


def test_the_leak_scan_sees_past_values_already_redacted() -> None:
    assert find_leak("Bearer REDACTED and sk-REDACTED https://REDACTED@h", []) is None
    assert find_leak("https://u:leaky123@h", []) == "a key-shaped value (u:leak…)"
    assert find_leak("uses my-secret-value-1 here", ["my-secret-value-1"]) == (
        "a key value in use (my-…, 17 characters)"
    )
