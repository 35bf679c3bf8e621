"""A syrupy extension that stores loop traces as readable text snapshots.

Each snapshot is its own file, ``__snapshots__/<test module>/<test name>.trace.txt``, holding
``render_snapshot(trace)``: one line per event, indented per round, ids/usage/timestamps
normalised (see ``openprogram_testing.core.render``).  File names are
unique and length-safe (``safe_stem``).  One file per snapshot means pytest-xdist
workers never write the same file, so ``--snapshot-update -n 2`` neither loses nor corrupts
snapshots (syrupy merges the workers' reports on the controller before cleaning up).

    def test_add(trace_snapshot, scripted_provider):
        ...
        assert trace_snapshot == trace
        # without the fixture: snapshot(extension_class=TraceSnapshotExtension) == trace
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode
from syrupy.location import PyTestLocation
from syrupy.types import SnapshotIndex

from openprogram_testing.base.filenames import STEM_BUDGET, safe_stem
from openprogram_testing.base.paths import confined, snapshot_root
from openprogram_testing.core.render import render_snapshot, snapshot_format_problem
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.core.tree import TraceTree

_INDEX = re.compile(r"(\.\d+|\[[^\[\]]*\])$")


_PROPERTY_OPTIONS = ("exclude", "include", "matcher")
"""syrupy's options that filter or replace properties of the data while it is serialised."""


class SnapshotOptionRefused(TypeError):
    """``trace_snapshot(exclude=...)`` (or ``include=`` / ``matcher=``): syrupy's property
    options walk a tree of properties, and a trace snapshot is rendered text with none, so the
    option would silently do nothing and the snapshot would compare what the test says it
    leaves out.  ``options`` names the options that were given."""

    def __init__(self, options: tuple[str, ...]) -> None:
        self.options = options
        given = ", ".join(f"{name}=" for name in options)
        super().__init__(
            f"trace_snapshot does not apply {given}: a trace snapshot is rendered text, not a "
            "tree of properties. Ids, usage and timestamps are already normalised; to leave "
            "more out, compare an edited render_snapshot(trace) string (stored as is), or use "
            "syrupy's own snapshot on a dict"
        )


def _user_matcher(matcher: Any) -> Any:
    """The matcher the test gave, if any.  syrupy always passes a matcher of its own (a closure
    over the ``SnapshotAssertion`` that renders nested assertions and then calls the test's
    ``matcher=``, kept on the assertion as ``_matcher``), so its presence says nothing: look
    through it.  A matcher passed to ``serialize`` directly is the test's own."""
    if matcher is None:
        return None
    owner = inspect.getclosurevars(matcher).nonlocals.get("self")
    if isinstance(owner, SnapshotAssertion):
        return owner._matcher
    return matcher


class TraceSnapshotExtension(SingleFileSnapshotExtension):
    """Serialises a ``LoopTrace`` with ``render_snapshot`` into ``<test>.trace.txt``.  A ``str``
    is stored as is (an already rendered trace)."""

    _write_mode = WriteMode.TEXT
    file_extension = "trace.txt"

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        """``safe_stem`` of the test id, then the assertion index (``.1``, ``[name]``)."""
        if isinstance(index, str):
            suffix = f"[{safe_stem(index, 40)}]"
        else:
            suffix = f".{index}" if index else ""
        return safe_stem(test_location.snapshot_name) + suffix

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        """Claim this test's files (a hashed name included), so an update never deletes them
        as unused."""
        if super().matches_test_location(
            test_location=test_location, snapshot_location=snapshot_location
        ):
            return True
        path = Path(snapshot_location)
        if path.parent.name != test_location.basename:
            return False
        if not test_location.matches_snapshot_site(snapshot_location):
            return False
        suffix = f".{cls.file_extension}"
        if not path.name.endswith(suffix):
            return False
        stem = path.name[: -len(suffix)]
        expected = safe_stem(test_location.snapshot_name)
        return stem == expected or _INDEX.sub("", stem) == expected

    def read_snapshot_data_from_location(
        self, *, snapshot_location: str, snapshot_name: str, session_id: str
    ) -> Any:
        """syrupy's read, refused through a link that leaves the project (``OutsideProject``)."""
        location = Path(snapshot_location)
        confined(location, snapshot_root(location), "the snapshot")
        return super().read_snapshot_data_from_location(
            snapshot_location=snapshot_location, snapshot_name=snapshot_name, session_id=session_id
        )

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: Any, **kwargs: Any) -> None:
        """syrupy's write, refused through a link that leaves the project (the file itself or a
        linked ``__snapshots__`` directory): an update never writes outside it."""
        location = Path(snapshot_collection.location)
        confined(location, snapshot_root(location), "the snapshot")
        super().write_snapshot_collection(snapshot_collection=snapshot_collection, **kwargs)

    def diff_lines(self, serialized_data: Any, snapshot_data: Any) -> Iterator[str]:
        """Each changed line whole, the differing part marked (syrupy's own diff cuts a long
        line before the change).  Kept for the report section too: pytest truncates an
        assertion's explanation at default verbosity, the section is shown whole."""
        problem = snapshot_format_problem(str(snapshot_data))
        if problem is not None:  # an old format: say what to do, not every changed line
            lines = [problem]
        else:
            lines = marked_diff(str(serialized_data), str(snapshot_data))
        PENDING_DIFFS.append(lines)
        yield from lines

    def serialize(self, data: Any, **kwargs: Any) -> str:
        """The snapshot text of ``data``; refuses syrupy's property options (see
        :class:`SnapshotOptionRefused`) instead of ignoring them."""
        options = {**kwargs, "matcher": _user_matcher(kwargs.get("matcher"))}
        given = tuple(name for name in _PROPERTY_OPTIONS if options.get(name) is not None)
        if given:
            raise SnapshotOptionRefused(given)
        if isinstance(data, LoopTrace | TraceTree):
            return render_snapshot(data)
        if isinstance(data, str):
            return data
        raise TypeError(
            "trace_snapshot compares LoopTrace objects (run_loop / loop_runner) and TraceTree "
            f"objects (run_exec / exec_runner), "
            f"got {type(data).__name__}"
        )


PENDING_DIFFS: list[list[str]] = []
"""The marked diffs of failed trace snapshots of the test running now; the plugin moves them
into the test's report as a section (and empties the list after each test)."""


def marked_diff(received: str, stored: str) -> list[str]:
    """The lines that differ between the ``stored`` snapshot and the ``received`` text: for each
    hunk its line number, then each stored line (``-``) and received line (``+``) whole, and
    under a changed pair a ``^`` marker spanning the part that differs."""
    old, new = stored.splitlines(), received.splitlines()
    out: list[str] = []
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        out.append(f"line {i1 + 1} of the snapshot ({tag}):")
        for k in range(max(i2 - i1, j2 - j1)):
            before = old[i1 + k] if i1 + k < i2 else None
            after = new[j1 + k] if j1 + k < j2 else None
            if before is not None:
                out.append(f"- {before}")
            if after is not None:
                out.append(f"+ {after}")
            if before is not None and after is not None:
                out.append("  " + _carets(before, after))
    return out


def _carets(before: str, after: str) -> str:
    """``^`` under the part of ``after`` that differs from ``before`` (common prefix and suffix
    left unmarked)."""
    prefix = 0
    limit = min(len(before), len(after))
    while prefix < limit and before[prefix] == after[prefix]:
        prefix += 1
    suffix = 0
    while (
        suffix < limit - prefix
        and before[len(before) - 1 - suffix] == after[len(after) - 1 - suffix]
    ):
        suffix += 1
    return " " * prefix + "^" * max(1, len(after) - suffix - prefix, len(before) - suffix - prefix)


__all__ = [
    "STEM_BUDGET",
    "SnapshotOptionRefused",
    "TraceSnapshotExtension",
    "marked_diff",
    "safe_stem",
]
