"""The front door ``openprogram_testing``: its public names are pinned, and importing it (or
its scripted provider) loads none of the heavy dependencies until they are used."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import openprogram_testing

PUBLIC = [
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
    "SchemaDrivenProvider",
    "ScenarioError",
    "ScenarioResult",
    "ScheduleEntry",
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

HEAVY = ("pydantic", "yaml", "vcr", "hypothesis", "syrupy", "openai", "anthropic", "rich")
HEAVY += ("boto3", "botocore", "google.genai", "jsonschema")


def test_the_public_names_are_pinned() -> None:
    # Adding a name is fine: add it here too.  Removing or renaming one breaks users.
    assert sorted(openprogram_testing.__all__) == sorted(PUBLIC)
    assert len(set(openprogram_testing.__all__)) == len(openprogram_testing.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves_to_its_modules_object(name: str) -> None:
    value = getattr(openprogram_testing, name)
    module = importlib.import_module(f"openprogram_testing.{openprogram_testing._EXPORTS[name]}")
    assert value is getattr(module, name)
    assert name in dir(openprogram_testing)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'NoSuchThing'"):
        openprogram_testing.NoSuchThing  # noqa: B018
    with pytest.raises(ImportError):
        exec("from openprogram_testing import NoSuchThing", {})


def _loaded_after(code: str) -> list[str]:
    probe = (
        f"import sys\n{code}\n"
        "import json\n"
        f"heavy = {HEAVY!r}\n"
        "print(json.dumps(sorted(h for h in heavy if h in sys.modules)))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    )
    return list(json.loads(out.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize(
    "code",
    [
        "import openprogram_testing",
        "from openprogram_testing import ScriptedProvider, call, turn, run_loop_sync",
        "from openprogram_testing import SteeringSchedule, LoopTrace, check_invariants",
        "from openprogram_testing import TraceTree, run_exec_sync",
        "from openprogram_testing import assert_terminated, render_timeline",
        "import openprogram_testing.plugin",
    ],
)
def test_importing_loads_no_heavy_dependency(code: str) -> None:
    assert _loaded_after(code) == []


def test_a_run_with_the_scripted_provider_stays_light() -> None:
    code = (
        "from openprogram_testing import ScriptedProvider, run_loop_sync, check_invariants\n"
        "trace = run_loop_sync(ScriptedProvider(['hi']), 'hello')\n"
        "check_invariants(trace)\n"
        "assert trace.final_text == 'hi'\n"
    )
    assert _loaded_after(code) == []


def test_heavy_names_still_load_when_used() -> None:
    # The probe itself must see the modules it claims are absent elsewhere.
    assert "pydantic" in _loaded_after("from openprogram_testing import load_scenario")
