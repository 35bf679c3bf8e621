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
    from .base.failures import TraceFailure as TraceFailure
    from .base.recording import add_trace_listener as add_trace_listener
    from .base.recording import remove_trace_listener as remove_trace_listener
    from .core.approvals import ApprovalScriptError as ApprovalScriptError
    from .core.approvals import ScriptedReviewer as ScriptedReviewer
    from .core.capture import CapturedRuns as CapturedRuns
    from .core.capture import capture_runs as capture_runs
    from .core.conditions import SteeringNotFired as SteeringNotFired
    from .core.dialogue import DialogueMismatch as DialogueMismatch
    from .core.dialogue import UserLine as UserLine
    from .core.spans import SpanCapture as SpanCapture
    from .core.spans import span_dicts as span_dicts
    from .core.spans import span_tree as span_tree
    from .core.steering import Delivery as Delivery
    from .core.steering import ScheduleEntry as ScheduleEntry
    from .core.steering import SteeringSchedule as SteeringSchedule
    from .core.trace import LoopTrace as LoopTrace
    from .core.trace import render_snapshot as render_snapshot
    from .core.trace import render_timeline as render_timeline
    from .core.trace import run_loop as run_loop
    from .core.trace import run_loop_sync as run_loop_sync
    from .core.tree import TraceTree as TraceTree
    from .core.tree import run_exec as run_exec
    from .core.tree import run_exec_sync as run_exec_sync
    from .frontends.report.behaviours import exhibited as exhibited
    from .frontends.report.coverage import Coverage as Coverage
    from .frontends.report.html import write_html as write_html
    from .frontends.report.record import trace_record as trace_record
    from .frontends.scenarios.imports import scenario_factory as scenario_factory
    from .frontends.scenarios.loader import load_scenario as load_scenario
    from .frontends.scenarios.model import Scenario as Scenario
    from .frontends.scenarios.problems import ScenarioError as ScenarioError
    from .frontends.scenarios.runner import ScenarioResult as ScenarioResult
    from .frontends.scenarios.runner import run_scenario as run_scenario
    from .frontends.scenarios.scaffold import ScaffoldError as ScaffoldError
    from .frontends.scenarios.scaffold import (
        scaffold_cassette as scaffold_cassette,
    )
    from .frontends.scenarios.scaffold_record import (
        scaffold_record as scaffold_record,
    )
    from .judges.approvals import assert_approvals as assert_approvals
    from .judges.assertions import assert_final_text as assert_final_text
    from .judges.assertions import assert_model_calls as assert_model_calls
    from .judges.assertions import assert_recovered as assert_recovered
    from .judges.assertions import assert_skipped as assert_skipped
    from .judges.assertions import assert_terminated as assert_terminated
    from .judges.assertions import assert_tool_results as assert_tool_results
    from .judges.cache_prefix import CachePrefixMoved as CachePrefixMoved
    from .judges.cache_prefix import PrefixMove as PrefixMove
    from .judges.cache_prefix import assert_cache_prefix_kept as assert_cache_prefix_kept
    from .judges.cache_prefix import cache_prefix_moves as cache_prefix_moves
    from .judges.invariants import InvariantViolation as InvariantViolation
    from .judges.invariants import Violation as Violation
    from .judges.invariants import check_invariants as check_invariants
    from .judges.invariants import (
        check_rechunk_invariance as check_rechunk_invariance,
    )
    from .judges.invariants import find_violations as find_violations
    from .judges.snapshot import TraceSnapshotExtension as TraceSnapshotExtension
    from .judges.trajectory import Approx as Approx
    from .judges.trajectory import MatcherError as MatcherError
    from .judges.trajectory import Matches as Matches
    from .judges.trajectory import TrajectoryMismatch as TrajectoryMismatch
    from .judges.trajectory import assert_trajectory as assert_trajectory
    from .judges.usage import Prices as Prices
    from .judges.usage import UsageError as UsageError
    from .judges.usage import UsageOverBudget as UsageOverBudget
    from .judges.usage import UsageTotals as UsageTotals
    from .judges.usage import assert_usage as assert_usage
    from .judges.usage import usage_of as usage_of
    from .transport.cassettes.errors import CassetteError as CassetteError
    from .transport.cassettes.errors import CassetteMismatch as CassetteMismatch
    from .transport.cassettes.errors import (
        ScriptExhaustedWarning as ScriptExhaustedWarning,
    )
    from .transport.cassettes.files import load_interactions as load_interactions
    from .transport.cassettes.redaction import REDACTED as REDACTED
    from .transport.cassettes.redaction import RedactionRules as RedactionRules
    from .transport.cassettes.redaction import Redactor as Redactor
    from .transport.cassettes.session import CassetteSession as CassetteSession
    from .transport.cassettes.session import use_cassette as use_cassette
    from .transport.emulator.retries import RetryTimingError as RetryTimingError
    from .transport.emulator.retries import assert_retries as assert_retries
    from .transport.emulator.server import EmulatorRequest as EmulatorRequest
    from .transport.emulator.server import ProviderEmulator as ProviderEmulator
    from .transport.faults import CrcMismatch as CrcMismatch
    from .transport.faults import DropTerminal as DropTerminal
    from .transport.faults import Fault as Fault
    from .transport.faults import FaultError as FaultError
    from .transport.faults import GarbleToolArguments as GarbleToolArguments
    from .transport.faults import HttpError as HttpError
    from .transport.faults import InjectError as InjectError
    from .transport.faults import Latency as Latency
    from .transport.faults import MalformedFrame as MalformedFrame
    from .transport.faults import Rechunk as Rechunk
    from .transport.faults import Stall as Stall
    from .transport.faults import TruncateAfter as TruncateAfter
    from .transport.schema_provider import (
        SchemaDrivenProvider as SchemaDrivenProvider,
    )
    from .transport.scripted import ModelRequest as ModelRequest
    from .transport.scripted import ScriptedCall as ScriptedCall
    from .transport.scripted import ScriptedProvider as ScriptedProvider
    from .transport.scripted import ScriptedTurn as ScriptedTurn
    from .transport.scripted import ScriptError as ScriptError
    from .transport.scripted import UnconsumedTurns as UnconsumedTurns
    from .transport.scripted import UnexpectedModelCall as UnexpectedModelCall
    from .transport.scripted import aborted_turn as aborted_turn
    from .transport.scripted import call as call
    from .transport.scripted import cut_turn as cut_turn
    from .transport.scripted import error_turn as error_turn
    from .transport.scripted import raising_turn as raising_turn
    from .transport.scripted import think as think
    from .transport.scripted import turn as turn

_EXPORTS: dict[str, str] = {
    "CrcMismatch": "transport.faults",
    "DropTerminal": "transport.faults",
    "FaultError": "transport.faults",
    "GarbleToolArguments": "transport.faults",
    "HttpError": "transport.faults",
    "InjectError": "transport.faults",
    "Latency": "transport.faults",
    "MalformedFrame": "transport.faults",
    "Rechunk": "transport.faults",
    "Stall": "transport.faults",
    "TruncateAfter": "transport.faults",
    "REDACTED": "transport.cassettes.redaction",
    "RedactionRules": "transport.cassettes.redaction",
    "Redactor": "transport.cassettes.redaction",
    "ScriptExhaustedWarning": "transport.cassettes.errors",
    "load_interactions": "transport.cassettes.files",
    "TraceSnapshotExtension": "judges.snapshot",
    "Coverage": "frontends.report.coverage",
    "exhibited": "frontends.report.behaviours",
    "trace_record": "frontends.report.record",
    "write_html": "frontends.report.html",
    "assert_final_text": "judges.assertions",
    "assert_model_calls": "judges.assertions",
    "assert_recovered": "judges.assertions",
    "assert_skipped": "judges.assertions",
    "assert_approvals": "judges.approvals",
    "assert_terminated": "judges.assertions",
    "assert_tool_results": "judges.assertions",
    "CassetteError": "transport.cassettes.errors",
    "CassetteMismatch": "transport.cassettes.errors",
    "CassetteSession": "transport.cassettes.session",
    "use_cassette": "transport.cassettes.session",
    "EmulatorRequest": "transport.emulator.server",
    "Fault": "transport.faults",
    "ProviderEmulator": "transport.emulator.server",
    "RetryTimingError": "transport.emulator.retries",
    "assert_retries": "transport.emulator.retries",
    "TraceFailure": "base.failures",
    "CachePrefixMoved": "judges.cache_prefix",
    "PrefixMove": "judges.cache_prefix",
    "assert_cache_prefix_kept": "judges.cache_prefix",
    "cache_prefix_moves": "judges.cache_prefix",
    "InvariantViolation": "judges.invariants",
    "Violation": "judges.invariants",
    "check_invariants": "judges.invariants",
    "check_rechunk_invariance": "judges.invariants",
    "find_violations": "judges.invariants",
    "add_trace_listener": "base.recording",
    "remove_trace_listener": "base.recording",
    "SchemaDrivenProvider": "transport.schema_provider",
    "Scenario": "frontends.scenarios.model",
    "ScenarioError": "frontends.scenarios.problems",
    "ScenarioResult": "frontends.scenarios.runner",
    "load_scenario": "frontends.scenarios.loader",
    "scenario_factory": "frontends.scenarios.imports",
    "run_scenario": "frontends.scenarios.runner",
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
    "ApprovalScriptError": "core.approvals",
    "ScriptedReviewer": "core.approvals",
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
    "SpanCapture": "core.spans",
    "span_dicts": "core.spans",
    "span_tree": "core.spans",
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


_RENAMED: dict[str, str] = {
    "CorruptCrc": "transport.faults",
    "CorruptFrame": "transport.faults",
}
"""0.1 names still read (each warns, naming the new one) until 0.3; not in ``__all__``."""

__getattr__, __dir__ = lazy_names(__name__, {**_EXPORTS, **_RENAMED})

__all__ = sorted(_EXPORTS)
