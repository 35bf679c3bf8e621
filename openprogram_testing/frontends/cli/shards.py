"""One suite on several CI jobs: ``openprogram-testing run --shard I/N`` runs shard I of the
suite's scenario files, and ``openprogram-testing report merge`` combines the shards' run
records (``--records``) into one HTML report, with the coverage gate applied to the whole.

A shard is chosen before pytest sees anything: the files are ordered by their path relative
to the working directory (the same in every job of one checkout) and dealt out in turn, file
``k`` to shard ``k mod N + 1``, so every file is in exactly one shard and shard sizes differ
by one at most.  Each shard collects only its own files: a job never loads the others'
scenarios, which a plugin that deselects after collecting (pytest-split, pytest-shard) would
do.  The records carry the shard and a fingerprint of the whole file list, so ``merge``
refuses shards of different suites, a shard given twice and a missing one.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from openprogram_testing.base.paths import OutsideProject, writable_target
from openprogram_testing.frontends.report.merge import (
    MAX_SHARDS,
    Records,
    RecordsError,
    Shard,
    below_threshold,
    failing,
    read_records,
    shard_count_problem,
    write_merged_html,
)
from openprogram_testing.frontends.report.merge import merge as merge_records

from .app import UsageProblem, app, out


@dataclass(frozen=True, slots=True)
class ShardSelection:
    """Shard ``index`` of ``count``: its ``files``, and ``suite``, the fingerprint of the
    whole suite's file list, and ``total``, the suite's number of files."""

    index: int
    count: int
    files: list[Path]
    suite: str
    total: int

    @property
    def option(self) -> str:
        """The value of ``--openprogram-records-shard`` for this shard."""
        return f"{self.index}/{self.count}/{self.suite}/{len(self.files)}"


def parse_shard(spec: str) -> tuple[int, int]:
    """``"2/4"`` → ``(2, 4)``; anything else, or more than ``MAX_SHARDS`` shards, is a
    ``UsageProblem``."""

    index_text, slash, count_text = spec.strip().partition("/")
    try:
        index, count = int(index_text), int(count_text)
    except ValueError:
        index, count = 0, 0
    if not slash or shard_count_problem(index, count) is not None:
        raise UsageProblem(
            f"--shard takes I/N with 1 <= I <= N <= {MAX_SHARDS} (such as 1/4), got {spec!r}"
        )
    return index, count


def shard_key(path: Path) -> str:
    """Where a file sorts when dealt out: its path relative to the working directory, with
    ``/`` separators (absolute when it lies elsewhere), so every job of a checkout agrees."""
    absolute = os.path.abspath(path)
    try:
        relative = os.path.relpath(absolute)
    except ValueError:  # another drive (Windows)
        relative = absolute
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        relative = absolute
    return relative.replace(os.sep, "/")


def select(files: Sequence[Path], spec: str) -> ShardSelection:
    """The files of shard ``spec`` (``I/N``) of ``files`` (see the module docstring)."""
    index, count = parse_shard(spec)
    keyed = sorted((shard_key(f), f) for f in files)
    digest = hashlib.sha256("\n".join(key for key, _ in keyed).encode("utf-8", "surrogatepass"))
    chosen = [f for k, (_, f) in enumerate(keyed) if k % count == index - 1]
    return ShardSelection(index, count, chosen, digest.hexdigest()[:32], len(keyed))


def empty_shard(chosen: ShardSelection, records: Path | None) -> None:
    """A shard that got no file (more shards than files): it says so and writes empty
    records, so the merge still sees every shard."""

    out.print(f"shard {chosen.index}/{chosen.count}: none of the {chosen.total} scenario files")
    if records is not None:
        try:
            writable_target(records, "the run records")
        except OutsideProject as exc:
            raise UsageProblem(str(exc)) from None
        Records(tests=[], shard=Shard(chosen.index, chosen.count, chosen.suite, 0)).write(records)


# -- report merge --------------------------------------------------------------------------------

report_app = typer.Typer(help="Combine the run records of several runs (the shards of a suite).")
app.add_typer(report_app, name="report")


@report_app.command()
def merge(
    inputs: Annotated[
        list[Path], typer.Argument(help="Run records files (run --records), one per shard.")
    ],
    html: Annotated[
        Path | None, typer.Option("--html", help="Write the merged HTML report here.")
    ] = None,
    records: Annotated[
        Path | None, typer.Option("--records", help="Write the merged run records here.")
    ] = None,
    coverage: Annotated[
        bool, typer.Option("--coverage", help="Print the merged loop-behaviour coverage table.")
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option(
            "--coverage-fail-under", help="Fail below this loop-behaviour coverage % (merged)."
        ),
    ] = None,
) -> None:
    """Merge the shards' run records into one report; exit 1 if a test failed or the merged
    coverage is below --coverage-fail-under."""

    for target, what in ((html, "the HTML report"), (records, "the run records")):
        if target is not None:
            try:
                writable_target(target, what)
            except OutsideProject as exc:
                raise UsageProblem(str(exc)) from None
    try:
        merged = merge_records([read_records(p) for p in inputs])
    except RecordsError as exc:
        raise UsageProblem(str(exc)) from None
    tests = merged.records.tests
    counts: dict[str, int] = {}
    for test in tests:
        counts[test["outcome"]] = counts.get(test["outcome"], 0) + 1
    runs = sum(len(t.get("runs") or []) for t in tests)
    shards = f" from shards {', '.join(merged.shards)}" if merged.shards else ""
    summary = ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))
    out.print(f"merged {len(inputs)} records file(s){shards}: {len(tests)} tests ({summary}), "
              f"{runs} loop runs")  # fmt: skip
    if coverage or fail_under is not None:
        out.print(escape(merged.coverage.text()))
    if html is not None:
        written = write_merged_html(html, merged, title="OpenProgram test report")
        out.print(f"HTML report written to {escape(str(written))}")
    if records is not None:
        merged.records.write(records)
        out.print(f"run records written to {escape(str(records))}")
    below = below_threshold(merged.coverage, fail_under)
    if below:
        out.print(f"[bold red]FAIL:[/] {escape(below)}")
    if below or failing(tests):
        raise typer.Exit(1)


__all__ = ["ShardSelection", "empty_shard", "merge", "parse_shard", "select", "shard_key"]
