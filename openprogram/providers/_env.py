"""``provider_from_env``: build a real adapter from environment variables (SDKs imported lazily)."""

from __future__ import annotations

import os
from typing import Any

_APIS = {
    "openai": ("openai", "openai_chat", "OpenAIChatProvider"),
    "openai-chat": ("openai", "openai_chat", "OpenAIChatProvider"),
    "openai-responses": ("openai", "openai_responses", "OpenAIResponsesProvider"),
    "anthropic": ("anthropic", "anthropic", "AnthropicProvider"),
}
_ENV = {"openai": "OPENAI", "anthropic": "ANTHROPIC"}


def provider_from_env(api: str, **kwargs: Any) -> Any:
    """A real provider for ``api`` ∈ ``"openai"`` (Chat Completions), ``"openai-responses"``,
    ``"anthropic"`` (``"openai-chat"`` and ``_`` spellings are accepted too).

    The key comes from ``api_key=`` or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``; the base URL
    from ``base_url=`` or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` when set.  Other keyword
    arguments go to the provider's constructor (``stream=``, ``max_retries=``, ``timeout=``...).
    A missing key is a ``ValueError`` naming the variable.
    """
    key = api.strip().lower().replace("_", "-")
    if key not in _APIS:
        raise ValueError(
            f"unknown provider API {api!r}: expected 'openai', 'openai-responses' or 'anthropic'"
        )
    vendor, module_name, class_name = _APIS[key]
    prefix = _ENV[vendor]
    if kwargs.get("client") is None and not kwargs.get("api_key"):
        value = os.environ.get(f"{prefix}_API_KEY")
        if not value:
            raise ValueError(
                f"{prefix}_API_KEY is not set: export it (or pass api_key=...) to use the "
                f"{api!r} provider"
            )
        kwargs["api_key"] = value
    if kwargs.get("base_url") is None and os.environ.get(f"{prefix}_BASE_URL"):
        kwargs["base_url"] = os.environ[f"{prefix}_BASE_URL"]
    import importlib

    module = importlib.import_module(f"openprogram.providers.{module_name}")
    return getattr(module, class_name)(**kwargs)
