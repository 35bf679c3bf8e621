"""Providers: the contract, the wire mapping, and the real adapters (imported lazily: importing
this package never imports an SDK)."""

from .base import Context, MessageBuilder, Provider, StreamOptions, ToolChoice

__all__ = ["Context", "MessageBuilder", "Provider", "StreamOptions", "ToolChoice"]
