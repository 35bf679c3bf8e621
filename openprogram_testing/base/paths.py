"""Where a project is, and files that must stay inside it.

A project is the nearest directory above a file holding a project marker (``pyproject.toml``,
``setup.cfg``, ``setup.py``, ``pytest.ini``, ``tox.ini``, ``.git``), else the file's own
directory.  The harness reads and writes project files named by hostile input (a scenario's
cassette path) or found by convention (``__snapshots__``); a symlink among them may lead
anywhere, so each such path is resolved and must stay inside its project (``confined``).
"""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "pytest.ini", "tox.ini", ".git")


class OutsideProject(OSError):
    """A path that resolves outside its project (``path``, ``resolved``, ``root``)."""

    def __init__(self, what: str, path: Path, resolved: Path, root: Path) -> None:
        super().__init__(
            f"{what} {path} leads outside the project {root} (to {resolved}): the harness never "
            "reads or writes through a link that leaves the project"
        )
        self.path = path
        self.resolved = resolved
        self.root = root


def project_root(directory: Path) -> Path:
    """The project holding ``directory`` (see the module docstring), resolved."""
    start = directory.resolve()
    for candidate in (start, *start.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return start


def confined(path: Path, root: Path, what: str) -> Path:
    """``path`` resolved; raises ``OutsideProject`` when it (or a link on the way) leaves
    ``root``."""
    resolved = path.resolve()
    real_root = root.resolve()
    if not resolved.is_relative_to(real_root):
        raise OutsideProject(what, path, resolved, real_root)
    return resolved


def writable_target(path: Path, what: str) -> Path:
    """``path`` where an output (a report, result files) goes, resolved; raises ``OutsideProject``
    when a link on the way leads out of the project the path names.

    The project is found from the path as written (its nearest directory with a project marker,
    links not followed), so a linked ``build/`` cannot choose its own project; a path that is
    outside every project as written (``/tmp/report.html``) is the user's explicit choice and
    stays allowed."""
    written = Path(os.path.abspath(path))
    root = written.parent
    for candidate in written.parents:
        if any(os.path.lexists(candidate / marker) for marker in PROJECT_MARKERS):
            root = candidate
            break
    return confined(written, root, what)


def snapshot_root(location: Path) -> Path:
    """The project of a snapshot file: that of the directory holding its ``__snapshots__``
    (unresolved: a linked ``__snapshots__`` must not choose its own project)."""
    for parent in location.parents:
        if parent.name == "__snapshots__":
            return project_root(parent.parent)
    return project_root(location.parent)


__all__ = [
    "PROJECT_MARKERS",
    "OutsideProject",
    "confined",
    "project_root",
    "snapshot_root",
    "writable_target",
]
