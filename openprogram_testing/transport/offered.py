"""Which tools a model call offers the scripted model: the request's tool array, plus the
tools a ``tool_search`` result earlier in the conversation loaded (``openprogram.tool_search``:
the model holds their schemas from the result and may call them at once, though the array
lists them only from the next run on).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from openprogram.types import Message, ToolResultMessage, ToolSpec

from .script_errors import ToolNotOffered

TOOL_SEARCH = "tool_search"
"""The runtime's loader of deferred tools."""


def menu_violation(
    calls: Sequence[tuple[str, bool]],
    tools: Sequence[ToolSpec],
    request_index: int,
    turn_index: int,
    messages: Sequence[Message] = (),
) -> ToolNotOffered | None:
    """The first of a scripted turn's ``calls`` (``(tool name, marked unknown)``) that the
    offered tools contradict, if any: a call must name an offered tool unless marked unknown,
    and a call marked unknown must not.  A request that offers ``tool_search`` also offers
    what its results in ``messages`` loaded (read only when a call names a tool outside the
    array: the common turn costs nothing more)."""
    if not calls:
        return None
    offered = tuple(t.name for t in tools)
    if TOOL_SEARCH in offered and any(name not in offered for name, _ in calls):
        loaded = loaded_by_tool_search(messages)
        offered += tuple(n for n in sorted(loaded) if n not in offered)
    for index, (name, unknown) in enumerate(calls):
        if (name in offered) == unknown:
            return ToolNotOffered(request_index, turn_index, index, name, offered, unknown)
    return None


def loaded_by_tool_search(messages: Sequence[Message]) -> set[str]:
    """The tools ``tool_search`` results in ``messages`` loaded: each result's
    ``details["loaded"]``, or, for a result read back from the wire (which carries no details),
    the names of the ``<function>{...}</function>`` schema lines of its text."""
    out: set[str] = set()
    for message in messages:
        if type(message) is not ToolResultMessage or message.tool_name != TOOL_SEARCH:
            continue
        details = message.details
        if isinstance(details, dict) and isinstance(details.get("loaded"), list):
            out.update(n for n in details["loaded"] if isinstance(n, str))
            continue
        text = "".join(getattr(b, "text", "") for b in message.content)
        for piece in text.split("<function>")[1:]:
            body = piece.split("</function>", 1)[0]
            try:
                name = json.loads(body).get("name")
            except (ValueError, AttributeError, RecursionError):
                continue
            if isinstance(name, str):
                out.add(name)
    return out


__all__ = ["TOOL_SEARCH", "loaded_by_tool_search", "menu_violation"]
