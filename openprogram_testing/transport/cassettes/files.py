"""Cassette files: reading every shape we accept into one interaction model, writing readable YAML.

Accepted shapes (anything else is a :class:`CassetteError` naming what was expected):

- **vcrpy YAML** (``version: 1``, ``interactions: [{request, response}]``), as vcrpy,
  pytest-recording and this project write it: bodies as plain strings, block text or
  ``!!binary`` (gzip kept as recorded), scalar or list headers (``!!binary`` header values
  decoded), a bare status code or ``{code, message}``.
- **pydantic-ai's vcrpy dialect**: ``parsed_body`` (the JSON document) instead of ``body``, on
  the request and/or the response; re-serialized with ``json.dumps``.
- **HAR 1.2** (``log.entries``, JSON): ``request.url``/``postData.text``, ``response.content.text``
  (``encoding: base64`` honoured).  HAR stores decoded content, so a ``Content-Encoding`` header
  that no longer describes the body is dropped.

Every loaded response has a ``Content-Length`` that matches the body served (pretty-printing
recorders and re-serialized dialects break it, and urllib3 enforces it).

A cassette is read with the scenario loader's limits (``base.safeyaml``): at most
``MAX_FILE_BYTES``, ``MAX_DEPTH`` levels of nesting and ``MAX_ALIAS_NODES`` nodes added by YAML
aliases, so a small hostile file (an alias bomb under ``parsed_body``) is an error, not a
gigabyte of memory.  Only the safe tags vcrpy itself writes are constructed.
"""

from __future__ import annotations

import base64
import binascii
import copy
import functools
import gzip
import json
import os
import stat
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from openprogram_testing.base.safeyaml import MAX_FILE_BYTES, YamlProblem, read

from .errors import CassetteError

__all__ = [
    "EXPECTED_SHAPES",
    "Serializer",
    "decoded_body",
    "headers_as_lists",
    "load_interactions",
    "parse_cassette",
    "recorded_body_text",
]

EXPECTED_SHAPES = (
    "a vcrpy cassette (a mapping with 'interactions': [{request, response}, ...]; pydantic-ai's "
    "'parsed_body' dialect included) or a HAR 1.2 file (JSON with 'log': {'entries': [...]})"
)

# Marks a JSON body stored pretty-printed; the value says how to restore the original bytes.
_JSON_MARK = "openprogram_json"


def headers_as_lists(headers: Mapping[str, Any]) -> dict[str, list[str]]:
    """Headers as ``{name: [values]}`` with text values (scalar headers and ``!!binary`` header
    values, which botocore recordings have, become lists of ``str``)."""
    out: dict[str, list[str]] = {}
    for name, values in headers.items():
        items = values if isinstance(values, list | tuple) else [values]
        out[str(name)] = [
            bytes(v).decode("utf-8", "replace") if isinstance(v, bytes | bytearray) else str(v)
            for v in items
            if v is not None
        ]
    return out


def decoded_body(body: Any) -> str | None:
    """A body as text for scanning: bytes decoded (gunzipped first when compressed)."""
    if body is None:
        return None
    if isinstance(body, str):
        return body
    if isinstance(body, bytes | bytearray):
        raw = bytes(body)
        if raw[:2] == b"\x1f\x8b":
            try:
                raw = gzip.decompress(raw)
            except (OSError, EOFError, zlib.error):
                pass
        return raw.decode("utf-8", errors="replace")
    return str(body)


def recorded_body_text(body: Any) -> str | None:
    """A recorded request or response body as text: vcrpy's ``{"string": ...}`` form or the
    value itself, through ``decoded_body`` (the one reading for ``show``, ``scaffold`` and
    ``diff``)."""
    if isinstance(body, dict):
        body = body.get("string")
    return decoded_body(body)


# --------------------------------------------------------------------------------------------
# reading


_last_parsed: tuple[str, str, dict[str, Any]] | None = None
"""The last cassette parsed: its path, its text and (a copy of) what it gave."""


def parse_cassette(text: str, path: Path) -> dict[str, Any]:
    """``{"version": 1, "interactions": [...]}`` from the text of a file of any accepted shape,
    each interaction normalized (see the module docstring).

    A replay reads its file twice in a row (the scenario runner's look at the first request,
    then the session through vcrpy's persister): the same text at the same path again is a
    copy of the last result (~1 % of a YAML parse), never a second parse.  Callers own what
    they get: every result is a fresh copy."""
    global _last_parsed
    last = _last_parsed
    if last is not None and last[0] == str(path) and last[1] == text:
        return copy.deepcopy(last[2])
    data = _parse_cassette(text, path)
    _last_parsed = (str(path), text, copy.deepcopy(data))
    return data


def _parse_cassette(text: str, path: Path) -> dict[str, Any]:

    data: Any = None
    try:
        parsed = False
        if text.lstrip()[:1] in ("{", "["):
            try:
                data, parsed = json.loads(text), True
            except ValueError:
                pass
        if not parsed:
            _, data = read(text, loaders=_loaders(), lone_surrogates="replace")
    except YamlProblem as exc:
        raise CassetteError(
            f"cassette {path} is not valid YAML (or JSON): {exc.line}:{exc.column}: {exc.message}"
        ) from None
    except RecursionError:
        raise CassetteError(
            f"cassette {path} is nested too deeply (expected {EXPECTED_SHAPES})"
        ) from None
    if isinstance(data, dict) and isinstance(data.get("log"), dict) and "entries" in data["log"]:
        data = _from_har(data["log"], path)
    if not isinstance(data, dict) or not isinstance(data.get("interactions"), list):
        raise CassetteError(
            f"cassette {path} is not a known cassette shape: expected {EXPECTED_SHAPES}"
        )
    for index, interaction in enumerate(data["interactions"]):
        _normalize(interaction, index, path)
    return {"version": 1, "interactions": data["interactions"]}


@functools.cache
def _loaders() -> tuple[Any, Any]:
    """``(libyaml, pure-Python)`` safe loaders that also construct the plain ``!!python/``
    tags vcrpy writes for strings and tuples (nothing that could build an object)."""
    import yaml

    def python_str(loader: Any, node: Any) -> Any:
        return loader.construct_scalar(node)

    def python_tuple(loader: Any, node: Any) -> Any:
        return tuple(loader.construct_sequence(node))

    def make(base: Any) -> Any:
        cls: Any = type(f"Cassette{base.__name__}", (base,), {})
        cls.add_constructor("tag:yaml.org,2002:python/str", python_str)
        cls.add_constructor("tag:yaml.org,2002:python/unicode", python_str)
        cls.add_constructor("tag:yaml.org,2002:python/tuple", python_tuple)
        return cls

    fast = getattr(yaml, "CSafeLoader", None)
    return (make(fast) if fast is not None else None), make(yaml.SafeLoader)


def _normalize(interaction: Any, index: int, path: Path) -> None:
    where = f"cassette {path}: interaction {index}"
    if not (
        isinstance(interaction, dict)
        and isinstance(interaction.get("request"), dict)
        and isinstance(interaction.get("response"), dict)
        and "status" in interaction["response"]
    ):
        raise CassetteError(f"{where} lacks request/response (expected {EXPECTED_SHAPES})")
    request = interaction["request"]
    missing = {"method", "uri"} - set(request)
    if missing:
        raise CassetteError(f"{where} request lacks {sorted(missing)}")
    if not isinstance(request["method"], str) or not isinstance(request["uri"], str):
        raise CassetteError(f"{where} request method and uri must be strings")
    if "parsed_body" in request:  # pydantic-ai's dialect
        request["body"] = _dumps(request.pop("parsed_body"), where)
    request.setdefault("body", None)
    if not isinstance(request["body"], str | bytes | type(None)):
        raise CassetteError(f"{where} request body must be text or bytes")
    request["headers"] = _headers(request.get("headers"), where)
    response = interaction["response"]
    response["headers"] = _headers(response.get("headers"), where)
    if "parsed_body" in response and "body" not in response:
        response["body"] = {"string": _dumps(response.pop("parsed_body"), where)}
    body = response.get("body")
    if not isinstance(body, dict):
        response["body"] = body = {"string": body if body is not None else ""}
    how = body.pop(_JSON_MARK, None)
    if body.get("string") is None:
        body["string"] = ""
    if not isinstance(body["string"], str | bytes):
        raise CassetteError(f"{where} response body must be text or bytes")
    if how and isinstance(body["string"], str):
        body["string"] = _restore_json(body["string"], str(how))
    status = response["status"]
    if isinstance(status, int) and not isinstance(status, bool):
        response["status"] = {"code": status, "message": ""}
    elif isinstance(status, dict) and isinstance(status.get("code"), int):
        status["message"] = str(status.get("message") or "")
    else:
        raise CassetteError(f"{where} response status must be a code or {{code, message}}")
    _fix_content_length(response)


def _headers(headers: Any, where: str) -> dict[str, list[str]]:
    if headers is None:
        return {}
    if not isinstance(headers, Mapping):
        raise CassetteError(f"{where} headers must be a mapping of name to value(s)")
    return headers_as_lists(headers)


def _dumps(document: Any, where: str) -> str:
    try:
        return json.dumps(document)
    except (TypeError, ValueError, RecursionError) as exc:
        raise CassetteError(f"{where} parsed_body is not a JSON document: {exc}") from None


def _fix_content_length(response: dict[str, Any]) -> None:
    body = response["body"]["string"]
    size = len(body.encode("utf-8") if isinstance(body, str) else body)
    for name in response["headers"]:
        if name.lower() == "content-length":
            response["headers"][name] = [str(size)]


def _from_har(log: dict[str, Any], path: Path) -> dict[str, Any]:
    entries = log.get("entries")
    if not isinstance(entries, list):
        raise CassetteError(f"HAR file {path}: log.entries must be a list")
    return {"interactions": [_har_entry(entry, i, path) for i, entry in enumerate(entries)]}


def _har_headers(items: Any, where: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    if items is None:
        return out
    if not isinstance(items, list):
        raise CassetteError(f"{where} headers must be a list of {{name, value}}")
    for item in items:
        if not (isinstance(item, dict) and isinstance(item.get("name"), str)):
            raise CassetteError(f"{where} has a header that is not {{name, value}}")
        if item["name"].startswith(":"):  # HTTP/2 pseudo-headers are not headers
            continue
        out.setdefault(item["name"], []).append(str(item.get("value", "")))
    return out


def _har_entry(entry: Any, index: int, path: Path) -> dict[str, Any]:
    where = f"HAR file {path}: entry {index}"
    if not isinstance(entry, dict):
        raise CassetteError(f"{where} is not an object")
    request, response = entry.get("request"), entry.get("response")
    if not isinstance(request, dict) or not isinstance(response, dict):
        raise CassetteError(f"{where} lacks request/response")
    if not isinstance(request.get("method"), str) or not isinstance(request.get("url"), str):
        raise CassetteError(f"{where} request lacks method/url")
    if not isinstance(response.get("status"), int):
        raise CassetteError(f"{where} response lacks a numeric status")
    post = request.get("postData") or {}
    body: str | None = post.get("text") if isinstance(post, dict) else None
    if body is None and isinstance(post, dict) and isinstance(post.get("params"), list):
        from urllib.parse import urlencode

        body = urlencode([(p.get("name", ""), p.get("value", "")) for p in post["params"]])
    content = response.get("content") or {}
    if not isinstance(content, dict):
        raise CassetteError(f"{where} response content must be an object")
    text = content.get("text") or ""
    served: str | bytes = str(text)
    if content.get("encoding") == "base64":
        try:
            served = base64.b64decode(str(text), validate=True)
        except (binascii.Error, ValueError):
            raise CassetteError(f"{where} response content is not valid base64") from None
    headers = _har_headers(response.get("headers"), where + " response")
    raw = served if isinstance(served, bytes) else b""
    if raw[:2] != b"\x1f\x8b":  # HAR keeps decoded content: the encoding no longer applies
        headers = {n: v for n, v in headers.items() if n.lower() != "content-encoding"}
    return {
        "request": {
            "method": request["method"],
            "uri": request["url"],
            "body": body,
            "headers": _har_headers(request.get("headers"), where + " request"),
        },
        "response": {
            "status": {"code": response["status"], "message": str(response.get("statusText", ""))},
            "headers": headers,
            "body": {"string": served},
        },
    }


def load_interactions(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The interactions of a cassette file of any accepted shape, as plain dicts in vcrpy's
    model (``request: {method, uri, body, headers}``, ``response: {status: {code, message},
    headers, body: {string}}``; bodies as stored: ``str`` or ``bytes``).

    The one cassette loader: the session, the emulator and the tools all read files through it.
    """

    path = Path(path)
    try:
        data = _read_regular(path, MAX_FILE_BYTES + 1)
    except FileNotFoundError:
        raise CassetteError(f"cassette {path} not found") from None
    except IsADirectoryError:
        raise CassetteError(f"cassette {path} is a directory, not a file") from None
    except OSError as exc:
        raise CassetteError(f"cassette {path} cannot be read: {exc.strerror or exc}") from None
    if len(data) > MAX_FILE_BYTES:
        raise CassetteError(f"cassette {path} is larger than {MAX_FILE_BYTES:,} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise CassetteError(f"cassette {path} is not UTF-8 text") from None
    return list(parse_cassette(text, path)["interactions"])


def _read_regular(path: Path, limit: int) -> bytes:
    """Up to ``limit`` bytes of the regular file at ``path``.  Opened without blocking and
    checked before reading: a FIFO or a device named as a cassette is refused (``OSError``),
    where a plain ``open`` would wait forever for a writer."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    with os.fdopen(fd, "rb") as handle:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(path)
        if not stat.S_ISREG(mode):
            raise OSError(f"{path} is not a regular file (a pipe or a device)")
        return handle.read(limit)


# --------------------------------------------------------------------------------------------
# writing


@functools.cache
def _dumper() -> type[Any]:
    """A YAML dumper writing multi-line strings (SSE streams, pretty JSON) as ``|`` block
    text (built on first use: PyYAML is imported only when a cassette is written)."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def represent_str(dumper: yaml.SafeDumper, data: str) -> yaml.ScalarNode:
        style = "|" if "\n" in data else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    Dumper.add_representer(str, represent_str)
    return Dumper


def _pretty_json(text: str) -> tuple[str, str] | None:
    """``(pretty, how_to_restore)`` for a JSON body, or ``None`` to store it as it is."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
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


class Serializer:
    """vcrpy serializer: readable YAML out (after ``scan`` approved it), any accepted shape in.

    Compact JSON bodies are stored pretty-printed with a marker saying how to restore the exact
    bytes; streamed bodies are block text."""

    def __init__(self, path: Path, scan: Callable[[dict[str, Any]], None]) -> None:
        self._path = path
        self._scan = scan

    def serialize(self, data: dict[str, Any]) -> str:
        data = copy.deepcopy(data)
        self._scan(data)
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
        import yaml

        text = yaml.dump(data, Dumper=_dumper(), sort_keys=False, allow_unicode=True, width=4096)
        if yaml.load(text, Loader=yaml.SafeLoader) != data:  # pragma: no cover - defensive
            text = yaml.dump(data, Dumper=yaml.SafeDumper, sort_keys=False, allow_unicode=True)
        return text

    def deserialize(self, text: str) -> dict[str, Any]:
        return parse_cassette(text, self._path)
