"""With only ``openprogram`` and ``pytest`` installed, the plugin loads and a project's tests run
normally; a fixture that needs the testing extra fails its own test with the install line.

The missing extra is simulated by putting ``None`` in ``sys.modules`` for each of its packages
(and the SDKs) before pytest starts, with plugin autoloading off so no other installed plugin
(syrupy, hypothesis, pytest-recording) loads; ``tests/harness/test_harness_wheel.py`` repeats the
trivial case in a real fresh virtualenv.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from openprogram_testing.base.extras import INSTALL_LINE

BLOCKED = (
    "yaml",
    "vcr",
    "syrupy",
    "hypothesis",
    "rich",
    "typer",
    "httpx",
    "openai",
    "anthropic",
    "boto3",
    "botocore",
    "pytest_asyncio",
)

LAUNCH = (
    "import sys\n"
    f"for name in {BLOCKED!r}:\n"
    "    sys.modules[name] = None  # import fails as if the package were not installed\n"
    "import pytest\n"
    "sys.exit(pytest.main(sys.argv[1:]))\n"
)

PROJECT = {
    "test_plain.py": """
        import pytest

        def test_arithmetic():
            assert 1 + 1 == 2

        @pytest.mark.op_no_invariants
        @pytest.mark.allow_model_requests
        def test_harness_markers_are_registered():
            pass
    """,
    "test_light_harness.py": """
        from openprogram import function
        from openprogram_testing import assert_terminated, call, turn

        @function
        def add(a: int, b: int) -> int:
            return a + b

        def test_loop_runner(scripted_provider, loop_runner):
            scripted_provider.add(turn(call("add", {"a": 1, "b": 2})), "3")
            trace = loop_runner("add", tools=[add])
            assert_terminated(trace, "completed")
            assert trace.final_text == "3"

        async def test_async_without_any_async_plugin(scripted_provider, loop_runner):
            import asyncio

            await asyncio.sleep(0)
            scripted_provider.add("async")
            assert (await loop_runner.arun("hi")).final_text == "async"

        async def test_async_failure_is_reported():
            assert 1 == 2, "async tests fail like sync ones"
    """,
    "test_needs_extra.py": """
        def test_uses_a_cassette(cassette):
            pass

        def test_uses_a_snapshot(trace_snapshot):
            pass
    """,
}


def _run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    for name, body in PROJECT.items():
        (tmp_path / name).write_text(textwrap.dedent(body), encoding="utf-8")
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1", "NO_COLOR": "1"}
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-c", LAUNCH, "-p", "openprogram_testing.frontends.pytest.plugin", *args]
    return subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False
    )


def test_the_plugin_loads_and_runs_a_projects_tests_without_the_extra(tmp_path: Path) -> None:
    result = _run(tmp_path, "-q", "--strict-markers", "-rA")
    out = result.stdout + result.stderr
    assert "Error while loading plugin" not in out and "INTERNALERROR" not in out, out
    assert "1 failed, 4 passed, 2 errors" in out, out
    assert "async tests fail like sync ones" in out
    assert "PASSED test_light_harness.py::test_async_without_any_async_plugin" in out
    assert result.returncode == 1, out
    # each failing test says what to install, and only those two fail
    assert (
        "the `cassette` fixture needs the testing extra (PyYAML, vcrpy not installed); "
        f"install it with: {INSTALL_LINE}"
    ) in out, out
    assert (
        f"the `trace_snapshot` fixture needs the testing extra (syrupy not installed); "
        f"install it with: {INSTALL_LINE}"
    ) in out, out
    assert "ERROR test_needs_extra.py::test_uses_a_cassette" in out
    assert "PASSED test_light_harness.py::test_loop_runner" in out
    assert "ModuleNotFoundError" not in out and "Traceback" not in out, out


def test_options_register_without_the_extra(tmp_path: Path) -> None:
    result = _run(tmp_path, "--help")
    assert result.returncode == 0, result.stderr
    assert "--openprogram-record-mode" in result.stdout
    assert "--openprogram-no-invariants" in result.stdout
    markers = _run(tmp_path, "--markers")
    assert "op_cassette(name=None" in markers.stdout and "allow_model_requests" in markers.stdout
