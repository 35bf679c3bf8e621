"""The harness modules' shape: no import cycles (type-only imports included), the invariant
checks in their own module."""

from __future__ import annotations

import ast
from pathlib import Path

import openprogram_testing

PACKAGE = Path(openprogram_testing.__file__).parent


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set[str]:
    """Harness modules imported by ``path`` anywhere in it (also inside functions and
    ``TYPE_CHECKING`` blocks: a cycle there still ties the two modules together)."""
    me = _module_name(path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            if target.startswith("openprogram_testing"):
                out.add(target)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("openprogram_testing"))
    return out


def _graph() -> dict[str, set[str]]:
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        deps = set()
        for target in _imports(path):
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and target != "openprogram_testing":
                deps.add(target)
        graph[name] = deps
    return graph


def _reaches(graph: dict[str, set[str]], start: str, goal: str) -> bool:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node == goal:
            return True
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return False


MINE = (
    "openprogram_testing.core.trace",
    "openprogram_testing.core.render",
    "openprogram_testing.core.steering",
    "openprogram_testing.judges.assertions",
    "openprogram_testing.judges.invariants",
    "openprogram_testing.judges.snapshot",
    "openprogram_testing.transport.scripted",
    "openprogram_testing.frontends.pytest.plugin",
)


def test_the_trace_modules_import_no_cycle() -> None:
    graph = _graph()
    cyclic = [m for m in MINE if m in graph and _reaches(graph, m, m)]
    assert cyclic == [], {m: sorted(graph[m]) for m in cyclic}


def test_render_does_not_import_trace() -> None:
    assert "openprogram_testing.core.trace" not in _graph()["openprogram_testing.core.render"]


def test_the_invariant_checks_live_in_their_own_module() -> None:
    source = (PACKAGE / "judges" / "assertions.py").read_text(encoding="utf-8")
    assert "def _inv" not in source and "Violation(" not in source
    names = [n.name for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef)]
    assert all(n.startswith(("assert_", "_")) for n in names), names
