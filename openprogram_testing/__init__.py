"""openprogram_testing — the harness for testing agent loops.

Scripted fake provider, loopback provider emulator, cassettes, steering schedules, loop traces
and assertions, snapshots, hypothesis strategies, YAML scenarios, a pytest plugin and a CLI.
Heavy dependencies (SDKs, vcrpy, hypothesis, rich) are imported only by the modules that need them.
"""

from .scripted import (
    ModelRequest,
    ScriptedCall,
    ScriptedProvider,
    ScriptedTurn,
    ScriptError,
    UnconsumedTurns,
    UnexpectedModelCall,
    aborted_turn,
    call,
    cut_turn,
    error_turn,
    raising_turn,
    think,
    turn,
)

__all__ = [
    "ModelRequest",
    "ScriptError",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedTurn",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "aborted_turn",
    "call",
    "cut_turn",
    "error_turn",
    "raising_turn",
    "think",
    "turn",
]
