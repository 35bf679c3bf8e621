"""openprogram_testing — the harness for testing agent loops.

Scripted fake provider, loopback provider emulator, cassettes, steering schedules, loop traces
and assertions, snapshots, hypothesis strategies, YAML scenarios, a pytest plugin and a CLI.

Importing the package is cheap: every public name is loaded on first use (``__getattr__``), so
``from openprogram_testing import ScriptedProvider`` does not pay for pydantic, PyYAML, vcrpy,
hypothesis, syrupy or an SDK.  To add a public name: add it to ``_EXPORTS`` (name -> module),
to the ``TYPE_CHECKING`` imports (for type checkers) and to ``__all__``.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
    from .schema_provider import SchemaDrivenProvider
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
    from .tree import TraceTree, run_exec, run_exec_sync

_EXPORTS: dict[str, str] = {
    "assert_final_text": "assertions",
    "assert_model_calls": "assertions",
    "assert_recovered": "assertions",
    "assert_skipped": "assertions",
    "assert_terminated": "assertions",
    "assert_tool_results": "assertions",
    "CassetteError": "cassettes",
    "CassetteMismatch": "cassettes",
    "CassetteSession": "cassettes",
    "use_cassette": "cassettes",
    "EmulatorRequest": "emulator",
    "Fault": "emulator",
    "ProviderEmulator": "emulator",
    "InvariantViolation": "invariants",
    "Violation": "invariants",
    "check_invariants": "invariants",
    "check_rechunk_invariance": "invariants",
    "find_violations": "invariants",
    "SchemaDrivenProvider": "schema_provider",
    "Scenario": "scenarios",
    "ScenarioError": "scenarios",
    "ScenarioResult": "scenarios",
    "load_scenario": "scenarios",
    "run_scenario": "scenarios",
    "ModelRequest": "scripted",
    "ScriptError": "scripted",
    "ScriptedCall": "scripted",
    "ScriptedProvider": "scripted",
    "ScriptedTurn": "scripted",
    "UnconsumedTurns": "scripted",
    "UnexpectedModelCall": "scripted",
    "aborted_turn": "scripted",
    "call": "scripted",
    "cut_turn": "scripted",
    "error_turn": "scripted",
    "raising_turn": "scripted",
    "think": "scripted",
    "turn": "scripted",
    "Delivery": "steering",
    "ScheduleEntry": "steering",
    "SteeringSchedule": "steering",
    "LoopTrace": "trace",
    "render_snapshot": "trace",
    "render_timeline": "trace",
    "run_loop": "trace",
    "run_loop_sync": "trace",
    "TraceTree": "tree",
    "run_exec": "tree",
    "run_exec_sync": "tree",
}
"""Where each public name lives (module under this package)."""


def __getattr__(name: str) -> Any:
    """Load a public name from its module on first use and cache it on the package."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


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
    "SchemaDrivenProvider",
    "ScriptError",
    "ScriptedCall",
    "ScriptedProvider",
    "ScriptedTurn",
    "SteeringSchedule",
    "TraceTree",
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
    "run_exec",
    "run_exec_sync",
    "run_loop",
    "run_loop_sync",
    "run_scenario",
    "think",
    "turn",
    "use_cassette",
]
