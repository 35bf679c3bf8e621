"""The scripted provider's strictness failures: what ``ScriptedProvider`` (and the provider
emulator) record when the model side of a test is played in a way the test did not script, and
``assert_complete()`` raises.  Their own module, so a report or a runner can name them without
the provider."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from openprogram.types import Message


class ScriptError(AssertionError):
    """Base class of the scripted provider's strictness failures."""


class UnexpectedModelCall(ScriptError):
    """The loop asked the model more often than the script allows."""


class UnconsumedTurns(ScriptError):
    """The test ended with scripted turns that were never played."""


class ToolNotOffered(ScriptError):
    """A scripted call and the model call's menu disagree: the call names a tool the request
    does not offer without being marked ``unknown=True`` (a real model is only ever offered the
    menu, so playing it would test an agent no model can drive), or it is marked ``unknown``
    but the tool is offered (the "not found" path it means to test would not run).  The model
    call ends with an ``error`` turn naming it instead of playing the call.

    ``request_index`` is the model call (0-based, as ``provider.requests``), ``turn_index`` the
    script entry, ``call_index`` the call within the turn, ``tool`` its name, ``offered`` the
    request's tool names and ``marked_unknown`` whether the call said ``unknown=True``."""

    def __init__(
        self,
        request_index: int,
        turn_index: int,
        call_index: int,
        tool: str,
        offered: tuple[str, ...],
        marked_unknown: bool,
    ) -> None:
        self.request_index = request_index
        self.turn_index = turn_index
        self.call_index = call_index
        self.tool = tool
        self.offered = offered
        self.marked_unknown = marked_unknown
        reason = self.reason("call(..., unknown=True)")
        super().__init__(f"scripted turn #{turn_index} (0-based), call #{call_index}: {reason}")

    def reason(self, marker: str) -> str:
        """What is wrong, naming ``marker`` as the way to mark a call deliberately unknown (a
        scenario says ``unknown_tool: true``, Python ``call(..., unknown=True)``)."""
        if self.marked_unknown:
            return (
                f"the call is marked {marker} but model call #{self.request_index} offers tool "
                f"{self.tool!r}"
            )
        listed = ", ".join(self.offered) or "no tools"
        return (
            f"the script calls tool {self.tool!r}, which model call #{self.request_index} does "
            f'not offer (it offers {listed}); mark the call {marker} to test the "not found" '
            "path"
        )


def summarize_message(message: Message | None) -> str:
    """A one-line description of ``message`` for "unexpected model call" errors."""
    if message is None:
        return "(none)"
    text = getattr(message, "text", "")
    if len(text) > 60:
        text = text[:57] + "..."
    return f"{message.role} {text!r}"


__all__ = [
    "ScriptError",
    "ToolNotOffered",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "summarize_message",
]
