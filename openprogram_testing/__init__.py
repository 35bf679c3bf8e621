"""openprogram_testing — the harness for testing agent loops.

Scripted fake provider, loopback provider emulator, cassettes, steering schedules, loop traces
and assertions, snapshots, hypothesis strategies, YAML scenarios, a pytest plugin and a CLI.

Importing the package is cheap: every public name is loaded on first use (``__getattr__``), so
``from openprogram_testing import ScriptedProvider`` does not pay for pydantic, PyYAML, vcrpy,
hypothesis, syrupy or an SDK.  To add a public name: add it to ``_EXPORTS`` (name -> module,
which ``__all__`` is made from) and to the ``TYPE_CHECKING`` imports, as ``name as name`` (the
form that tells a type checker the package re-exports it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_names

if TYPE_CHECKING:
    from .assertions import assert_final_text as assert_final_text
    from .assertions import assert_model_calls as assert_model_calls
    from .assertions import assert_recovered as assert_recovered
    from .assertions import assert_skipped as assert_skipped
    from .assertions import assert_terminated as assert_terminated
    from .assertions import assert_tool_results as assert_tool_results
    from .capture import CapturedRuns as CapturedRuns
    from .capture import capture_runs as capture_runs
    from .cassettes import REDACTED as REDACTED
    from .cassettes import CassetteError as CassetteError
    from .cassettes import CassetteMismatch as CassetteMismatch
    from .cassettes import CassetteSession as CassetteSession
    from .cassettes import RedactionRules as RedactionRules
    from .cassettes import Redactor as Redactor
    from .cassettes import ScriptExhaustedWarning as ScriptExhaustedWarning
    from .cassettes import load_interactions as load_interactions
    from .cassettes import use_cassette as use_cassette
    from .conditions import SteeringNotFired as SteeringNotFired
    from .dialogue import DialogueMismatch as DialogueMismatch
    from .dialogue import UserLine as UserLine
    from .emulator import EmulatorRequest as EmulatorRequest
    from .emulator import Fault as Fault
    from .emulator import ProviderEmulator as ProviderEmulator
    from .emulator import RetryTimingError as RetryTimingError
    from .emulator import assert_retries as assert_retries
    from .failures import TraceFailure as TraceFailure
    from .faults import CorruptCrc as CorruptCrc
    from .faults import CorruptFrame as CorruptFrame
    from .faults import DropTerminal as DropTerminal
    from .faults import FaultError as FaultError
    from .faults import GarbleToolArguments as GarbleToolArguments
    from .faults import HttpError as HttpError
    from .faults import InjectError as InjectError
    from .faults import Latency as Latency
    from .faults import Rechunk as Rechunk
    from .faults import Stall as Stall
    from .faults import TruncateAfter as TruncateAfter
    from .invariants import InvariantViolation as InvariantViolation
    from .invariants import Violation as Violation
    from .invariants import check_invariants as check_invariants
    from .invariants import check_rechunk_invariance as check_rechunk_invariance
    from .invariants import find_violations as find_violations
    from .recording import add_trace_listener as add_trace_listener
    from .recording import remove_trace_listener as remove_trace_listener
    from .report import Coverage as Coverage
    from .report import exhibited as exhibited
    from .report import trace_record as trace_record
    from .report import write_html as write_html
    from .scenarios import Scenario as Scenario
    from .scenarios import ScenarioError as ScenarioError
    from .scenarios import ScenarioResult as ScenarioResult
    from .scenarios import load_scenario as load_scenario
    from .scenarios import run_scenario as run_scenario
    from .scenarios import scenario_factory as scenario_factory
    from .scenarios.scaffold import ScaffoldError as ScaffoldError
    from .scenarios.scaffold import scaffold_cassette as scaffold_cassette
    from .scenarios.scaffold_record import scaffold_record as scaffold_record
    from .schema_provider import SchemaDrivenProvider as SchemaDrivenProvider
    from .scripted import ModelRequest as ModelRequest
    from .scripted import ScriptedCall as ScriptedCall
    from .scripted import ScriptedProvider as ScriptedProvider
    from .scripted import ScriptedTurn as ScriptedTurn
    from .scripted import ScriptError as ScriptError
    from .scripted import UnconsumedTurns as UnconsumedTurns
    from .scripted import UnexpectedModelCall as UnexpectedModelCall
    from .scripted import aborted_turn as aborted_turn
    from .scripted import call as call
    from .scripted import cut_turn as cut_turn
    from .scripted import error_turn as error_turn
    from .scripted import raising_turn as raising_turn
    from .scripted import think as think
    from .scripted import turn as turn
    from .snapshot import TraceSnapshotExtension as TraceSnapshotExtension
    from .steering import Delivery as Delivery
    from .steering import ScheduleEntry as ScheduleEntry
    from .steering import SteeringSchedule as SteeringSchedule
    from .trace import LoopTrace as LoopTrace
    from .trace import render_snapshot as render_snapshot
    from .trace import render_timeline as render_timeline
    from .trace import run_loop as run_loop
    from .trace import run_loop_sync as run_loop_sync
    from .trajectory import Approx as Approx
    from .trajectory import MatcherError as MatcherError
    from .trajectory import Matches as Matches
    from .trajectory import TrajectoryMismatch as TrajectoryMismatch
    from .trajectory import assert_trajectory as assert_trajectory
    from .tree import TraceTree as TraceTree
    from .tree import run_exec as run_exec
    from .tree import run_exec_sync as run_exec_sync
    from .usage import Prices as Prices
    from .usage import UsageError as UsageError
    from .usage import UsageOverBudget as UsageOverBudget
    from .usage import UsageTotals as UsageTotals
    from .usage import assert_usage as assert_usage
    from .usage import usage_of as usage_of

_EXPORTS: dict[str, str] = {
    "CorruptCrc": "faults",
    "CorruptFrame": "faults",
    "DropTerminal": "faults",
    "FaultError": "faults",
    "GarbleToolArguments": "faults",
    "HttpError": "faults",
    "InjectError": "faults",
    "Latency": "faults",
    "Rechunk": "faults",
    "Stall": "faults",
    "TruncateAfter": "faults",
    "REDACTED": "cassettes",
    "RedactionRules": "cassettes",
    "Redactor": "cassettes",
    "ScriptExhaustedWarning": "cassettes",
    "load_interactions": "cassettes",
    "TraceSnapshotExtension": "snapshot",
    "Coverage": "report",
    "exhibited": "report",
    "trace_record": "report",
    "write_html": "report",
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
    "RetryTimingError": "emulator",
    "assert_retries": "emulator",
    "TraceFailure": "failures",
    "InvariantViolation": "invariants",
    "Violation": "invariants",
    "check_invariants": "invariants",
    "check_rechunk_invariance": "invariants",
    "find_violations": "invariants",
    "add_trace_listener": "recording",
    "remove_trace_listener": "recording",
    "SchemaDrivenProvider": "schema_provider",
    "Scenario": "scenarios",
    "ScenarioError": "scenarios",
    "ScenarioResult": "scenarios",
    "load_scenario": "scenarios",
    "scenario_factory": "scenarios",
    "run_scenario": "scenarios",
    "ScaffoldError": "scenarios.scaffold",
    "scaffold_cassette": "scenarios.scaffold",
    "scaffold_record": "scenarios.scaffold_record",
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
    "SteeringNotFired": "conditions",
    "DialogueMismatch": "dialogue",
    "UserLine": "dialogue",
    "LoopTrace": "trace",
    "render_snapshot": "trace",
    "render_timeline": "trace",
    "run_loop": "trace",
    "run_loop_sync": "trace",
    "Approx": "trajectory",
    "MatcherError": "trajectory",
    "Matches": "trajectory",
    "TrajectoryMismatch": "trajectory",
    "assert_trajectory": "trajectory",
    "TraceTree": "tree",
    "CapturedRuns": "capture",
    "capture_runs": "capture",
    "run_exec": "tree",
    "run_exec_sync": "tree",
    "Prices": "usage",
    "UsageError": "usage",
    "UsageOverBudget": "usage",
    "UsageTotals": "usage",
    "assert_usage": "usage",
    "usage_of": "usage",
}
"""Where each public name lives (module under this package)."""


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
