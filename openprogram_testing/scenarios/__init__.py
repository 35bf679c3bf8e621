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
"""

from .events import event_tokens, parse_event_token
from .expectations import check_expectations
from .imports import scenario_factory
from .loader import load_scenario, parse_scenario, scenario_json_schema
from .model import (
    SCENARIO_PATTERNS,
    SCHEMA_VERSION,
    AgenticDef,
    CallDef,
    CallPosition,
    CassetteRef,
    Expectations,
    FunctionChoice,
    LoopOptions,
    Mutation,
    Outcome,
    RaiseSpec,
    Scenario,
    SteeringDef,
    ToolDef,
    ToolResultExpect,
    TurnDef,
    is_scenario_file,
    scenario_stem,
)
from .problems import Problem, ScenarioError
from .runner import (
    DEFAULT_TIME_LIMIT_S,
    ScenarioResult,
    arun_scenario,
    build_provider,
    build_schedule,
    run_scenario,
)
from .snapshots import snapshot_path
from .stubs import build_tools

__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "SCENARIO_PATTERNS",
    "SCHEMA_VERSION",
    "AgenticDef",
    "CallDef",
    "CallPosition",
    "CassetteRef",
    "Expectations",
    "FunctionChoice",
    "LoopOptions",
    "Mutation",
    "Outcome",
    "Problem",
    "RaiseSpec",
    "Scenario",
    "ScenarioError",
    "ScenarioResult",
    "SteeringDef",
    "ToolDef",
    "ToolResultExpect",
    "TurnDef",
    "arun_scenario",
    "build_provider",
    "build_schedule",
    "build_tools",
    "check_expectations",
    "event_tokens",
    "is_scenario_file",
    "load_scenario",
    "parse_event_token",
    "parse_scenario",
    "run_scenario",
    "scenario_factory",
    "scenario_json_schema",
    "scenario_stem",
    "snapshot_path",
]
