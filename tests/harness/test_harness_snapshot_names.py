"""Snapshot file names are unique and length-safe: ids that differ only in characters a file
name cannot hold, and long ids that share a prefix, each get their own file, also when
pytest-xdist workers write them (``--snapshot-update -n 2``); an update never deletes them."""

from __future__ import annotations

import pytest

from openprogram_testing.judges.snapshot import STEM_BUDGET, safe_stem

pytest_plugins = ["pytester"]

LONG_A = "x" * 250 + "a"
LONG_B = "x" * 250 + "b"
IDS = ["a/b", "ab", "c:d", "cd", LONG_A, LONG_B, "é" * 120]

BASE = (
    "-p",
    "no:cacheprovider",
    "-p",
    "no:randomly",
    "-o",
    "asyncio_default_fixture_loop_scope=function",
)
LEAN = ("-p", "no:langsmith_plugin", "-p", "no:hypothesispytest", "-p", "no:anyio")


def test_safe_stem_keeps_clean_ids_and_separates_the_rest() -> None:
    assert safe_stem("test_add[1-2]") == "test_add[1-2]"
    names = {safe_stem(f"test_x[{i}]") for i in IDS}
    assert len(names) == len(IDS)
    for name in names:
        assert len(name.encode("utf-8")) <= STEM_BUDGET
        assert not set(name) & set('/\\:*?"<>|')
    assert safe_stem("test_x[ab]") == "test_x[ab]"  # unchanged ids stay readable
    assert safe_stem("test_x[a/b]").startswith("test_x[ab]-")
    assert safe_stem("a\x00b") != safe_stem("ab")


def test_update_under_xdist_writes_one_file_per_id_and_keeps_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_names=f"""
import pytest
from openprogram_testing import ScriptedProvider, run_loop_sync

IDS = {IDS!r}

@pytest.mark.parametrize("text", IDS, ids=IDS)
def test_x(text, trace_snapshot):
    assert trace_snapshot == run_loop_sync(ScriptedProvider([text[-3:]]), "hi")
"""
    )
    update = pytester.runpytest_subprocess(*BASE, *LEAN, "-n", "2", "--snapshot-update")
    update.assert_outcomes(passed=len(IDS))
    assert "Errno 36" not in update.stdout.str()
    files = sorted(pytester.path.glob("__snapshots__/test_names/*.trace.txt"))
    assert len(files) == len(IDS), [f.name for f in files]
    assert all(len(f.name.encode("utf-8")) <= 255 for f in files)
    texts = {f.read_text(encoding="utf-8").splitlines()[6] for f in files}
    assert len(texts) == len(IDS)  # each file holds its own test's trace
    again = pytester.runpytest_subprocess(*BASE, *LEAN, "-n", "2")
    again.assert_outcomes(passed=len(IDS))
    rerun = pytester.runpytest_subprocess(*BASE, *LEAN, "--snapshot-update")
    rerun.assert_outcomes(passed=len(IDS))
    assert "deleted" not in rerun.stdout.str()
    assert len(list(pytester.path.glob("__snapshots__/test_names/*.trace.txt"))) == len(IDS)
