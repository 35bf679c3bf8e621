"""``expect.spans``: a scenario holds its runs' OpenTelemetry span tree, fails naming both
trees when they differ, and refuses a tree of the wrong shape when it loads."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")

from openprogram_testing.scenarios import ScenarioError, load_scenario, run_scenario

SCENARIO = """
prompt: hi
tools: [{name: t, returns: ok}]
script:
  - calls: [{name: t}]
  - done
expect:
  spans:
"""


def write(tmp_path: Path, spans: str) -> Path:
    path = tmp_path / "scenario_spans.yaml"
    path.write_text(SCENARIO + spans)
    return path


def test_the_span_tree_a_scenario_expects_holds(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "    - invoke_agent: [chat test-model, execute_tool t, chat test-model]\n",
    )
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text


def test_a_different_span_tree_fails_showing_both(tmp_path: Path) -> None:
    path = write(tmp_path, "    - invoke_agent: [chat test-model, chat test-model]\n")
    result = run_scenario(load_scenario(path))
    assert not result.passed
    (failure,) = result.failures
    assert failure == (
        "expect.spans: the runs' span tree differs\n"
        "  expected:\n"
        "    invoke_agent\n"
        "      chat test-model\n"
        "      chat test-model\n"
        "  got:\n"
        "    invoke_agent\n"
        "      chat test-model\n"
        "      execute_tool t\n"
        "      chat test-model"
    )


@pytest.mark.parametrize(
    "spans",
    [
        "    - {invoke_agent: [], chat: []}\n",
        "    - invoke_agent: chat\n",
        "    - 3\n",
    ],
)
def test_a_span_tree_of_the_wrong_shape_is_refused_when_it_loads(
    tmp_path: Path, spans: str
) -> None:
    with pytest.raises(ScenarioError, match="spans"):
        load_scenario(write(tmp_path, spans))
