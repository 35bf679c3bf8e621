"""syrupy's ``exclude`` / ``include`` / ``matcher`` cannot apply to a rendered trace (text, not a
tree of properties): ``trace_snapshot`` refuses them with an error naming the option, rather than
comparing everything while the test reads as if part of it were left out."""

from __future__ import annotations

import pytest
from syrupy.filters import props
from syrupy.matchers import path_type

from openprogram_testing import ScriptedProvider, render_snapshot, run_loop_sync
from openprogram_testing.judges.snapshot import SnapshotOptionRefused, TraceSnapshotExtension

pytest_plugins = ["pytester"]


@pytest.mark.parametrize(
    "option",
    [
        {"exclude": props("usage")},
        {"include": props("text")},
        {"matcher": path_type({"id": (str,)})},
    ],
    ids=lambda o: next(iter(o)),
)
def test_each_option_is_refused_by_name(option: dict[str, object]) -> None:
    trace = run_loop_sync(ScriptedProvider(["hi"]), "hello")
    name = next(iter(option))
    with pytest.raises(SnapshotOptionRefused, match=f"does not apply {name}=") as info:
        TraceSnapshotExtension().serialize(trace, **option)
    assert info.value.options == (name,)
    with pytest.raises(SnapshotOptionRefused, match=name):  # a rendered string too
        TraceSnapshotExtension().serialize("already text", **option)


def test_options_left_unset_serialise_as_before() -> None:
    trace = run_loop_sync(ScriptedProvider(["hi"]), "hello")
    ext = TraceSnapshotExtension()
    assert ext.serialize(trace, exclude=None, include=None, matcher=None) == render_snapshot(trace)


def test_the_fixture_fails_the_tests_that_give_options_and_names_them(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_opts="""
from syrupy.filters import props
from syrupy.matchers import path_type
from openprogram_testing import ScriptedProvider, run_loop_sync

def trace():
    return run_loop_sync(ScriptedProvider(["hi"]), "hello")

def test_plain(trace_snapshot):
    assert trace_snapshot == trace()

def test_exclude(trace_snapshot):
    assert trace_snapshot(exclude=props("usage")) == trace()

def test_matcher(trace_snapshot):
    assert trace_snapshot(matcher=path_type({"id": (str,)})) == trace()
"""
    )
    result = pytester.runpytest_subprocess(
        *("-p", "no:cacheprovider", "-p", "no:randomly", "-p", "no:hypothesispytest"),
        *("-p", "no:anyio", "--snapshot-update"),
    )
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*SnapshotOptionRefused*exclude=*"])
    result.stdout.fnmatch_lines(["*SnapshotOptionRefused*matcher=*"])
    written = [p.name for p in pytester.path.glob("__snapshots__/**/*.trace.txt")]
    assert written == ["test_plain.trace.txt"]
