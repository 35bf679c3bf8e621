"""The module map in docs/architecture.md matches the tree, and the dependency rules hold."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("openprogram", "openprogram_testing")


def _map_entries() -> set[str]:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    block = re.search(r"<!-- module-map -->\n```text\n(.*?)```", text, re.S)
    assert block, "docs/architecture.md has no module map"
    entries: set[str] = set()
    stack: list[tuple[int, str]] = []
    for line in block.group(1).splitlines():
        match = re.match(r"( *)(\S+)", line)
        if not match or not (match.group(2).endswith((".py", "/"))):
            continue
        indent, name = len(match.group(1)), match.group(2)
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = "".join(p for _, p in stack) + name
        entries.add(path)
        if name.endswith("/"):
            stack.append((indent, name))
    return entries


def _tree() -> set[str]:
    out: set[str] = set()
    for pkg in PACKAGES:
        out.add(f"{pkg}/")
        for f in (ROOT / pkg).rglob("*.py"):
            rel = f.relative_to(ROOT).as_posix()
            if f.name == "__init__.py" and f.parent != ROOT / pkg:
                out.add(rel.removesuffix("__init__.py"))
            else:
                out.add(rel)
    return out


def test_the_module_map_matches_the_tree() -> None:
    mapped = {e for e in _map_entries() if e.startswith(PACKAGES)}
    tree = _tree()
    assert not tree - mapped, (
        f"modules missing from docs/architecture.md's map: {sorted(tree - mapped)}"
    )
    assert not mapped - tree, (
        f"docs/architecture.md maps modules that do not exist: {sorted(mapped - tree)}"
    )


def _imports(path: Path) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def test_the_runtime_never_imports_the_harness() -> None:
    offenders = [
        str(f.relative_to(ROOT))
        for f in (ROOT / "openprogram").rglob("*.py")
        if any(n.split(".")[0] == "openprogram_testing" for n in _imports(f))
    ]
    assert offenders == []


def test_no_module_is_much_over_650_lines() -> None:
    allowed = {"openprogram_testing/invariants.py"}  # one named check per rule, by design
    long = {
        f.relative_to(ROOT).as_posix(): n
        for pkg in PACKAGES
        for f in (ROOT / pkg).rglob("*.py")
        if (n := len(f.read_text(encoding="utf-8").splitlines())) > 700
    }
    assert set(long) <= allowed, long


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(path: Path, module: str) -> set[str]:
    """Modules imported when ``module`` is imported (module level, not under TYPE_CHECKING)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
            else:
                target = node.module or ""
            out.add(target)
            out.update(f"{target}.{a.name}" for a in node.names)
    return out


def test_no_import_cycles() -> None:
    files = {_module_name(f): f for pkg in PACKAGES for f in (ROOT / pkg).rglob("*.py")}
    graph = {
        m: {t for t in _top_level_imports(f, m) if t in files and t != m} for m, f in files.items()
    }
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    for m in graph:
        graph[m] = {t for t in graph[m] if not t.startswith(m + ".")}
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph[m]):
            if state.get(t) == 1:
                cycles.append([*path[path.index(t) :], t] if t in path else [m, t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []
