"""Which recorded interaction answers a request, and why none did.

A request matches a recorded one on **method + host + path** (paths compared percent-decoded:
botocore sends ``nova-micro-v1%3A0`` where the Anthropic SDK's Bedrock client sends ``:``), and
with ``match_body=True`` also on the **JSON body** (compared parsed, so key order and spacing do
not matter; bytes when either side is not JSON; Gemini bodies in one spelling, as the API reads
``function_call`` and ``functionCall`` alike).  Headers and the query string are never
compared: they carry what changes on every request without changing its meaning (AWS SigV4
re-signs ``Authorization``, ``X-Amz-Date``, ``X-Amz-Security-Token``, ``amz-sdk-invocation-id``
and ``amz-sdk-request`` each time; SDKs add retry counters, user agents and idempotency keys;
recorders strip ``key=`` from query strings).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any, Final
from urllib.parse import unquote

from ..wire import FORMATS, route
from ..wire.gemini import camel_keys

__all__ = [
    "MISSING",
    "ROUTE_MATCHERS",
    "body_matches",
    "first_json_difference",
    "host_matches",
    "method_matches",
    "parse_json",
    "path_matches",
    "request_json",
    "requests_match",
    "show",
]


class _Missing:
    """The marker for "no such key / index" and "not JSON"."""

    def __repr__(self) -> str:
        return "<missing>"


MISSING: Final = _Missing()


def _path_key(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def first_json_difference(
    recorded: Any, actual: Any, path: str = "$"
) -> tuple[str, Any, Any] | None:
    """The first place two JSON documents differ: ``(json_path, recorded, actual)``, with a
    missing side given as :data:`MISSING`; ``None`` when equal.  Iterative, so any depth works."""
    stack: list[tuple[str, Any, Any]] = [(path, recorded, actual)]
    while stack:
        where, a, b = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            pending: list[tuple[str, Any, Any]] = []
            for key in [*a, *(k for k in b if k not in a)]:
                sub = _path_key(where, str(key))
                if key not in b:
                    return sub, a[key], MISSING
                if key not in a:
                    return sub, MISSING, b[key]
                pending.append((sub, a[key], b[key]))
            stack.extend(reversed(pending))
            continue
        if isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                # report the first differing element before the length difference
                for i, (x, y) in enumerate(zip(a, b, strict=False)):
                    found = first_json_difference(x, y, f"{where}[{i}]")
                    if found:
                        return found
                i = min(len(a), len(b))
                return (
                    f"{where}[{i}]",
                    a[i] if i < len(a) else MISSING,
                    b[i] if i < len(b) else MISSING,
                )
            pairs = enumerate(zip(a, b, strict=True))
            stack.extend(reversed([(f"{where}[{i}]", x, y) for i, (x, y) in pairs]))
            continue
        same_kind = isinstance(a, bool) == isinstance(b, bool)
        if a == b and same_kind and type(a) is type(b):
            continue
        if same_kind and isinstance(a, int | float) and isinstance(b, int | float) and a == b:
            continue
        return where, a, b
    return None


def show(value: Any) -> str:
    """A value for a message: JSON, cut at 160 characters."""
    if value is MISSING:
        return "<missing>"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def parse_json(body: Any) -> Any:
    """A request body as parsed JSON, or :data:`MISSING`."""
    if body is None:
        return MISSING
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return MISSING
    if not isinstance(body, str) or not body.strip():
        return MISSING
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        return MISSING


def request_json(request: Any) -> Any:
    """A request's body as parsed JSON (:data:`MISSING` when not JSON) in one spelling per
    API: Gemini field names in camelCase (proto3 JSON accepts snake_case too, and clients
    differ in which they send)."""
    value = parse_json(request.body)
    found = route(unquote(str(request.path or "")))
    if value is not MISSING and found is not None and found.wire is FORMATS["gemini"]:
        return camel_keys(value)
    return value


# vcrpy matchers: each raises AssertionError saying what differs, or returns None.


def method_matches(r1: Any, r2: Any) -> None:
    if r1.method.upper() != r2.method.upper():
        raise AssertionError(f"method {r1.method} != {r2.method}")


def host_matches(r1: Any, r2: Any) -> None:
    if (r1.host or "").lower() != (r2.host or "").lower():
        raise AssertionError(f"host {r1.host} != {r2.host}")


def path_matches(r1: Any, r2: Any) -> None:
    if unquote(r1.path) != unquote(r2.path):
        raise AssertionError(f"path {r1.path} != {r2.path}")


def body_matches(r1: Any, r2: Any) -> None:
    """Bodies equal as parsed JSON (bytes when either side is not JSON)."""
    a, b = request_json(r1), request_json(r2)
    if a is MISSING or b is MISSING:
        if (r1.body or b"") != (r2.body or b""):
            raise AssertionError("bodies differ")
        return
    if first_json_difference(a, b) is not None:
        raise AssertionError("JSON bodies differ")


Matcher = Callable[[Any, Any], None]

ROUTE_MATCHERS: tuple[Matcher, ...] = (method_matches, host_matches, path_matches)


def requests_match(r1: Any, r2: Any, matchers: tuple[Matcher, ...] = ROUTE_MATCHERS) -> bool:
    """Whether every matcher accepts the pair."""
    try:
        for matcher in matchers:
            matcher(r1, r2)
    except AssertionError:
        return False
    return True
