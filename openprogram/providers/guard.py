"""The real-call guard: stop tests from reaching a paid model API by accident.

Like pydantic-ai's ``ALLOW_MODEL_REQUESTS``: a process-wide switch (default: allowed, so normal
programs are unaffected) that a test suite turns off.  Every real adapter calls
:func:`check` with its base URL right before each HTTP request.  When requests are disallowed the
call raises :class:`ModelRequestsBlocked` unless

- the host is loopback (``localhost``, ``127.0.0.0/8``, ``::1``): the provider emulator and other
  local servers always pass, or
- the code runs inside :func:`replaying` (cassette playback: the request never leaves the
  process).

``ModelRequestsBlocked`` derives from ``BaseException`` (like pytest's ``Failed``) on purpose: the
adapters and the loop turn every ``Exception`` into an error message, and a blocked real call must
fail the test loudly instead of becoming a quiet ``stop_reason="error"``.

State: :func:`set_allow_model_requests` sets the process-wide default (seen by every thread);
:func:`allow_model_requests` and :func:`replaying` override it in the current context only
(``contextvars``), so concurrent asyncio tasks and threads started with a copied context do not
leak into each other.  The initial default can be set with the environment variable
``OPENPROGRAM_ALLOW_MODEL_REQUESTS=0``.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from urllib.parse import urlsplit

__all__ = [
    "ModelRequestsBlocked",
    "allow_model_requests",
    "check",
    "get_allow_model_requests",
    "is_loopback",
    "model_requests_allowed",
    "replaying",
    "set_allow_model_requests",
]


class ModelRequestsBlocked(BaseException):
    """A real model request was attempted while model requests are disallowed."""


def _env_default() -> bool:
    value = os.environ.get("OPENPROGRAM_ALLOW_MODEL_REQUESTS")
    if value is None:
        return True
    return value.strip().lower() not in ("0", "false", "no", "off")


_allowed_global: bool = _env_default()
_allowed_ctx: ContextVar[bool | None] = ContextVar("openprogram_allow_model_requests", default=None)
_replaying_ctx: ContextVar[int] = ContextVar("openprogram_replaying", default=0)


def set_allow_model_requests(flag: bool) -> None:
    """Set the process-wide default (all threads, all tasks without a context override)."""
    global _allowed_global
    _allowed_global = bool(flag)


def get_allow_model_requests() -> bool:
    """The process-wide default (what :func:`set_allow_model_requests` last set), ignoring any
    context override — e.g. to restore it after a test."""
    return _allowed_global


def model_requests_allowed() -> bool:
    """Whether a real (non-loopback, non-replayed) request may be made in this context."""
    local = _allowed_ctx.get()
    return _allowed_global if local is None else local


@contextmanager
def allow_model_requests(flag: bool) -> Iterator[None]:
    """Allow or forbid real requests inside the block, for the current context only."""
    token = _allowed_ctx.set(bool(flag))
    try:
        yield
    finally:
        _allowed_ctx.reset(token)


@contextmanager
def replaying() -> Iterator[None]:
    """Mark the block as cassette playback: requests are answered from a recording, so the
    guard lets them through.  Nests."""
    token = _replaying_ctx.set(_replaying_ctx.get() + 1)
    try:
        yield
    finally:
        _replaying_ctx.reset(token)


def is_loopback(base_url: str) -> bool:
    """Whether ``base_url`` points at this machine (``localhost``, ``127.x.x.x``, ``::1``)."""
    try:
        host = urlsplit(base_url if "//" in base_url else f"//{base_url}").hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def check(base_url: str) -> None:
    """Raise :class:`ModelRequestsBlocked` if a request to ``base_url`` is not allowed here."""
    if model_requests_allowed() or _replaying_ctx.get() > 0 or is_loopback(str(base_url)):
        return
    raise ModelRequestsBlocked(
        f"Real model request to {base_url} blocked: model requests are disallowed "
        "(openprogram.providers.guard). Either replay a recording — record one once with a real "
        "key (`openprogram-testing record ...` or "
        "`openprogram_testing.cassettes.use_cassette(path, record_mode='once')` inside "
        "`guard.allow_model_requests(True)`), then replay it with `use_cassette(path)` — or point "
        "the provider at the loopback emulator "
        "(`openprogram_testing.emulator.ProviderEmulator`, base_url=emulator.openai_base_url / "
        "emulator.anthropic_base_url, or emulator.base_url for Gemini and Bedrock). To allow "
        "real calls: "
        "`guard.set_allow_model_requests(True)`."
    )
