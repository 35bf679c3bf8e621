"""Scenarios that use the project's own tools: ``import: module:attribute`` entries next to stubs,
a ``runtime:`` factory, and the schema-driven model; every way an import can go wrong is a
``file:line:column`` error naming the field (through pytest, ``validate`` and Python)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario, run_scenario
from tests.scenarios._scenarios import load_error

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

SHOP = '''
from openprogram import Runtime, agentic_function, function
from openprogram_testing import scenario_factory

CALLS = []


@function
def get_order(order_id: int) -> dict:
    """Look an order up.

    Args:
        order_id: the order number.
    """
    CALLS.append(order_id)
    return {"id": order_id, "status": "shipped"}


@function
def refund(order_id: int, reason: str = "") -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@agentic_function
async def summarize(topic: str, runtime) -> str:
    """Ask the model for a summary of a topic."""
    return await runtime.aexec(f"summarize {topic}", tools=[])


@scenario_factory
def make_tools():
    return [refund]


ALL = [get_order, refund]
NOT_A_TOOL = 42


def make_runtime(provider):
    return Runtime(provider, model="m", system_prompt="You are the shop's assistant.")


def make_nothing(provider):
    return "a string"
'''

USING_TOOLS = """
prompt: where is order 7?
tools:
  - import: shop.tools:get_order
  - import: shop.tools:make_tools
  - {name: note, returns: noted}
script:
  - calls: [{name: get_order, args: {order_id: 7}}, {name: refund, args: {order_id: 7}},
            {name: note}]
  - it shipped
expect:
  termination: completed
  tool_results:
    - {name: get_order, text: '{"id": 7, "status": "shipped"}'}
    - {name: refund, text: refunded 7}
    - {name: note, text: noted}
"""


def write_shop(root: Path, where: str = "") -> None:
    package = root / where / "shop" if where else root / "shop"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "tools.py").write_text(textwrap.dedent(SHOP))
    (package / "broken.py").write_text("raise RuntimeError('the database is down')\n")


def test_imported_tools_run_next_to_stubs_under_pytest(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    write_shop(pytester.path)
    pytester.makefile(".yaml", scenario_shop=USING_TOOLS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


def test_the_pythonpath_setting_is_an_import_root(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "pythonpath = src\n")
    write_shop(pytester.path, "src")
    pytester.makefile(".yaml", scenario_shop=USING_TOOLS)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("{import: 'shop.nowhere:tool'}", "cannot import 'shop.nowhere:tool': no module named"),
        (
            "{import: 'shop.tools:get_ordr'}",
            "'shop.tools' has no attribute 'get_ordr' (did you mean",
        ),
        ("{import: 'shop.tools:NOT_A_TOOL'}", "'shop.tools:NOT_A_TOOL' is a int, not a tool"),
        (
            "{import: 'shop.broken:tool'}",
            "importing 'shop.broken' raised RuntimeError: the database",
        ),
        (
            "{import: 'shop.tools'}",
            "expected an import path like 'package.module:attribute', got 'shop.tools'",
        ),
        ("{import: 'shop.tools:get_order', returns: 1}", "an imported tool takes only 'import'"),
    ],
)
def test_import_errors_are_positioned_under_pytest(
    pytester: pytest.Pytester, entry: str, message: str
) -> None:
    pytester.makeini(INI)
    write_shop(pytester.path)
    pytester.makefile(".yaml", scenario_bad=f"prompt: hi\nscript: [x]\ntools:\n  - {entry}\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*scenario_bad.yaml:4:*: tools[[]0[]]*{message}*"])
    assert "Traceback" not in result.stdout.str()


def test_a_runtime_factory_gives_the_defaults_and_serves_agentic_functions(tmp_path: Path) -> None:
    write_shop(tmp_path)
    path = tmp_path / "scenario_rt.yaml"
    path.write_text(
        textwrap.dedent(
            """
            prompt: tell me about shipping
            runtime: shop.tools:make_runtime
            tools: [{import: shop.tools:summarize}]
            script:
              - calls: [{name: summarize, args: {topic: shipping}}]
              - nested summary
              - here it is
            expect:
              termination: completed
              tool_results: [{name: summarize, text: nested summary}]
              final_text: here it is
            """
        )
    )
    scenario = load_scenario(path, import_roots=[tmp_path])
    result = run_scenario(scenario)
    assert result.passed, result.failure_text
    first = result.trace.requests[0]
    assert first.system_prompt == "You are the shop's assistant."


def test_validate_checks_imports_without_running(tmp_path: Path) -> None:
    write_shop(tmp_path)
    path = tmp_path / "scenario_v.yaml"
    path.write_text(
        "prompt: hi\nscript: [x]\nruntime: shop.tools:make_nothing\n"
        "tools: [{import: shop.tools:get_order}]\n"
    )
    assert load_error(path, import_roots=[tmp_path]) == (
        f"{path}:3:10: runtime: the factory 'shop.tools:make_nothing' returned a str, not an "
        "openprogram Runtime"
    )
    import shop.tools  # type: ignore[import-not-found]

    assert shop.tools.CALLS == []  # nothing ran


def test_a_name_clash_between_an_import_and_a_stub_is_refused(tmp_path: Path) -> None:
    write_shop(tmp_path)
    path = tmp_path / "scenario_clash.yaml"
    path.write_text(
        "prompt: hi\nscript: [x]\ntools: [{import: 'shop.tools:ALL'}, {name: refund}]\n"
    )
    message = load_error(path, import_roots=[tmp_path])
    assert "tools[0].import: tool 'refund' is offered twice" in message


def test_the_schema_driven_model_calls_every_tool_from_yaml(tmp_path: Path) -> None:
    write_shop(tmp_path)
    path = tmp_path / "scenario_sd.yaml"
    path.write_text(
        textwrap.dedent(
            """
            prompt: exercise the tools
            tools:
              - import: shop.tools:ALL
              - {name: note, parameters: {type: object, properties: {text: {type: string}}},
                 echo: true}
            schema_driven: {seed: 3, tools: [refund, note], per_round: 2}
            expect:
              termination: completed
              model_calls: 2
            """
        )
    )
    result = run_scenario(load_scenario(path, import_roots=[tmp_path]))
    assert result.passed, result.failure_text
    assert [r.tool_name for r in result.trace.tool_results] == ["refund", "note"]
    again = run_scenario(load_scenario(path, import_roots=[tmp_path]))
    assert [r.text for r in again.trace.tool_results] == [r.text for r in result.trace.tool_results]


def test_schema_driven_names_declared_tools_only() -> None:
    from openprogram_testing.scenarios import parse_scenario

    with pytest.raises(ScenarioError) as info:
        parse_scenario("prompt: hi\nschema_driven: {tools: [ghost]}\n", "s.yaml")
    assert str(info.value) == (
        "s.yaml:2:25: schema_driven.tools[0]: schema_driven calls tool 'ghost', which is not "
        "declared in 'tools'"
    )


@pytest.mark.parametrize("command", ["validate", "run"])
def test_the_cli_import_root_option(tmp_path: Path, command: str) -> None:
    import os
    import subprocess
    import sys

    code = tmp_path / "code"
    (code / "clishop").mkdir(parents=True)
    (code / "clishop" / "__init__.py").write_text(
        "from openprogram import function\n\n\n@function\ndef ping() -> str:\n"
        '    """Answer."""\n    return "pong"\n'
    )
    scenarios = tmp_path / "scenarios"
    scenarios.mkdir()
    (scenarios / "scenario_ping.yaml").write_text(
        "prompt: hi\ntools: [{import: 'clishop:ping'}]\n"
        "script: [{calls: [{name: ping}]}, done]\nexpect: {tool_results: [{text: pong}]}\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "500", "NO_COLOR": "1"}

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "openprogram_testing.frontends.cli.main", command, *args],
            capture_output=True,
            text=True,
            timeout=300,
            env=env,
            cwd=tmp_path,
        )

    without = cli(str(scenarios))
    assert without.returncode == 1, without.stdout + without.stderr
    assert "scenario_ping.yaml:2:18: tools[0].import: cannot import 'clishop:ping'" in (
        without.stdout
    ), without.stdout
    found = cli("--import-root", "code", str(scenarios))
    assert found.returncode == 0, found.stdout + found.stderr
