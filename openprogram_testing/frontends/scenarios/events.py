"""The compact event notation of ``expect.events``: one token per loop event.

``agent_start``, ``turn_start``, ``turn_end``, ``agent_end(<termination>)``; ``ms(X)``/``me(X)``
for message start/end with X = ``U`` (prompt), ``S`` (steering), ``F`` (follow-up), ``A``
(assistant), ``R`` (tool result); ``upd`` for a run of message updates; ``tool_start(name)``,
``tool_update(name)``, ``tool_end(name)`` (``tool_end(name, error)`` for an error result,
``tool_end(name, skipped)`` for a skipped call); ``approval_start(name)`` and
``approval_end(name, outcome)`` for a call's approval request and decision.

Tokens are parsed when the scenario is validated (a typo is a positioned load error, not a
failed run) and compared in their canonical spelling (``tool_end(a,skipped)`` reads as
``tool_end(a, skipped)``).
"""

from __future__ import annotations

import re
from typing import Any, get_args

from openprogram.events import ApprovalOutcome

TERMINATIONS = ("completed", "max_iterations", "error", "aborted")
MESSAGE_LETTERS = "USFAR"
_BARE = ("agent_start", "turn_start", "turn_end", "upd")
_TOKEN = re.compile(r"^\s*([a-z_]+)\s*(?:\(\s*([^()]*?)\s*\))?\s*$")
_NAME = re.compile(r"^[^\s(),]+$")


def parse_event_token(token: str) -> str:
    """The canonical spelling of ``token``; a ``ValueError`` says what is wrong with it."""
    m = _TOKEN.match(token)
    if m is None:
        hint = ""
        if token.count("(") != token.count(")"):
            hint = (
                " (unbalanced parentheses: inside a flow list [...] a token with a comma must "
                "be quoted, e.g. 'tool_end(refund, skipped)')"
            )
        raise ValueError(f"not an event token: {token!r}{hint}")
    kind, inner = m.group(1), m.group(2)
    if inner is None:
        if kind in _BARE:
            return kind
        raise ValueError(f"unknown event token {token!r}; {_KNOWN}")
    args = [a.strip() for a in inner.split(",")]
    if kind == "agent_end":
        if len(args) == 1 and args[0] in TERMINATIONS:
            return f"agent_end({args[0]})"
        raise ValueError(f"agent_end takes one of {', '.join(TERMINATIONS)}, got {token!r}")
    if kind in ("ms", "me"):
        if len(args) == 1 and len(args[0]) == 1 and args[0] in MESSAGE_LETTERS:
            return f"{kind}({args[0]})"
        raise ValueError(
            f"{kind}(X) takes one letter of U (prompt), S (steering), F (follow-up), "
            f"A (assistant), R (tool result), got {token!r}"
        )
    if kind in ("tool_start", "tool_update", "tool_end"):
        if not args[0] or not _NAME.match(args[0]):
            raise ValueError(f"{kind} needs a tool name, got {token!r}")
        if len(args) == 1:
            return f"{kind}({args[0]})"
        if kind == "tool_end" and len(args) == 2 and args[1] in ("error", "skipped"):
            return f"tool_end({args[0]}, {args[1]})"
        raise ValueError(
            f"{kind} takes a tool name"
            + (" and optionally 'error' or 'skipped'" if kind == "tool_end" else "")
            + f", got {token!r}"
        )
    if kind in ("approval_start", "approval_end"):
        if not args[0] or not _NAME.match(args[0]):
            raise ValueError(f"{kind} needs a tool name, got {token!r}")
        if kind == "approval_start" and len(args) == 1:
            return f"approval_start({args[0]})"
        if kind == "approval_end" and len(args) == 2 and args[1] in _OUTCOMES:
            return f"approval_end({args[0]}, {args[1]})"
        raise ValueError(
            f"{kind} takes a tool name"
            + (f" and an outcome ({', '.join(_OUTCOMES)})" if kind == "approval_end" else "")
            + f", got {token!r}"
        )
    raise ValueError(f"unknown event token {token!r}; {_KNOWN}")


_OUTCOMES: tuple[str, ...] = get_args(ApprovalOutcome)

_KNOWN = (
    "known: agent_start, turn_start, turn_end, upd, agent_end(termination), ms(X), me(X), "
    "tool_start(name), tool_update(name), tool_end(name[, error|skipped]), "
    "approval_start(name), approval_end(name, outcome)"
)


def is_token_fragment(text: str) -> bool:
    """Is ``text`` part of a token that a flow list split at its comma (more ``(`` than ``)``)?"""
    return text.count("(") > text.count(")")


def event_tokens(trace: Any) -> list[str]:
    """The tokens of a run's events, in order (see the module docstring)."""
    letters: dict[int, str] = {id(m): "U" for m in getattr(trace, "prompts", None) or []}
    schedule = getattr(trace, "schedule", None)
    for d in getattr(schedule, "delivered", None) or []:
        letters[id(d.message)] = "F" if d.kind == "follow_up" else "S"
    tokens: list[str] = []
    first_turn = True
    for event in trace.events:
        kind = event.type
        if kind == "message_update":
            if not tokens or tokens[-1] != "upd":
                tokens.append("upd")
            continue
        if kind in ("message_start", "message_end"):
            message = event.message
            role = message.role
            if role == "assistant":
                letter = "A"
            elif role == "toolResult":
                letter = "R"
            else:
                letter = letters.get(id(message)) or ("U" if first_turn else "S")
            tokens.append(f"{'ms' if kind == 'message_start' else 'me'}({letter})")
            continue
        if kind in ("turn_start", "turn_end"):
            first_turn = first_turn and kind == "turn_start"
            tokens.append(kind)
        elif kind == "agent_start":
            tokens.append(kind)
        elif kind == "agent_end":
            tokens.append(f"agent_end({event.termination})")
        elif kind == "tool_execution_start":
            tokens.append(f"tool_start({event.tool_name})")
        elif kind == "tool_execution_update":
            tokens.append(f"tool_update({event.tool_name})")
        elif kind == "tool_approval_start":
            tokens.append(f"approval_start({event.tool_name})")
        elif kind == "tool_approval_end":
            tokens.append(f"approval_end({event.tool_name}, {event.outcome})")
        elif kind == "tool_execution_end":
            flag = ", skipped" if event.result.skipped else ", error" if event.is_error else ""
            tokens.append(f"tool_end({event.tool_name}{flag})")
    return tokens


__all__ = ["TERMINATIONS", "event_tokens", "is_token_fragment", "parse_event_token"]
