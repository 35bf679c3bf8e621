"""openprogram_testing — the harness for testing agent loops.

Scripted fake provider, loopback provider emulator, cassettes, steering schedules, loop traces
and assertions, snapshots, hypothesis strategies, YAML scenarios, a pytest plugin and a CLI.
Heavy dependencies (SDKs, vcrpy, hypothesis, rich) are imported only by the modules that need them.
"""

from .assertions import (
    assert_final_text,
    assert_model_calls,
    assert_recovered,
    assert_skipped,
    assert_terminated,
    assert_tool_results,
)
from .cassettes import CassetteError, CassetteMismatch, CassetteSession, use_cassette
from .emulator import EmulatorRequest, Fault, ProviderEmulator
from .invariants import (
    InvariantViolation,
    Violation,
    check_invariants,
    check_rechunk_invariance,
    find_violations,
)
from .scenarios import (
    Scenario,
    ScenarioError,
    ScenarioResult,
    load_scenario,
    run_scenario,
)
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
from .steering import Delivery, ScheduleEntry, SteeringSchedule
from .trace import LoopTrace, render_snapshot, render_timeline, run_loop, run_loop_sync

__all__ = [
    "CassetteError",
    "CassetteMismatch",
    "CassetteSession",
    "Delivery",
    "EmulatorRequest",
    "Fault",
    "InvariantViolation",
    "LoopTrace",
    "ModelRequest",
    "ProviderEmulator",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "ScheduleEntry",
    "ScriptError",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedTurn",
    "SteeringSchedule",
    "UnconsumedTurns",
    "UnexpectedModelCall",
    "Violation",
    "aborted_turn",
    "assert_final_text",
    "assert_model_calls",
    "assert_recovered",
    "assert_skipped",
    "assert_terminated",
    "assert_tool_results",
    "call",
    "check_invariants",
    "check_rechunk_invariance",
    "cut_turn",
    "error_turn",
    "find_violations",
    "load_scenario",
    "raising_turn",
    "render_snapshot",
    "render_timeline",
    "run_loop",
    "run_loop_sync",
    "run_scenario",
    "think",
    "turn",
    "use_cassette",
]
