"""Resolving a run's menu with 200 registered tools, 190 of them deferred, against one scripted
round.

``python -m bench.menu_resolution`` times what ``Runtime.exec`` does before its first model call
to decide what the run offers (the registry's ``"full"`` toolset through the gating layers,
then the split into the callable menu and the frozen provider array with ``tool_search`` and
the catalog line), and one round of W1's loop (a scripted model call and a tool call), both as
medians over repeated samples in this process, and prints both and their ratio.  The claim
(issue 37): the menu costs less than one round.  Variants: nothing gated; every layer
configured (sources, deny, allow, disabled, availability checks on every tool).
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from openprogram import Registry, function
from openprogram.registry import resolve_menu
from openprogram.tool_search import LoadedTools, offer, with_catalog

from . import fw_openprogram
from .common import Script

TOOLS = 200
RESIDENT = 10
ROUNDS = 49
"""W1's script: 49 tool rounds and the final text."""


def registry() -> Registry:
    """200 functions, the last 190 deferred, each with a check function (cheap, true)."""
    out = Registry()
    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    for i in range(TOOLS):

        def body(q: str) -> str:
            return q

        function(
            registry=out,
            name=f"tool_{i}",
            description=f"Tool number {i}.",
            parameters=schema,
            defer=i >= RESIDENT,
            unsafe_for=("plan",) if i % 50 == 7 else (),
            check_fn=lambda: True,
        )(body)
    return out


def resolve(reg: Registry, loaded: LoadedTools, **policy: Any) -> int:
    menu = resolve_menu(reg, None, None, None, **policy)
    offered = offer(menu, loaded)
    with_catalog("You are a helpful agent.", offered.catalog)
    return len(offered.specs)


def _median_us(run: Callable[[], object], repeats: int) -> float:
    for _ in range(20):
        run()
    samples = []
    for _ in range(repeats):
        start = time.process_time_ns()
        run()
        samples.append(time.process_time_ns() - start)
    return statistics.median(samples) / 1000


def round_us(repeats: int = 60) -> float:
    """W1's µs per round, measured here."""

    def one() -> None:
        asyncio.run(fw_openprogram.run(Script(ROUNDS, 1)))

    one()
    samples = []
    for _ in range(repeats):
        start = time.process_time_ns()
        one()
        samples.append((time.process_time_ns() - start) / (ROUNDS + 1))
    return statistics.median(samples) / 1000


def main() -> int:
    reg = registry()
    loaded = LoadedTools()
    plain = _median_us(lambda: resolve(reg, loaded), 2000)
    gated = _median_us(
        lambda: resolve(
            reg,
            loaded,
            source=["telegram", "plan"],
            deny=["tool_3"],
            allow=[f"tool_{i}" for i in range(TOOLS) if i != 5],
            disabled=["tool_4"],
            only_available=True,
        ),
        2000,
    )
    names_only = _median_us(
        lambda: resolve(
            reg,
            loaded,
            source=["telegram", "plan"],
            deny=["tool_3"],
            allow=[f"tool_{i}" for i in range(TOOLS) if i != 5],
            disabled=["tool_4"],
        ),
        2000,
    )
    assert resolve(reg, loaded) == RESIDENT + 1  # the resident tools and tool_search
    a_round = round_us()
    print(f"menu of {TOOLS} tools, {TOOLS - RESIDENT} deferred, nothing gated: {plain:.1f} µs")
    print(f"sources, deny, allow (199 names) and disabled configured: {names_only:.1f} µs")
    print(f"the same with availability checks (a check_fn on every tool): {gated:.1f} µs")
    print(f"one scripted round (W1): {a_round:.1f} µs")
    print(
        f"menu / round: {plain / a_round:.2f}x; with the name layers "
        f"{names_only / a_round:.2f}x; with availability {gated / a_round:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
