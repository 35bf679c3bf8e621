"""``SchemaDrivenProvider``: a fake model that calls the offered tools with arguments generated
from their JSON Schemas, then answers with a text summarising what they returned.

It needs no script: point it at an agent and it exercises every tool the agent offers, with
arguments the tool's schema accepts (the counterpart of pydantic-ai's ``TestModel``).

    provider = SchemaDrivenProvider(seed=7)                  # every offered tool, one per round
    provider = SchemaDrivenProvider(tools=["refund", "get_order"], per_round=2)

- **What it calls**: the offered tools in the order offered, or the names in ``tools`` (a subset,
  in that order; names not offered are skipped); each once per conversation, ``per_round`` calls
  per model response (several = a parallel pick).  When every planned tool has been called it
  replies with the summary: a JSON object mapping each called tool to its result text (an
  ``{"error": text}`` object for an error result).
- **Arguments**: generated from the tool's schema by a generator seeded with ``seed``, the tool's
  name and how often it was called, so the same seed gives the same arguments in every run.
  Arguments are checked against the whole schema before they are sent.
- **``tool_choice``**: ``"none"`` replies with the summary at once; ``{"type": "function",
  "name": X}`` calls ``X`` (once per conversation, then the summary); ``"required"`` and
  ``"auto"`` call the planned tools, then reply (see ``docs/decisions.md``, "the schema-driven
  provider").
- **Schemas it cannot fully honour** (a recursive ``$ref``, an unsupported keyword): a warning
  names the tool and the keyword; arguments are generated without that part and kept only if
  the schema accepts them; a tool for which no arguments can be made is not called, and
  ``skipped_tools`` says why.
- **Records its requests** like ``ScriptedProvider`` (it is one, whose every turn is computed from
  the request): ``requests``, ``played``, ``assert_complete()``.
"""

from __future__ import annotations

import json
import random
import warnings
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from typing import Any

from openprogram.events import AssistantMessageEvent
from openprogram.providers.base import Context, StreamOptions
from openprogram.types import AssistantMessage, ToolResultMessage, ToolSpec

from .schema_values import ArgumentGenerator, Infeasible, RandomSource
from .scripted import ModelRequest, ScriptedCall, ScriptedProvider, ScriptedTurn

MAX_ATTEMPTS = 50
"""Tries per call to draw arguments the whole schema accepts before the tool is skipped."""


class SchemaDrivenProvider(ScriptedProvider):
    """Calls the offered tools with schema-valid arguments, then summarises their results."""

    def __init__(
        self,
        *,
        seed: int | str = 0,
        tools: Sequence[str] | None = None,
        per_round: int = 1,
        chunk_size: int | None = None,
        name: str = "schema-driven",
    ) -> None:
        if per_round < 1:
            raise ValueError(f"per_round must be at least 1, got {per_round}")
        super().__init__((), chunk_size=chunk_size, strict=True, name=name, api=name)
        self.seed = seed
        self.plan = None if tools is None else tuple(tools)
        self.per_round = per_round
        self.skipped_tools: dict[str, str] = {}
        self._generators: dict[str, ArgumentGenerator] = {}

    def stream(
        self, model: str, context: Context, options: StreamOptions
    ) -> AsyncIterator[AssistantMessageEvent]:
        self.turns.append(self.respond)  # every turn is computed from its request
        return super().stream(model, context, options)

    # -- deciding a turn -------------------------------------------------------------------
    def respond(self, request: ModelRequest) -> ScriptedTurn:
        """The turn for ``request``: the next planned calls, or the summary."""
        called = _called(request.messages)
        pending = [t for t in self._planned(request) if t.name not in called]
        calls: list[ScriptedCall] = []
        for spec in pending:
            if len(calls) == self.per_round:
                break
            arguments = self._arguments(spec, 0)
            if arguments is not None:
                calls.append(ScriptedCall(spec.name, arguments))
        if calls:
            return ScriptedTurn(parts=list(calls))
        return ScriptedTurn(parts=[summary(request.messages)])

    def _planned(self, request: ModelRequest) -> list[ToolSpec]:
        offered = {t.name: t for t in request.tools}
        choice = request.tool_choice
        if choice == "none":
            return []
        if isinstance(choice, Mapping):
            forced = choice.get("name") or (choice.get("function") or {}).get("name")
            return [offered[forced]] if forced in offered else []
        names = list(offered) if self.plan is None else [n for n in self.plan if n in offered]
        return [offered[n] for n in names if n not in self.skipped_tools]

    def _arguments(self, spec: ToolSpec, occurrence: int) -> dict[str, Any] | None:
        generator = self._generator(spec)
        rng = random.Random(f"{self.seed}:{spec.name}:{occurrence}")
        source = RandomSource(rng)
        reason = "no arguments its schema accepts were found"
        for _ in range(MAX_ATTEMPTS):
            try:
                value = generator.generate(source)
            except Infeasible as exc:
                reason = f"cannot generate arguments: {exc}"
                break
            if isinstance(value, dict) and generator.is_valid(value):
                return value
        message = f"tool {spec.name!r} is not called: {reason}"
        if generator.gaps:
            message += " (" + "; ".join(g.message for g in generator.gaps) + ")"
        self.skipped_tools[spec.name] = message
        warnings.warn(message, stacklevel=2)
        return None

    def _generator(self, spec: ToolSpec) -> ArgumentGenerator:
        generator = self._generators.get(spec.name)
        if generator is None or generator.schema != spec.parameters:
            generator = self._generators[spec.name] = ArgumentGenerator(spec.parameters, spec.name)
            for gap in generator.gaps:
                warnings.warn(gap.message, stacklevel=3)
        return generator


def _called(messages: Iterable[Any]) -> set[str]:
    """Names of the tools called so far in this conversation."""
    return {
        call.name
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
    }


def summary(messages: Sequence[Any]) -> str:
    """The final reply: a JSON object mapping each called tool to its result text (an
    ``{"error": text}`` object for an error result), in call order."""
    results: dict[str, Any] = {}
    for message in messages:
        if isinstance(message, ToolResultMessage):
            text = message.text
            results[message.tool_name] = {"error": text} if message.is_error else text
    return json.dumps(results, ensure_ascii=False)


__all__ = ["SchemaDrivenProvider", "summary"]
