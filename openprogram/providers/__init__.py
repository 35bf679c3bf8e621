"""Providers: the contract, the wire mapping, and the real adapters (imported lazily: importing
this package never imports an SDK)."""

from . import guard
from ._env import provider_from_env
from .base import Context, MessageBuilder, Provider, StreamOptions, ToolChoice

__all__ = [
    "Context",
    "MessageBuilder",
    "Provider",
    "StreamOptions",
    "ToolChoice",
    "guard",
    "provider_from_env",
]
