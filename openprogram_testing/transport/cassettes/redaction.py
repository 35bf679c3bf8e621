"""Keeping secrets out of cassettes: by name, by shape, and by value.

Three rules, applied to everything a recording stores (URI, headers, bodies):

- **By name.**  Headers whose name says "credential" (``authorization``, ``x-*-api-key``,
  ``x-*-token``, ``cookie``, …) are dropped; query parameters (``key``, ``auth_token``, ``sig``,
  ``X-Amz-Signature``, …) of the request URI and string values of JSON body fields (``api_key``,
  ``token``, ``client_secret``, ``password``, …) are replaced by :data:`REDACTED`.  Names are
  compared case-insensitively with ``-`` and camelCase folded to ``_`` (``accessToken``,
  ``access-token`` and ``ACCESS_TOKEN`` are one name); the lists are glob patterns and
  configurable (:class:`RedactionRules`).
- **By shape.**  Values with a shape prose never has (``sk-…``, ``AIza…``, ``AKIA…``, ``Bearer
  <token with a digit>``, ``https://user:pw@``, OpenAI org/project ids) are replaced wherever
  they appear.
- **By value.**  Every value redacted by name, the values passed as ``redact_values`` and the keys
  of the providers' environment variables are replaced verbatim (and URL-/JSON-escaped) anywhere
  in the session, and the pre-write scan refuses to write a file that still holds one.

Prose is data: a message saying ``GET /search?q=llm&key=value`` or ``{"password": "hunter2"}``
is left as it is (query parameters are only read from the request URI; a JSON field is only a
field when it is one in the parsed body, not text inside a string).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote, unquote_plus, urlsplit, urlunsplit

__all__ = [
    "DEFAULT_SECRET_FIELDS",
    "DEFAULT_SECRET_HEADERS",
    "DEFAULT_SECRET_QUERY_PARAMS",
    "MIN_SECRET_LENGTH",
    "REDACTED",
    "SECRET_ENV_VARS",
    "RedactionRules",
    "Redactor",
    "find_leak",
    "normalize_name",
    "redact_text",
]

#: What a secret is replaced with.
REDACTED = "REDACTED"

#: Values shorter than this are not treated as secrets verbatim (a dummy key "test" must not
#: rewrite every "test" in a recording); names and shapes still apply.
MIN_SECRET_LENGTH = 8

#: Header names (glob patterns over normalized names) that are dropped before anything is stored.
DEFAULT_SECRET_HEADERS: tuple[str, ...] = (
    "authorization",
    "*_authorization",
    "cookie",
    "set_cookie",
    "api_key",
    "apikey",
    "*_api_key",
    "*_apikey",
    "x_*_key",
    "*_token",
    "*_secret",
    "*_password",
    "*_session_id",
    "*_subscription_key",
    # bare and short spellings some gateways use ("Token: ...", "X-Auth: ...")
    "token",
    "secret",
    "password",
    "passphrase",
    "auth",
    "x_auth",
    "*_access_key",
    "credential",
    "credentials",
    "*_credential",
    "*_credentials",
    "openai_organization",
    "openai_project",
    "anthropic_organization_id",
)

#: Query parameters of the request URI (glob patterns over normalized names) whose values are
#: replaced.
DEFAULT_SECRET_QUERY_PARAMS: tuple[str, ...] = (
    "key",
    "*_key",
    "apikey",
    "token",
    "*_token",
    "auth",
    "secret",
    "*_secret",
    "password",
    "passwd",
    "pwd",
    "sig",
    "signature",
    "*_signature",
    "x_amz_credential",
    "credential",
)

#: JSON body fields (glob patterns over normalized names) whose string values are replaced.
#: ``signature`` is deliberately absent: Anthropic thinking blocks and Gemini thought signatures
#: must go back to the model as recorded.
DEFAULT_SECRET_FIELDS: tuple[str, ...] = (
    "api_key",
    "apikey",
    "*_api_key",
    "token",
    "*_token",
    "client_secret",
    "secret",
    "*_secret",
    "secret_key",
    "*_secret_key",
    "*_secret_access_key",
    "password",
    "passwd",
    "*_password",
    "private_key",
    "*_private_key",
    "authorization",
    "subscription_key",
    "access_key",
    "*_access_key",
    "credentials",
    "passphrase",
    "pwd",
)

#: Environment variables whose values are secrets wherever they appear.
SECRET_ENV_VARS: tuple[str, ...] = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_AUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
    "GEMINI_API_KEY",
    "GOOGLE_API_KEY",
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_BEARER_TOKEN_BEDROCK",
)

# Key-shaped values.  Each pattern is anchored on a shape prose does not have ("sk-" followed by
# 16+ key characters, "Bearer " followed by a token with a digit, "://x@"), so "the key insight"
# or "token limits" are never touched.
_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_])sk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_\-])AIza[0-9A-Za-z_\-]{35}(?![0-9A-Za-z_\-])"), REDACTED),
    (re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"), REDACTED),
    (
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(bearer\s+)(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{8,}=*"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?<=://)[^/@\s\"'<>]+@"), REDACTED + "@"),
    (re.compile(r"(?<![A-Za-z0-9_\-])org-[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_\-])proj_[A-Za-z0-9]{20,}"), REDACTED),
)

# A JSON member with a string value, in raw JSON text: quotes inside JSON strings are escaped,
# so text *inside* a string never matches.
_JSON_MEMBER = re.compile(r'"((?:[^"\\\n]|\\.){1,128})"(\s*:\s*)"((?:[^"\\\n]|\\.)*)"')
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SIGV4_PART = re.compile(r"(?:Credential=([A-Za-z0-9]+)/|Signature=([0-9a-fA-F]{16,}))")
_CALL_ARGUMENTS = frozenset({"args", "input", "arguments"})
# Cookie headers hold several name=value pairs: each value is a secret on its own.
_COOKIES = frozenset({"cookie", "set_cookie"})


def _string_leaves(value: Any) -> Iterator[str]:
    """The strings inside a JSON value long enough to be remembered as secrets (and not
    redacted already)."""
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, str):
            if len(node.strip()) >= MIN_SECRET_LENGTH and REDACTED not in node:
                yield node
        elif isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)


@functools.lru_cache(maxsize=4096)
def normalize_name(name: str) -> str:
    """``accessToken``, ``Access-Token`` and ``ACCESS_TOKEN`` → ``access_token``."""
    return _CAMEL.sub("_", name.strip()).replace("-", "_").replace(".", "_").lower()


def _matcher(patterns: Iterable[str]) -> re.Pattern[str]:
    parts = [fnmatch.translate(normalize_name(p)) for p in patterns if p.strip()]
    return re.compile("|".join(parts) if parts else r"(?!)")


@dataclass(frozen=True)
class RedactionRules:
    """Which names are credentials: glob patterns over normalized names (``x_*_token``).

    The defaults cover the providers this project speaks and the common credential spellings;
    :meth:`extended` adds project-specific names without losing them."""

    headers: tuple[str, ...] = DEFAULT_SECRET_HEADERS
    query_params: tuple[str, ...] = DEFAULT_SECRET_QUERY_PARAMS
    body_fields: tuple[str, ...] = DEFAULT_SECRET_FIELDS
    _compiled: tuple[re.Pattern[str], ...] = field(init=False, repr=False, compare=False)
    _verdicts: dict[tuple[int, str], bool] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for what in ("headers", "query_params", "body_fields"):
            value = getattr(self, what)
            if isinstance(value, str) or not all(isinstance(p, str) for p in value):
                raise TypeError(f"RedactionRules.{what} must be a sequence of strings")
            object.__setattr__(self, what, tuple(value))
        compiled = tuple(_matcher(getattr(self, w)) for w in ("headers", "query_params"))
        object.__setattr__(self, "_compiled", (*compiled, _matcher(self.body_fields)))
        object.__setattr__(self, "_verdicts", {})

    def extended(
        self,
        *,
        headers: Sequence[str] = (),
        query_params: Sequence[str] = (),
        body_fields: Sequence[str] = (),
    ) -> RedactionRules:
        """These rules plus more names."""
        return RedactionRules(
            (*self.headers, *headers),
            (*self.query_params, *query_params),
            (*self.body_fields, *body_fields),
        )

    def _is(self, kind: int, name: str) -> bool:
        key = (kind, name)
        known = self._verdicts.get(key)
        if known is None:
            known = self._compiled[kind].fullmatch(normalize_name(name)) is not None
            if len(self._verdicts) < 65536:
                self._verdicts[key] = known
        return known

    def is_secret_header(self, name: str) -> bool:
        return self._is(0, name)

    def is_secret_param(self, name: str) -> bool:
        return self._is(1, name)

    def is_secret_field(self, name: str) -> bool:
        return self._is(2, name)


def _secret_variants(values: Iterable[str]) -> list[str]:
    out: set[str] = set()
    for value in values:
        value = value.strip()
        for prefix in ("bearer ", "basic "):
            if value[: len(prefix)].lower() == prefix:
                value = value[len(prefix) :].strip()
        if len(value) >= MIN_SECRET_LENGTH:
            out.add(value)
            out.add(quote(value, safe=""))
            out.add(json.dumps(value)[1:-1])
    return sorted(out, key=len, reverse=True)


# Cheap pre-check: text without any of these cannot hold a key shape (most header values and
# bodies on the replay path), so the shape patterns are skipped for it.
_SHAPE_HINT = re.compile(r"sk-|AIza|AKIA|ASIA|[Bb][Ee][Aa][Rr][Ee][Rr]|://|org-|proj_")


@functools.lru_cache(maxsize=64)
def _secrets_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    """One alternation of every variant of ``secrets``, longest first (compiled once per set of
    secrets, so a session redacts each value in one pass)."""
    variants = _secret_variants(secrets)
    return re.compile("|".join(map(re.escape, variants))) if variants else None


def redact_text(text: str, secrets: Sequence[str] = ()) -> str:
    """Replace key-shaped values and the given secret values in ``text``.  Ordinary prose
    (including URL-looking sentences) is left exactly as it is."""
    pattern = _secrets_pattern(tuple(secrets))
    if pattern is not None:
        text = pattern.sub(REDACTED, text)
    if _SHAPE_HINT.search(text):
        for shape, replacement in _KEY_PATTERNS:
            text = shape.sub(replacement, text)
    return text


def find_leak(text: str, secrets: Sequence[str] = ()) -> str | None:
    """A description of the first secret left in ``text`` (never the secret itself)."""
    pattern = _secrets_pattern(tuple(secrets))
    found = pattern.search(text) if pattern is not None else None
    if found is not None:
        secret = found.group(0)
        return f"a key value in use ({secret[:3]}…, {len(secret)} characters)"
    for pattern, _ in _KEY_PATTERNS:
        for match in pattern.finditer(text):
            if REDACTED not in match.group(0):
                return f"a key-shaped value ({match.group(0)[:6]}…)"
    return None


def _env_secrets() -> list[str]:
    return [os.environ[name] for name in SECRET_ENV_VARS if os.environ.get(name)]


def _header_text(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return bytes(value).decode("utf-8", errors="replace")
    return str(value)


class Redactor:
    """One session's redaction: the rules plus every value redacted so far (so a secret seen in
    one place is removed everywhere, and the scan before writing looks for all of them)."""

    def __init__(self, rules: RedactionRules | None = None, values: Sequence[str] = ()) -> None:
        self.rules = rules or RedactionRules()
        self._secrets: list[str] = []
        self._last_body: tuple[tuple[str, int], str] | None = None
        # read once: environment lookups cost more than the redaction of a header
        self._env = tuple(_env_secrets())
        for value in values:
            self.remember(value)

    # ---- what is secret
    def remember(self, value: str) -> None:
        """Treat ``value`` as a secret from now on (long enough values only)."""
        text = value.strip()
        if text[:7].lower() == "bearer ":
            text = text[7:].strip()
        elif text.startswith("AWS4-"):  # SigV4: the key id and signature also travel alone
            for key_id, signature in _SIGV4_PART.findall(text):
                self.remember(key_id or signature)
        if len(text) >= MIN_SECRET_LENGTH and text not in self._secrets:
            self._secrets.append(text)

    def secrets(self) -> tuple[str, ...]:
        """Every value known to be secret: redacted so far, given, and the providers' keys in
        the environment when the session was created."""
        return (*self._secrets, *self._env)

    # ---- redaction
    def text(self, text: str) -> str:
        return redact_text(text, self.secrets())

    def uri(self, uri: str) -> str:
        """Query parameters redacted by name, then shapes and known values."""
        parts = urlsplit(uri)
        if parts.query:
            parts = parts._replace(query=self.form(parts.query))
            uri = urlunsplit(parts)
        return self.text(uri)

    def form(self, query: str) -> str:
        """``a=1&key=s3cret`` → ``a=1&key=REDACTED`` (order and spelling kept)."""
        out = []
        for item in query.split("&"):
            secret = self._secret_param(item)
            if secret is not None:
                name, value = secret
                self.remember(unquote_plus(value))
                item = f"{name}={REDACTED}"
            out.append(item)
        return "&".join(out)

    def _secret_param(self, item: str) -> tuple[str, str] | None:
        """The name and value (as written) of a ``name=value`` query item whose name is a
        credential's and whose value is not redacted yet: what :meth:`form` redacts and
        :meth:`leak_in_uri` reports, so the two agree on what counts."""
        name, sep, value = item.partition("=")
        if sep and value and value != REDACTED and self.rules.is_secret_param(unquote_plus(name)):
            return name, value
        return None

    def headers(self, headers: Mapping[str, Any]) -> dict[str, list[str]]:
        """Credential-named headers dropped (their values remembered); the rest redacted."""
        kept: dict[str, list[str]] = {}
        for name, values in headers.items():
            items = values if isinstance(values, list | tuple) else [values]
            texts = [_header_text(v) for v in items]
            if self.rules.is_secret_header(str(name)):
                cookie = normalize_name(str(name)) in _COOKIES
                for text in texts:
                    if cookie:  # each cookie's value, not the whole header
                        pairs = (
                            text.split(";")[:1] if "set" in str(name).lower() else text.split(";")
                        )
                        for pair in pairs:
                            self.remember(pair.partition("=")[2])
                    else:
                        self.remember(text)
                continue
            kept[str(name)] = texts
        return {name: [self.text(v) for v in values] for name, values in kept.items()}

    def body(self, text: str) -> str:
        """Credential-named JSON fields (in a JSON document or in SSE ``data:`` lines) replaced,
        then shapes and known values.  (vcrpy redacts each request up to three times while
        matching it: the last answer is reused while no new secret was learnt.)"""
        key = (text, len(self._secrets))
        if self._last_body is not None and self._last_body[0] == key:
            return self._last_body[1]
        redacted = self.text(self.fields(text))
        self._last_body = ((text, len(self._secrets)), redacted)
        return redacted

    def fields(self, text: str) -> str:
        found = self._named_values(text)
        if not found:
            return text

        def swap(match: re.Match[str]) -> str:
            key, colon, raw = match.groups()
            try:
                pair = (json.loads(f'"{key}"'), json.loads(f'"{raw}"'))
            except ValueError:
                return match.group(0)
            if pair in found:
                return f'"{key}"{colon}"{REDACTED}"'
            return match.group(0)

        return _JSON_MEMBER.sub(swap, text)

    def _named_values(self, text: str) -> set[tuple[str, str]]:
        """``(key, value)`` of the credential-named string fields of the JSON in
        ``text``: the whole body, or each SSE data line."""
        if '"' not in text:
            return set()
        documents: list[Any] = []
        stripped = text.lstrip()
        if stripped[:1] in ("{", "["):
            try:
                documents.append(json.loads(text))
            except ValueError:
                pass
        if not documents:
            for line in text.splitlines():
                if line.startswith("data:"):
                    try:
                        documents.append(json.loads(line[5:]))
                    except ValueError:
                        continue
        found: set[tuple[str, str]] = set()
        stack = documents
        while stack:
            node = stack.pop()
            if isinstance(node, list):
                stack.extend(node)
            elif isinstance(node, dict):
                # a logprobs entry's "token" is model output, and so are the arguments of a
                # tool call ({name, args|input|arguments}): data the loop acts on, not credentials
                logprob = "logprob" in node
                call = "name" in node
                for key, value in node.items():
                    if call and key in _CALL_ARGUMENTS:
                        continue
                    if isinstance(value, str):
                        if value and value != REDACTED and not (logprob and key == "token"):
                            if self.rules.is_secret_field(key):
                                found.add((key, value))
                                self.remember(value)
                    elif isinstance(value, dict | list):
                        if self.rules.is_secret_field(key) and not (logprob and key == "token"):
                            # {"credentials": ["..."]} / {"token": {"value": "..."}}: every
                            # string inside is the secret, wherever else it appears
                            for leaf in _string_leaves(value):
                                found.add((key, leaf))
                                self.remember(leaf)
                        else:
                            stack.append(value)
        return found

    # ---- the scan before writing
    def leak_in(self, text: str) -> str | None:
        """What secret ``text`` still holds: a known value, a shape, or a named field."""
        leak = find_leak(text, self.secrets())
        if leak is not None:
            return leak
        before = list(self._secrets)
        named = self._named_values(text)
        self._secrets = before
        if named:
            key = sorted(named)[0][0]
            return f"the credential-named field {key!r}"
        return None

    def leak_in_uri(self, uri: str) -> str | None:
        query = urlsplit(uri).query
        for item in query.split("&") if query else ():
            secret = self._secret_param(item)
            if secret is not None:
                return f"the credential-named query parameter {unquote_plus(secret[0])!r}"
        return find_leak(uri, self.secrets())
