"""Providers: the contract, the wire mapping, and the real adapters (imported lazily: importing
this package never imports an SDK)."""

from . import guard
from ._env import provider_from_env
from ._http import MAX_EVENT_BYTES, UnmeteredStreamWarning, metered_transport
from .apis import adapter_api
from .base import Context, MessageBuilder, Provider, StreamOptions, ToolChoice


def __getattr__(name: str) -> object:
    """``from openprogram.providers import OpenAIChatProvider`` imports the adapter module on
    first use only (and the adapters import their SDK only when a client is built)."""
    api = adapter_api(name)
    if api is not None:
        import importlib

        module = importlib.import_module(api.module_path)
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "MAX_EVENT_BYTES",
    "AnthropicProvider",
    "BedrockProvider",
    "Context",
    "GeminiProvider",
    "MessageBuilder",
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "Provider",
    "StreamOptions",
    "ToolChoice",
    "UnmeteredStreamWarning",
    "guard",
    "metered_transport",
    "provider_from_env",
]
