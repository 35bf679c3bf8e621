"""A syrupy extension that stores loop traces as readable text snapshots.

Each snapshot is its own file, ``__snapshots__/<test module>/<test name>.trace.txt``, holding
``render_snapshot(trace)``: one line per event, indented per round, ids/usage/timestamps
normalised (see ``openprogram_testing.render``).  One file per snapshot means pytest-xdist
workers never write the same file, so ``--snapshot-update -n 2`` neither loses nor corrupts
snapshots (syrupy merges the workers' reports on the controller before cleaning up).

    def test_add(trace_snapshot, scripted_provider):
        ...
        assert trace_snapshot == trace
        # without the fixture: snapshot(extension_class=TraceSnapshotExtension) == trace
"""

from __future__ import annotations

from typing import Any

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from .render import render_snapshot
from .trace import LoopTrace
from .tree import TraceTree


class TraceSnapshotExtension(SingleFileSnapshotExtension):
    """Serialises a ``LoopTrace`` with ``render_snapshot`` into ``<test>.trace.txt``.  A ``str``
    is stored as is (an already rendered trace)."""

    _write_mode = WriteMode.TEXT
    file_extension = "trace.txt"

    def serialize(self, data: Any, **kwargs: Any) -> str:
        if isinstance(data, LoopTrace | TraceTree):
            return render_snapshot(data)
        if isinstance(data, str):
            return data
        raise TypeError(
            "trace_snapshot compares LoopTrace objects (run_loop / loop_runner) and TraceTree "
            f"objects (run_exec / exec_runner), "
            f"got {type(data).__name__}"
        )


__all__ = ["TraceSnapshotExtension"]
