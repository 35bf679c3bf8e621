"""Capture the runs of every ``Runtime`` inside a block, whoever started them.

A test that calls the application's real entry point (``plan_trip("Lisbon", runtime=rt)``, or
one that builds its own ``Runtime`` at import time under ``runtime_override``) runs the loop
without any harness runner in between.  ``capture_runs`` still sees those runs, in the spirit
of pydantic-ai's ``capture_run_messages``::

    with capture_runs() as runs:
        plan_trip("three days in Lisbon", runtime=rt)
    (tree,) = runs                    # one TraceTree per outermost run
    tree["compare_options"].final_text
    assert_tool_called(tree.trace, "compare_options")

It observes through ``Runtime.observe_all`` (a context variable the runtime reads when a run
starts: the runtime knows nothing of the harness), so it sees nested runs, tool bodies on other
threads and asyncio tasks started inside the block, and no concurrent run outside it.  A plain
``threading.Thread`` does not inherit the context: a run on such a thread is not captured, and
it warns so (``RuntimeWarning``, ``openprogram.runtime.UNOBSERVED_RUN``); start the thread with
``contextvars.copy_context().run`` (or use ``asyncio.to_thread``) and it is.  The pytest
plugin opens one around each test when a report option is on, so such runs reach the HTML
report and the coverage table.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence
from typing import Any, overload

from openprogram import Runtime
from openprogram_testing.base.recording import observer_failed

from .steering import SteeringSchedule
from .trace import LoopTrace
from .tree import TraceTree, _Recorder, build_trees


class CapturedRuns(Sequence[TraceTree]):
    """The runs captured so far: one ``TraceTree`` per outermost run, in the order they started
    (a nested run is a child of the run whose tool call started it).  Read it inside the block
    or after it; each read sees every event recorded until then."""

    def __init__(self) -> None:
        self._recorder = _Recorder(None)
        self._lock = threading.Lock()
        self._schedule = SteeringSchedule()
        self._root: dict[str, str] = {}  # each run's outermost run
        self._roots: list[str] = []  # the outermost runs, in the order they started
        self._members: dict[str, list[str]] = {}  # an outermost run's runs, parents first
        self._index: dict[str, int] = {}  # an outermost run's place in ``_trees``
        self._dirty: set[str] = set()  # outermost runs with events since their tree was built
        self._trees: list[TraceTree] = []
        self.closed = False
        self.error: Exception | None = None
        """The first error that kept this capture from recording (``None``: complete)."""

    def close(self) -> None:
        """Take no new run: a context copied inside the block (an event loop's runner made
        there and reused later) may still name this observer after the block ended.  A run
        that started inside the block and is still going keeps recording to its end (and its
        nested runs with it), so reading it later shows how it ended, not a cut trace that
        looks like an error."""
        self.closed = True

    # -- the observer (called by every run inside the block) --------------------------------
    def __call__(self, info: Any, event: Any) -> None:
        try:
            self._record(info, event)
        except Exception as exc:
            self._failed(exc)

    def handed_over(self, handover: Any) -> None:
        try:
            self._handed_over(handover)
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        """A capture that cannot record must not fail the run it watches: an observer's
        exception fails the run (``Runtime.observe_all``), and this one is opened by every
        report option, which may not change a verdict.  It says so instead, once per capture,
        and what it holds is marked incomplete."""
        first = self.error is None
        self.error = self.error or exc
        if first:
            observer_failed("capture_runs", exc, then="the captured runs are incomplete")

    def _record(self, info: Any, event: Any) -> None:
        with self._lock:
            root = self._root.get(info.run_id)
            if root is None:
                parent = self._root.get(info.parent_id) if info.parent_id is not None else None
                if self.closed and parent is None:
                    return
                root = self._root[info.run_id] = parent if parent is not None else info.run_id
                if parent is None:
                    self._roots.append(root)
                    self._members[root] = []
                self._members[root].append(info.run_id)
            self._recorder(info, event)
            self._dirty.add(root)

    def _handed_over(self, handover: Any) -> None:
        with self._lock:
            run = handover.run
            root = self._root.get(run.run_id) if run is not None else None
            if self.closed and root is None:
                return
            self._recorder.handed_over(handover)
            self._dirty.update(self._roots if root is None else (root,))

    # -- reading ------------------------------------------------------------------------------
    def _built(self) -> list[TraceTree]:
        """The trees, each rebuilt only when its runs had events since the last read (so
        reading after each of n runs costs the new runs, not all n again)."""
        with self._lock:
            if self._dirty:
                fresh = self._roots[len(self._trees) :]
                for root in fresh:  # new outermost runs, in the order they started
                    self._index[root] = len(self._trees)
                    self._trees.append(self._tree(root))
                    self._dirty.discard(root)
                for root in self._dirty:
                    self._trees[self._index[root]] = self._tree(root)
                self._dirty.clear()
            return self._trees

    def _tree(self, root: str) -> TraceTree:
        (tree,) = build_trees(self._recorder, self._schedule, (), None, None, self._members[root])
        return tree

    @overload
    def __getitem__(self, index: int) -> TraceTree: ...
    @overload
    def __getitem__(self, index: slice) -> list[TraceTree]: ...
    def __getitem__(self, index: int | slice) -> TraceTree | list[TraceTree]:
        return self._built()[index]

    def __len__(self) -> int:
        return len(self._built())

    @property
    def traces(self) -> list[LoopTrace]:
        """Every run's trace, each tree parent first (what the HTML report records)."""
        return [node.trace for tree in self._built() for node in tree.walk()]

    def __repr__(self) -> str:
        return f"CapturedRuns({len(self)} outermost run(s), {len(self.traces)} in all)"


@contextlib.contextmanager
def capture_runs() -> Iterator[CapturedRuns]:
    """Capture every run of any ``Runtime`` started inside the ``with`` block (see the module's
    docstring); yields the ``CapturedRuns``, which keeps its runs after the block ends."""
    runs = CapturedRuns()
    try:
        with Runtime.observe_all(runs):
            yield runs
    finally:
        runs.close()


__all__ = ["CapturedRuns", "capture_runs"]
