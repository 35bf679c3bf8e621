"""Hypothesis strategies for agent-loop runs, a reference model of the loop, and the export of a
(shrunk) failing example to a YAML scenario file.

A generated example is plain data (``GeneratedScenario``): the tools (each with a scripted
behaviour), the model script, the steering/follow-up schedule and the loop options.  It builds
the real objects (``ScriptedProvider``, tool dicts, ``SteeringSchedule``) and runs through the
real loop; ``expected_outcome()`` predicts what the run must produce (termination, model calls,
every tool result, the final text, delivered/undelivered messages), and ``scenario_to_yaml()``
writes the example in the YAML scenario format with those predictions as its expectations, so a
failure found by hypothesis becomes a committed regression test.

The parts, one job each: ``universe`` (the small domains), ``model`` (the plain-data example),
``oracle`` (the reference model), ``generate`` (the strategies), ``checks`` (invariants, rules,
prediction), ``export`` (YAML and failure files), ``profiles`` (hypothesis settings).

    import asyncio
    from hypothesis import given
    from openprogram_testing.strategies import check_run, report_failure, scenarios

    RUNNER = asyncio.Runner()

    @given(generated=scenarios())
    def test_loop(generated):
        with report_failure(generated):           # the shrunk failure is written as YAML
            trace = generated.run_sync(runner=RUNNER)
            check_run(generated, trace)           # invariants, exact rules, prediction
"""

from openprogram.loop import effective_cap

from .frontends.strategies.agent import (
    AgentCall,
    AgentCheckFailed,
    AgentScenario,
    InjectedToolFailure,
    agent_scenarios,
    check_agent,
    check_agent_run,
)
from .frontends.strategies.agent_export import (
    agent_scenario_to_yaml,
    import_path,
)
from .frontends.strategies.approvals import approval_decisions, decision_problems
from .frontends.strategies.checks import (
    OutcomeMismatch,
    check_outcome,
    check_rules,
    check_run,
    outcome_problems,
)
from .frontends.strategies.export import (
    failure_dir,
    report_failure,
    save_failure,
    scenario_to_yaml,
    to_scenario,
)
from .frontends.strategies.gating import (
    GatedTool,
    GatingConfig,
    check_gating,
    gated_tools,
    gating_configs,
)
from .frontends.strategies.generate import (
    exact_script,
    gen_tools,
    model_turns,
    provider_scripts,
    scenarios,
    steering_schedules,
    tool_calls,
)
from .frontends.strategies.hostile import (
    HOSTILE_KINDS,
    HostileScenario,
    Hostility,
    check_hostile_run,
    hostile_records,
    hostile_scenarios,
)
from .frontends.strategies.hostile_matchers import (
    HostileExpectation,
    check_hostile_expectation,
    hostile_expectations,
)
from .frontends.strategies.model import (
    GenCall,
    GeneratedScenario,
    GenSteering,
    GenTool,
    GenTurn,
)
from .frontends.strategies.oracle import Expected, ExpectedResult
from .frontends.strategies.profiles import (
    PROFILES,
    active_profile,
    load_profile,
    property_settings,
    register_profiles,
)
from .frontends.strategies.schema import (
    ALL_LABELS,
    NEAR_MISSES,
    SchemaCall,
    ToolModel,
    mcp_tool_calls,
    schema_arguments,
    schema_calls,
    tool_model,
)
from .frontends.strategies.universe import TOOL_NAMES, UNKNOWN_TOOL, X_SCHEMA

__all__ = [
    "ALL_LABELS",
    "HOSTILE_KINDS",
    "NEAR_MISSES",
    "PROFILES",
    "TOOL_NAMES",
    "UNKNOWN_TOOL",
    "X_SCHEMA",
    "AgentCall",
    "AgentCheckFailed",
    "AgentScenario",
    "Expected",
    "ExpectedResult",
    "GatedTool",
    "GatingConfig",
    "GenCall",
    "GenSteering",
    "GenTool",
    "GenTurn",
    "GeneratedScenario",
    "HostileExpectation",
    "HostileScenario",
    "Hostility",
    "InjectedToolFailure",
    "OutcomeMismatch",
    "SchemaCall",
    "ToolModel",
    "active_profile",
    "agent_scenario_to_yaml",
    "agent_scenarios",
    "approval_decisions",
    "check_agent",
    "check_agent_run",
    "check_gating",
    "check_hostile_expectation",
    "check_hostile_run",
    "check_outcome",
    "check_rules",
    "check_run",
    "decision_problems",
    "effective_cap",
    "exact_script",
    "failure_dir",
    "gated_tools",
    "gating_configs",
    "gen_tools",
    "hostile_expectations",
    "hostile_records",
    "hostile_scenarios",
    "import_path",
    "load_profile",
    "mcp_tool_calls",
    "model_turns",
    "outcome_problems",
    "property_settings",
    "provider_scripts",
    "register_profiles",
    "report_failure",
    "save_failure",
    "scenario_to_yaml",
    "scenarios",
    "schema_arguments",
    "schema_calls",
    "steering_schedules",
    "to_scenario",
    "tool_calls",
    "tool_model",
]
