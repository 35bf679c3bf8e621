"""One plugin surface: every pytest option in one module, every hook listed by module in
docs/architecture.md (grouped by concern), the fixtures' override points documented."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HARNESS = ROOT / "openprogram_testing"
OPTIONS = "openprogram_testing/frontends/pytest/options.py"


def option_sites(source: str) -> list[str]:
    """``line: what`` for each place ``source`` adds a pytest option or ini setting: a
    ``pytest_addoption`` hook, or a call of ``addoption``/``addini``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "pytest_addoption":
            found.append(f"{node.lineno}: def pytest_addoption")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("addoption", "addini")
        ):
            found.append(f"{node.lineno}: {node.func.attr}")
    return found


def test_every_option_is_registered_in_one_module() -> None:
    offenders = {
        rel: sites
        for f in sorted(HARNESS.rglob("*.py"))
        if (rel := f.relative_to(ROOT).as_posix()) != OPTIONS
        and (sites := option_sites(f.read_text(encoding="utf-8")))
    }
    assert offenders == {}, f"register these options in {OPTIONS}"
    assert option_sites((ROOT / OPTIONS).read_text(encoding="utf-8"))


def test_the_option_check_finds_an_option_added_elsewhere() -> None:
    planted = (
        "def pytest_addoption(parser):\n"
        "    parser.getgroup('x').addoption('--x')\n"
        "    parser.addini('x', 'help')\n"
    )
    assert option_sites(planted) == ["1: def pytest_addoption", "2: addoption", "3: addini"]
    assert option_sites("def pytest_configure(config):\n    config.getoption('--x')\n") == []


def hooks_in_code(is_hook: object) -> dict[str, set[str]]:
    """Module (path under openprogram_testing/) -> the pytest hooks it implements (functions
    and methods named as a hook ``is_hook`` knows)."""
    out: dict[str, set[str]] = {}
    for f in sorted(HARNESS.rglob("*.py")):
        tree = ast.parse(f.read_text(encoding="utf-8"))
        names = {
            n.name
            for n in ast.walk(tree)
            if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
            and n.name.startswith("pytest_")
            and is_hook(n.name)  # type: ignore[operator]
        }
        if names:
            out[f.relative_to(HARNESS).as_posix()] = names
    return out


def hooks_in_docs(text: str) -> dict[str, set[str]]:
    block = re.search(r"<!-- plugin-hooks -->\n```text\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no plugin-hooks list"
    out: dict[str, set[str]] = {}
    for line in block.group(1).splitlines():
        match = re.match(r"\s*(\S+\.py)\s+(.*)", line)
        if match:
            out[match.group(1)] = set(re.findall(r"pytest_\w+", match.group(2)))
    return out


def test_every_hook_is_listed_in_the_architecture(pytestconfig: pytest.Config) -> None:
    hook = pytestconfig.pluginmanager.hook

    def is_hook(name: str) -> bool:  # pytest-xdist's hooks whether or not it is loaded
        return hasattr(hook, name) or name.startswith("pytest_xdist_")

    documented = hooks_in_docs((ROOT / "docs" / "architecture.md").read_text(encoding="utf-8"))
    assert hooks_in_code(is_hook) == documented


def test_the_hook_list_check_sees_a_missing_hook() -> None:
    listed = hooks_in_docs(
        "<!-- plugin-hooks -->\n```text\na.py   pytest_configure, pytest_collect_file\n```\n"
    )
    assert listed == {"a.py": {"pytest_configure", "pytest_collect_file"}}
    assert listed != {"a.py": {"pytest_configure"}}


def test_the_override_points_are_documented() -> None:
    docs = (ROOT / "docs" / "testing-your-agent.md").read_text(encoding="utf-8")
    assert "op_cassette_dir" in docs and "op_record_mode" in docs
