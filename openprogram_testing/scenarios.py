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

from ._lazy import lazy_names

if TYPE_CHECKING:
    from .frontends.scenarios.events import event_tokens as event_tokens
    from .frontends.scenarios.events import (
        parse_event_token as parse_event_token,
    )
    from .frontends.scenarios.expectations import (
        check_expectations as check_expectations,
    )
    from .frontends.scenarios.fault_defs import FaultDef as FaultDef
    from .frontends.scenarios.imports import scenario_factory as scenario_factory
    from .frontends.scenarios.loader import load_scenario as load_scenario
    from .frontends.scenarios.loader import parse_scenario as parse_scenario
    from .frontends.scenarios.loader import (
        scenario_json_schema as scenario_json_schema,
    )
    from .frontends.scenarios.model import SCENARIO_PATTERNS as SCENARIO_PATTERNS
    from .frontends.scenarios.model import SCHEMA_VERSION as SCHEMA_VERSION
    from .frontends.scenarios.model import AgenticDef as AgenticDef
    from .frontends.scenarios.model import CallDef as CallDef
    from .frontends.scenarios.model import CallPosition as CallPosition
    from .frontends.scenarios.model import CassetteRef as CassetteRef
    from .frontends.scenarios.model import Expectations as Expectations
    from .frontends.scenarios.model import FunctionChoice as FunctionChoice
    from .frontends.scenarios.model import LoopOptions as LoopOptions
    from .frontends.scenarios.model import Outcome as Outcome
    from .frontends.scenarios.model import RaiseSpec as RaiseSpec
    from .frontends.scenarios.model import Scenario as Scenario
    from .frontends.scenarios.model import SteeringDef as SteeringDef
    from .frontends.scenarios.model import ToolDef as ToolDef
    from .frontends.scenarios.model import ToolResultExpect as ToolResultExpect
    from .frontends.scenarios.model import TurnDef as TurnDef
    from .frontends.scenarios.model import is_scenario_file as is_scenario_file
    from .frontends.scenarios.model import scenario_stem as scenario_stem
    from .frontends.scenarios.problems import Problem as Problem
    from .frontends.scenarios.problems import ScenarioError as ScenarioError
    from .frontends.scenarios.runner import (
        DEFAULT_TIME_LIMIT_S as DEFAULT_TIME_LIMIT_S,
    )
    from .frontends.scenarios.runner import ScenarioResult as ScenarioResult
    from .frontends.scenarios.runner import arun_scenario as arun_scenario
    from .frontends.scenarios.runner import build_provider as build_provider
    from .frontends.scenarios.runner import build_schedule as build_schedule
    from .frontends.scenarios.runner import run_scenario as run_scenario
    from .frontends.scenarios.snapshots import snapshot_path as snapshot_path
    from .frontends.scenarios.stubs import build_tools as build_tools

_EXPORTS: dict[str, str] = {
    "AgenticDef": "frontends.scenarios.model",
    "CallDef": "frontends.scenarios.model",
    "CallPosition": "frontends.scenarios.model",
    "CassetteRef": "frontends.scenarios.model",
    "DEFAULT_TIME_LIMIT_S": "frontends.scenarios.runner",
    "Expectations": "frontends.scenarios.model",
    "FaultDef": "frontends.scenarios.fault_defs",
    "FunctionChoice": "frontends.scenarios.model",
    "LoopOptions": "frontends.scenarios.model",
    "Outcome": "frontends.scenarios.model",
    "Problem": "frontends.scenarios.problems",
    "RaiseSpec": "frontends.scenarios.model",
    "SCENARIO_PATTERNS": "frontends.scenarios.model",
    "SCHEMA_VERSION": "frontends.scenarios.model",
    "Scenario": "frontends.scenarios.model",
    "ScenarioError": "frontends.scenarios.problems",
    "ScenarioResult": "frontends.scenarios.runner",
    "SteeringDef": "frontends.scenarios.model",
    "ToolDef": "frontends.scenarios.model",
    "ToolResultExpect": "frontends.scenarios.model",
    "TurnDef": "frontends.scenarios.model",
    "arun_scenario": "frontends.scenarios.runner",
    "build_provider": "frontends.scenarios.runner",
    "build_schedule": "frontends.scenarios.runner",
    "build_tools": "frontends.scenarios.stubs",
    "check_expectations": "frontends.scenarios.expectations",
    "event_tokens": "frontends.scenarios.events",
    "is_scenario_file": "frontends.scenarios.model",
    "load_scenario": "frontends.scenarios.loader",
    "parse_event_token": "frontends.scenarios.events",
    "parse_scenario": "frontends.scenarios.loader",
    "run_scenario": "frontends.scenarios.runner",
    "scenario_factory": "frontends.scenarios.imports",
    "scenario_json_schema": "frontends.scenarios.loader",
    "scenario_stem": "frontends.scenarios.model",
    "snapshot_path": "frontends.scenarios.snapshots",
}
"""Where each name lives (module under this package)."""


_RENAMED = {"Mutation": "frontends.scenarios.model"}
"""0.1 names still read (each warns, naming the new one) until 0.3; not in ``__all__``."""

__getattr__, __dir__ = lazy_names(__name__, {**_EXPORTS, **_RENAMED})

__all__ = sorted(_EXPORTS)
