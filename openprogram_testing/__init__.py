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
    from openprogram_testing.base.failures import TraceFailure as TraceFailure
    from openprogram_testing.base.recording import add_trace_listener as add_trace_listener
    from openprogram_testing.base.recording import remove_trace_listener as remove_trace_listener
    from openprogram_testing.core.capture import CapturedRuns as CapturedRuns
    from openprogram_testing.core.capture import capture_runs as capture_runs
    from openprogram_testing.core.conditions import SteeringNotFired as SteeringNotFired
    from openprogram_testing.core.dialogue import DialogueMismatch as DialogueMismatch
    from openprogram_testing.core.dialogue import UserLine as UserLine
    from openprogram_testing.core.steering import Delivery as Delivery
    from openprogram_testing.core.steering import ScheduleEntry as ScheduleEntry
    from openprogram_testing.core.steering import SteeringSchedule as SteeringSchedule
    from openprogram_testing.core.trace import LoopTrace as LoopTrace
    from openprogram_testing.core.trace import render_snapshot as render_snapshot
    from openprogram_testing.core.trace import render_timeline as render_timeline
    from openprogram_testing.core.trace import run_loop as run_loop
    from openprogram_testing.core.trace import run_loop_sync as run_loop_sync
    from openprogram_testing.core.tree import TraceTree as TraceTree
    from openprogram_testing.core.tree import run_exec as run_exec
    from openprogram_testing.core.tree import run_exec_sync as run_exec_sync
    from openprogram_testing.frontends.report.behaviours import exhibited as exhibited
    from openprogram_testing.frontends.report.coverage import Coverage as Coverage
    from openprogram_testing.frontends.report.html import write_html as write_html
    from openprogram_testing.frontends.report.record import trace_record as trace_record
    from openprogram_testing.frontends.scenarios.imports import scenario_factory as scenario_factory
    from openprogram_testing.frontends.scenarios.loader import load_scenario as load_scenario
    from openprogram_testing.frontends.scenarios.model import Scenario as Scenario
    from openprogram_testing.frontends.scenarios.problems import ScenarioError as ScenarioError
    from openprogram_testing.frontends.scenarios.runner import ScenarioResult as ScenarioResult
    from openprogram_testing.frontends.scenarios.runner import run_scenario as run_scenario
    from openprogram_testing.frontends.scenarios.scaffold import ScaffoldError as ScaffoldError
    from openprogram_testing.frontends.scenarios.scaffold import (
        scaffold_cassette as scaffold_cassette,
    )
    from openprogram_testing.frontends.scenarios.scaffold_record import (
        scaffold_record as scaffold_record,
    )
    from openprogram_testing.judges.assertions import assert_final_text as assert_final_text
    from openprogram_testing.judges.assertions import assert_model_calls as assert_model_calls
    from openprogram_testing.judges.assertions import assert_recovered as assert_recovered
    from openprogram_testing.judges.assertions import assert_skipped as assert_skipped
    from openprogram_testing.judges.assertions import assert_terminated as assert_terminated
    from openprogram_testing.judges.assertions import assert_tool_results as assert_tool_results
    from openprogram_testing.judges.invariants import InvariantViolation as InvariantViolation
    from openprogram_testing.judges.invariants import Violation as Violation
    from openprogram_testing.judges.invariants import check_invariants as check_invariants
    from openprogram_testing.judges.invariants import (
        check_rechunk_invariance as check_rechunk_invariance,
    )
    from openprogram_testing.judges.invariants import find_violations as find_violations
    from openprogram_testing.judges.snapshot import TraceSnapshotExtension as TraceSnapshotExtension
    from openprogram_testing.judges.trajectory import Approx as Approx
    from openprogram_testing.judges.trajectory import MatcherError as MatcherError
    from openprogram_testing.judges.trajectory import Matches as Matches
    from openprogram_testing.judges.trajectory import TrajectoryMismatch as TrajectoryMismatch
    from openprogram_testing.judges.trajectory import assert_trajectory as assert_trajectory
    from openprogram_testing.judges.usage import Prices as Prices
    from openprogram_testing.judges.usage import UsageError as UsageError
    from openprogram_testing.judges.usage import UsageOverBudget as UsageOverBudget
    from openprogram_testing.judges.usage import UsageTotals as UsageTotals
    from openprogram_testing.judges.usage import assert_usage as assert_usage
    from openprogram_testing.judges.usage import usage_of as usage_of
    from openprogram_testing.transport.cassettes.errors import CassetteError as CassetteError
    from openprogram_testing.transport.cassettes.errors import CassetteMismatch as CassetteMismatch
    from openprogram_testing.transport.cassettes.errors import (
        ScriptExhaustedWarning as ScriptExhaustedWarning,
    )
    from openprogram_testing.transport.cassettes.files import load_interactions as load_interactions
    from openprogram_testing.transport.cassettes.redaction import REDACTED as REDACTED
    from openprogram_testing.transport.cassettes.redaction import RedactionRules as RedactionRules
    from openprogram_testing.transport.cassettes.redaction import Redactor as Redactor
    from openprogram_testing.transport.cassettes.session import CassetteSession as CassetteSession
    from openprogram_testing.transport.cassettes.session import use_cassette as use_cassette
    from openprogram_testing.transport.emulator.retries import RetryTimingError as RetryTimingError
    from openprogram_testing.transport.emulator.retries import assert_retries as assert_retries
    from openprogram_testing.transport.emulator.server import EmulatorRequest as EmulatorRequest
    from openprogram_testing.transport.emulator.server import ProviderEmulator as ProviderEmulator
    from openprogram_testing.transport.faults import CorruptCrc as CorruptCrc
    from openprogram_testing.transport.faults import CorruptFrame as CorruptFrame
    from openprogram_testing.transport.faults import DropTerminal as DropTerminal
    from openprogram_testing.transport.faults import FaultError as FaultError
    from openprogram_testing.transport.faults import GarbleToolArguments as GarbleToolArguments
    from openprogram_testing.transport.faults import HttpError as HttpError
    from openprogram_testing.transport.faults import InjectError as InjectError
    from openprogram_testing.transport.faults import Latency as Latency
    from openprogram_testing.transport.faults import Rechunk as Rechunk
    from openprogram_testing.transport.faults import Stall as Stall
    from openprogram_testing.transport.faults import TruncateAfter as TruncateAfter
    from openprogram_testing.transport.schema_provider import (
        SchemaDrivenProvider as SchemaDrivenProvider,
    )
    from openprogram_testing.transport.scripted import ModelRequest as ModelRequest
    from openprogram_testing.transport.scripted import ScriptedCall as ScriptedCall
    from openprogram_testing.transport.scripted import ScriptedProvider as ScriptedProvider
    from openprogram_testing.transport.scripted import ScriptedTurn as ScriptedTurn
    from openprogram_testing.transport.scripted import ScriptError as ScriptError
    from openprogram_testing.transport.scripted import UnconsumedTurns as UnconsumedTurns
    from openprogram_testing.transport.scripted import UnexpectedModelCall as UnexpectedModelCall
    from openprogram_testing.transport.scripted import aborted_turn as aborted_turn
    from openprogram_testing.transport.scripted import call as call
    from openprogram_testing.transport.scripted import cut_turn as cut_turn
    from openprogram_testing.transport.scripted import error_turn as error_turn
    from openprogram_testing.transport.scripted import raising_turn as raising_turn
    from openprogram_testing.transport.scripted import think as think
    from openprogram_testing.transport.scripted import turn as turn

    from .emulator import Fault as Fault

_EXPORTS: dict[str, str] = {
    "CorruptCrc": "transport.faults",
    "CorruptFrame": "transport.faults",
    "DropTerminal": "transport.faults",
    "FaultError": "transport.faults",
    "GarbleToolArguments": "transport.faults",
    "HttpError": "transport.faults",
    "InjectError": "transport.faults",
    "Latency": "transport.faults",
    "Rechunk": "transport.faults",
    "Stall": "transport.faults",
    "TruncateAfter": "transport.faults",
    "REDACTED": "cassettes",
    "RedactionRules": "cassettes",
    "Redactor": "cassettes",
    "ScriptExhaustedWarning": "cassettes",
    "load_interactions": "cassettes",
    "TraceSnapshotExtension": "judges.snapshot",
    "Coverage": "report",
    "exhibited": "report",
    "trace_record": "report",
    "write_html": "report",
    "assert_final_text": "judges.assertions",
    "assert_model_calls": "judges.assertions",
    "assert_recovered": "judges.assertions",
    "assert_skipped": "judges.assertions",
    "assert_terminated": "judges.assertions",
    "assert_tool_results": "judges.assertions",
    "CassetteError": "cassettes",
    "CassetteMismatch": "cassettes",
    "CassetteSession": "cassettes",
    "use_cassette": "cassettes",
    "EmulatorRequest": "emulator",
    "Fault": "emulator",
    "ProviderEmulator": "emulator",
    "RetryTimingError": "emulator",
    "assert_retries": "emulator",
    "TraceFailure": "base.failures",
    "InvariantViolation": "judges.invariants",
    "Violation": "judges.invariants",
    "check_invariants": "judges.invariants",
    "check_rechunk_invariance": "judges.invariants",
    "find_violations": "judges.invariants",
    "add_trace_listener": "base.recording",
    "remove_trace_listener": "base.recording",
    "SchemaDrivenProvider": "transport.schema_provider",
    "Scenario": "scenarios",
    "ScenarioError": "scenarios",
    "ScenarioResult": "scenarios",
    "load_scenario": "scenarios",
    "scenario_factory": "scenarios",
    "run_scenario": "scenarios",
    "ScaffoldError": "frontends.scenarios.scaffold",
    "scaffold_cassette": "frontends.scenarios.scaffold",
    "scaffold_record": "frontends.scenarios.scaffold_record",
    "ModelRequest": "transport.scripted",
    "ScriptError": "transport.scripted",
    "ScriptedCall": "transport.scripted",
    "ScriptedProvider": "transport.scripted",
    "ScriptedTurn": "transport.scripted",
    "UnconsumedTurns": "transport.scripted",
    "UnexpectedModelCall": "transport.scripted",
    "aborted_turn": "transport.scripted",
    "call": "transport.scripted",
    "cut_turn": "transport.scripted",
    "error_turn": "transport.scripted",
    "raising_turn": "transport.scripted",
    "think": "transport.scripted",
    "turn": "transport.scripted",
    "Delivery": "core.steering",
    "ScheduleEntry": "core.steering",
    "SteeringSchedule": "core.steering",
    "SteeringNotFired": "core.conditions",
    "DialogueMismatch": "core.dialogue",
    "UserLine": "core.dialogue",
    "LoopTrace": "core.trace",
    "render_snapshot": "core.trace",
    "render_timeline": "core.trace",
    "run_loop": "core.trace",
    "run_loop_sync": "core.trace",
    "Approx": "judges.trajectory",
    "MatcherError": "judges.trajectory",
    "Matches": "judges.trajectory",
    "TrajectoryMismatch": "judges.trajectory",
    "assert_trajectory": "judges.trajectory",
    "TraceTree": "core.tree",
    "CapturedRuns": "core.capture",
    "capture_runs": "core.capture",
    "run_exec": "core.tree",
    "run_exec_sync": "core.tree",
    "Prices": "judges.usage",
    "UsageError": "judges.usage",
    "UsageOverBudget": "judges.usage",
    "UsageTotals": "judges.usage",
    "assert_usage": "judges.usage",
    "usage_of": "judges.usage",
}
"""Where each public name lives (module under this package)."""


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
