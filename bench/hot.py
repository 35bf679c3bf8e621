"""Run openprogram's W1 (or W2) loop many times in a row: a steady target for a profiler.

    py-spy record -r 2000 -f raw -o w1.txt -- python -m bench.hot --runs 600
    python -m bench.hot --runs 200 --calls 8 --rounds 10      # W2's shape

Every run is checked like a benchmark sample (``Script.check``), so a profile of a loop that
stopped running the tool fails instead of looking fast.
"""

from __future__ import annotations

import argparse
import asyncio

from . import fw_openprogram
from .common import timed_run


async def _main(runs: int, rounds: int, calls: int) -> float:
    total = 0
    for _ in range(runs):
        total += (await timed_run(fw_openprogram, rounds, calls)).elapsed_ns
    return total / runs / (rounds + 1) / 1000


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.hot", description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=49, help="tool rounds per run (W1: 49)")
    parser.add_argument("--calls", type=int, default=1, help="calls per round (W2: 8)")
    args = parser.parse_args(argv)
    per_round = asyncio.run(_main(args.runs, args.rounds, args.calls))
    print(f"{args.runs} runs, {per_round:.1f} µs per model call (wall)")


if __name__ == "__main__":
    main()
