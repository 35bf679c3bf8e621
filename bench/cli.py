"""``python -m bench``: run the workloads, print the table, write the results file."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import datetime as dt
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from . import extras, fresh, report, workloads
from .common import CLOCKS, BenchError, set_clock
from .frameworks import ALL, FLOOR, OURS, PEERS, load_many

DEFAULT_OUTPUT = Path(__file__).resolve().parent / "results" / "latest.json"
SMOKE_OUTPUT = Path(__file__).resolve().parent / "results" / "smoke.json"
ALL_WORKLOADS = (
    "W1",
    "W2",
    "W1-async",
    "W2-async",
    "W3",
    "W4",
    "W5",
    "W6",
    "W7",
    "W8",
    "W9",
    "W10",
    "W11",
    "import",
)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m bench",
        description="Benchmark the openprogram loop against a bare-Python floor and peer "
        "frameworks (pydantic-ai, openai-agents, LangGraph; install with pip install -e '.[bench]').",
    )
    p.add_argument(
        "--smoke",
        action="store_true",
        help="tiny counts, no peers: checks the benchmark itself runs (CI)",
    )
    p.add_argument(
        "--frameworks",
        default=None,
        help=f"comma-separated subset of {','.join(ALL)} (default: all installed)",
    )
    p.add_argument("--no-peers", action="store_true", help="only the floor and openprogram")
    p.add_argument(
        "--workloads",
        default=",".join(ALL_WORKLOADS),
        help=f"comma-separated subset of {','.join(ALL_WORKLOADS)}",
    )
    p.add_argument("--samples", type=int, default=None, help="samples per framework (W1, W2)")
    p.add_argument(
        "--output",
        type=Path,
        default=None,
        help=f"results JSON (default {DEFAULT_OUTPUT.relative_to(Path.cwd()) if DEFAULT_OUTPUT.is_relative_to(Path.cwd()) else DEFAULT_OUTPUT})",
    )
    p.add_argument(
        "--no-subprocess",
        action="store_true",
        help="skip the fresh-interpreter measurements (import time, peak RSS; W7 runs in-process)",
    )
    p.add_argument(
        "--clock",
        choices=sorted(CLOCKS),
        default="wall",
        help="wall time (default) or process CPU time (steadier on a loaded machine)",
    )
    p.add_argument("--quiet", action="store_true", help="do not print the table")
    p.add_argument(
        "--markdown",
        type=Path,
        default=None,
        metavar="RESULTS_JSON",
        help="print an existing results file as Markdown tables and exit",
    )
    return p


def _machine() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "platform": platform.platform()}


def _split(value: str, allowed: Sequence[str], what: str) -> list[str]:
    items = [v.strip() for v in value.split(",") if v.strip()]
    bad = [v for v in items if v not in allowed]
    if bad:
        raise SystemExit(f"unknown {what}: {', '.join(bad)} (choose from {', '.join(allowed)})")
    return items


async def run(args: argparse.Namespace) -> dict[str, Any]:
    cfg = dataclasses.replace(workloads.SMOKE if args.smoke else workloads.FULL)
    set_clock(args.clock)
    if args.samples is not None:
        cfg.samples = max(1, args.samples)
    if args.no_subprocess:
        cfg.subprocesses = False
    if args.frameworks:
        names = _split(args.frameworks, ALL, "framework")
    elif args.smoke or args.no_peers:
        names = [FLOOR, OURS]
    else:
        names = list(ALL)
    wanted = _split(args.workloads, ALL_WORKLOADS, "workload")
    frameworks, skipped = load_many(names)
    loaded = [fw.name for fw in frameworks]

    results: dict[str, Any] = {
        "meta": {
            "mode": "smoke" if args.smoke else "full",
            "timestamp": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            "machine": _machine(),
            "python": f"{platform.python_implementation()} {platform.python_version()}",
            "versions": {fw.name: fw.version() for fw in frameworks},
            "settings": cfg.as_dict(),
            "clock": args.clock,
            "load_average": list(os.getloadavg()) if hasattr(os, "getloadavg") else None,
            "skipped": skipped,
        },
        "workloads": {},
        "pending": {},
    }
    wl = results["workloads"]

    def progress(key: str) -> None:
        if not args.quiet:
            print(f"[bench] {key} ...", file=sys.stderr, flush=True)

    def put(key: str, rows: dict[str, Any]) -> None:
        title, unit, lower = report.WORKLOADS[key]
        wl[key] = {"title": title, "unit": unit, "lower_is_better": lower, "results": rows}

    if "W1" in wanted:
        progress("W1")
        put("W1", await workloads.w1(frameworks, cfg))
    if "W2" in wanted:
        progress("W2")
        put("W2", await workloads.w2(frameworks, cfg))
    if "W1-async" in wanted:
        progress("W1-async")
        put("W1-async", await workloads.w1(frameworks, cfg, "async"))
    if "W2-async" in wanted:
        progress("W2-async")
        put("W2-async", await workloads.w2(frameworks, cfg, "async"))
    if "W3" in wanted:
        progress("W3")
        put("W3", await workloads.w3(frameworks, cfg))
        if cfg.subprocesses:
            progress("W3-RSS")
            put("W3-RSS", fresh.peak_rss(loaded, cfg.w3_runs, cfg.w3_tool_rounds))
    for key in ("W4", "W5", "W6", "W9"):
        if key in wanted:
            progress(key)
            rows, pending = await extras.run(key, cfg)
            if rows:
                put(key, rows)
            if pending:
                results["pending"][key] = pending
    if "W7" in wanted:
        progress("W7")
        alone = [n for n in (FLOOR, OURS) if n in loaded]
        put(
            "W7",
            fresh.concurrent_runs(alone, cfg.as_dict(), args.clock)
            if cfg.subprocesses
            else await workloads.w7([fw for fw in frameworks if fw.name in alone], cfg),
        )
    if "W8" in wanted and OURS in loaded:
        progress("W8")
        for key, rows in (await workloads.w8(cfg)).items():
            put(key, rows)
    if "W10" in wanted:
        progress("W10")
        if not cfg.subprocesses:
            results["pending"]["W10"] = "W10 runs each configuration in a fresh interpreter"
        else:
            from . import scenario_suite

            for key, rows in (await scenario_suite.w10(cfg, args.clock)).items():
                report.WORKLOADS.setdefault(key, report.w10_title(key))
                put(key, rows)
    if "W11" in wanted:
        progress("W11")
        from . import mcp_round

        put("W11", await mcp_round.w11(cfg))
    if "import" in wanted and cfg.subprocesses:
        progress("import")
        names_i = ["openprogram", "openprogram_testing", *[p for p in PEERS if p in loaded]]
        put("import", fresh.import_times(names_i, cfg.import_repeats, args.clock))

    report.add_ratios(results)
    report.check_targets(results)
    return results


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.markdown is not None:
        import json

        print(report.markdown(json.loads(args.markdown.read_text())), end="")
        return 0
    try:
        results = asyncio.run(run(args))
    except BenchError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 1
    output = args.output or (SMOKE_OUTPUT if args.smoke else DEFAULT_OUTPUT)
    report.write_json(results, output)
    if not args.quiet:
        report.print_report(results)
        print(f"results written to {output}")
    return 0
