"""The in-process workloads W1-W3, W7 and W8, sampled in rotation across frameworks.

Rotation: each sample runs every framework once, starting one framework later each time, with a
``gc.collect()`` before every sample, so drifting machine load and collector debt are spread over
all frameworks instead of landing on one.  Warm-up samples run first and are discarded.
"""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, TypeVar

from .common import Framework, Script, ToolKind, growth_ratio, now_ns, summarize, timed_run

T = TypeVar("T")


@dataclass(slots=True)
class Settings:
    """Workload sizes.  W1 runs 49 tool rounds + the final text = 50 model calls: the loop's hard
    cap (at most 50 model calls per run), so every framework runs exactly that."""

    w1_tool_rounds: int = 49
    w2_rounds: int = 10
    w2_parallel: int = 8
    w3_runs: int = 1000
    w3_chunks: int = 10
    w3_tool_rounds: int = 2
    samples: int = 25
    warmup: int = 3
    import_repeats: int = 7
    subprocesses: bool = True
    w7_runs: int = 1000
    w7_tool_rounds: int = 10
    w7_samples: int = 5
    w8_sizes: tuple[int, ...] = (1, 100, 1000)
    w10_sizes: tuple[int, ...] = (100, 1000, 5000)
    w10_samples: int = 3
    w10_parallel_sizes: tuple[int, ...] = (1000, 5000)  # (): no xdist and shard rows
    w11_rounds: int = 20

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


FULL = Settings()
SMOKE = Settings(
    w1_tool_rounds=20,
    w2_rounds=2,
    w3_runs=10,
    w3_chunks=2,
    samples=2,
    warmup=1,
    import_repeats=1,
    w7_runs=20,
    w7_tool_rounds=3,
    w7_samples=2,
    w8_sizes=(1, 10),
    w10_sizes=(2, 4),
    w10_samples=1,
    w10_parallel_sizes=(),
    w11_rounds=2,
)
"""Tiny counts: proves every configuration still runs its loop (CI), measures nothing."""


async def rotate(
    frameworks: Sequence[Framework],
    samples: int,
    warmup: int,
    one: Callable[[Framework], Awaitable[T]],
) -> dict[str, list[T]]:
    """``samples`` results of ``one(fw)`` per framework, in rotation, after ``warmup`` rounds."""
    for _ in range(warmup):
        for fw in frameworks:
            await one(fw)
    out: dict[str, list[T]] = {fw.name: [] for fw in frameworks}
    n = len(frameworks)
    for s in range(samples):
        for fw in [*frameworks[s % n :], *frameworks[: s % n]]:
            gc.collect()
            out[fw.name].append(await one(fw))
    return out


async def w1(
    frameworks: Sequence[Framework], cfg: Settings, tool: ToolKind = "sync"
) -> dict[str, Any]:
    """One call of ``add`` per round, then the final text: µs per round and history growth."""
    rounds = cfg.w1_tool_rounds

    async def one(fw: Framework) -> tuple[float, float]:
        proof = await timed_run(fw, rounds, 1, tool)
        return proof.elapsed_ns / (rounds + 1) / 1000, growth_ratio(proof.stamps)

    raw = await rotate(frameworks, cfg.samples, cfg.warmup, one)
    return {
        name: {
            **summarize([s[0] for s in samples]).as_dict(),
            "growth": summarize([s[1] for s in samples]).as_dict(),
        }
        for name, samples in raw.items()
    }


async def w2(
    frameworks: Sequence[Framework], cfg: Settings, tool: ToolKind = "sync"
) -> dict[str, Any]:
    """``w2_parallel`` calls per round for ``w2_rounds`` rounds: µs per tool call."""
    calls = cfg.w2_rounds * cfg.w2_parallel

    async def one(fw: Framework) -> float:
        proof = await timed_run(fw, cfg.w2_rounds, cfg.w2_parallel, tool)
        return proof.elapsed_ns / calls / 1000

    raw = await rotate(frameworks, cfg.samples, cfg.warmup, one)
    return {name: summarize(v).as_dict() for name, v in raw.items()}


async def w3(frameworks: Sequence[Framework], cfg: Settings) -> dict[str, Any]:
    """``w3_runs`` independent short runs (``w3_tool_rounds`` tool rounds + text), in
    ``w3_chunks`` rotated chunks: runs per second."""
    chunk = max(1, cfg.w3_runs // cfg.w3_chunks)

    async def one(fw: Framework) -> float:
        start = now_ns()
        for _ in range(chunk):
            await timed_run(fw, cfg.w3_tool_rounds, 1)
        return chunk / ((now_ns() - start) / 1e9)

    raw = await rotate(frameworks, cfg.w3_chunks, min(cfg.warmup, 1), one)
    return {name: summarize(v).as_dict() for name, v in raw.items()}


W7_LONE = 5
"""Lone runs per W7 sample (their median is the sample's lone cost)."""


async def w7(frameworks: Sequence[Framework], cfg: Settings) -> dict[str, Any]:
    """``w7_runs`` runs in flight at once on one event loop (a tool that yields to the loop once
    per call, as I/O does, so the runs interleave) against one such run alone: µs per round at
    that concurrency, and ``x_one``, its ratio to the lone run's cost per round (what the
    collector and the scheduler add when many runs are alive)."""
    rounds = cfg.w7_tool_rounds
    per_run = rounds + 1

    async def one(fw: Framework) -> tuple[float, float]:
        # The lone cost is the median of several lone runs after a discarded one: the first run
        # after a batch's teardown pays the allocator's fresh pages (measured 3x a warm run on
        # the CPU clock), which made the ratio look better than it is.
        await timed_run(fw, rounds, 1, "async_yield")
        lone_ns = sorted(
            [(await timed_run(fw, rounds, 1, "async_yield")).elapsed_ns for _ in range(W7_LONE)]
        )[W7_LONE // 2]
        scripts = [Script(rounds, 1, "async_yield") for _ in range(cfg.w7_runs)]
        start = now_ns()
        finals = await asyncio.gather(*(fw.run(s) for s in scripts))
        elapsed = now_ns() - start
        for script, final in zip(scripts, finals, strict=True):
            script.check(fw.name, final)
        return elapsed / (cfg.w7_runs * per_run) / 1000, lone_ns / per_run / 1000

    raw = await rotate(frameworks, cfg.w7_samples, min(cfg.warmup, 1), one)
    out = {}
    for name, samples in raw.items():
        many = summarize([s[0] for s in samples])
        lone = summarize([s[1] for s in samples])
        out[name] = {**many.as_dict(), "alone": lone.as_dict(), "x_one": many.median / lone.median}
    return out


W8_RUNS = 10
"""Runs per W8 sample (back to back, the same tool objects each time)."""


async def w8(cfg: Settings) -> dict[str, dict[str, Any]]:
    """One tool round and the final text, with ``n`` tools offered (the same tool objects every
    run, as a program defines them once) for each ``n`` of ``w8_sizes``: µs per run, and for the
    larger menus ``per_tool``, the cost each extra offered tool adds to a run."""
    from . import fw_openprogram

    menus = {n: fw_openprogram.menu(n) for n in cfg.w8_sizes}

    async def one(n: int) -> float:
        # A sample is the mean of W8_RUNS runs back to back: the claim is the cost of offering
        # the same tools again, and one run right after gc.collect() is dominated by cold caches
        # (it made the 100-tool difference, ~0.2 ms, mostly noise).
        scripts = [Script(1, 1) for _ in range(W8_RUNS)]
        start = now_ns()
        finals = [await fw_openprogram.run(script, menus[n]) for script in scripts]
        elapsed = now_ns() - start
        for script, final in zip(scripts, finals, strict=True):
            script.check(f"openprogram ({n} tools)", final)
        return elapsed / W8_RUNS / 1000

    for _ in range(cfg.warmup):
        for n in cfg.w8_sizes:
            await one(n)
    samples: dict[int, list[float]] = {n: [] for n in cfg.w8_sizes}
    for _ in range(max(cfg.samples, 5)):
        for n in cfg.w8_sizes:
            gc.collect()
            samples[n].append(await one(n))
    out: dict[str, dict[str, Any]] = {}
    smallest = min(cfg.w8_sizes)
    base = summarize(samples[smallest]).median
    for n in cfg.w8_sizes:
        row: dict[str, Any] = summarize(samples[n]).as_dict()
        if n > smallest:
            row["per_tool"] = (row["median"] - base) / (n - smallest)
            row["note"] = f"{row['per_tool']:.2f} µs per extra offered tool"
        out[f"W8-{n}"] = {fw_openprogram.name: row}
    return out
