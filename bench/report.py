"""Ratios, targets, the printed table and the JSON results file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .frameworks import FLOOR, OURS, PEERS

WORKLOADS: dict[str, tuple[str, str, bool]] = {
    "W1": ("1 call/round x 50 rounds", "µs/round", True),
    "W2": ("8 calls/round x 10 rounds", "µs/call", True),
    "W3": ("1,000 short runs (2 tool rounds + text)", "runs/s", False),
    "W3-RSS": ("peak RSS, fresh process, W3 runs", "MiB", True),
    "W4": ("Runtime.exec + @agentic_function, nested exec", "µs/round", True),
    "W5": ("cassette replay, 2-round tool loop", "ms/run", True),
    "W6": ("hypothesis loop property suite", "examples/s", False),
    "W9": ("schema-derived property, a tool with five typed fields", "examples/s", False),
    "W1-async": ("W1 with an async def tool", "µs/round", True),
    "W2-async": ("W2 with an async def tool", "µs/call", True),
    "W7": ("1,000 concurrent runs on one event loop (10 tool rounds each)", "µs/round", True),
    "W8-1": ("1 tool round + text, 1 dict tool offered", "µs/run", True),
    "W8-10": ("1 tool round + text, 10 dict tools offered", "µs/run", True),
    "W8-100": ("1 tool round + text, 100 dict tools offered", "µs/run", True),
    "W8-1000": ("1 tool round + text, 1,000 dict tools offered", "µs/run", True),
    "W11": ("1 tool round with 1 MCP call (in-process) vs a Python tool", "µs/round", True),
    "import": ("import time, fresh interpreter", "ms", True),
}
"""key → (title, unit, lower is better)."""


def w10_title(key: str) -> tuple[str, str, bool]:
    """The ``WORKLOADS`` entry of a W10 row set (its size is in the key)."""
    n = int(key.rsplit("-", 1)[1])
    if key.startswith("W10-parallel-"):
        what = f"{n:,} YAML scenarios: one process, pytest-xdist -n 2, 2 shards + merge"
    else:
        what = f"{n:,} YAML scenarios: openprogram-testing run, pytest, loop_runner tests"
    return what, "ms/scenario", True


for _n in (100, 1000, 5000):
    WORKLOADS[f"W10-{_n}"] = w10_title(f"W10-{_n}")
for _n in (1000, 5000):
    WORKLOADS[f"W10-parallel-{_n}"] = w10_title(f"W10-parallel-{_n}")

TARGETS: list[tuple[str, str, str, float, float | None]] = [
    # (label, workload, field, limit, aim); lower-is-better workloads compare value <= limit.
    # The row is ours (for "import": the package named by the label's second word).
    ("W1 µs/round", "W1", "median", 100.0, 50.0),
    ("W1 history growth (last/first 10 rounds)", "W1", "growth", 1.2, None),
    ("W1 cost / best peer's (>= 30x faster)", "W1", "x_best_peer", 1 / 30, None),
    ("W2 µs per tool call", "W2", "median", 50.0, None),
    ("W1-async µs/round", "W1-async", "median", 50.0, None),
    ("W1-async cost / best peer's (>= 60x faster)", "W1-async", "x_best_peer", 1 / 60, None),
    ("W2-async cost / W2 sync cost", "W2-async", "x_sync", 1.3, None),
    ("W3 runs/s", "W3", "median", 2000.0, None),
    ("W3 peak RSS MiB", "W3-RSS", "median", 50.0, None),
    ("W7 cost per round / one run's", "W7", "x_one", 1.2, None),
    ("W8 µs per offered tool per run (1,000 tools)", "W8-1000", "per_tool", 2.0, None),
    ("import openprogram ms", "import", "median", 150.0, None),
    ("import openprogram_testing ms", "import", "median", 150.0, None),
    ("W6 examples/s", "W6", "median", 600.0, None),
    ("W9 schema-derived examples/s", "W9", "median", 300.0, None),
    ("W10 run / loop_runner tests (1,000 scenarios)", "W10-1000", "x_loop_runner", 1.5, None),
    *(
        (
            f"W10 run -n 2 / one process, wall ({n:,} scenarios)",
            f"W10-parallel-{n}",
            "x_serial_wall",
            0.6,
            None,
        )
        for n in (1000, 5000)
    ),
    # the bar: the loop adds nothing measurable to an MCP call over what the SDK's own
    # Client pays for it, and the fake server costs no more than a real in-process server
    ("W11 loop's MCP round over a Python tool's / the SDK call alone", "W11", "x_sdk", 1.2, None),
    ("W11 fake MCP server / MCPServer, through the loop", "W11", "x_mcpserver", 1.0, None),
]

TARGET_ROWS = {
    "W10 run / loop_runner tests (1,000 scenarios)": "openprogram-testing run",
    "W10 run -n 2 / one process, wall (1,000 scenarios)": "openprogram-testing run -n 2",
    "W10 run -n 2 / one process, wall (5,000 scenarios)": "openprogram-testing run -n 2",
    "W11 loop's MCP round over a Python tool's / the SDK call alone": "openprogram + MCPServer",
    "W11 fake MCP server / MCPServer, through the loop": "openprogram + fake MCP server",
}
"""Targets judged on a row other than ``openprogram``'s."""


def _cost(value: float, lower_is_better: bool) -> float:
    return value if lower_is_better else 1.0 / value if value else float("inf")


def add_ratios(results: dict[str, Any]) -> None:
    """Add ``x_floor`` and ``x_best_peer`` to every framework row: the cost ratio (>1 means
    slower/heavier than the reference), from medians."""
    for key, wl in results["workloads"].items():
        lower = WORKLOADS.get(key, ("", "", True))[2]
        rows = wl["results"]
        floor = rows.get(FLOOR)
        peers = [rows[p] for p in PEERS if p in rows]
        best = min(peers, key=lambda r: _cost(r["median"], lower)) if peers else None
        for row in rows.values():
            c = _cost(row["median"], lower)
            row["x_floor"] = c / _cost(floor["median"], lower) if floor else None
            row["x_best_peer"] = c / _cost(best["median"], lower) if best else None
        wl["best_peer"] = next((p for p in PEERS if p in rows and rows[p] is best), None)
    sync, with_async = (results["workloads"].get(k) for k in ("W2", "W2-async"))
    if sync and with_async:  # what an async def tool costs over a plain function, per call
        for name, row in with_async["results"].items():
            if name in sync["results"]:
                row["x_sync"] = row["median"] / sync["results"][name]["median"]


def check_targets(results: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for label, key, field, limit, aim in TARGETS:
        wl = results["workloads"].get(key)
        row_name = TARGET_ROWS.get(label) or (OURS if key != "import" else label.split()[1])
        row = wl["results"].get(row_name) if wl else None
        if row is None:
            reason = results.get("pending", {}).get(key, "not run")
            out.append(
                {
                    "target": label,
                    "limit": limit,
                    "aim": aim,
                    "value": None,
                    "status": f"pending: {reason}",
                }
            )
            continue
        value = row.get(field)
        if isinstance(value, dict):
            value = value["median"]
        if value is None:  # a ratio to peers that were not run (--no-peers, smoke)
            out.append(
                {
                    "target": label,
                    "limit": limit,
                    "aim": aim,
                    "value": None,
                    "status": "pending: no peer was run",
                }
            )
            continue
        lower = WORKLOADS[key][2] if field == "median" else True
        ok = value <= limit if lower else value >= limit
        out.append(
            {
                "target": label,
                "limit": limit,
                "aim": aim,
                "value": value,
                "status": "met" if ok else "MISSED",
            }
        )
    results["targets"] = out
    return out


def write_json(results: dict[str, Any], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2, sort_keys=False) + "\n")


def _fmt(v: float | None) -> str:
    if v is None:
        return "-"
    if v >= 1000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def table_rows(results: dict[str, Any]) -> list[list[str]]:
    rows = []
    order = [FLOOR, OURS, "openprogram_testing", *PEERS]
    for key, wl in results["workloads"].items():
        unit = WORKLOADS.get(key, (key, "", True))[1]
        for name in sorted(wl["results"], key=lambda n: order.index(n) if n in order else 99):
            r = wl["results"][name]
            note = ""
            if "growth" in r:
                note = f"growth {r['growth']['median']:.2f}x"
            elif "after_import" in r:
                note = f"{_fmt(r['after_import'])} MiB after import"
            elif "sdks_imported" in r:
                other = "cpu" if "cpu_median" in r else "wall"
                note = f"{other} {_fmt(r.get(other + '_median'))} ms"
                if r["sdks_imported"]:
                    note += "; imports " + ", ".join(r["sdks_imported"])
            elif "x_one" in r:
                note = f"{r['x_one']:.2f}x one run alone ({_fmt(r['alone']['median'])} µs/round)"
            elif "x_sync" in r:
                note = f"{r['x_sync']:.2f}x the sync tool"
            elif "note" in r:
                note = r["note"]
            rows.append(
                [
                    key,
                    unit,
                    name,
                    _fmt(r["median"]),
                    f"{_fmt(r['min'])}-{_fmt(r['max'])}",
                    _fmt(r.get("x_floor")),
                    _fmt(r.get("x_best_peer")),
                    note,
                ]
            )
    return rows


HEADERS = ["workload", "unit", "framework", "median", "min-max", "x floor", "x best peer", "note"]


def print_report(results: dict[str, Any]) -> None:
    rows = table_rows(results)
    try:
        from rich.console import Console
        from rich.table import Table
    except ImportError:  # rich is optional: plain text then
        print(" | ".join(HEADERS))
        for r in rows:
            print(" | ".join(r))
        for t in results.get("targets", []):
            print(f"target {t['target']}: {t['status']} ({_fmt(t['value'])} vs {t['limit']})")
        return
    console = Console(width=160)
    table = Table(title=f"openprogram benchmarks ({results['meta']['mode']})", show_lines=False)
    for h in HEADERS:
        table.add_column(
            h, justify="right" if h not in ("workload", "framework", "note") else "left"
        )
    last = None
    for r in rows:
        if last is not None and r[0] != last:
            table.add_section()
        last = r[0]
        table.add_row(*r, style="bold" if r[2] == OURS else None)
    console.print(table)
    for key in results["workloads"]:
        console.print(f"  {key}: {WORKLOADS.get(key, (key,))[0]}")
    targets = Table(title="targets (openprogram)")
    for h in ("target", "limit", "value", "status"):
        targets.add_column(h)
    for t in results.get("targets", []):
        style = "green" if t["status"] == "met" else "red" if t["status"] == "MISSED" else "yellow"
        limit = _fmt(t["limit"]) + (f" (aim {_fmt(t['aim'])})" if t["aim"] else "")
        targets.add_row(t["target"], limit, _fmt(t["value"]), t["status"], style=style)
    console.print(targets)
    for key, reason in results.get("pending", {}).items():
        console.print(f"[yellow]{key} pending:[/] {reason}")
    for name, reason in results["meta"].get("skipped", {}).items():
        console.print(f"[yellow]{name} skipped:[/] {reason}")
    m = results["meta"]
    console.print(f"{m['machine']['cpu']} x {m['machine']['cores']} cores, {m['python']}")


def markdown(results: dict[str, Any]) -> str:
    """The results as Markdown tables (for bench/RESULTS.md)."""
    m = results["meta"]
    lines = [
        f"Run {m['timestamp']} ({m['mode']}, clock: {m.get('clock', 'wall')}), "
        f"{m['machine']['cpu']} x {m['machine']['cores']} cores, {m['python']}, "
        f"load average at start {', '.join(f'{x:.1f}' for x in m.get('load_average') or [])}.",
        "",
        "Versions: " + ", ".join(f"{k} {v}" for k, v in m["versions"].items()) + ".",
        "",
        "| " + " | ".join(HEADERS) + " |",
        "| " + " | ".join("---" for _ in HEADERS) + " |",
    ]
    for r in table_rows(results):
        r = [f"**{c}**" if r[2] == OURS and i == 2 else c for i, c in enumerate(r)]
        lines.append("| " + " | ".join(r) + " |")
    lines.append("")
    for key in results["workloads"]:
        title, unit, lower = WORKLOADS.get(key, (key, "", True))
        lines.append(f"- {key}: {title} ({unit}, {'lower' if lower else 'higher'} is better)")
    lines += ["", "| target | limit | value | status |", "| --- | --- | --- | --- |"]
    for t in results.get("targets", []):
        limit = _fmt(t["limit"]) + (f" (aim {_fmt(t['aim'])})" if t["aim"] else "")
        lines.append(f"| {t['target']} | {limit} | {_fmt(t['value'])} | {t['status']} |")
    for key, reason in results.get("pending", {}).items():
        lines.append(f"\n{key} pending: {reason}")
    return "\n".join(lines) + "\n"
