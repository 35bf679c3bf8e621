"""``provider_from_env``: build a real adapter from environment variables (SDKs imported lazily)."""

from __future__ import annotations

import os
from typing import Any

from .apis import api_named


def _vertex_requested(kwargs: dict[str, Any]) -> bool:
    if kwargs.get("vertexai") is not None:
        return bool(kwargs["vertexai"])
    flag = os.environ.get("GOOGLE_GENAI_USE_VERTEXAI", "")
    return flag.strip().lower() in ("1", "true", "yes", "on")


def provider_from_env(api: str, **kwargs: Any) -> Any:
    """A real provider for ``api`` ∈ ``"openai"`` (Chat Completions), ``"openai-responses"``,
    ``"anthropic"``, ``"gemini"``, ``"bedrock"`` (``"openai-chat"`` and ``_`` spellings are
    accepted too).

    Keys: ``api_key=`` or ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``GEMINI_API_KEY`` (or
    ``GOOGLE_API_KEY``); Gemini on Vertex AI (``vertexai=True`` or
    ``GOOGLE_GENAI_USE_VERTEXAI=true``, with ``GOOGLE_CLOUD_PROJECT``/``GOOGLE_CLOUD_LOCATION``)
    and Bedrock take credentials from Google's and AWS's own chains, so no key is required.  The
    base URL comes from ``base_url=`` or ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` /
    ``GEMINI_BASE_URL`` / ``BEDROCK_BASE_URL`` when set.  Other keyword arguments go to the
    provider's constructor (``stream=``, ``max_retries=``, ``region_name=``...).  A missing key
    is a ``ValueError`` naming the variable.
    """
    entry = api_named(api)
    if entry is None:
        raise ValueError(
            f"unknown provider API {api!r}: expected 'openai', 'openai-responses', 'anthropic', "
            "'gemini' or 'bedrock'"
        )
    key_vars, url_var = entry.key_vars, entry.base_url_var
    needs_key = bool(key_vars) and not (entry.name == "gemini" and _vertex_requested(kwargs))
    if needs_key and kwargs.get("client") is None and not kwargs.get("api_key"):
        value = next((os.environ[v] for v in key_vars if os.environ.get(v)), None)
        if not value:
            raise ValueError(
                f"{key_vars[0]} is not set: export it (or pass api_key=...) to use the "
                f"{api!r} provider"
            )
        kwargs["api_key"] = value
    if kwargs.get("base_url") is None and os.environ.get(url_var):
        kwargs["base_url"] = os.environ[url_var]
    import importlib

    module = importlib.import_module(entry.module_path)
    return getattr(module, entry.adapter)(**kwargs)
