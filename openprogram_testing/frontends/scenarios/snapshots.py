"""``expect.snapshot: true``: the run's rendered trace is kept in syrupy's store.

The one snapshot store of the harness is syrupy with ``TraceSnapshotExtension``: a scenario's
snapshot is ``<scenario dir>/__snapshots__/<scenario file stem>/<scenario name>.trace.txt``.
Under pytest the check is a syrupy assertion bound to the scenario's item (so
``--snapshot-update``, unused-snapshot reports and xdist work as for any test); outside pytest
(``run_scenario`` from Python) the same extension reads and writes the same file.  Failure
messages name the flag of the runner in use (``hint``).
"""

from __future__ import annotations

import difflib
import uuid
from pathlib import Path
from typing import Any

from openprogram_testing.base.paths import OutsideProject, confined, snapshot_root
from openprogram_testing.core.render import snapshot_format_problem
from openprogram_testing.judges.snapshot import TraceSnapshotExtension

from .model import Scenario


class ScenarioSnapshotExtension(TraceSnapshotExtension):
    """Scenario traces, stored like every trace snapshot (one text file each)."""


class _Owner:
    """Stands for the test function syrupy expects behind an item (module and name)."""

    __module__ = "openprogram_testing.scenarios"

    def __init__(self, name: str) -> None:
        self.__name__ = name


class _Site:
    """What syrupy's ``PyTestLocation`` reads from a pytest item, for a scenario file."""

    def __init__(self, path: Path, name: str) -> None:
        self.path = path
        self.name = name
        self.nodeid = f"{path.name}::{name}"
        self.obj = _Owner(name)


def snapshot_owner(name: str) -> Any:
    """The ``obj`` a scenario's pytest item shows syrupy."""
    return _Owner(name)


def pytest_snapshot(item: Any, session: Any) -> Any:
    """A syrupy assertion for a scenario's pytest ``item`` in syrupy's ``session``."""
    from syrupy.assertion import SnapshotAssertion
    from syrupy.location import PyTestLocation

    option = item.config.option
    return SnapshotAssertion(
        update_snapshots=bool(getattr(option, "update_snapshots", False)),
        update_new_snapshots_only=bool(getattr(option, "update_new_snapshots_only", False)),
        extension_class=ScenarioSnapshotExtension,
        test_location=PyTestLocation(item),
        session=session,
    )


def check_snapshot(
    scenario: Scenario,
    trace: Any,
    *,
    snapshot: Any = None,
    update: bool = False,
    hint: str = "update_snapshots=True",
) -> tuple[str | None, bool]:
    """``(failure line or None, whether a snapshot was written)``.  ``snapshot`` is a syrupy
    assertion (under pytest); without one the extension is used directly."""

    try:
        if snapshot is not None:
            return _with_assertion(snapshot, trace, hint)
        return _without_pytest(scenario, trace, update, hint)
    except OutsideProject as exc:
        return f"expect.snapshot: {exc}", False


def _without_pytest(
    scenario: Scenario, trace: Any, update: bool, hint: str
) -> tuple[str | None, bool]:
    if scenario.path is None:
        return "expect.snapshot: a scenario built in code has no file to keep it beside", False
    from syrupy.exceptions import SnapshotDoesNotExist
    from syrupy.location import PyTestLocation

    extension = ScenarioSnapshotExtension()
    site = PyTestLocation(_Site(scenario.path, scenario.display_name))  # type: ignore[arg-type]
    location = extension.get_location(test_location=site, index=0)
    data = extension.serialize(trace)
    try:
        stored = extension.read_snapshot(test_location=site, index=0, session_id=uuid.uuid4().hex)
    except SnapshotDoesNotExist:
        stored = None
    if stored == data:
        return None, False
    if update:
        confined(Path(location), snapshot_root(Path(location)), "the snapshot")
        Path(location).parent.mkdir(parents=True, exist_ok=True)
        extension.write_snapshot(snapshot_location=location, snapshots=[(data, site, 0)])
        return None, True
    return _failure(location, stored, data, hint), False


def _with_assertion(snapshot: Any, trace: Any, hint: str) -> tuple[str | None, bool]:

    matched = snapshot == trace
    result = snapshot.executions[snapshot.num_executions - 1]
    if isinstance(result.exception, OutsideProject):
        raise result.exception
    if matched:
        return None, bool(result.created or result.updated)
    if result.exception is not None and result.asserted_data is None:
        return f"expect.snapshot: cannot serialise the trace: {result.exception}", False
    return _failure(
        result.snapshot_location, result.recalled_data, result.asserted_data, hint
    ), False


def _failure(location: str, stored: Any, data: Any, hint: str) -> str:
    if stored is None:
        old = _place_in_0_1(Path(location))
        if old.is_file():
            return (
                f"expect.snapshot: a scenario's snapshot is stored at {location} since 0.2.0 "
                f"(syrupy's store); found it at its 0.1 place {old}: move it (git mv {old} "
                f"{location}), then run with {hint} if the trace differs"
            )
        return f"expect.snapshot: no snapshot stored at {location}; run with {hint} to write it"
    problem = snapshot_format_problem(str(stored), update_hint=hint)
    if problem is not None:
        return f"expect.snapshot: {location}: {problem}"
    diff = difflib.unified_diff(
        str(stored).splitlines(), str(data).splitlines(), "stored", "this run", lineterm="", n=2
    )
    return (
        f"expect.snapshot: the trace differs from {location} (run with {hint} to accept):\n"
        + "\n".join("    " + d for d in diff)
    )


def snapshot_path(scenario: Scenario) -> Path | None:
    """Where the scenario's snapshot is stored (``None`` for a scenario built in code)."""
    if scenario.path is None:
        return None
    from syrupy.location import PyTestLocation

    site = PyTestLocation(_Site(scenario.path, scenario.display_name))  # type: ignore[arg-type]
    return Path(ScenarioSnapshotExtension.get_location(test_location=site, index=0))


def _place_in_0_1(location: Path) -> Path:
    """Where 0.1 kept the snapshot now at ``location``: ``__snapshots__/<file stem>.txt``
    rather than ``__snapshots__/<file stem>/<scenario name>.trace.txt``.  Found there, the
    snapshot is reported with the move to make instead of as missing (CHANGELOG.md)."""
    return location.parent.parent / f"{location.parent.name}.txt"


__all__ = [
    "ScenarioSnapshotExtension",
    "check_snapshot",
    "pytest_snapshot",
    "snapshot_owner",
    "snapshot_path",
]
