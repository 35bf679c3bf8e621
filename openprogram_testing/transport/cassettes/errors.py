"""The errors the cassette layer raises, in one place so every part can raise them without
importing the others."""

from __future__ import annotations

__all__ = ["CassetteError", "CassetteLeakError", "CassetteMismatch", "ScriptExhaustedWarning"]


class CassetteError(AssertionError):
    """A cassette cannot be used as asked: missing file, a file of no known shape, unplayed
    interactions, a mismatch the code under test swallowed, a bad mutation.

    An ``AssertionError`` so pytest shows it as a test failure with its message, not as an
    internal error of the harness."""


class CassetteLeakError(CassetteError):
    """A secret would have been written to a cassette; nothing was written."""


class CassetteMismatch(CassetteError):
    """A request has no unplayed matching interaction in a replay-only cassette.

    Raised inside the HTTP transport, so an SDK may wrap it (the OpenAI and Anthropic SDKs turn
    it into a connection error, which an adapter turns into an error turn: fast, never a hang).
    The session keeps the message and raises it again when the cassette closes, so a mismatch
    always fails the test with the full explanation."""


class ScriptExhaustedWarning(UserWarning):
    """A recording session stored an answer the loopback emulator gave after its script ran out.

    Such an answer is the emulator's fallback (or its "script exhausted" error), not what a real
    provider said, so the cassette now holds a made-up turn."""
