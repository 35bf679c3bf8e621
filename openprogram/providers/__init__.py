"""Providers: the contract, the wire mapping, and the real adapters (imported lazily: importing
this package never imports an SDK)."""

from . import guard
from ._env import provider_from_env
from .base import Context, MessageBuilder, Provider, StreamOptions, ToolChoice

_ADAPTERS = {
    "AnthropicProvider": "anthropic",
    "BedrockProvider": "bedrock",
    "GeminiProvider": "gemini",
    "OpenAIChatProvider": "openai_chat",
    "OpenAIResponsesProvider": "openai_responses",
}


def __getattr__(name: str) -> object:
    """``from openprogram.providers import OpenAIChatProvider`` imports the adapter module on
    first use only (and the adapters import their SDK only when a client is built)."""
    if name in _ADAPTERS:
        import importlib

        module = importlib.import_module(f"{__name__}.{_ADAPTERS[name]}")
        return getattr(module, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
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
    "guard",
    "provider_from_env",
]
