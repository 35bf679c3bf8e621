"""File names for test ids: one rule for snapshots and cassettes.

A file stem is the test id itself when every file system accepts it; otherwise the characters
none accept are dropped and a short hash of the whole id is appended, so two ids never share a
file (``a/b`` and ``ab``, ``[a/b]`` and ``[a-b]``, two long ids with a common prefix).  Paths are
the test file's own path under the rootdir, so ``tests/a/test_x.py`` and ``tests/b/test_x.py``
keep apart.  Nothing here imports more than the standard library: the plugin asks for it at
collection time.
"""

from __future__ import annotations

import hashlib
import unicodedata
from pathlib import Path, PurePath

__all__ = ["STEM_BUDGET", "safe_stem", "test_file_dir"]

STEM_BUDGET = 150
"""Most UTF-8 bytes a file stem takes (file systems allow 255 bytes per name, some encrypted
ones about 143): long test ids are cut and get a hash suffix."""

_UNSAFE = frozenset('\\/?*:|"<>')


def safe_stem(name: str, budget: int = STEM_BUDGET) -> str:
    """A file stem for the test id ``name``, unique and at most ``budget`` UTF-8 bytes.

    Characters no file system accepts (``/ \\ : * ? " < > |`` and control characters) are
    dropped; when that changed the id, or it is too long, a short hash of the whole id is
    appended (``test_x[ab]-1a2b3c4d``), so ``a/b`` and ``ab``, or two long ids that share a
    prefix, never share a file.
    """
    clean = "".join(
        c for c in name if c not in _UNSAFE and not unicodedata.category(c).startswith("C")
    )
    if clean == name and len(clean.encode("utf-8")) <= budget and clean not in ("", ".", ".."):
        return clean
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:8]
    head = clean.encode("utf-8")[: budget - len(digest) - 1].decode("utf-8", "ignore")
    return f"{head}-{digest}"


def test_file_dir(test_file: Path, rootdir: Path) -> PurePath:
    """The folder a test file's files go in, relative to a per-project base folder: the test
    file's path under ``rootdir`` without ``.py`` (``tests/a/test_x``).  A test file outside the
    rootdir gets ``_outside/<its stem>-<hash of its full path>``."""
    try:
        relative = test_file.resolve().relative_to(rootdir.resolve())
    except ValueError:
        digest = hashlib.sha256(str(test_file.resolve()).encode("utf-8")).hexdigest()[:8]
        return PurePath("_outside", f"{safe_stem(test_file.stem)}-{digest}")
    parts = [safe_stem(part) for part in relative.with_suffix("").parts]
    return PurePath(*parts)
