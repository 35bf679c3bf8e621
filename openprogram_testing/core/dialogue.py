"""A simulated user: follow-ups that answer what the agent last said.

A multi-turn conversation is a test too: the agent asks "which city?", the user answers, the
agent asks "how many seats?", the user answers, and the agent books.  A ``SteeringSchedule``
plays the user when the model finishes (where the loop polls follow-ups), from a scripted
dialogue or a callable::

    schedule.simulated_user([
        UserLine("Oslo, please.", expect=r"(?i)which city"),   # answers a reply matching this
        "Two seats.",                                           # answers whatever it said
    ])
    schedule.simulated_user(lambda last_reply, history: None if "booked" in last_reply else "go on")

A line's ``expect`` is a regular expression searched in the agent's reply it answers (the text
of the run's latest assistant message); a reply it does not fit ends the dialogue and is a
``DialogueMismatch`` naming both.  A callable gets the reply and the run's messages so far and
returns the next message, or ``None`` when the user is done.  Lines never answered (the run
ended first) are reported as any schedule entry never reached.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

from openprogram.texts import clip
from openprogram.types import Message, UserMessage, user_messages

from .matchers import Matches

Answer: TypeAlias = Callable[[str, Sequence[Message]], "str | UserMessage | None"]
"""``answer(last_reply, history) -> message | None``: the simulated user as a function."""


@dataclass(frozen=True, slots=True)
class UserLine:
    """One line of a scripted dialogue: what the user says, and optionally a regular expression
    the agent's reply must fit for this line to answer it (``search``, not a full match).
    ``required=False``: the run may end before this line is said."""

    say: str | UserMessage
    expect: str | re.Pattern[str] | None = None
    required: bool = True


@dataclass(frozen=True, slots=True)
class ParsedLine:
    """A dialogue line checked once: its messages and its expectation as a matcher."""

    messages: list[UserMessage]
    expect: Matches | None
    required: bool


def parse_dialogue(dialogue: Sequence[Any]) -> list[ParsedLine]:
    """``dialogue`` as checked lines: each a ``str``, a ``UserMessage``, a ``UserLine`` or a
    ``(say, expect)`` pair.  A bad pattern or an empty line is an error naming the line."""
    if isinstance(dialogue, str | bytes) or not isinstance(dialogue, Sequence):
        raise TypeError(
            "a dialogue is a list of lines (str, UserLine or (say, expect)), or a callable "
            f"(last_reply, history) -> str | None; got {type(dialogue).__name__}"
        )
    out: list[ParsedLine] = []
    for k, item in enumerate(dialogue):
        if isinstance(item, tuple) and len(item) == 2:
            item = UserLine(item[0], item[1])
        if not isinstance(item, UserLine):
            item = UserLine(item)
        try:
            messages = user_messages(item.say, "a dialogue line")
            if not messages or not any(m.text.strip() for m in messages):
                raise ValueError("a dialogue line says something (got an empty message)")
            expect = None if item.expect is None else Matches(item.expect)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"dialogue[{k}]: {exc}") from None
        out.append(ParsedLine(messages, expect, bool(item.required)))
    return out


class DialogueMismatch(AssertionError):
    """The agent's reply does not fit the dialogue line that was to answer it.  ``line`` is the
    line's 0-based position, ``say`` its text, ``expect`` the pattern, ``reply`` what the agent
    said (its latest assistant text) and ``run`` the run's tool path (``""``: the outermost)."""

    def __init__(self, line: int, say: str, expect: str, reply: str, run: str = "") -> None:
        self.line, self.say, self.expect, self.reply, self.run = line, say, expect, reply, run
        where = f" in run {run}" if run else ""
        super().__init__(
            f"simulated user{where}: line {line} ({clip(say, 80)!r}) answers a reply matching "
            f"/{clip(expect, 120)}/, but the agent replied {clip(reply, 400)!r}"
        )


def call_answer(answer: Answer, reply: str, history: Sequence[Message]) -> list[UserMessage]:
    """What the callable user says next (``[]`` when it is done); a wrong return type is an
    error naming the callable."""
    value = answer(reply, history)
    if value is None:
        return []
    name = getattr(answer, "__qualname__", None) or repr(answer)
    if isinstance(value, str | UserMessage):
        if not value or (isinstance(value, UserMessage) and not value.text.strip()):
            raise ValueError(
                f"the simulated user {name} returned an empty message; return None when done"
            )
        return user_messages(value, "a simulated user's answer")
    raise TypeError(
        f"the simulated user {name} returned {type(value).__name__}; return a str, a "
        "UserMessage or None (done)"
    )


__all__ = ["Answer", "DialogueMismatch", "ParsedLine", "UserLine", "call_answer", "parse_dialogue"]
