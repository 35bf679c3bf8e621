"""YAML scenarios: one file describes a whole loop run and what must come out of it.

A scenario holds the tools (stubs with a scripted behaviour, or the project's own tools named by
import path), the prompt(s), the model script **or** a cassette reference, a steering/follow-up
schedule, loop options and the expectations.  ``load_scenario(path)`` validates a file and
reports problems as ``file:line:column: field.path: message`` (never a traceback);
``run_scenario(scenario)`` runs it through the real loop and returns a ``ScenarioResult`` whose
``failure_text`` says which expectation failed, followed by the timeline.

Parts: ``model`` (the pydantic models), ``yamlread`` (hostile-input-safe YAML with positions),
``problems`` (errors placed at ``file:line:column``), ``checks`` and ``imports`` (what validation
looks at beyond field types), ``loader``, ``runner``, ``stubs``, ``replay`` (cassette
scenarios), ``expectations``, ``events`` (the ``expect.events`` notation) and ``snapshots``.
``collect`` is the pytest plugin's YAML collector.

Importing the package is cheap (every name loads on first use, as at the front door), so the
collector, which lives here, costs nothing until a scenario file is collected: pydantic, PyYAML
and the runner load then.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from .events import event_tokens as event_tokens
    from .events import parse_event_token as parse_event_token
    from .expectations import check_expectations as check_expectations
    from .imports import scenario_factory as scenario_factory
    from .loader import load_scenario as load_scenario
    from .loader import parse_scenario as parse_scenario
    from .loader import scenario_json_schema as scenario_json_schema
    from .model import SCENARIO_PATTERNS as SCENARIO_PATTERNS
    from .model import SCHEMA_VERSION as SCHEMA_VERSION
    from .model import AgenticDef as AgenticDef
    from .model import CallDef as CallDef
    from .model import CallPosition as CallPosition
    from .model import CassetteRef as CassetteRef
    from .model import Expectations as Expectations
    from .model import FunctionChoice as FunctionChoice
    from .model import LoopOptions as LoopOptions
    from .model import Mutation as Mutation
    from .model import Outcome as Outcome
    from .model import RaiseSpec as RaiseSpec
    from .model import Scenario as Scenario
    from .model import SteeringDef as SteeringDef
    from .model import ToolDef as ToolDef
    from .model import ToolResultExpect as ToolResultExpect
    from .model import TurnDef as TurnDef
    from .model import is_scenario_file as is_scenario_file
    from .model import scenario_stem as scenario_stem
    from .problems import Problem as Problem
    from .problems import ScenarioError as ScenarioError
    from .runner import DEFAULT_TIME_LIMIT_S as DEFAULT_TIME_LIMIT_S
    from .runner import ScenarioResult as ScenarioResult
    from .runner import arun_scenario as arun_scenario
    from .runner import build_provider as build_provider
    from .runner import build_schedule as build_schedule
    from .runner import run_scenario as run_scenario
    from .snapshots import snapshot_path as snapshot_path
    from .stubs import build_tools as build_tools

_EXPORTS: dict[str, str] = {
    "AgenticDef": "model",
    "CallDef": "model",
    "CallPosition": "model",
    "CassetteRef": "model",
    "DEFAULT_TIME_LIMIT_S": "runner",
    "Expectations": "model",
    "FunctionChoice": "model",
    "LoopOptions": "model",
    "Mutation": "model",
    "Outcome": "model",
    "Problem": "problems",
    "RaiseSpec": "model",
    "SCENARIO_PATTERNS": "model",
    "SCHEMA_VERSION": "model",
    "Scenario": "model",
    "ScenarioError": "problems",
    "ScenarioResult": "runner",
    "SteeringDef": "model",
    "ToolDef": "model",
    "ToolResultExpect": "model",
    "TurnDef": "model",
    "arun_scenario": "runner",
    "build_provider": "runner",
    "build_schedule": "runner",
    "build_tools": "stubs",
    "check_expectations": "expectations",
    "event_tokens": "events",
    "is_scenario_file": "model",
    "load_scenario": "loader",
    "parse_event_token": "events",
    "parse_scenario": "loader",
    "run_scenario": "runner",
    "scenario_factory": "imports",
    "scenario_json_schema": "loader",
    "scenario_stem": "model",
    "snapshot_path": "snapshots",
}
"""Where each name lives (module under this package)."""


__getattr__, __dir__ = lazy_names(__name__, _EXPORTS)

__all__ = sorted(_EXPORTS)
