"""The servers config file, in upstream's format (``~/.openprogram/mcp_servers.json``)::

    {
      "servers": {
        "files": {"type": "local", "command": ["python", "files_server.py"], "env": {},
                  "enabled": true, "timeout_seconds": 30, "always_load": false},
        "search": {"type": "remote", "url": "https://example.test/mcp", "headers": {}}
      }
    }

``type`` is ``local`` (a stdio command, the default) or ``remote`` (a streamable-HTTP ``url``,
which upstream reserves and this runtime implements).  ``timeout_seconds`` bounds both the
``initialize`` handshake and each call.  Unlike upstream, which skips a malformed entry with a
line on stderr, any problem is a ``MCPConfigError`` naming the file, the server and the field:
a server silently missing from an agent's tools is worse than a refusal to start.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .connection import DEFAULT_CALL_TIMEOUT_S, MCPConnection

DEFAULT_CONFIG_PATH = Path.home() / ".openprogram" / "mcp_servers.json"

_KEYS = {
    "type",
    "command",
    "url",
    "headers",
    "env",
    "cwd",
    "enabled",
    "timeout_seconds",
    "always_load",
}


class MCPConfigError(ValueError):
    """A servers config file that cannot be used; carries the ``path`` and the ``server``
    (``None`` for a problem with the file as a whole)."""

    def __init__(self, path: Path, server: str | None, problem: str) -> None:
        self.path = path
        self.server = server
        self.problem = problem
        where = f"{path}" if server is None else f"{path}: server {server!r}"
        super().__init__(f"{where}: {problem}")


def load_mcp_servers(path: str | Path | None = None) -> list[MCPConnection]:
    """The enabled servers of a config file, unconnected (they connect on first use).  With no
    ``path``, ``DEFAULT_CONFIG_PATH``, and no file there means no servers."""
    file = Path(path) if path is not None else DEFAULT_CONFIG_PATH
    if path is None and not file.is_file():
        return []
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        raise MCPConfigError(file, None, f"cannot be read: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise MCPConfigError(file, None, f"is not JSON: {exc}") from None
    servers = data.get("servers") if isinstance(data, dict) else None
    if not isinstance(servers, dict):
        raise MCPConfigError(file, None, 'needs a "servers" object mapping names to servers')
    out: list[MCPConnection] = []
    for name, entry in servers.items():
        connection = parse_entry(file, name, entry)
        if connection is not None:
            out.append(connection)
    return out


def parse_entry(file: Path, name: str, entry: Any) -> MCPConnection | None:
    """One server entry as an ``MCPConnection`` (``None`` when ``enabled`` is false)."""

    def fail(problem: str) -> MCPConfigError:
        return MCPConfigError(file, name, problem)

    if not isinstance(entry, dict):
        raise fail("an entry must be an object")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise fail(f"unknown key(s) {unknown}; known: {sorted(_KEYS)}")
    enabled = entry.get("enabled", True)
    if not isinstance(enabled, bool):
        raise fail('"enabled" must be true or false')
    if not enabled:
        return None
    kind = entry.get("type", "local")
    timeout = entry.get("timeout_seconds", DEFAULT_CALL_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise fail('"timeout_seconds" must be a number > 0')
    always_load = entry.get("always_load", False)
    if not isinstance(always_load, bool):
        raise fail('"always_load" must be true or false')
    if kind == "local":
        command = entry.get("command")
        if (
            not isinstance(command, list)
            or not command
            or not all(isinstance(c, str) for c in command)
        ):
            raise fail('a local server needs "command": a non-empty list of strings')
        env = _strings(entry.get("env", {}), '"env"', fail)
        cwd = entry.get("cwd")
        if cwd is not None and not isinstance(cwd, str):
            raise fail('"cwd" must be a string')
        server: Any = command
        headers = None
    elif kind == "remote":
        url = entry.get("url")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise fail('a remote server needs "url": an http:// or https:// URL')
        headers = _strings(entry.get("headers", {}), '"headers"', fail)
        server, env, cwd = url, None, None
    else:
        raise fail(f'"type" must be "local" or "remote", got {kind!r}')
    try:
        return MCPConnection(
            name,
            server,
            env=env or None,
            cwd=cwd,
            headers=headers or None,
            connect_timeout_s=timeout,
            call_timeout_s=timeout,
            always_load=always_load,
        )
    except (TypeError, ValueError) as exc:
        raise fail(str(exc)) from None


def _strings(value: Any, what: str, fail: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise fail(f"{what} must be an object of strings")
    return dict(value)


__all__ = ["DEFAULT_CONFIG_PATH", "MCPConfigError", "load_mcp_servers", "parse_entry"]
