"""What every model call of a run is sent besides the conversation: ``ModelInput``.

The loop builds the system prompt, the tool menu and ``tool_choice`` once per run and sends
the same three with every model call of it.  A trace records them (``LoopTrace.model_input``)
so the snapshot shows them: a refactor that changes the prompt, drops a tool from the menu or
turns ``tool_choice`` from ``required`` into ``none`` changes what the model is asked, and must
show up in review even when a scripted model happens to answer the same.  The schemas are kept
as a digest (one line per run, not the whole JSON of every tool), so any change to a name, a
description or a parameter changes the line.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class ModelInput:
    """The system prompt, the offered tool names (menu order), ``tool_choice`` and a digest of
    the tool schemas (``schema_digest``: the first 16 hex digits of the SHA-256 of the schemas
    as canonical JSON, in menu order)."""

    system_prompt: str | None
    tool_names: tuple[str, ...]
    tool_choice: str | dict[str, Any] | None
    schema_digest: str

    @classmethod
    def of(
        cls,
        system_prompt: str | None,
        tool_choice: str | dict[str, Any] | None,
        specs: Iterable[Mapping[str, Any]],
    ) -> ModelInput:
        """The model input of a run that sends ``system_prompt``, ``tool_choice`` and the tools
        described by ``specs`` (``ToolSpec`` or plain dicts with ``name``/``description``/
        ``parameters``)."""
        specs = list(specs)
        return cls(
            system_prompt,
            tuple(str(s.get("name")) for s in specs),
            tool_choice,
            schema_digest([dict(s) for s in specs]),
        )


def schema_digest(specs: list[dict[str, Any]]) -> str:
    """A short, stable digest of tool schemas: canonical JSON (sorted keys, values that are not
    JSON written with ``repr``), SHA-256, first 16 hex digits.  A schema too deep for
    ``json.dumps`` is walked without recursion instead (same digest for the same schema)."""
    digest = hashlib.sha256()
    try:
        text = json.dumps(specs, sort_keys=True, ensure_ascii=False, default=repr)
    except (RecursionError, ValueError):
        for token in _tokens(specs):
            digest.update(token.encode("utf-8", "surrogatepass"))
    else:
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def _tokens(value: Any) -> Iterator[str]:
    """The canonical text of ``value`` in pieces, walked with a stack (no recursion limit); a
    container met again inside itself is written ``<cycle>``."""
    stack: list[Any] = [value]
    open_ids: set[int] = set()
    while stack:
        item = stack.pop()
        if isinstance(item, _Close):
            open_ids.discard(item.ident)
            yield item.text
        elif isinstance(item, Mapping | list | tuple):
            if id(item) in open_ids:
                yield '"<cycle>"'
                continue
            open_ids.add(id(item))
            is_map = isinstance(item, Mapping)
            stack.append(_Close(id(item), "}" if is_map else "]"))
            entries: list[Any] = []
            if is_map:
                for key in sorted(item, key=str):
                    entries.append(_Close(-1, json.dumps(str(key), ensure_ascii=False) + ":"))
                    entries.append(item[key])
            else:
                entries = list(item)
            stack.extend(reversed(entries))
            yield "{" if is_map else "["
        else:
            try:
                yield json.dumps(item, ensure_ascii=False, default=repr) + ","
            except (RecursionError, ValueError):
                yield repr(type(item)) + ","


@dataclass(frozen=True, slots=True)
class _Close:
    ident: int
    text: str


__all__ = ["ModelInput", "schema_digest"]
