"""Record and replay real provider HTTP traffic (SPEC §9.3), built on vcrpy.

``use_cassette(path)`` patches the HTTP clients the official SDKs use (vcrpy patches ``httpx``
and ``httpx2``) so requests are answered from a standard vcrpy YAML cassette:

- **Record modes** ``none`` (default: replay only; an unmatched request fails at once with a
  message saying why, nothing reaches the network), ``once``, ``new_episodes``, ``all`` (vcrpy's
  meanings).  Recording needs ``openprogram.providers.guard`` to allow real requests.
- **In-order playback**: the first *unplayed* matching interaction is served, so identical
  retried requests get their recorded 429 → 529 → 200 sequence.  Matching is method + host +
  path; ``match_body=True`` also compares the parsed JSON bodies.  Interactions left unplayed fail
  at exit unless ``allow_unplayed=True``.
- **Secrets never reach a file**: credential headers are dropped, key-shaped values (``sk-…``,
  ``sk-ant-…``, bearer tokens, ``key=``/``token=`` query values, URL userinfo, OpenAI org/project
  ids) and the key values actually in use are replaced, in URLs, headers and bodies; the cassette
  is scanned before it is written and a leak fails the recording.  Prose is never rewritten.
- **Readable files**: streamed bodies are YAML block text; compact JSON bodies are stored
  pretty-printed and restored byte for byte on replay.
- **Fault mutations** (:mod:`openprogram_testing.faults`) apply at playback to the recorded
  bodies (gzip is decoded first).

Real-world cassettes made by other projects load as they are (plain or ``!!binary`` bodies, gzip,
query strings, scalar headers, empty status messages).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import functools
import gzip
import json
import os
import re
import time
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import quote, urlsplit

import yaml

from .faults import FaultError, MutableResponse, Mutation, apply_mutations

__all__ = [
    "RECORD_MODES",
    "REDACTED",
    "CassetteError",
    "CassetteLeakError",
    "CassetteMismatch",
    "CassetteSession",
    "RecordMode",
    "first_json_difference",
    "load_interactions",
    "redact_text",
    "use_cassette",
]

RecordMode = Literal["none", "once", "new_episodes", "all"]
RECORD_MODES: tuple[str, ...] = ("none", "once", "new_episodes", "all")

#: What a secret is replaced with.
REDACTED = "REDACTED"

#: Headers that are dropped from requests and responses before anything is recorded.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "x-goog-api-key",
        "openai-organization",
        "openai-project",
        "anthropic-organization-id",
        "cookie",
        "set-cookie",
    }
)

#: Environment variables whose values are secrets wherever they appear.
SECRET_ENV_VARS = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENAI_ORG_ID",
    "OPENAI_ORGANIZATION",
    "OPENAI_PROJECT_ID",
    "ANTHROPIC_AUTH_TOKEN",
    "AZURE_OPENAI_API_KEY",
)

#: Values shorter than this are not treated as secrets verbatim (a dummy key "test" must not
#: rewrite every "test" in a recording); key-shaped patterns still apply.
MIN_SECRET_LENGTH = 8

# Key-shaped values.  Each pattern is anchored on a shape prose does not have ("sk-" followed by
# 16+ key characters, "Bearer " followed by a token with a digit, "?key=" in a URL, "://x@"), so
# "the key insight" or "token limits" are never touched.
_KEY_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"(?<![A-Za-z0-9_])sk-[A-Za-z0-9_\-]{16,}"), REDACTED),
    (
        re.compile(
            r"(?i)(?<![A-Za-z0-9])(bearer\s+)(?=[A-Za-z0-9._~+/\-]*\d)[A-Za-z0-9._~+/\-]{8,}=*"
        ),
        r"\1" + REDACTED,
    ),
    (
        re.compile(
            r"(?i)(?<=[?&;])((?:api[_-]?key|key|token|access[_-]?token|auth|secret|password"
            r"|sig|signature|client[_-]?secret)=)[^&#\s\"'<>]+"
        ),
        r"\1" + REDACTED,
    ),
    (re.compile(r"(?<=://)[^/@\s\"'<>]+@"), REDACTED + "@"),
    (re.compile(r"(?<![A-Za-z0-9_\-])org-[A-Za-z0-9]{20,}"), REDACTED),
    (re.compile(r"(?<![A-Za-z0-9_\-])proj_[A-Za-z0-9]{20,}"), REDACTED),
)

# Marks a JSON body stored pretty-printed; the value says how to restore the original bytes.
_JSON_MARK = "openprogram_json"


class CassetteError(AssertionError):
    """A cassette cannot be used as asked: missing file, malformed YAML, unplayed interactions,
    a mismatch the code under test swallowed, a bad mutation."""


class CassetteLeakError(CassetteError):
    """A secret would have been written to a cassette; nothing was written."""


class CassetteMismatch(CassetteError):
    """A request has no unplayed matching interaction in a replay-only cassette.

    Raised inside the HTTP transport, so an SDK may wrap it (the OpenAI and Anthropic SDKs turn
    it into a connection error, which an adapter turns into an error turn: fast, never a hang).
    The session keeps the message and raises it again when the cassette closes, so a mismatch
    always fails the test with the full explanation."""


# --------------------------------------------------------------------------------------------
# redaction


def _secret_variants(values: Sequence[str]) -> list[str]:
    out: set[str] = set()
    for value in values:
        value = value.strip()
        if value.lower().startswith("bearer "):
            value = value[7:].strip()
        if len(value) >= MIN_SECRET_LENGTH:
            out.add(value)
            out.add(quote(value, safe=""))
    return sorted(out, key=len, reverse=True)


def redact_text(text: str, secrets: Sequence[str] = ()) -> str:
    """Replace key-shaped values and the given secret values in ``text``.  Ordinary prose is left
    exactly as it is."""
    for secret in _secret_variants(secrets):
        text = text.replace(secret, REDACTED)
    for pattern, replacement in _KEY_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def _find_leak(text: str, secrets: Sequence[str]) -> str | None:
    """A description of the first secret left in ``text`` (never the secret itself)."""
    for secret in _secret_variants(secrets):
        if secret in text:
            return f"a key value in use ({secret[:3]}…, {len(secret)} characters)"
    for pattern, _ in _KEY_PATTERNS:
        for match in pattern.finditer(text):
            if REDACTED not in match.group(0):
                return f"a key-shaped value ({match.group(0)[:6]}…)"
    return None


def _env_secrets() -> list[str]:
    return [os.environ[name] for name in SECRET_ENV_VARS if os.environ.get(name)]


def _decoded_body(body: Any) -> str | None:
    """A body as text for scanning: bytes decoded (gunzipped first when compressed)."""
    if body is None:
        return None
    if isinstance(body, str):
        return body
    if isinstance(body, bytes | bytearray):
        raw = bytes(body)
        if raw[:2] == b"\x1f\x8b":
            with contextlib.suppress(OSError, EOFError, zlib.error):
                raw = gzip.decompress(raw)
        return raw.decode("utf-8", errors="replace")
    return str(body)


def _headers_as_lists(headers: Mapping[str, Any]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for name, values in headers.items():
        if isinstance(values, list | tuple):
            out[str(name)] = [str(v) for v in values]
        else:
            out[str(name)] = [str(values)]
    return out


# --------------------------------------------------------------------------------------------
# JSON comparison


_MISSING = object()


def _path_key(path: str, key: str) -> str:
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def first_json_difference(
    recorded: Any, actual: Any, path: str = "$"
) -> tuple[str, Any, Any] | None:
    """The first place two JSON documents differ: ``(json_path, recorded, actual)``, with a
    missing side given as the module's ``_MISSING`` marker; ``None`` when equal."""
    if isinstance(recorded, dict) and isinstance(actual, dict):
        for key in [*recorded, *(k for k in actual if k not in recorded)]:
            sub = _path_key(path, str(key))
            if key not in actual:
                return sub, recorded[key], _MISSING
            if key not in recorded:
                return sub, _MISSING, actual[key]
            found = first_json_difference(recorded[key], actual[key], sub)
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(actual, list):
        for i, (a, b) in enumerate(zip(recorded, actual, strict=False)):
            found = first_json_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        if len(recorded) != len(actual):
            i = min(len(recorded), len(actual))
            return (
                f"{path}[{i}]",
                recorded[i] if i < len(recorded) else _MISSING,
                actual[i] if i < len(actual) else _MISSING,
            )
        return None
    same_kind = isinstance(recorded, bool) == isinstance(actual, bool)
    if recorded == actual and same_kind and type(recorded) is type(actual):
        return None
    numbers = (int, float)
    if (
        same_kind
        and isinstance(recorded, numbers)
        and isinstance(actual, numbers)
        and recorded == actual
    ):
        return None
    return path, recorded, actual


def _show(value: Any) -> str:
    if value is _MISSING:
        return "<missing>"
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 160 else text[:157] + "..."


def _parse_json(body: Any) -> Any:
    if body is None:
        return _MISSING
    if isinstance(body, bytes | bytearray):
        try:
            body = bytes(body).decode("utf-8")
        except UnicodeDecodeError:
            return _MISSING
    if not isinstance(body, str) or not body.strip():
        return _MISSING
    try:
        return json.loads(body)
    except ValueError:
        return _MISSING


def _body_matches(r1: Any, r2: Any) -> None:
    """vcrpy matcher: bodies equal as parsed JSON (bytes when either side is not JSON)."""
    a, b = _parse_json(r1.body), _parse_json(r2.body)
    if a is _MISSING or b is _MISSING:
        if (r1.body or b"") != (r2.body or b""):
            raise AssertionError("bodies differ")
        return
    if first_json_difference(a, b) is not None:
        raise AssertionError("JSON bodies differ")


# --------------------------------------------------------------------------------------------
# the YAML format


class _Dumper(yaml.SafeDumper):
    """Multi-line strings (SSE streams, pretty JSON) as ``|`` block text."""


def _represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
    style = "|" if "\n" in data else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)


_Dumper.add_representer(str, _represent_str)


def _pretty_json(text: str) -> tuple[str, str | None] | None:
    """``(pretty, how_to_restore)`` for a JSON body, or ``None`` to store it as it is."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except ValueError:
        return None
    pretty = json.dumps(parsed, indent=2, ensure_ascii=False)
    if pretty == text:
        return None
    for how, ascii_ in (("compact", False), ("compact-ascii", True)):
        if json.dumps(parsed, separators=(",", ":"), ensure_ascii=ascii_) == text:
            return pretty, how
    for how, ascii_ in (("spaced", False), ("spaced-ascii", True)):
        if json.dumps(parsed, ensure_ascii=ascii_) == text:
            return pretty, how
    return None


def _restore_json(pretty: str, how: str) -> str:
    parsed = json.loads(pretty)
    ascii_ = how.endswith("-ascii")
    if how.startswith("compact"):
        return json.dumps(parsed, separators=(",", ":"), ensure_ascii=ascii_)
    return json.dumps(parsed, ensure_ascii=ascii_)


class _Serializer:
    """vcrpy serializer: readable YAML out (with a leak scan first), any vcrpy YAML in."""

    def __init__(self, session: CassetteSession) -> None:
        self._session = session

    def serialize(self, data: dict[str, Any]) -> str:
        data = copy.deepcopy(data)
        self._session._scan_for_leaks(data)
        for interaction in data.get("interactions", []):
            request = interaction.get("request", {})
            if isinstance(request.get("body"), str):
                pretty = _pretty_json(request["body"])
                if pretty is not None:
                    request["body"] = pretty[0]  # matched as parsed JSON, never served
            body = interaction.get("response", {}).get("body", {})
            if isinstance(body, dict) and isinstance(body.get("string"), str):
                pretty = _pretty_json(body["string"])
                if pretty is not None:
                    body["string"], body[_JSON_MARK] = pretty
        text = yaml.dump(data, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=4096)
        if yaml.load(text, Loader=yaml.SafeLoader) != data:  # pragma: no cover - defensive
            text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
        return text

    def deserialize(self, text: str) -> dict[str, Any]:
        return _parse_cassette(text, self._session.path)


def _parse_cassette(text: str, path: Path) -> dict[str, Any]:
    from vcr.serializers import yamlserializer

    try:
        data = yamlserializer.deserialize(text)
    except yaml.YAMLError as exc:
        raise CassetteError(f"cassette {path} is not valid YAML: {exc}") from None
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(
            f"cassette {path} is not a vcrpy cassette (expected a mapping with 'interactions')"
        )
    for index, interaction in enumerate(data["interactions"]):
        if not (
            isinstance(interaction, dict)
            and isinstance(interaction.get("request"), dict)
            and isinstance(interaction.get("response"), dict)
            and "status" in interaction["response"]
        ):
            raise CassetteError(f"cassette {path}: interaction {index} lacks request/response")
        request = interaction["request"]
        missing = {"method", "uri"} - set(request)
        if missing:
            raise CassetteError(f"cassette {path}: interaction {index} request lacks {missing}")
        request.setdefault("body", None)
        request.setdefault("headers", {})
        request["headers"] = _headers_as_lists(request["headers"] or {})
        response = interaction["response"]
        response["headers"] = _headers_as_lists(response.get("headers") or {})
        body = response.get("body")
        if not isinstance(body, dict):
            response["body"] = body = {"string": body if body is not None else ""}
        how = body.pop(_JSON_MARK, None)
        if how and isinstance(body.get("string"), str):
            body["string"] = _restore_json(body["string"], str(how))
        status = response["status"]
        if isinstance(status, int):
            response["status"] = {"code": status, "message": ""}
        else:
            status.setdefault("message", "")
    return data


def load_interactions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The interactions of a cassette file as plain dicts (bodies as stored: ``str`` or
    ``bytes``).  For tests that want to know what a recording contains."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CassetteError(f"cassette {path} not found") from None
    return list(_parse_cassette(text, path)["interactions"])


# --------------------------------------------------------------------------------------------
# the vcrpy cassette


def _make_cassette_class() -> type[Any]:
    from vcr.cassette import Cassette
    from vcr.errors import UnhandledHTTPRequestError

    class _OpenProgramCassette(Cassette):  # type: ignore[misc]
        """vcrpy cassette with clear mismatch errors, indexed playback and quiet loading."""

        session: CassetteSession

        def _load(self) -> None:
            self.session._loading = True
            try:
                super()._load()
            finally:
                self.session._loading = False

        def can_play_response_for(self, request: Any) -> bool:
            if super().can_play_response_for(request):
                return True
            if self.write_protected:
                error = CassetteMismatch(self.session._explain_mismatch(request))
                self.session.mismatches.append(str(error))
                raise error
            return False

        def play_response(self, request: Any) -> Any:
            for index, response in self._responses(request):
                if self.play_counts[index] == 0:
                    if index < self._loaded_count:
                        self._played_interactions.append((self.data[index][0], response))
                    self.play_counts[index] += 1
                    self.session.played.append(index)
                    self.session._last_index = index
                    return response
            raise UnhandledHTTPRequestError(self.session._explain_mismatch(request))

    return _OpenProgramCassette


_INSTALLED = False


def _install_playback_hook() -> None:
    """Route playback of our cassettes through :meth:`CassetteSession._serve` (mutations, stalls,
    re-chunking); other vcrpy cassettes are untouched.  vcrpy builds replayed httpx responses
    in ``vcr.stubs.httpx_stubs._play_responses``, looked up at call time."""
    global _INSTALLED
    if _INSTALLED:
        return
    from vcr.stubs import httpx_stubs

    original = getattr(httpx_stubs, "_play_responses", None)
    if original is None:  # pragma: no cover - a vcrpy that no longer has the hook
        raise CassetteError(
            "this vcrpy has no vcr.stubs.httpx_stubs._play_responses, which "
            "openprogram_testing.cassettes hooks to serve recordings; use vcrpy 9.4"
        )

    def _play_responses(cassette: Any, vcr_request: Any, httpx: Any) -> Any:
        session = getattr(cassette, "session", None)
        if isinstance(session, CassetteSession):
            return session._serve(cassette, vcr_request, httpx)
        return original(cassette, vcr_request, httpx)

    httpx_stubs._play_responses = _play_responses
    _INSTALLED = True


@functools.cache
def _stream_class(httpx: Any) -> type[Any]:
    class _ServedStream(httpx.SyncByteStream, httpx.AsyncByteStream):  # type: ignore[misc,name-defined]
        """Serves planned pieces with their delays; optionally drops the connection at the end."""

        def __init__(self, pieces: list[tuple[float, bytes]], disconnect: bool) -> None:
            self._pieces = pieces
            self._disconnect = disconnect

        def _drop(self) -> None:
            if self._disconnect:
                raise httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body "
                    "(incomplete chunked read)"
                )

        def __iter__(self) -> Iterator[bytes]:
            for delay, chunk in self._pieces:
                if delay:
                    time.sleep(delay)
                if chunk:
                    yield chunk
            self._drop()

        async def __aiter__(self) -> Any:
            for delay, chunk in self._pieces:
                if delay:
                    await asyncio.sleep(delay)
                if chunk:
                    yield chunk
            self._drop()

    return _ServedStream


# --------------------------------------------------------------------------------------------
# the public context manager


MutationSpec = Sequence[Mutation] | Mapping[int, Sequence[Mutation]]


class CassetteSession:
    """An open cassette (what ``use_cassette`` yields and the ``cassette`` fixture returns).

    ``interactions`` is the number of recorded interactions, ``played`` the indices served in
    order, ``mismatches`` the messages of requests that matched nothing."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        record_mode: str = "none",
        match_body: bool = False,
        allow_unplayed: bool = False,
        mutations: MutationSpec = (),
        redact_values: Sequence[str] = (),
    ) -> None:
        if record_mode not in RECORD_MODES:
            raise CassetteError(
                f"record_mode must be one of {', '.join(RECORD_MODES)}; got {record_mode!r}"
            )
        self.path = Path(path)
        if not self.path.suffix:
            self.path = self.path.with_suffix(".yaml")
        self.record_mode = record_mode
        self.match_body = match_body
        self.allow_unplayed = allow_unplayed
        self.mutations = _check_mutations(mutations)
        self._secrets: list[str] = [v for v in redact_values if v]
        self.played: list[int] = []
        self.mismatches: list[str] = []
        self._loading = False
        self._last_index: int | None = None
        self._vcr_cassette: Any = None
        self._context: Any = None
        self._stack: contextlib.ExitStack | None = None

    # ---- public views
    @property
    def interactions(self) -> int:
        return len(self._vcr_cassette.data) if self._vcr_cassette is not None else 0

    def rewind(self, *, mutations: MutationSpec | None = None) -> None:
        """Mark every interaction unplayed again (and optionally swap the mutations), so one
        open cassette can replay the same recording many times: cheaper than reopening it, e.g.
        when sweeping a fault over every frame."""
        if self._vcr_cassette is None:
            raise CassetteError("rewind() needs an open cassette (inside `with use_cassette(...)`)")
        if mutations is not None:
            self.mutations = _check_mutations(mutations)
        self._vcr_cassette.rewind()
        self.played.clear()
        self.mismatches.clear()

    @property
    def unplayed(self) -> list[int]:
        if self._vcr_cassette is None:
            return []
        counts = self._vcr_cassette.play_counts
        return [i for i in range(self._vcr_cassette._loaded_count) if counts[i] == 0]

    @property
    def replay_only(self) -> bool:
        """Whether every request must come from the file (nothing may be recorded)."""
        return bool(self._vcr_cassette is not None and self._vcr_cassette.write_protected)

    # ---- context management
    def __enter__(self) -> CassetteSession:
        from vcr.matchers import host, method, path
        from vcr.record_mode import RecordMode

        if self.record_mode == "none" and not self.path.is_file():
            raise CassetteError(
                f"cassette {self.path} not found and record_mode='none' never records. Record it "
                "once against the real API or the emulator with record_mode='once' (pytest: "
                "--openprogram-record-mode=once)."
            )
        _install_playback_hook()
        cls = _make_cassette_class()
        cls.session = self  # read by the playback hook and the overrides
        match_on = [method, host, path] + ([_body_matches] if self.match_body else [])
        self._context = cls.use(
            path=str(self.path),
            serializer=_Serializer(self),
            record_mode=RecordMode(self.record_mode),
            match_on=match_on,
            before_record_request=self._before_record_request,
            before_record_response=self._before_record_response,
            allow_playback_repeats=False,
        )
        self._stack = contextlib.ExitStack()
        try:
            self._vcr_cassette = self._stack.enter_context(self._context)
            self._enter_guard()
        except BaseException:
            self._stack.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._stack is not None
        try:
            self._vcr_cassette._save()  # recording modes; a leak raises here
        except BaseException:
            # vcrpy would save again on exit and, failing, leave its patches installed
            self._vcr_cassette.dirty = False
            self._stack.close()
            raise
        self._stack.close()  # unpatches
        if exc_type is not None:
            if self.mismatches and exc is not None and not isinstance(exc, CassetteError):
                exc.add_note(f"(cassette) a request could not be answered: {self.mismatches[0]}")
            return
        if self.mismatches:
            raise CassetteError(
                "a request could not be answered from the cassette (the error was caught by "
                "the code under test):\n" + self.mismatches[0]
            )
        if self.record_mode != "all" and not self.allow_unplayed and self.unplayed:
            raise CassetteError(self._explain_unplayed())

    def _enter_guard(self) -> None:
        """Let real adapters through the real-call guard while requests are answered from the
        cassette (and, when recording, for the real requests)."""
        try:
            from openprogram.providers import guard
        except ImportError:  # pragma: no cover - the guard ships with openprogram
            return
        assert self._stack is not None
        self._stack.enter_context(guard.replaying())

    # ---- recording hooks
    def _before_record_request(self, request: Any) -> Any:
        request = copy.copy(request)  # the caller's request stays as it is
        request.headers = dict(request.headers.items())
        for name in list(request.headers):
            if name.lower() in SECRET_HEADERS:
                value = request.headers[name]
                if name.lower() not in ("cookie",):
                    self._remember_secret(value)
                del request.headers[name]
        secrets = self._all_secrets()
        request.uri = redact_text(request.uri, secrets)
        body = request.body
        if isinstance(body, bytes) and body:
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                redacted = redact_text(text, secrets)
                if redacted != text:
                    request.body = redacted
        return request

    def _before_record_response(self, response: dict[str, Any]) -> dict[str, Any]:
        if self._loading:
            return response  # recordings are served as they are
        from vcr.filters import decode_response

        response["headers"] = _headers_as_lists(response.get("headers") or {})
        response = decode_response(response)
        headers = _headers_as_lists(response.get("headers") or {})
        secrets = self._all_secrets()
        response["headers"] = {
            name: [redact_text(v, secrets) for v in values]
            for name, values in headers.items()
            if name.lower() not in SECRET_HEADERS
        }
        body = response.get("body", {}).get("string")
        if isinstance(body, bytes):
            try:
                text = body.decode("utf-8")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                redacted = redact_text(text, secrets)
                if redacted != text:
                    response["body"]["string"] = redacted.encode("utf-8")
                    for name in response["headers"]:
                        if name.lower() == "content-length":
                            response["headers"][name] = [str(len(response["body"]["string"]))]
        return response

    def _remember_secret(self, value: Any) -> None:
        for item in value if isinstance(value, list | tuple) else [value]:
            text = str(item)
            if text.lower().startswith("bearer "):
                text = text[7:]
            if len(text.strip()) >= MIN_SECRET_LENGTH and text not in self._secrets:
                self._secrets.append(text.strip())

    def _all_secrets(self) -> list[str]:
        return [*self._secrets, *_env_secrets()]

    def _scan_for_leaks(self, data: dict[str, Any]) -> None:
        secrets = self._all_secrets()
        for index, interaction in enumerate(data.get("interactions", [])):
            for side in ("request", "response"):
                part = interaction.get(side, {})
                places: list[tuple[str, str | None]] = []
                if side == "request":
                    places.append(("uri", part.get("uri")))
                    places.append(("body", _decoded_body(part.get("body"))))
                else:
                    body = part.get("body", {})
                    places.append(("body", _decoded_body(body.get("string"))))
                for name, values in (part.get("headers") or {}).items():
                    if name.lower() in SECRET_HEADERS:
                        places.append((f"header {name}", "present"))
                        raise CassetteLeakError(
                            f"refusing to write {self.path}: interaction {index} {side} still "
                            f"has the credential header {name!r}"
                        )
                    for value in values if isinstance(values, list) else [values]:
                        places.append((f"header {name}", str(value)))
                for where, text in places:
                    if text is None:
                        continue
                    leak = _find_leak(text, secrets)
                    if leak:
                        raise CassetteLeakError(
                            f"refusing to write {self.path}: interaction {index} {side} {where} "
                            f"contains {leak}. Nothing was written; pass the value in "
                            "redact_values=[...] or report the shape as a redaction bug."
                        )

    # ---- playback
    def _serve(self, cassette: Any, vcr_request: Any, httpx: Any) -> Any:
        recorded = cassette.play_response(vcr_request)
        index = self._last_index if self._last_index is not None else -1
        mutations = self._mutations_for(index)
        status = recorded["status"]
        headers = _headers_as_lists(recorded.get("headers") or {})
        body = recorded["body"]["string"]
        if body is None:
            body = b""
        if isinstance(body, str):
            body = body.encode("utf-8")
        response = MutableResponse(
            status=int(status["code"]),
            reason=str(status.get("message") or ""),
            headers=headers,
            body=body,
            path=urlsplit(vcr_request.uri).path,
        )
        if mutations:
            _decompress(response)
            with contextlib.suppress(UnicodeDecodeError):
                response.body = response.body_bytes().decode("utf-8")
            try:
                apply_mutations(response, mutations)
            except FaultError as exc:
                error = CassetteError(f"cassette {self.path}, interaction {index}: {exc}")
                self.mismatches.append(str(error))
                raise error from None
        pieces = response.pieces() if mutations else [(0.0, response.body_bytes())]
        stream = _stream_class(httpx)(pieces, response.disconnect)
        reason = response.reason
        return httpx.Response(
            response.status,
            headers=[
                (name, value) for name, values in response.headers.items() for value in values
            ],
            stream=stream,
            extensions={"reason_phrase": reason.encode("ascii", "replace")} if reason else None,
        )

    def _mutations_for(self, index: int) -> list[Mutation]:
        if isinstance(self.mutations, Mapping):
            return list(self.mutations.get(index, ()))
        return list(self.mutations)

    # ---- messages
    def _describe(self, index: int) -> str:
        request, response = self._vcr_cassette.data[index]
        code = response.get("status", {}).get("code") if isinstance(response, dict) else "?"
        return f"#{index} {request.method} {request.uri} -> {code}"

    def _explain_mismatch(self, request: Any) -> str:
        from vcr.matchers import host, method, path, requests_match

        cassette = self._vcr_cassette
        if cassette is None:  # pragma: no cover - only during loading
            return f"cassette {self.path}: no match for {request.method} {request.uri}"
        request = self._before_record_request(request)
        head = (
            f"cassette {self.path} (record_mode={self.record_mode!r}) has no unplayed "
            f"interaction for {request.method} {request.uri}"
        )
        route = [
            i
            for i, (stored, _) in enumerate(cassette.data)
            if requests_match(request, stored, [method, host, path])
        ]
        unplayed = [i for i in route if cassette.play_counts[i] == 0]
        if unplayed and self.match_body:
            index = unplayed[0]
            stored = cassette.data[index][0]
            a, b = _parse_json(stored.body), _parse_json(request.body)
            if a is not _MISSING and b is not _MISSING:
                found = first_json_difference(a, b)
                if found:
                    where, old, new = found
                    return (
                        f"{head}: the body differs from interaction {index} (the next unplayed "
                        f"one for this route) at {where}: recorded {_show(old)}, "
                        f"got {_show(new)}"
                    )
            return f"{head}: the body differs from interaction {index} (bodies are not JSON)"
        if route:
            return (
                f"{head}: all {len(route)} recorded interaction(s) for this route were already "
                f"played ({', '.join(f'#{i}' for i in route)}); the code made more requests "
                "than were recorded. Re-record with record_mode='all' if the behaviour changed."
            )
        recorded = "\n".join(f"  {self._describe(i)}" for i in range(len(cassette.data)))
        return (
            f"{head}: nothing in it has this method + host + path. Recorded:\n"
            + (recorded or "  (no interactions)")
            + "\nNo request reaches the network while replaying."
        )

    def _explain_unplayed(self) -> str:
        unplayed = self.unplayed
        total = self._vcr_cassette._loaded_count
        lines = "\n".join(f"  {self._describe(i)}" for i in unplayed)
        return (
            f"cassette {self.path}: {len(unplayed)} of {total} recorded interaction(s) were "
            f"never played:\n{lines}\nThe code made fewer requests than were recorded. Pass "
            "allow_unplayed=True (pytest: @pytest.mark.op_cassette(..., allow_unplayed=True)) "
            "if that is expected."
        )


def _decompress(response: MutableResponse) -> None:
    encoding = (response.header("content-encoding") or "").lower().strip()
    data = response.body_bytes()
    if encoding in ("gzip", "x-gzip") or data[:2] == b"\x1f\x8b":
        try:
            response.body = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            raise CassetteError(f"a gzip body could not be decompressed: {exc}") from None
    elif encoding == "deflate":
        try:
            response.body = zlib.decompress(data)
        except zlib.error:
            response.body = zlib.decompress(data, -zlib.MAX_WBITS)
    elif encoding:
        return
    response.set_header("content-encoding", None)
    if response.header("content-length") is not None:
        response.set_header("content-length", str(len(response.body_bytes())))


def _check_mutations(mutations: MutationSpec) -> MutationSpec:
    items: list[Any]
    if isinstance(mutations, Mapping):
        for key in mutations:
            if not isinstance(key, int) or key < 0:
                raise CassetteError(f"mutations keys are 0-based interaction indices; got {key!r}")
        items = [m for ms in mutations.values() for m in ms]
    else:
        items = list(mutations)
    for mutation in items:
        if not isinstance(mutation, Mutation):
            raise CassetteError(
                f"{mutation!r} is not a fault mutation; use openprogram_testing.faults "
                "(TruncateAfter, DropTerminal, CorruptFrame, GarbleToolArguments, HttpError, "
                "InjectError, Stall, Rechunk)"
            )
    return mutations if isinstance(mutations, Mapping) else list(items)


def use_cassette(
    path: str | os.PathLike[str],
    *,
    record_mode: str = "none",
    match_body: bool = False,
    allow_unplayed: bool = False,
    mutations: MutationSpec = (),
    redact_values: Sequence[str] = (),
) -> CassetteSession:
    """Replay (or record) the HTTP traffic inside the ``with`` block from the cassette at ``path``
    (``.yaml`` added when there is no suffix).

    ``mutations`` is a list of :mod:`openprogram_testing.faults` mutations applied to every
    played response, or ``{interaction_index: [mutations]}`` to address single interactions.
    ``redact_values`` are extra secret values to keep out of the file.
    """
    return CassetteSession(
        path,
        record_mode=record_mode,
        match_body=match_body,
        allow_unplayed=allow_unplayed,
        mutations=mutations,
        redact_values=redact_values,
    )
