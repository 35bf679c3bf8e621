"""Measurements that need a fresh interpreter, run as ``python -m bench._child ...``.

``rss NAME RUNS TOOL_ROUNDS``: import one configuration, note the peak RSS, run ``RUNS`` short
runs (checked like in W3) and print the peak RSS before and after as JSON.

``w7 NAME CLOCK SETTINGS_JSON``: import one configuration and run W7 (many concurrent runs
against one alone) with those settings on that clock; print its row as JSON.
"""

from __future__ import annotations

import asyncio
import json
import resource
import sys


def _peak_kib() -> int:
    """Peak resident set size of this process so far (``VmHWM``; ``ru_maxrss`` as fallback)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


async def _runs(name: str, runs: int, tool_rounds: int) -> None:
    from .common import timed_run
    from .frameworks import load

    fw = load(name)
    import_peak = _peak_kib()
    for _ in range(runs):
        await timed_run(fw, tool_rounds, 1)
    print(json.dumps({"import_peak_kib": import_peak, "peak_kib": _peak_kib(), "runs": runs}))


async def _w7(name: str, clock: str, settings: str) -> None:
    from .common import set_clock
    from .frameworks import load
    from .workloads import Settings, w7

    set_clock(clock)
    fields = json.loads(settings)
    cfg = Settings(**{**fields, "w8_sizes": tuple(fields["w8_sizes"])})
    fw = load(name)
    print(json.dumps((await w7([fw], cfg))[fw.name]))


def main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "rss":
        asyncio.run(_runs(argv[1], int(argv[2]), int(argv[3])))
        return 0
    if len(argv) == 4 and argv[0] == "w7":
        asyncio.run(_w7(argv[1], argv[2], argv[3]))
        return 0
    print(
        "usage: python -m bench._child rss NAME RUNS TOOL_ROUNDS | w7 NAME CLOCK SETTINGS_JSON",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
