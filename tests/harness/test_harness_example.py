"""The example downstream project (``examples/city_agent``) passes its own tests, here and, in CI,
from the built wheel in a fresh virtualenv with the documented extras; a second fresh virtualenv
with ``openprogram`` alone runs a trivial pytest file (the plugin loads without the extra)."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openprogram_testing.base.extras import INSTALL_LINE

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "city_agent"
IN_CI = bool(os.environ.get("CI") or os.environ.get("OPENPROGRAM_WHEEL_TEST"))


def _clean_env() -> dict[str, str]:
    """This process's environment without what would leak into the child pytest (our own
    PYTHONPATH, an xdist worker's PYTEST_* variables)."""
    return {
        k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("PYTEST_")
    }


def _copy_example(tmp_path: Path) -> Path:
    target = tmp_path / "city_agent"
    shutil.copytree(EXAMPLE, target, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    return target


def _pytest(python: str | Path, cwd: Path, env: dict[str, str], *args: str) -> str:
    result = subprocess.run(
        [str(python), "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return f"exit={result.returncode}\n{result.stdout}\n{result.stderr}"


def test_the_example_project_passes_its_own_tests(tmp_path: Path) -> None:
    project = _copy_example(tmp_path)
    env = {**_clean_env(), "PYTHONPATH": str(ROOT)}
    out = _pytest(sys.executable, project, env, "-p", "no:randomly")
    # 3 of them in tests/test_properties.py, 1 in tests/test_approvals.py, 2 YAML scenarios (the
    # real tools; the nested agent), 5 in tests/test_mcp.py (the forecast service: fake, failing,
    # real in-process, its listing, replayed from an MCP cassette beside a provider cassette;
    # skipped where the mcp extra is not installed, as in `dev.py deps lowest-core`)
    counts = "16 passed" if importlib.util.find_spec("mcp") else "11 passed, 1 skipped"
    assert "exit=0" in out and counts in out, out
    assert "1 snapshot passed" in out, out  # compared with the committed snapshot, not rewritten
    assert "warning" not in out.lower(), out  # a user copying the example sees a clean run


def documented_requirement(extras: str, doc: str = "testing-your-agent.md") -> str:
    """The requirement exactly as ``docs/{doc}``'s install block spells it."""
    text = (ROOT / "docs" / doc).read_text(encoding="utf-8")
    match = re.search(rf'pip install "([^"\[]+\[{re.escape(extras)}\])"', text)
    assert match, f"docs/{doc} has no install line with [{extras}]"
    return match.group(1)


def _venv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=120)
    return path / "bin" / "python"


def _pip(python: Path, env: dict[str, str], *args: str) -> None:
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *args],
        check=True,
        timeout=600,
        capture_output=True,
        env=env,
    )


@pytest.mark.skipif(not IN_CI, reason="installs the built wheel (CI, or OPENPROGRAM_WHEEL_TEST=1)")
def test_the_built_wheel_in_fresh_virtualenvs(tmp_path: Path) -> None:
    # Build from a copy of the sources, so the build leaves nothing in the checkout.
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    for package in ("openprogram", "openprogram_testing"):
        shutil.copytree(ROOT / package, src / package, ignore=shutil.ignore_patterns("__pycache__"))
    # At the versions the lock pins (the build's setuptools too, which only PIP_CONSTRAINT
    # reaches): a new upstream release must not turn CI red without a commit.
    env = {**_clean_env(), "PIP_CONSTRAINT": str(ROOT / "requirements" / "dev.txt")}
    dist = tmp_path / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(dist), str(src)],
        check=True,
        timeout=300,
        capture_output=True,
        env=env,
    )
    (wheel,) = dist.glob("openprogram_loop-*.whl")

    # 1. the documented install line, verbatim, finding the wheel by its name in a local folder
    #    (the package index has no such distribution), then the example project's tests (not
    #    editable: the wheel)
    full = _venv(tmp_path / "full")
    _pip(full, env, "--find-links", str(dist), documented_requirement("testing,openai"))
    # the example's forecast service is an MCP server: the extra as docs/mcp.md spells it
    _pip(full, env, "--find-links", str(dist), documented_requirement("mcp", "mcp.md"))
    project = _copy_example(tmp_path)
    out = _pytest(full, project, env)
    assert "exit=0" in out and "1 snapshot passed" in out, out
    assert "warning" not in out.lower(), out
    assert re.search(r"\b\d+ passed", out) and not re.search(r"\d+ (failed|error)", out), out
    where = subprocess.run(
        [str(full), "-c", "import openprogram_testing; print(openprogram_testing.__file__)"],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=tmp_path,
    ).stdout
    assert str(tmp_path / "full") in where  # the installed wheel, not this checkout

    # 2. openprogram alone (and pytest): the plugin loads; a harness fixture that needs the
    #    extra fails its own test with the install line
    bare = _venv(tmp_path / "bare")
    _pip(
        bare,
        env,
        "--find-links",
        str(dist),
        documented_requirement("testing").split("[")[0],
        "pytest",
    )
    trivial = tmp_path / "trivial"
    trivial.mkdir()
    (trivial / "test_trivial.py").write_text(
        textwrap.dedent(
            """
            from openprogram_testing import ScriptedProvider, run_loop_sync

            def test_arithmetic():
                assert 1 + 1 == 2

            def test_scripted(loop_runner, scripted_provider):
                scripted_provider.add("hi")
                assert loop_runner("hello").final_text == "hi"

            async def test_async(scripted_provider, loop_runner):
                scripted_provider.add("hi")
                assert (await loop_runner.arun("hello")).final_text == "hi"

            def test_needs_the_extra(cassette):
                pass
            """
        ),
        encoding="utf-8",
    )
    out = _pytest(bare, trivial, env, "-rE")
    assert "3 passed, 1 error" in out, out
    assert INSTALL_LINE in out and "Error while loading plugin" not in out, out
