"""Which recorded interaction answers a request, and why none did.

A request matches a recorded one on **method + host + path** (paths compared percent-decoded:
botocore sends ``nova-micro-v1%3A0`` where the Anthropic SDK's Bedrock client sends ``:``), and
a **model call** (a request to one of the wire APIs' endpoints) also on its **JSON body**, unless
body matching is turned off: for a model call the body *is* the prompt, the system prompt, the
history and the tools, so a test whose prompt changed must not replay the old answers.  Bodies
are compared after :data:`NORMALISATIONS` (what legitimately differs between two identical
calls) and without the user's ``ignore_paths``; other requests match on the route alone.
Headers and the query string are never compared: they carry what changes on every request
without changing its meaning (AWS SigV4 re-signs ``Authorization``, ``X-Amz-Date``,
``X-Amz-Security-Token``, ``amz-sdk-invocation-id`` and ``amz-sdk-request`` each time; SDKs add
retry counters, user agents and idempotency keys; recorders strip ``key=`` from query strings).
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import unquote

from openprogram_testing.transport.wire import FORMATS, route
from openprogram_testing.transport.wire.gemini import camel_keys

from .errors import CassetteError

__all__ = [
    "MISSING",
    "NORMALISATIONS",
    "ROUTE_MATCHERS",
    "BodyMatch",
    "JsonPath",
    "ListLength",
    "body_matches",
    "first_json_difference",
    "host_matches",
    "method_matches",
    "model_call_api",
    "parse_json",
    "path_matches",
    "request_json",
    "requests_match",
    "resized",
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
                # The list itself differs: an item added or removed shifts every later one, so
                # an element path would name the wrong place, and ignoring it (elements are
                # blanked, not removed, to keep positions) could never make the lengths agree.
                return where, *resized(a, b)
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


@dataclass(frozen=True, slots=True)
class ListLength:
    """One side of a list whose length differs from the other side's (what
    :func:`first_json_difference` reports for it): ``length`` items, of which those at
    ``extra`` (a range of indices, empty on the shorter side) are not on the other side when the
    two differ only by items added or removed in one place (``None`` otherwise)."""

    length: int
    extra: range | None

    def __str__(self) -> str:
        text = f"a list of {self.length} item(s)"
        if self.extra is not None and len(self.extra):
            first, last = self.extra[0], self.extra[-1]
            at = f"[{first}]" if first == last else f"[{first}..{last}]"
            text += f" ({len(self.extra)} more, at {at})"
        return text


def resized(a: list[Any], b: list[Any]) -> tuple[ListLength, ListLength]:
    """Both sides of two lists of different lengths, saying where the longer one has its extra
    items when the rest is equal (a common head and tail), e.g. a system message put first."""
    short, long = (a, b) if len(a) < len(b) else (b, a)
    head = 0
    while head < len(short) and first_json_difference(short[head], long[head]) is None:
        head += 1
    tail = 0
    while (
        tail < len(short) - head
        and first_json_difference(short[-1 - tail], long[-1 - tail]) is None
    ):
        tail += 1
    extra: range | None = None
    if head + tail == len(short):
        extra = range(head, len(long) - tail)
    sides = (
        ListLength(len(short), range(0) if extra is not None else None),
        ListLength(len(long), extra),
    )
    return sides if short is a else (sides[1], sides[0])


def show(value: Any) -> str:
    """A value for a message: JSON, cut at 160 characters."""
    if value is MISSING:
        return "<missing>"
    if isinstance(value, ListLength):
        return str(value)
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


# -- JSON paths ----------------------------------------------------------------------------

_SEGMENT = re.compile(
    r"""\.(?P<name>[A-Za-z_][A-Za-z0-9_]*)|\.(?P<star>\*)|\[(?P<index>[0-9]+)\]|\[(?P<all>\*)\]"""
    r"""|\[(?P<quoted>"(?:[^"\\]|\\.)*")\]|\[(?P<single>'[^']*')\]"""
)


@dataclass(frozen=True, slots=True)
class JsonPath:
    """A JSON path in the notation the mismatch message prints (``$.messages[0].content``,
    ``$["x-key"]``), plus ``*`` for every key or element (``$.tools[*].description``,
    ``$.metadata.*``).  No filters, no recursive descent: a path names places, it does not
    search for them, so what is ignored is plain to read."""

    text: str
    steps: tuple[str | int | None, ...]
    """Keys (``str``), indices (``int``) and wildcards (``None``)."""

    @classmethod
    def parse(cls, text: str) -> JsonPath:
        if not isinstance(text, str) or not text.startswith("$"):
            raise CassetteError(
                f"ignore_paths: {text!r} is not a JSON path (write it as the mismatch message "
                'does: "$.messages[0].content", "$.tools[*].description", \'$["x-key"]\')'
            )
        steps: list[str | int | None] = []
        pos = 1
        while pos < len(text):
            m = _SEGMENT.match(text, pos)
            if m is None:
                raise CassetteError(
                    f"ignore_paths: {text!r} is not a JSON path: cannot read {text[pos:]!r} "
                    '(segments are .name, [0], [*], .* and ["any key"])'
                )
            if m["name"] is not None:
                steps.append(m["name"])
            elif m["index"] is not None:
                steps.append(int(m["index"]))
            elif m["quoted"] is not None:
                steps.append(str(json.loads(m["quoted"])))
            elif m["single"] is not None:
                steps.append(m["single"][1:-1])
            else:
                steps.append(None)
            pos = m.end()
        if not steps:
            raise CassetteError(
                "ignore_paths: '$' would ignore the whole body; use match_body=False"
            )
        return cls(text, tuple(steps))

    def remove(self, document: Any) -> None:
        """Take the places this path names out of ``document`` (in place): dict keys are
        deleted, list elements become ``None`` (so the positions of the others stay put)."""
        level: list[Any] = [document]
        for depth, step in enumerate(self.steps):
            last = depth == len(self.steps) - 1
            following: list[Any] = []
            for node in level:
                if isinstance(node, dict):
                    keys = list(node) if step is None else [step] if step in node else []
                    for key in keys:
                        if last:
                            del node[key]
                        else:
                            following.append(node[key])
                elif isinstance(node, list):
                    if step is None:
                        indices = list(range(len(node)))
                    elif isinstance(step, int) and step < len(node):
                        indices = [step]
                    else:
                        indices = []
                    for i in indices:
                        if last:
                            node[i] = None
                        else:
                            following.append(node[i])
            level = following


# -- model calls and their bodies ----------------------------------------------------------


NORMALISATIONS: Final[dict[str, tuple[str, ...]]] = {
    "gemini": (
        "$.contents[*].parts[*].functionCall.id",
        "$.contents[*].parts[*].functionResponse.id",
    ),
}
"""What legitimately differs between two identical model calls, per API, as ignored paths.
Besides these, bodies are compared parsed (key order, spacing and ``1`` vs ``1.0`` never
matter), after the redaction the recording had (a key in a body never makes a mismatch) and,
for Gemini, in one spelling (camelCase: proto3 JSON reads ``function_call`` too).
Gemini: 2.x models send function calls without ids, so each client makes its own up (randomly,
when the response has no ``responseId``) and sends them back with the call and its result."""

_MODEL_CALL_SUFFIXES: Final = (
    ("/chat/completions", "openai_chat"),
    ("/responses", "openai_responses"),
    ("/messages", "anthropic"),
)


def model_call_api(path: str) -> str | None:
    """The wire API a request path calls (``None``: not a model call).  The endpoints the
    emulator serves, plus the OpenAI and Anthropic paths under any prefix (Azure deployments,
    gateways)."""
    path = unquote(path.split("?", 1)[0]).rstrip("/")
    found = route(path)
    if found is not None:
        return found.api
    for suffix, api in _MODEL_CALL_SUFFIXES:
        if path.endswith(suffix):
            return api
    return None


@functools.cache
def _normalisation_paths(api: str) -> tuple[JsonPath, ...]:
    return tuple(JsonPath.parse(text) for text in NORMALISATIONS.get(api, ()))


class BodyMatch:
    """How bodies of model calls are compared: after :data:`NORMALISATIONS` and without the
    places ``ignore_paths`` name.  :meth:`difference` says where two bodies differ;
    :meth:`matcher` is the vcrpy matcher built on it."""

    def __init__(self, ignore_paths: Sequence[str] = ()) -> None:
        if isinstance(ignore_paths, str):
            raise CassetteError(
                f"ignore_paths takes a list of JSON paths, got the string {ignore_paths!r}"
            )
        self.ignore_paths = tuple(JsonPath.parse(p) for p in ignore_paths)

    def _normalised(self, api: str, document: Any) -> Any:
        """``document`` (a fresh parse, edited in place) without what is not compared."""
        for path in (*_normalisation_paths(api), *self.ignore_paths):
            path.remove(document)
        return document

    def difference(
        self, path: str, recorded_body: Any, actual_body: Any
    ) -> tuple[str, Any, Any] | None:
        """Where the request body differs from the recorded one (``(json_path, recorded,
        actual)``; both ``"<not JSON>"`` for bytes that differ), or ``None`` when they match or
        the request is not a model call."""
        api = model_call_api(path)
        if api is None:
            return None
        a, b = parse_json(recorded_body), parse_json(actual_body)
        if a is MISSING or b is MISSING:
            if (recorded_body or b"") != (actual_body or b""):
                return "$", "<not JSON>", "<not JSON>"
            return None
        if api == "gemini":  # one spelling: the API reads function_call and functionCall alike
            a, b = camel_keys(a), camel_keys(b)
        return first_json_difference(self._normalised(api, a), self._normalised(api, b))

    def matcher(self) -> Matcher:
        def body_matches(r1: Any, r2: Any) -> None:
            """Model-call bodies equal (see :class:`BodyMatch`); r1 is the request, r2 the
            recorded one."""
            found = self.difference(r1.path, r2.body, r1.body)
            if found is not None:
                raise AssertionError(f"bodies differ at {found[0]}")

        return body_matches


def body_matches(r1: Any, r2: Any) -> None:
    """The default body matcher: model-call bodies equal after :data:`NORMALISATIONS`."""
    _DEFAULT_BODY_MATCHER(r1, r2)


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


_DEFAULT_BODY_MATCHER: Final = BodyMatch().matcher()
