"""A scenario's ``import:`` never loads a module through a link that leaves the project: a
package folder or module file inside an import root that is a symlink to somewhere else is a
positioned error, and the linked code never runs; modules that really live in the root load."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario

TOOL = (
    "from openprogram import function\n"
    "from pathlib import Path\n"
    "Path({marker!r}).write_text('ran')\n"
    "@function\n"
    "def add(a: int, b: int) -> int:\n"
    "    '''Add.'''\n"
    "    return a + b\n"
)


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Path, Path]:
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    yield project, elsewhere
    for name in list(sys.modules):
        if name.startswith(("linked_", "own_")):
            del sys.modules[name]


def _scenario(project: Path, module: str) -> Path:
    file = project / f"scenario_{module}.yaml"
    file.write_text(
        f"prompt: hi\ntools:\n  - import: {module}:add\nscript: [done]\n"
        "expect: {termination: completed}\n"
    )
    return file


@pytest.mark.parametrize("shape", ["package", "module"])
def test_a_linked_module_is_an_error_and_never_runs(layout: tuple[Path, Path], shape: str) -> None:
    project, elsewhere = layout
    marker = elsewhere / "ran.txt"
    name = f"linked_{shape}"
    if shape == "package":
        (elsewhere / "pkg").mkdir()
        (elsewhere / "pkg" / "__init__.py").write_text(TOOL.format(marker=str(marker)))
        (project / name).symlink_to(elsewhere / "pkg", target_is_directory=True)
    else:
        (elsewhere / "mod.py").write_text(TOOL.format(marker=str(marker)))
        (project / f"{name}.py").symlink_to(elsewhere / "mod.py")
    with pytest.raises(ScenarioError) as info:
        load_scenario(_scenario(project, name), import_roots=[project])
    message = str(info.value)
    assert "scenario_linked_" in message and "tools[0].import" in message, message
    assert "a link leads it outside" in message, message
    assert not marker.exists()  # its code never ran


def test_a_module_that_lives_in_the_root_loads(layout: tuple[Path, Path]) -> None:
    project, _ = layout
    marker = project / "ran.txt"
    (project / "own_tools.py").write_text(TOOL.format(marker=str(marker)))
    scenario = load_scenario(_scenario(project, "own_tools"), import_roots=[project])
    assert scenario is not None and marker.exists()
