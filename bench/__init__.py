"""Benchmarks of the ``openprogram`` loop, side by side with other Python agent frameworks.

Run ``python -m bench`` (``--smoke`` for a seconds-long check with tiny counts and no peer
frameworks; ``--help`` for the options).  Every framework runs in the same process and the same
run, sampled in rotation, each through its own public fake-model facility, and every sample
*proves* it ran the loop (tool call count, argument sum, final text) before it is counted.

Results are printed as a table and written to ``bench/results/latest.json``; ``bench/RESULTS.md``
records the latest numbers and how they were obtained.
"""

from .common import BenchError, Proof, Script

__all__ = ["BenchError", "Proof", "Script"]
