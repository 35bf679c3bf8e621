"""Every code block in README.md and docs/*.md runs (or, for shell lines, names a real command).

- ``python`` blocks run in a fresh interpreter from the repository root; a block that defines
  ``test_*`` functions is a test file and runs under pytest (snapshots written, not compared: the
  pages' own tests compare the snapshots they show). A test file that needs live API keys is
  preceded by ``<!-- docs-test: collect -->`` and is collected (imports, fixtures and markers
  resolve) but not run.
- ``yaml`` blocks that hold a scenario (a ``prompt``/``prompts`` key) load and pass.
- ``bash`` lines calling ``python3 scripts/dev.py``, ``openprogram-testing`` or ``python -m bench``
  name a job, command or options that exist.
- ``text`` blocks and blocks without a language show output; they are not run.

Blocks preceded by ``<!-- docs-test: none -->`` are exempt; each such marker must say why
after a colon (``<!-- docs-test: none: needs a browser -->``) and the test counts them.
"""

from __future__ import annotations

import ast
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
_FENCE = re.compile(
    r"(?:<!-- docs-test: (?P<mark>[^>]*?) -->\s*\n)?```(?P<lang>[\w-]*)\n(?P<code>.*?)```", re.S
)


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    mark: str

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def _blocks() -> list[Block]:
    out = []
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            line = text.count("\n", 0, m.start("lang")) + 1
            rel = str(page.relative_to(ROOT))
            out.append(Block(rel, line, m.group("lang"), m.group("code"), m.group("mark") or ""))
    return out


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.lang == "python" and not b.mark.startswith("none")]
SCENARIOS = [
    b
    for b in BLOCKS
    if b.lang == "yaml" and re.search(r"(?m)^prompts?:", b.code) and not b.mark.startswith("none")
]
SHELL = [b for b in BLOCKS if b.lang in ("bash", "sh", "console")]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    # the worktree's code first (the suite may run from a checkout other than the installed one)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH", "")]))
    env.pop("CI", None)  # the property example's own profile, not the CI one: a docs example
    return env


def test_the_pages_have_code_blocks() -> None:
    assert len(PYTHON) >= 8
    for b in BLOCKS:
        if b.mark.startswith("none"):
            assert b.mark.count(":") >= 1 and len(b.mark.split(":", 1)[1].strip()) > 5, (
                f"{b.id}: an exempt block must say why"
            )


@pytest.mark.parametrize("block", PYTHON, ids=[b.id for b in PYTHON])
def test_python_block_runs(block: Block, tmp_path: Path) -> None:
    is_test_file = re.search(r"(?m)^(async )?def test_", block.code) is not None
    if not is_test_file:
        proc = subprocess.run(
            [sys.executable, "-c", block.code],
            cwd=ROOT,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"
        return
    test_file = tmp_path / f"test_docs_block_{block.line}.py"
    test_file.write_text(block.code, encoding="utf-8")
    # A downstream project's configuration: async tests run by pytest-asyncio in auto mode (see
    # docs/testing-your-agent.md for what the testing extra provides).
    ini = tmp_path / "pytest.ini"
    ini.write_text("[pytest]\nasyncio_mode = auto\nasyncio_default_fixture_loop_scope = function\n")
    args = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        str(test_file),
        "--rootdir",
        str(tmp_path),
        "-c",
        str(ini),
    ]
    if block.mark == "collect":
        args.append("--collect-only")
    else:
        args.append("--snapshot-update")
    proc = subprocess.run(
        args, cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=180
    )
    assert proc.returncode == 0, f"{block.id} failed:\n{proc.stdout}\n{proc.stderr}"
    if block.mark != "collect":
        assert re.search(r"\d+ passed", proc.stdout), proc.stdout


@pytest.mark.parametrize("block", SCENARIOS, ids=[b.id for b in SCENARIOS])
def test_yaml_scenario_block_passes(block: Block, tmp_path: Path) -> None:
    from openprogram_testing import load_scenario, run_scenario

    path = tmp_path / "scenario_docs.yaml"
    path.write_text(block.code, encoding="utf-8")
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text


def _bench_parser():  # type: ignore[no-untyped-def]
    sys.path.insert(0, str(ROOT))
    try:
        from bench.cli import _parser

        return _parser()
    finally:
        sys.path.remove(str(ROOT))


def _dev_jobs() -> tuple[str, ...]:
    """The jobs scripts/dev.py accepts: its ``JOBS``, read from the source."""
    tree = ast.parse((ROOT / "scripts" / "dev.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [ast.unparse(t) for t in node.targets] == ["JOBS"]:
            return tuple(ast.literal_eval(node.value))
    raise AssertionError("scripts/dev.py defines no JOBS")


def _check_shell_line(words: list[str]) -> None:
    while words and "=" in words[0] and not words[0].startswith("-"):
        words = words[1:]  # VAR=value prefixes
    if not words:
        return
    if words[:2] == ["python3", "scripts/dev.py"]:
        assert words[2] in _dev_jobs(), words
    elif words[0] == "openprogram-testing":
        from typer.testing import CliRunner

        from openprogram_testing.frontends.cli.main import app

        sub = [w for w in words[1:2] if not w.startswith("-")]
        result = CliRunner().invoke(app, [*sub, "--help"])
        assert result.exit_code == 0, f"`{' '.join(words)}`: {result.output}"
    elif words[:3] == ["python", "-m", "bench"]:
        flags = [w for w in words[3:] if not w.startswith("[")]
        _bench_parser().parse_args(flags)


@pytest.mark.parametrize("block", SHELL, ids=[b.id for b in SHELL])
def test_shell_lines_name_real_commands(block: Block) -> None:
    for raw in block.code.replace("\\\n", " ").splitlines():
        line = raw.split("  #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        words = shlex.split(line, comments=True)
        if words and words[0].endswith("python") and words[1:3] == ["-m", "bench"]:
            words = ["python", *words[1:]]
        _check_shell_line(words)
