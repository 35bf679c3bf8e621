"""The same three-call script through ``loop_runner``'s path and ``exec_runner``'s path.

``python -m bench.exec_path`` runs it once per path under ``cProfile`` (Python function calls,
the figure that does not move with the machine's load) and times it (median of repeats), and
prints one line per path with the exec path's ratio to the loop path.  Each path records its
trace (tree) and checks the loop invariants, as the fixtures do.
"""

from __future__ import annotations

import cProfile
import pstats
import statistics
import sys
import time
from collections.abc import Callable

from openprogram import Runtime, function
from openprogram_testing import (
    ScriptedProvider,
    call,
    check_invariants,
    run_exec_sync,
    run_loop_sync,
    turn,
)


@function
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _script() -> list[object]:
    return [turn(*(call("add", {"a": k, "b": 1}) for k in range(3))), "done"]


def loop_path() -> None:
    check_invariants(run_loop_sync(ScriptedProvider(_script()), "go", tools=[add]))


def exec_path() -> None:
    runtime = Runtime(ScriptedProvider(_script()), "test-model")
    check_invariants(run_exec_sync(runtime, "go", tools=[add]))


def _calls(run: Callable[[], None]) -> int:
    run()  # warm: first-use imports and caches are not the path's cost
    profile = cProfile.Profile()
    profile.enable()
    run()
    profile.disable()
    return int(pstats.Stats(profile).total_calls)  # type: ignore[attr-defined]


def _median_us(run: Callable[[], None], repeats: int = 200) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1e6


def main() -> int:
    loop_calls, exec_calls = _calls(loop_path), _calls(exec_path)
    loop_us, exec_us = _median_us(loop_path), _median_us(exec_path)
    print(f"loop_runner path: {loop_calls} calls, {loop_us:,.0f} µs")
    print(f"exec_runner path: {exec_calls} calls, {exec_us:,.0f} µs")
    print(f"exec/loop: {exec_calls / loop_calls:.2f}x calls, {exec_us / loop_us:.2f}x time")
    return 0


if __name__ == "__main__":
    sys.exit(main())
