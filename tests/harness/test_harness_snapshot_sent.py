"""What the model was sent is in the snapshot: each run's ``sent`` line (system prompt, offered
tool names, ``tool_choice``, schema digest), so a changed prompt or menu never leaves a trace
snapshot byte-identical; a snapshot of the old format fails saying to re-write it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram import Registry, Runtime, function
from openprogram_testing import ScriptedProvider, call, render_snapshot, run_exec_sync, turn
from openprogram_testing.core.model_input import schema_digest
from openprogram_testing.core.render import SNAPSHOT_FORMAT, snapshot_format_problem
from openprogram_testing.core.trace import run_loop_sync
from openprogram_testing.judges.snapshot import TraceSnapshotExtension
from openprogram_testing.scenarios import load_scenario, run_scenario
from tests.runtime._agents import register_answers, research_agent, research_script

pytest_plugins = ["pytester"]


def _tool(name: str, description: str = "Look it up.") -> dict[str, Any]:
    return {
        "spec": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
        },
        "execute": lambda args: "found",
    }


def _loop_snapshot(
    *, system: str | None = "Be brief.", tools: list[Any] | None = None, choice: Any = "auto"
) -> str:
    """The same scripted answers whatever the request: only what was sent can differ."""
    provider = ScriptedProvider([turn(call("lookup", {"q": "a"})), "done"])
    tools = [_tool("lookup"), _tool("other")] if tools is None else tools
    trace = run_loop_sync(provider, "go", tools=tools, system_prompt=system, tool_choice=choice)
    provider.assert_complete()
    return render_snapshot(trace)


def test_the_same_run_renders_the_same_snapshot() -> None:
    assert _loop_snapshot() == _loop_snapshot()
    assert f"# openprogram trace v{SNAPSHOT_FORMAT}:" in _loop_snapshot()


@pytest.mark.parametrize(
    "change",
    [
        {"system": "Be thorough."},
        {"system": None},
        {"tools": [_tool("lookup")]},  # a tool dropped from the menu
        {"tools": [_tool("other"), _tool("lookup")]},  # the menu reordered
        {"tools": [_tool("lookup", "Look it up fast."), _tool("other")]},  # a schema changed
        {"choice": "required"},
        {"choice": "none"},
        {"choice": {"type": "function", "name": "lookup"}},
    ],
    ids=lambda c: next(iter(c)) + "=" + repr(next(iter(c.values())))[:24],
)
def test_a_changed_request_changes_the_loop_snapshot(change: dict[str, Any]) -> None:
    before, after = _loop_snapshot(), _loop_snapshot(**change)
    assert before != after
    changed = [b for a, b in zip(before.splitlines(), after.splitlines(), strict=False) if a != b]
    assert changed and all(line.lstrip().startswith("sent ") for line in changed), changed


def test_a_change_past_the_clipped_system_prompt_still_shows() -> None:
    long = "x" * 400
    assert _loop_snapshot(system=long + "a") != _loop_snapshot(system=long + "b")


def _registry() -> Registry:
    registry = Registry()

    @function(registry=registry)
    def lookup(q: str) -> str:
        """Look it up."""
        return "found"

    @function(registry=registry)
    def refund(order: int) -> str:
        """Refund an order."""
        return "refunded"

    return registry


def _exec_snapshot(system: str | None = "Be brief.", **exec_options: Any) -> str:
    provider = ScriptedProvider([turn(call("lookup", {"q": "a"})), "done"])
    runtime = Runtime(provider, "m", registry=_registry(), system_prompt=system)
    options = {"toolset": "full", "tool_choice": "required", **exec_options}
    tree = run_exec_sync(runtime, "go", **options)
    provider.assert_complete()
    return render_snapshot(tree)


@pytest.mark.parametrize(
    "change",
    [
        {"system": "Be thorough."},
        {"tools_deny": ["refund"]},
        {"tool_choice": "none"},
        {"tool_choice": "auto"},
    ],
    ids=lambda c: next(iter(c)),
)
def test_a_changed_request_changes_the_exec_snapshot(change: dict[str, Any]) -> None:
    before, after = _exec_snapshot(), _exec_snapshot(**change)
    assert before != after
    assert _exec_snapshot() == before


def test_every_run_of_a_tree_has_its_own_sent_line() -> None:
    registry, tools = research_agent()
    provider = ScriptedProvider(research_script((0, 1), (1, 1)))
    tree = run_exec_sync(Runtime(provider, "m", registry=registry), "go", tools=tools)
    snap = render_snapshot(tree)
    sent = [line.strip() for line in snap.splitlines() if line.strip().startswith("sent ")]
    assert len(sent) == len(tree.runs) == 2
    outer, inner = (node.trace.model_input for node in tree.walk())
    assert outer is not None and inner is not None
    assert f"tools=[{', '.join(outer.tool_names)}]" in sent[0]
    assert f"tools=[{', '.join(inner.tool_names)}]" in sent[1]


def test_a_choices_ask_records_the_choose_menu() -> None:
    registry = Registry()
    approve, reject = register_answers(registry, approve="approved", reject="rejected")
    provider = ScriptedProvider(["work done", turn(call("choose", {"choice": "approve"}))])
    runtime = Runtime(provider, "m", registry=registry, system_prompt="Decide.")
    tree = run_exec_sync(runtime, "go", tools=[], choices=[approve, reject])
    ask = tree[":choices"].trace.model_input
    assert ask is not None
    assert ask.tool_names == ("choose",) and ask.system_prompt == "Decide."
    assert ask.tool_choice == {"type": "function", "name": "choose"}


def test_a_schema_too_deep_for_json_still_has_a_digest() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):
        deep = {"type": "object", "properties": {"x": deep}}
    other: dict[str, Any] = {"type": "integer"}
    for _ in range(5_000):
        other = {"type": "object", "properties": {"x": other}}
    one = schema_digest([{"name": "t", "parameters": deep}])
    assert one == schema_digest([{"name": "t", "parameters": deep}])
    assert one != schema_digest([{"name": "t", "parameters": other}])


OLD = "# openprogram trace v1: cap=50 steering_mode=skip\nagent_start\n"


def test_an_old_format_snapshot_says_to_update_not_a_diff() -> None:
    problem = snapshot_format_problem(OLD)
    assert problem is not None
    assert "v1" in problem and f"v{SNAPSHOT_FORMAT}" in problem and "--snapshot-update" in problem
    lines = list(TraceSnapshotExtension().diff_lines(_loop_snapshot(), OLD))
    assert lines == [problem]  # the one thing to do, no line-by-line diff
    assert snapshot_format_problem(_loop_snapshot()) is None
    assert snapshot_format_problem("plain text a test stored") is None  # compared as usual


def test_an_old_format_snapshot_fails_under_pytest_with_the_update_hint(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_old="""
from openprogram_testing import ScriptedProvider, run_loop_sync

def test_x(trace_snapshot):
    assert trace_snapshot == run_loop_sync(ScriptedProvider(["hi"]), "hello")
"""
    )
    stored = pytester.path / "__snapshots__" / "test_old" / "test_x.trace.txt"
    stored.parent.mkdir(parents=True)
    stored.write_text(OLD + "turn_start round 0\n", encoding="utf-8")
    args = (
        *("-p", "no:randomly", "-p", "no:cacheprovider", "-n", "0"),
        *("-o", "asyncio_default_fixture_loop_scope=function"),
    )
    result = pytester.runpytest_subprocess(*args)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*trace format v1*v2*--snapshot-update*"])
    assert "- turn_start round 0" not in result.stdout.str()
    pytester.runpytest_subprocess(*args, "--snapshot-update").assert_outcomes(passed=1)
    assert stored.read_text(encoding="utf-8").startswith(f"# openprogram trace v{SNAPSHOT_FORMAT}")
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=1)


def test_a_scenario_with_an_old_format_snapshot_says_to_update(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(
        "name: old\nprompt: hi\nscript:\n  - text: hello\nexpect:\n  snapshot: true\n",
        encoding="utf-8",
    )
    scenario = load_scenario(path)
    assert run_scenario(scenario, update_snapshots=True).passed
    (stored,) = tmp_path.glob("__snapshots__/*/*.trace.txt")
    stored.write_text(OLD, encoding="utf-8")
    result = run_scenario(scenario)
    assert not result.passed
    (failure,) = result.failures
    assert "trace format v1" in failure and "update_snapshots=True" in failure
    assert "@@" not in failure  # not a diff
