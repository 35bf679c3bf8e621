"""W10: a suite of YAML scenarios run three ways, side by side, in fresh interpreters.

The suite is ``n`` copies of one bundled scenario (steering after the first of two tool calls
skips the second; every kind of expectation a scenario checks: termination, model calls, tool
results, deliveries, request roles and the whole event order), generated in a temporary
folder, and the same ``n`` runs written as plain pytest tests through the ``loop_runner``
fixture making the same checks.  Each sample runs, in rotation:

- ``openprogram-testing run DIR`` (the command: file discovery, pytest, the terminal report);
- ``pytest DIR`` (the plugin's YAML collector alone);
- ``pytest test_suite.py`` (``n`` parametrized ``loop_runner`` tests: the floor a scenario file
  is compared with).

Each configuration starts once first, unmeasured, so the measured starts read cached bytecode
(see ``run_child``).

At the parallel sizes (1,000 and 5,000) it also runs the command on two pytest-xdist workers (``-n 2``) and as two
shards (``--shard 1/2`` and ``2/2``, each writing its run records, then ``report merge``
combining them).  Every configuration proves its work: exit code 0 and exactly ``n`` passed
scenarios (the merged report: ``n`` tests, ``n`` runs).  Times are per scenario, by the
benchmark's clock: ``wall`` is what a user waits, ``cpu`` the CPU time of the child process
and everything it waited for (xdist workers included).  The note gives the other clock, the
ratio to the ``loop_runner`` tests and the log-log slope of total time over the sizes (1.0:
linear; start-up makes it lower at small sizes).
"""

from __future__ import annotations

import json
import math
import os
import re
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import BenchError, summarize
from .workloads import Settings

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "scenario_03_steering_skips_rest_of_batch.yaml"
"""The scenario every file of the suite copies."""

CLI = "openprogram-testing run"
PYTEST = "pytest (YAML files)"
LOOP_RUNNER = "loop_runner tests"
XDIST = "openprogram-testing run -n 2"
SERIAL_AT_XDIST = "openprogram-testing run (same size)"
SHARDS = "2 shards + report merge"

TEST_MODULE = '''\
"""{n} loop_runner tests making the checks of {scenario}."""

import json

import pytest

from openprogram_testing.frontends.scenarios.events import event_tokens
from openprogram_testing.transport.scripted import call, turn

EVENTS = {events!r}
WEATHER = {{
    "spec": {{
        "name": "weather",
        "parameters": {{
            "type": "object",
            "properties": {{"city": {{"type": "string"}}}},
            "required": ["city"],
        }},
    }},
    "execute": lambda args: json.dumps(args),
}}


@pytest.mark.parametrize("i", range({n}))
def test_steering_skips_the_rest_of_the_batch(i, scripted_provider, loop_runner, steering):
    scripted_provider.add(
        turn(call("weather", {{"city": "Paris"}}), call("weather", {{"city": "Rome"}})),
        "Paris only, as you asked.",
    )
    steering.after_tool(0, "Only Paris, please.")
    trace = loop_runner(
        "Look up the weather in Paris and Rome.",
        tools=[WEATHER],
        steering_mode="skip",
        tool_choice="auto",
    )
    assert trace.termination == "completed"
    assert trace.model_calls == 2
    assert len(trace.deliveries) - len(trace.undelivered) == 1
    assert [(r.tool_name, r.is_error, r.skipped, r.text) for r in trace.tool_results] == [
        ("weather", False, False, '{{"city": "Paris"}}'),
        ("weather", True, True, "Skipped due to queued user message."),
    ]
    assert [[m.role for m in q.messages] for q in trace.requests] == [
        ["user"],
        ["user", "assistant", "toolResult", "toolResult", "user"],
    ]
    assert event_tokens(trace) == EVENTS
'''


@dataclass(frozen=True, slots=True)
class Suite:
    """A generated suite: ``n`` scenario files in ``scenarios`` and ``n`` tests in ``tests``."""

    n: int
    folder: Path
    scenarios: Path
    tests: Path


def make_suite(parent: Path, n: int) -> Suite:
    """Write ``n`` copies of ``SCENARIO`` and the equivalent ``loop_runner`` test module."""
    import yaml

    text = SCENARIO.read_text(encoding="utf-8")
    events = yaml.safe_load(text)["expect"]["events"]
    folder = parent / f"suite_{n}"
    scenarios = folder / "scenarios"
    scenarios.mkdir(parents=True)
    width = len(str(n - 1))
    for i in range(n):
        (scenarios / f"scenario_{i:0{width}d}.yaml").write_text(text, encoding="utf-8")
    tests = folder / "tests"
    tests.mkdir()
    module = TEST_MODULE.format(n=n, scenario=SCENARIO.name, events=events)
    (tests / "test_suite.py").write_text(module, encoding="utf-8")
    return Suite(n, folder, scenarios, tests / "test_suite.py")


@dataclass(frozen=True, slots=True)
class Timing:
    wall_s: float
    cpu_s: float


def _child_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


PYCACHE: list[str] = []
"""Where the children keep bytecode (set by ``w10`` to a folder of its temporary directory)."""


def run_child(args: Sequence[str], cwd: Path, expect: str, what: str) -> tuple[Timing, str]:
    """Run ``python ARGS`` in ``cwd`` with this checkout first on the path; the output must
    contain ``expect`` (a regex) and the exit code be 0, else ``BenchError``.

    Bytecode is written and reused (in ``PYCACHE`` when set, never beside the sources), as on a
    developer's machine: with ``PYTHONDONTWRITEBYTECODE`` every start would compile every
    module again, and pytest would rewrite the assertions of every plugin's package from
    source, seconds of start-up that no user pays twice."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if PYCACHE:
        env["PYTHONPYCACHEPREFIX"] = PYCACHE[0]
    env.pop("PYTEST_ADDOPTS", None)
    env.pop("PYTEST_XDIST_WORKER", None)
    env["COLUMNS"] = "200"
    cpu = _child_cpu_s()
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=3600
    )
    timing = Timing(time.perf_counter() - start, _child_cpu_s() - cpu)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0 or re.search(expect, output) is None:
        raise BenchError(
            f"W10 {what}: exit code {proc.returncode}, expected {expect!r} in the output:\n"
            + output[-3000:]
        )
    return timing, output


def _passed(n: int) -> str:
    return rf"(?<![\d,]){n} passed"


def _cli(suite: Suite, *extra: str) -> list[str]:
    return ["-m", "openprogram_testing.frontends.cli.main", "run", str(suite.scenarios), *extra]


def _pytest(*targets: str) -> list[str]:
    return ["-m", "pytest", "-q", "-p", "no:cacheprovider", *targets]


def one_config(name: str, suite: Suite, work: Path) -> Timing:
    """One checked run of configuration ``name`` over ``suite``."""
    n = suite.n
    if name in (CLI, SERIAL_AT_XDIST):
        return run_child(_cli(suite), suite.folder, _passed(n), name)[0]
    if name == PYTEST:
        return run_child(_pytest(str(suite.scenarios)), suite.folder, _passed(n), name)[0]
    if name == LOOP_RUNNER:
        return run_child(_pytest(str(suite.tests)), suite.folder, _passed(n), name)[0]
    if name == XDIST:
        return run_child(_cli(suite, "-n", "2"), suite.folder, _passed(n), name)[0]
    if name == SHARDS:
        return _sharded(suite, work)
    raise ValueError(name)


def _sharded(suite: Suite, work: Path) -> Timing:
    """Two shards, one after the other as two CI jobs would run them side by side, then the
    merge; the time is the slower shard plus the merge (what the pipeline waits for), the
    CPU time all three.  The merged records must hold every scenario exactly once."""
    out = work / "shards"
    out.mkdir(exist_ok=True)
    times: list[Timing] = []
    counts = []
    records = []
    for i in (1, 2):
        target = out / f"shard{i}.json"
        records.append(str(target))
        timing, output = run_child(
            _cli(suite, "--shard", f"{i}/2", "--records", str(target)),
            suite.folder,
            r"\d+ passed",
            f"shard {i}/2",
        )
        times.append(timing)
        counts.append(int(re.findall(r"(\d+) passed", output)[-1]))
    if sum(counts) != suite.n:
        raise BenchError(f"W10 shards: {counts} scenarios passed in the shards, not {suite.n}")
    merged = out / "merged.json"
    timing, _ = run_child(
        [
            "-m",
            "openprogram_testing.frontends.cli.main",
            "report",
            "merge",
            *records,
            "--records",
            str(merged),
        ],
        suite.folder,
        rf"{suite.n} tests",
        "report merge",
    )
    data = json.loads(merged.read_text(encoding="utf-8"))
    tests = data.get("tests") or []
    runs = sum(len(t.get("runs") or []) for t in tests)
    if len(tests) != suite.n or len({t["nodeid"] for t in tests}) != suite.n or runs != suite.n:
        raise BenchError(f"W10 merge: {len(tests)} tests, {runs} runs; expected {suite.n} each")
    return Timing(
        max(t.wall_s for t in times) + timing.wall_s, sum(t.cpu_s for t in (*times, timing))
    )


def slope(points: Sequence[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(time) over log(n) (``None`` for fewer than two sizes)."""
    if len({n for n, _ in points}) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(t, 1e-9)) for _, t in points]
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    return sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sum(
        (x - mx) ** 2 for x in xs
    )


async def w10(cfg: Settings, clock: str = "wall") -> dict[str, dict[str, Any]]:
    """The rows of ``W10-<n>`` for every size of ``cfg.w10_sizes`` and ``W10-parallel``."""
    import asyncio

    return await asyncio.to_thread(_w10, cfg, clock)


def _w10(cfg: Settings, clock: str) -> dict[str, dict[str, Any]]:
    if not SCENARIO.is_file():
        raise BenchError(f"W10: {SCENARIO} not found")
    pick = (lambda t: t.cpu_s) if clock == "cpu" else (lambda t: t.wall_s)
    other = "wall" if clock == "cpu" else "cpu"
    pick_other = (lambda t: t.wall_s) if clock == "cpu" else (lambda t: t.cpu_s)
    base = [CLI, PYTEST, LOOP_RUNNER]
    out: dict[str, dict[str, Any]] = {}
    totals: dict[str, list[tuple[int, float]]] = {name: [] for name in base}
    with tempfile.TemporaryDirectory(prefix="bench-w10-") as tmp:
        parent = Path(tmp)
        PYCACHE[:] = [str(parent / "pycache")]
        warm = make_suite(parent / "warm-up", 1)
        for name in base:  # the first start writes the bytecode the measured ones read
            one_config(name, warm, parent)
        for n in cfg.w10_sizes:
            suite = make_suite(parent, n)
            samples = _rotate(base, suite, parent, cfg.w10_samples)
            rows: dict[str, Any] = {}
            floor = summarize([pick(t) for t in samples[LOOP_RUNNER]]).median
            for name in base:
                mine = samples[name]
                row = summarize([pick(t) * 1000 / n for t in mine]).as_dict()
                row[f"{other}_median"] = summarize([pick_other(t) * 1000 / n for t in mine]).median
                row["x_loop_runner"] = summarize([pick(t) for t in mine]).median / floor
                totals[name].append((n, summarize([pick(t) for t in mine]).median))
                rows[name] = row
            out[f"W10-{n}"] = rows
        for name in base:
            fitted = slope(totals[name])
            for n, _ in totals[name]:
                out[f"W10-{n}"][name]["slope"] = fitted
        for rows in out.values():
            for row in rows.values():
                row["note"] = _note(row, other)
        for n in cfg.w10_parallel_sizes:
            out[f"W10-parallel-{n}"] = _parallel(n, cfg, parent, pick, other, pick_other)
        PYCACHE.clear()
    return out


def _parallel(
    n: int, cfg: Settings, parent: Path, pick: Any, other: str, pick_other: Any
) -> dict[str, Any]:
    """The ``W10-parallel-<n>`` rows: one process, ``-n 2`` and two shards + merge over the
    same ``n`` files (the suite of that size when the serial sizes made one)."""
    suite = make_suite(parent, n) if n not in cfg.w10_sizes else Suite(
        n, parent / f"suite_{n}", parent / f"suite_{n}" / "scenarios",
        parent / f"suite_{n}" / "tests" / "test_suite.py",
    )  # fmt: skip
    names = [SERIAL_AT_XDIST, XDIST, SHARDS]
    samples = _rotate(names, suite, parent, cfg.w10_samples)
    serial = summarize([pick(t) for t in samples[SERIAL_AT_XDIST]]).median
    wall_serial = summarize([t.wall_s for t in samples[SERIAL_AT_XDIST]]).median
    rows = {}
    for name in names:
        mine = samples[name]
        row = summarize([pick(t) * 1000 / n for t in mine]).as_dict()
        row[f"{other}_median"] = summarize([pick_other(t) * 1000 / n for t in mine]).median
        row["x_serial"] = summarize([pick(t) for t in mine]).median / serial
        # more CPUs help only the wall clock: the target reads this ratio whatever the clock
        row["x_serial_wall"] = summarize([t.wall_s for t in mine]).median / wall_serial
        row["note"] = (
            f"{row['x_serial']:.2f}x one process ({row['x_serial_wall']:.2f}x by wall); "
            f"{other} " + _ms(row[f"{other}_median"])
        )
        rows[name] = row
    return rows


def _ms(v: float) -> str:
    return f"{v:.2f} ms" if v < 10 else f"{v:.1f} ms"


def _note(row: dict[str, Any], other: str) -> str:
    parts = [f"{row['x_loop_runner']:.2f}x loop_runner", f"{other} {_ms(row[other + '_median'])}"]
    if row.get("slope") is not None:
        parts.append(f"log-log slope {row['slope']:.2f}")
    return "; ".join(parts)


def _rotate(names: list[str], suite: Suite, work: Path, samples: int) -> dict[str, list[Timing]]:
    """``samples`` timings per configuration, the starting configuration rotating."""
    out: dict[str, list[Timing]] = {name: [] for name in names}
    for s in range(samples):
        for name in [*names[s % len(names) :], *names[: s % len(names)]]:
            out[name].append(one_config(name, suite, work))
    return out


__all__ = ["SCENARIO", "Suite", "make_suite", "one_config", "run_child", "slope", "w10"]
