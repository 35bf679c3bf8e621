"""The front door ``openprogram_testing``: its public names are pinned, and importing it (or
its scripted provider) loads none of the heavy dependencies until they are used."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

import openprogram_testing

HEAVY = ("pydantic", "yaml", "vcr", "hypothesis", "syrupy", "openai", "anthropic", "rich")
HEAVY += ("boto3", "botocore", "google.genai", "jsonschema")


def test_the_public_names_are_pinned(snapshot: SnapshotAssertion) -> None:
    # The names are stored in __snapshots__/.  Adding a name is fine: accept it with
    # --snapshot-update.  Removing or renaming one breaks users.
    assert sorted(openprogram_testing.__all__) == snapshot
    assert len(set(openprogram_testing.__all__)) == len(openprogram_testing.__all__)


def test_type_checkers_see_each_public_name_from_its_module() -> None:
    # The TYPE_CHECKING imports (``name as name``, an explicit re-export) must name the module
    # ``_EXPORTS`` loads the name from at run time, and miss none.
    source = Path(openprogram_testing.__file__).read_text(encoding="utf-8")
    seen = {
        alias.name: node.module
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.ImportFrom) and node.level == 1
        for alias in node.names
        if alias.asname == alias.name
    }
    assert seen == openprogram_testing._EXPORTS


@pytest.mark.parametrize("name", openprogram_testing.__all__)
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
        "import openprogram_testing.frontends.pytest.plugin",
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
