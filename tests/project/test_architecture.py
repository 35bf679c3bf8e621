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
    allowed = {"openprogram_testing/judges/invariants.py"}  # one named check per rule, by design
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


def _imported_names(node: ast.AST, module: str, is_package: bool) -> set[str]:
    """What an import statement of ``module`` names: each module, and each ``from`` name as
    ``module.name`` (relative imports resolved); nothing for any other node."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names}
    if not isinstance(node, ast.ImportFrom):
        return set()
    if node.level:
        base = module.split(".")
        base = base if is_package else base[:-1]
        base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, node.module] if node.module else base)
    else:
        target = node.module or ""
    return {target, *(f"{target}.{a.name}" for a in node.names)}


def _runtime_imports(path: Path, module: str) -> set[str]:
    """Modules ``module`` imports when it runs: at module level and inside functions (a
    function-level import is still a dependency, only a later one), not under ``TYPE_CHECKING``
    (those never run)."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()

    def walk(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            out.update(_imported_names(child, module, is_package))
            walk(child)

    walk(ast.parse(path.read_text(encoding="utf-8")))
    return out


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph`` (module -> modules it imports), each as the path that closes it."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(m: str, path: list[str]) -> None:
        state[m] = 1
        for t in sorted(graph.get(m, ())):
            if state.get(t) == 1:
                cycles.append([*path[path.index(t) :], t] if t in path else [m, t])
            elif t not in state:
                visit(t, [*path, t])
        state[m] = 2

    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    return cycles


def _project_graph() -> dict[str, set[str]]:
    files = {_module_name(f): f for pkg in PACKAGES for f in (ROOT / pkg).rglob("*.py")}
    graph = {
        m: {t for t in _runtime_imports(f, m) if t in files and t != m} for m, f in files.items()
    }
    # a package's __init__ importing its own submodules is how packages work, not a cycle
    return {m: {t for t in ts if not t.startswith(m + ".")} for m, ts in graph.items()}


def test_no_import_cycles() -> None:
    assert import_cycles(_project_graph()) == []


def test_the_cycle_check_finds_a_planted_cycle(tmp_path: Path) -> None:
    """A cycle hidden in a function-level import is found; one under ``TYPE_CHECKING`` is not
    (it never runs)."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "a.py").write_text("from pkg.b import f\n")
    (pkg / "b.py").write_text("def f():\n    from .c import g\n    return g\n")
    (pkg / "c.py").write_text("def g():\n    from pkg import a\n    return a\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.e import x\n"
    )
    (pkg / "e.py").write_text("import pkg.d\nx = 1\n")  # d -> e only under TYPE_CHECKING
    graph = {
        f"pkg.{n}": {t for t in _runtime_imports(pkg / f"{n}.py", f"pkg.{n}") if t[4:5] in "abcde"}
        for n in "abcde"
    }
    graph = {m: {t for t in ts if t.count(".") == 1} for m, ts in graph.items()}
    assert import_cycles(graph) == [["pkg.a", "pkg.b", "pkg.c", "pkg.a"]]
    assert import_cycles({**graph, "pkg.c": set()}) == []


# -- lazy boundaries ---------------------------------------------------------------------------
# The only modules that import the project's own modules inside functions, each with its reason.
# Anywhere else an import is at module level, where the cycle and layer checks see it at once.
LAZY_BOUNDARIES: dict[str, str] = {
    # start-up of the pytest plugin: collection must not pay for SDKs, vcrpy, pydantic, yaml,
    # syrupy or the MCP extra; each fixture loads what it uses
    "openprogram_testing/frontends/pytest/plugin.py": "pytest plugin start-up",
    "openprogram_testing/frontends/report/pytest_plugin.py": "pytest plugin start-up",
    "openprogram_testing/frontends/scenarios/collect.py": "pytest plugin start-up (pydantic)",
    # start-up of the CLI: ``--help`` and each command load only what that command runs
    "openprogram_testing/frontends/cli/main.py": "CLI start-up",
    "openprogram_testing/frontends/cli/commands.py": "CLI start-up",
    # syrupy (an optional dependency): only when a scenario asks for a snapshot
    "openprogram_testing/frontends/scenarios/runner.py": "optional dependency (syrupy)",
    # pydantic (the scenario models): only when a generated example is exported as a scenario,
    # not whenever hypothesis strategies are imported
    "openprogram_testing/frontends/strategies/export.py": "pydantic only on export",
    # the mcp extra: the fake servers load without it; connecting needs it
    "openprogram_testing/transport/mcp/fake.py": "optional dependency (mcp extra)",
}


def function_level_imports(path: Path, module: str) -> list[str]:
    """``line: import`` for each import of the project's own modules inside a function of
    ``path`` (not under ``TYPE_CHECKING``)."""
    is_package = path.name == "__init__.py"
    found: list[str] = []

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and "TYPE_CHECKING" in ast.unparse(child.test):
                continue
            names = _imported_names(child, module, is_package) if in_function else set()
            if any(n.split(".")[0] in PACKAGES for n in names):
                found.append(f"{child.lineno}: {ast.unparse(child)}")
            inner = isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
            walk(child, in_function or inner)

    walk(ast.parse(path.read_text(encoding="utf-8")), False)
    return found


def test_function_level_imports_only_at_lazy_boundaries() -> None:
    offenders = [
        f"{rel}:{hit}"
        for pkg in PACKAGES
        for f in sorted((ROOT / pkg).rglob("*.py"))
        if (rel := f.relative_to(ROOT).as_posix()) not in LAZY_BOUNDARIES
        for hit in function_level_imports(f, _module_name(f))
    ]
    assert offenders == [], "import these at module level (or document a lazy boundary)"


def test_every_lazy_boundary_exists_and_is_documented() -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    missing = [rel for rel in LAZY_BOUNDARIES if not (ROOT / rel).is_file()]
    undocumented = [rel for rel in LAZY_BOUNDARIES if rel.split("/", 1)[1] not in doc]
    assert (missing, undocumented) == ([], [])


def test_the_lazy_boundary_check_finds_a_function_level_import(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "from typing import TYPE_CHECKING\n"
        "import json\n"
        "if TYPE_CHECKING:\n"
        "    from openprogram.types import Usage\n"
        "def f():\n"
        "    import json\n"
        "    from openprogram_testing.core.trace import LoopTrace\n"
        "    return LoopTrace\n"
    )
    assert function_level_imports(module, "m") == [
        "7: from openprogram_testing.core.trace import LoopTrace"
    ]


API_TABLE = "openprogram/providers/apis.py"
_API_SPELLINGS = {
    s
    for name in ("openai_chat", "openai_responses", "anthropic", "gemini", "bedrock", "openai")
    for s in (name, name.replace("_", "-"))
}
_ADAPTER_CLASSES = {
    "OpenAIChatProvider",
    "OpenAIResponsesProvider",
    "AnthropicProvider",
    "GeminiProvider",
    "BedrockProvider",
}
# Not tables of provider APIs: the Anthropic adapter's platforms (its SDK client per platform;
# ``bedrock`` there is a platform, not the Bedrock API).
_NOT_API_TABLES = {("openprogram/providers/anthropic.py", "_PLATFORMS")}


def _literal(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Constant):
        return True
    return isinstance(node, ast.Tuple | ast.List) and all(_literal(e) for e in node.elts)


def _second_api_tables(path: Path, rel: str) -> list[str]:
    """Dict literals in ``path`` of facts (literal values) keyed (or valued) by two or more API
    names or adapter classes: a table of provider APIs kept beside the one table.  A dict that
    dispatches to implementations (the wire formats, the fault mutations per API) is the code
    itself, not a second table."""
    found: list[str] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    targets: dict[int, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(node.value, ast.Dict) and isinstance(target, ast.Name):
                targets[id(node.value)] = target.id
    for node in ast.walk(tree):
        if not isinstance(node, ast.Dict):
            continue
        name = targets.get(id(node), f"line {node.lineno}")
        if (rel, name) in _NOT_API_TABLES:
            continue
        for side, other in ((node.keys, node.values), (node.values, node.keys)):
            strings = {n.value for n in side if isinstance(n, ast.Constant)}
            named = len(strings & _API_SPELLINGS) >= 2 or len(strings & _ADAPTER_CLASSES) >= 2
            if named and all(_literal(n) for n in other):
                found.append(f"{rel}: {name}")
                break
    return found


def test_facts_about_provider_apis_live_in_one_table() -> None:
    offenders = [
        table
        for pkg in PACKAGES
        for f in sorted((ROOT / pkg).rglob("*.py"))
        if (rel := f.relative_to(ROOT).as_posix()) != API_TABLE
        for table in _second_api_tables(f, rel)
    ]
    assert offenders == [], (
        f"tables of provider APIs beside {API_TABLE} (read the table instead): {offenders}"
    )


def test_the_second_table_check_finds_a_table(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('PATHS = {"openai_chat": "/v1/chat", "gemini": "/v1beta"}\n')
    assert _second_api_tables(module, "m.py") == ["m.py: PATHS"]
    module.write_text('ONE = {"anthropic": 1}\nX = {"a": "b"}\n')
    assert _second_api_tables(module, "m.py") == []


# -- layers ----------------------------------------------------------------------------------------
# The harness's layers, lowest first (docs/architecture.md draws them): each is a folder under
# openprogram_testing.  A module may import its own layer and those below, never one above.  The
# modules at the root are the front doors (the package and the import paths the docs teach): they
# re-export, and no module inside a layer imports them.
LAYERS: dict[str, tuple[str, ...]] = {
    "base": ("base", "_lazy"),
    "transport": ("transport",),
    "core": ("core",),
    "judges": ("judges",),
    "front ends": ("frontends",),
}
FRONT_DOORS = ("__init__", "cassettes", "emulator", "mcp", "report", "scenarios", "strategies")
# Known exceptions, each with its reason.
LAYER_EXCEPTIONS = {
    # run_exec(check_invariants=True) checks the tree it built: a convenience of the public API
    ("core.tree", "judges.invariants"),
}
_RANK = {name: rank for rank, names in enumerate(LAYERS.values()) for name in names}


def _layer(module: str) -> int | None:
    """The rank of a module (``None``: a package's ``__init__`` re-exporting its parts, or
    unplaced)."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        rank = _RANK.get(".".join(parts[:n]))
        if rank is not None:
            return rank
    return None


def _all_harness_imports(path: Path, module: str) -> set[str]:
    """Every harness module ``module`` imports, anywhere in it (at the top, inside functions,
    under ``TYPE_CHECKING``): a lazy import is still a dependency."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        out |= _imported_names(node, module, is_package)
    return {
        t.removeprefix("openprogram_testing.") for t in out if t.startswith("openprogram_testing.")
    }


def layer_violations(graph: dict[str, set[str]]) -> list[str]:
    """Imports of ``graph`` (module -> modules it imports, names under openprogram_testing)
    that go up a layer."""
    names = list(LAYERS)
    found: list[str] = []
    for module, targets in sorted(graph.items()):
        mine = _layer(module)
        if mine is None or module.endswith("__init__"):
            continue
        for target in sorted(targets):
            theirs = _layer(target)
            if theirs is None or theirs <= mine:
                continue
            if any(
                module == m and (target == t or target.startswith(t + "."))
                for m, t in LAYER_EXCEPTIONS
            ):
                continue
            found.append(f"{module} ({names[mine]}) imports {target} ({names[theirs]})")
    return found


def _harness_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for f in (ROOT / "openprogram_testing").rglob("*.py"):
        module = _module_name(f)
        if f.name == "__init__.py":
            continue  # a package's front: re-exports what its parts define
        short = module.removeprefix("openprogram_testing.")
        graph[short] = _all_harness_imports(f, module)
    return graph


def test_every_harness_module_is_in_a_layer_folder_or_a_front_door() -> None:
    unplaced = sorted(m for m in _harness_graph() if _layer(m) is None and m not in FRONT_DOORS)
    assert unplaced == [], f"modules in no layer folder (move them into one): {unplaced}"


def test_the_root_holds_the_front_doors_and_the_layer_folders() -> None:
    root = ROOT / "openprogram_testing"
    modules = {f.stem for f in root.glob("*.py")}
    folders = {d.name for d in root.iterdir() if (d / "__init__.py").exists()}
    assert modules == {*FRONT_DOORS, "_lazy"}, modules
    assert folders == {"base", "transport", "core", "judges", "frontends"}, folders


def test_no_layer_module_imports_a_front_door() -> None:
    """Inside the layers a name is imported from the module that defines it, so every
    dependency is visible to the layer check (a front door would hide it)."""
    doors = set(FRONT_DOORS) - {"__init__"}
    graph = _harness_graph()
    offenders = sorted(
        f"{m} imports {t}"
        for m, ts in graph.items()
        if m not in FRONT_DOORS
        for t in ts
        if t in doors or t == ""
    )
    assert offenders == []


def test_the_layers_import_downwards() -> None:
    assert layer_violations(_harness_graph()) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    planted = {
        "transport.cassettes.session": {"core.trace"},  # transport -> core
        "core.trace": {"judges.assertions"},  # core -> judges
        "judges.invariants": {"frontends.report.html"},  # judges -> front ends
        "frontends.report.html": {"core.trace", "transport.wire.base"},  # downwards: fine
        "base.paths": {"transport.faults"},  # base -> transport
    }
    assert layer_violations(planted) == [
        "base.paths (base) imports transport.faults (transport)",
        "core.trace (core) imports judges.assertions (judges)",
        "judges.invariants (judges) imports frontends.report.html (front ends)",
        "transport.cassettes.session (transport) imports core.trace (core)",
    ]


def test_the_report_never_imports_the_collector() -> None:
    graph = _harness_graph()
    offenders = [
        m
        for m in graph
        if m.startswith("frontends.report.") and "frontends.scenarios.collect" in graph[m]
    ]
    assert offenders == []
