"""Run records: what a session's HTML report and coverage are made of, written as JSON so that
the sessions of several CI jobs (``openprogram-testing run --shard i/n``, or any pytest session
with ``--openprogram-records``) combine into one report.

A records file holds the session's tests exactly as the report plugin gathered them (name,
node id, outcome, time, failure text and each test's run records, see ``record``) and, for a
shard, which shard of which suite it is::

    {"kind": "openprogram-run-records", "version": 1,
     "shard": {"index": 1, "count": 2, "suite": "<sha256 of the suite's file list>",
               "files": 500} | null,
     "tests": [...]}

``merge`` combines records files and refuses what would make the combined report wrong
rather than merely incomplete: shards of different suites or shard counts, a shard given twice
or missing, a test present in two inputs.  Coverage is counted from the merged tests' runs, so
a threshold applies to the whole suite, never to one shard.  The page is ``html``'s
``render_html``; nothing here draws it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram.texts import whole_values

from .coverage import Coverage
from .html import FAILING, OUTCOMES, write_html

KIND = "openprogram-run-records"
VERSION = 1
MAX_SHARDS = 1000
"""The most shards a suite is split into (``run --shard I/N``, a records file's ``shard``): far
above any CI matrix (GitHub Actions allows 256 jobs), and low enough that nothing sized by the
count can exhaust memory.  A larger count is refused where it is read."""
MISSING_LISTED = 10
"""How many missing shards a merge error names (the rest are counted)."""


def shard_count_problem(index: object, count: object) -> str | None:
    """Why ``index``/``count`` is not shard I of N (``None``: it is), the one rule for the
    command line, the plugin option and a records file."""
    if type(index) is not int or type(count) is not int or not 1 <= index <= count:
        return f"index {index!r} of {count!r} is not i/n"
    if count > MAX_SHARDS:
        return f"{count} shards is more than {MAX_SHARDS}, the most a suite is split into"
    return None


class RecordsError(Exception):
    """A records file that cannot be read or merged; ``path`` names it (``None``: the set of
    files as a whole) and ``reason`` says what is wrong."""

    def __init__(self, path: str | None, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based) of the suite whose file list hashes to
    ``suite``; ``files`` scenario files were assigned to it."""

    index: int
    count: int
    suite: str
    files: int

    @property
    def label(self) -> str:
        return f"{self.index}/{self.count}"

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "count": self.count, "suite": self.suite, "files": self.files}


@dataclass(slots=True)
class Records:
    """One session's records (``source``: where they were read from)."""

    tests: list[dict[str, Any]]
    shard: Shard | None = None
    source: str = "<records>"

    def to_dict(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "version": VERSION,
            "shard": self.shard.to_dict() if self.shard is not None else None,
            "tests": self.tests,
        }

    def write(self, path: str | Path) -> Path:
        """Write the records as JSON (parent folders created); returns the path."""

        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps(whole_values(self.to_dict()), ensure_ascii=False)
        target.write_text(text + "\n", encoding="utf-8")
        return target

    def coverage(self) -> Coverage:
        """Loop-behaviour coverage of every run of every test (as the session counts it)."""
        return coverage_of(self.tests)


def coverage_of(tests: Iterable[Mapping[str, Any]]) -> Coverage:
    """Coverage of the tests' runs and trajectory checks, counted as the session counts it
    (``Coverage.of_tests``): a merged suite counts like one."""
    return Coverage.of_tests(tests)


def read_records(path: str | Path) -> Records:
    """Read and check one records file; ``RecordsError`` says what is wrong with it."""
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise RecordsError(source, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordsError(source, f"cannot read the file: {exc}") from None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RecordsError(source, f"not JSON: {exc}") from None
    return records_from(data, source)


def records_from(data: Any, source: str = "<records>") -> Records:
    """``Records`` from parsed JSON, every field checked (hostile input: no traceback)."""
    if not isinstance(data, dict) or data.get("kind") != KIND:
        raise RecordsError(
            source,
            f'not a run records file (expected {{"kind": "{KIND}", ...}}, as written by '
            "openprogram-testing run --records or pytest --openprogram-records)",
        )
    if data.get("version") != VERSION:
        raise RecordsError(
            source, f"records version {data.get('version')!r}; this version reads {VERSION}"
        )
    tests = data.get("tests")
    if not isinstance(tests, list):
        raise RecordsError(source, "'tests' is not a list")
    for i, test in enumerate(tests):
        _check_test(test, f"tests[{i}]", source)
    return Records(tests=tests, shard=_shard(data.get("shard"), source), source=source)


def _check_test(test: Any, where: str, source: str) -> None:
    if not isinstance(test, dict):
        raise RecordsError(source, f"{where} is not an object")
    if not isinstance(test.get("nodeid"), str) or not test["nodeid"]:
        raise RecordsError(source, f"{where}.nodeid is not a test id")
    if test.get("outcome") not in OUTCOMES:
        raise RecordsError(
            source, f"{where}.outcome {test.get('outcome')!r} is not one of {', '.join(OUTCOMES)}"
        )
    runs = test.get("runs", [])
    if not isinstance(runs, list):
        raise RecordsError(source, f"{where}.runs is not a list")
    for j, run in enumerate(runs):
        if not isinstance(run, dict):
            raise RecordsError(source, f"{where}.runs[{j}] is not an object")
        behaviours = run.get("behaviours", {})
        if not isinstance(behaviours, dict) or not all(
            isinstance(k, str) and type(v) is int and v >= 0 for k, v in behaviours.items()
        ):
            raise RecordsError(
                source, f"{where}.runs[{j}].behaviours is not a map of names to counts"
            )


def _shard(raw: Any, source: str) -> Shard | None:
    if raw is None:
        return None
    if not isinstance(raw, dict):
        raise RecordsError(source, "'shard' is not an object")
    index, count, suite, files = (raw.get(k) for k in ("index", "count", "suite", "files"))
    problem = shard_count_problem(index, count)
    if problem is not None or not isinstance(index, int) or not isinstance(count, int):
        raise RecordsError(source, f"'shard' {problem}")
    if not isinstance(suite, str) or type(files) is not int or files < 0:
        raise RecordsError(source, "'shard' lacks its suite fingerprint or file count")
    return Shard(index, count, suite, files)


@dataclass(slots=True)
class Merged:
    """The combined records and their coverage (``shards``: the labels merged, in order)."""

    records: Records
    coverage: Coverage
    shards: list[str] = field(default_factory=list)


def merge(parts: Sequence[Records]) -> Merged:
    """One suite's records from its shards' (or any sessions' without shards): every test
    once, coverage counted over all runs.  ``RecordsError`` for inputs that would miscount."""
    if not parts:
        raise RecordsError(None, "no records to merge")
    sharded = [p for p in parts if p.shard is not None]
    labels: list[str] = []
    if sharded:
        if len(sharded) != len(parts):
            plain = next(p for p in parts if p.shard is None)
            raise RecordsError(
                plain.source, "holds no shard, the others are shards: merge one kind only"
            )
        labels = _check_shards(sharded)
    seen: dict[str, str] = {}
    tests: list[dict[str, Any]] = []
    for part in parts:
        for test in part.tests:
            nodeid = test["nodeid"]
            if nodeid in seen:
                raise RecordsError(
                    part.source,
                    f"test {nodeid!r} is also in {seen[nodeid]}: it would be counted twice",
                )
            seen[nodeid] = part.source
            tests.append(test)
    tests.sort(key=lambda t: str(t["nodeid"]))
    merged = Records(tests=tests, shard=None, source="<merged>")  # every shard: the whole suite
    return Merged(merged, merged.coverage(), labels)


def _check_shards(parts: Sequence[Records]) -> list[str]:
    """Every shard of one suite, each once (a missing one is an error: the merged report
    would pass a suite it never ran)."""
    first = parts[0].shard
    assert first is not None
    by_index: dict[int, str] = {}
    for part in parts:
        shard = part.shard
        assert shard is not None
        if shard.count != first.count or shard.suite != first.suite:
            raise RecordsError(
                part.source,
                f"is shard {shard.label} of another run than {parts[0].source} (shard "
                f"{first.label}): different shard count or scenario files",
            )
        if shard.index in by_index:
            raise RecordsError(
                part.source, f"shard {shard.label} is also {by_index[shard.index]}: given twice"
            )
        by_index[shard.index] = part.source
    absent = first.count - len(by_index)  # the indices are distinct and within 1..count
    if absent:
        # the first few missing indices, found among at most len(by_index) + MISSING_LISTED
        # candidates: nothing here is sized by the count
        missing: list[int] = []
        candidate = 1
        while len(missing) < min(absent, MISSING_LISTED):
            if candidate not in by_index:
                missing.append(candidate)
            candidate += 1
        listed = ", ".join(f"{i}/{first.count}" for i in missing)
        more = f" and {absent - len(missing)} more" if absent > len(missing) else ""
        raise RecordsError(None, f"shard {listed}{more} missing: every shard's records are needed")
    return [f"{i}/{first.count}" for i in sorted(by_index)]


def below_threshold(coverage: Coverage, threshold: float | None) -> str | None:
    """Why ``coverage`` fails ``threshold`` percent (``None``: it passes, or no threshold)."""
    if threshold is None or coverage.percent >= threshold:
        return None
    missing = ", ".join(b.name for b in coverage.missing)
    return (
        f"loop-behaviour coverage {coverage.percent:.1f} % is below the required "
        f"{threshold:g} % (never exercised: {missing})"
    )


def failing(tests: Iterable[Mapping[str, Any]]) -> int:
    """How many of ``tests`` failed or errored (what makes a merged run exit 1)."""
    return sum(1 for t in tests if t.get("outcome") in FAILING)


def write_merged_html(path: str | Path, merged: Merged, *, title: str) -> Path:
    """The merged report page, drawn by ``html.write_html`` like a session's."""

    return write_html(path, merged.records.tests, coverage=merged.coverage, title=title)


__all__ = [
    "KIND",
    "MAX_SHARDS",
    "VERSION",
    "Merged",
    "Records",
    "RecordsError",
    "Shard",
    "below_threshold",
    "coverage_of",
    "failing",
    "merge",
    "read_records",
    "records_from",
    "shard_count_problem",
    "write_merged_html",
]
