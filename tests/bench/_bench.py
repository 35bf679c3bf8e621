"""Helpers for the tests that run the benchmark harness (``python -m bench``) in smoke mode."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from bench import cli  # importable wherever ``tests`` is: both sit at the repository root


def smoke_results(tmp_path: Path, workloads: str) -> dict[str, Any]:
    """Run the harness in smoke mode (tiny counts, no subprocesses, quiet) over ``workloads``
    (comma-separated names), check that it exits 0, and return the results it wrote."""
    out = tmp_path / "results.json"
    code = cli.main(
        ["--smoke", "--no-subprocess", "--workloads", workloads, "--output", str(out), "--quiet"]
    )
    assert code == 0
    results: dict[str, Any] = json.loads(out.read_text())
    return results
