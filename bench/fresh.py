"""Measurements in fresh interpreters: import time, peak RSS, and W7 (concurrent runs)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from .common import BenchError, summarize
from .frameworks import MODULES

ROOT = Path(__file__).resolve().parent.parent

_IMPORT_CODE = """
import json, sys, time
t, c = time.perf_counter(), time.process_time()
import {module}
wall, cpu = (time.perf_counter() - t) * 1000, (time.process_time() - c) * 1000
sdks = sorted(m for m in ("openai", "anthropic") if m in sys.modules)
print(json.dumps({{"wall": wall, "cpu": cpu, "sdks": sdks}}))
"""

IMPORTS = {
    "openprogram": "openprogram",
    "openprogram_testing": "openprogram_testing",
    "pydantic-ai": "pydantic_ai",
    "openai-agents": "agents",
    "langgraph": "langgraph.prebuilt",
}
"""What ``import`` is timed for each row: ours, then the peers' top-level packages."""


def _python(args: list[str], timeout: float = 300) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout
    )
    if proc.returncode != 0:
        raise BenchError(f"{' '.join(args[:3])} failed:\n{proc.stderr.strip()[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def import_times(names: list[str], repeats: int, clock: str = "wall") -> dict[str, Any]:
    """Median/min/max ms to import each package in a fresh interpreter (``-I``; one discarded
    warm-up start compiles bytecode), by ``clock`` (``wall`` or ``cpu``; the other is kept as
    ``other_clock_median``).  Fails if ``import openprogram`` pulls in a provider SDK."""
    other = "cpu" if clock == "wall" else "wall"
    out: dict[str, Any] = {}
    for name in names:
        module = IMPORTS[name]
        code = _IMPORT_CODE.format(module=module)
        _python(["-I", "-c", code])
        runs = [_python(["-I", "-c", code]) for _ in range(repeats)]
        sdks = sorted({s for r in runs for s in r["sdks"]})
        if name == "openprogram" and sdks:
            raise BenchError(f"import openprogram imported provider SDKs: {', '.join(sdks)}")
        out[name] = {
            **summarize([r[clock] for r in runs]).as_dict(),
            f"{other}_median": summarize([r[other] for r in runs]).median,
            "sdks_imported": sdks,
        }
    return out


def peak_rss(names: list[str], runs: int, tool_rounds: int) -> dict[str, Any]:
    """Peak RSS (MiB) of a fresh interpreter that imported one configuration and ran ``runs``
    short runs; also the peak right after the import, to separate import cost from run cost."""
    out: dict[str, Any] = {}
    for name in names:
        if name not in MODULES:
            raise ValueError(name)
        r = _python(["-m", "bench._child", "rss", name, str(runs), str(tool_rounds)])
        out[name] = {
            "median": r["peak_kib"] / 1024,
            "min": r["peak_kib"] / 1024,
            "max": r["peak_kib"] / 1024,
            "n": 1,
            "after_import": r["import_peak_kib"] / 1024,
        }
    return out


def concurrent_runs(names: list[str], settings: dict[str, Any], clock: str) -> dict[str, Any]:
    """W7 for each configuration in its own fresh interpreter, which imports only that
    configuration.

    W7 measures what runs in flight cost the cyclic collector.  A full collection walks every
    tracked object of the process, so in the benchmark's own process (every peer imported, about
    nine times the objects openprogram's process holds) each one cost several times more, and the
    row measured which frameworks the benchmark had imported rather than the runtime
    (``docs/decisions.md``, "Concurrent runs and the collector")."""
    out: dict[str, Any] = {}
    for name in names:
        if name not in MODULES:
            raise ValueError(name)
        out[name] = _python(["-m", "bench._child", "w7", name, clock, json.dumps(settings)])
    return out
