"""The YAML collector: scenario files become pytest items.

Each item has fixtures as a test function does: the ``autouse`` fixtures in its scope
(``conftest.py`` files, plugins) and those the scenario names in ``usefixtures:`` are set up
before the run and torn down after it, so a fixture that resets a tool's state keeps scenarios
apart.

``scenario_*.yaml``, ``*.scenario.yaml`` (``.yml`` too) and whatever the ``openprogram_scenarios``
ini option's globs match are collected; each file is one item, named after the scenario.  A file
the loader rejects is still one item, failing with the loader's ``file:line:column`` report, so a
bad file never stops the good ones of the same directory run.  Failures are plain text (the
failed expectations, then the timeline): no traceback of the harness.  ``openprogram-testing run``
hands files to pytest and reads each item's ``result`` (a ``ScenarioResult``).

Registered by ``frontends.pytest.plugin`` (``pytest_plugins``), so installing the package is
enough; the collector's ini options (``openprogram_scenarios``, ``openprogram_scenario_time_limit``)
are registered here.  Nothing heavy is imported until a scenario file is actually collected.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from openprogram.texts import whole_text
from openprogram_testing.frontends.pytest.options import FREEZE_OPTION, SELECTION_OPTION

from .outcome import OUTCOME, ScenarioOutcome

if TYPE_CHECKING:
    from .loader import ScenarioReader
    from .model import Scenario
    from .runner import ScenarioResult


class ScenarioFailure(AssertionError):
    """A scenario failed (or its file is invalid).  Carries the ``outcome`` (the
    ``ScenarioResult`` as ``result``, the loader's report as ``load_error``); its text, the
    whole readable report, is what pytest shows, and nothing reads it back."""

    def __init__(self, outcome: ScenarioOutcome) -> None:
        self.outcome = outcome
        if outcome.invalid:
            super().__init__(f"invalid scenario file:\n{outcome.load_error}")
        else:
            super().__init__(outcome.failure)

    @property
    def result(self) -> ScenarioResult | None:
        return self.outcome.result

    @property
    def load_error(self) -> str | None:
        return self.outcome.load_error


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    """Collect YAML scenario files by name (see the module docstring)."""
    if file_path.suffix not in (".yaml", ".yml") or "__snapshots__" in file_path.parts:
        return None
    from .model import is_scenario_file

    extra = parent.config.getini("openprogram_scenarios")
    if not is_scenario_file(file_path, tuple(extra)):
        return None
    file: ScenarioFile = ScenarioFile.from_parent(parent, path=file_path)
    return file


class ScenarioFile(pytest.Module):
    """One scenario file: one test item (an invalid file becomes a failing item whose message
    is the loader's ``file:line:column`` report).

    A ``Module`` to pytest, so that module-scoped fixtures (an autouse fixture's dependency,
    such as a plugin's per-module cassette directory) have the node they attach to; its
    ``obj`` is an empty module named after the file, never the YAML imported as Python."""

    def _getobj(self) -> Any:
        import types

        module = types.ModuleType(self.path.stem.replace(".", "_"))
        module.__file__ = str(self.path)
        return module

    def collect(self) -> Iterator[pytest.Item]:
        from .problems import ScenarioError

        if hasattr(self.config, "workerinput"):  # an xdist worker: load only what it runs
            read = _header(self.path)
            if read is not None:
                name, fixtures = read
                yield ScenarioItem.from_parent(
                    self, name=name, scenario=None, deferred_fixtures=fixtures
                )
                return
        try:
            # the scenario's root is the project holding the file, as for `validate`, not
            # pytest's rootdir (which an ini file far above can move): one verdict per file
            scenario = _reader(self.config).load(self.path)
        except ScenarioError as exc:
            read = _header(self.path)
            name = read[0] if read is not None else _stem(self.path)
            yield ScenarioItem.from_parent(self, name=name, scenario=None, load_error=str(exc))
            return
        yield ScenarioItem.from_parent(self, name=scenario.display_name, scenario=scenario)


def _stem(path: Path) -> str:
    from .model import scenario_stem

    return scenario_stem(path)


def _header(path: Path) -> tuple[str, tuple[str, ...]] | None:
    """An item's name and ``usefixtures`` read from the file's top level without loading it
    (``yamlread.header``), or ``None`` when that reading is not certain to be the load's.

    Why: pytest-xdist has every worker collect every file, so a worker that loaded them all
    would validate the whole suite once per worker; it loads a file when it runs it.  A file
    that does not load is named the same way whoever collects it: by its ``name:`` when its
    top level can be read, else by its file name."""
    from .yamlread import YamlProblem, decode, header

    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_HEADER_BYTES + 1)
        if len(data) > MAX_HEADER_BYTES:
            return None
        read = header(decode(data))
    except (OSError, YamlProblem):
        return None
    if read is None:
        return None
    name, fixtures = read
    return (name or _stem(path)), fixtures


MAX_HEADER_BYTES = 1024 * 1024
"""A larger file is loaded whole at collection (reading its header would cost the same)."""


@dataclass(frozen=True)
class Selection:
    """The scenario files a run selected, and every folder between a collection root and them.

    Why not one command-line argument per file: pytest walks a file argument's folder from the
    top for each argument, so n files in one folder cost n² collector calls (a suite of 1,000
    files took minutes).  The command passes each folder once and this list, read once per
    process (xdist workers included, as it travels as an option), keeps collection to the
    selected files; a selected file is collected even where ``norecursedirs`` would skip its
    folder, as it is when named on pytest's command line."""

    files: frozenset[str]
    folders: frozenset[str]

    @classmethod
    def of(cls, files: Iterable[Path]) -> Selection:
        chosen = frozenset(os.path.abspath(f) for f in files)
        folders: set[str] = set()
        for f in chosen:
            parent = os.path.dirname(f)
            while parent not in folders:
                folders.add(parent)
                up = os.path.dirname(parent)
                if up == parent:
                    break
                parent = up
        return cls(chosen, frozenset(folders))

    @classmethod
    def read(cls, list_file: str) -> Selection:
        text = Path(list_file).read_text(encoding="utf-8")
        return cls.of(Path(line) for line in text.splitlines() if line)

    def write(self, list_file: Path) -> None:
        list_file.write_text("".join(f + "\n" for f in sorted(self.files)), encoding="utf-8")

    def keeps(self, path: Path) -> bool:
        where = os.path.abspath(path)
        return where in self.files or where in self.folders

    def roots(self) -> list[Path]:
        """The fewest folders holding every selected file: each selected file's folder, less
        those inside another one."""
        parents = sorted({os.path.dirname(f) for f in self.files})
        kept: list[str] = []
        for folder in parents:  # sorted, so an enclosing folder comes before what it holds
            if not any(folder == k or folder.startswith(k.rstrip(os.sep) + os.sep) for k in kept):
                kept.append(folder)
        return [Path(k) for k in kept]


_SELECTION = pytest.StashKey["Selection | None"]()


@pytest.hookimpl(tryfirst=True)
def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``--openprogram-only``, everything that is neither a selected file nor a folder
    leading to one is left out (and those are kept, whatever other ignore rules say)."""
    if _SELECTION not in config.stash:
        only = config.getoption("openprogram_only", default=None)
        config.stash[_SELECTION] = Selection.read(only) if only else None
    selection = config.stash[_SELECTION]
    return None if selection is None else not selection.keeps(collection_path)


def _freeze(config: pytest.Config) -> None:
    """Under ``--openprogram-freeze-gc``, move every object alive now out of the garbage
    collector's full walks (``gc.freeze``): done once the plugins are loaded and again once the
    suite is collected.

    Why: a full collection walks every object alive, and a suite's process holds the imported
    modules of pytest, its plugins and the libraries, then every collected scenario: those
    walks were a sixth of the CPU time of a suite of small scenarios.  These objects live until
    the session ends anyway; what the runs allocate is collected as before.  With ``session``
    ``pytest_unconfigure`` unfreezes them, so an in-process caller gets its memory back; with
    ``process`` they stay frozen, as unfreezing a large heap just before the process exits
    costs the full walks back (the command's own process and its xdist workers)."""
    if config.getoption("openprogram_freeze_gc", default=None):
        import gc

        gc.freeze()


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    _freeze(session.config)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session: pytest.Session) -> None:
    _freeze(session.config)


def pytest_unconfigure(config: pytest.Config) -> None:
    worker = hasattr(config, "workerinput")  # an xdist worker's process ends with its session
    if config.getoption("openprogram_freeze_gc", default=None) == "session" and not worker:
        import gc

        gc.unfreeze()


def import_roots(config: pytest.Config) -> list[Path]:
    """Where scenario ``import:`` paths are looked up under pytest: ``--openprogram-import-root``
    (what the CLI's ``--import-root`` passes), the ``pythonpath`` ini setting, the rootdir."""
    roots = [Path(str(p)) for p in config.getoption("openprogram_import_root", default=[]) or []]
    roots += [Path(str(p)) for p in config.getini("pythonpath") or []]
    roots.append(Path(str(config.rootpath)))
    return roots


_READER = pytest.StashKey["ScenarioReader"]()


def _reader(config: pytest.Config) -> ScenarioReader:
    """The session's scenario reader: import roots resolved once, each folder's project root
    found once (see ``ScenarioReader``)."""
    reader = config.stash.get(_READER, None)
    if reader is None:
        from .loader import ScenarioReader

        reader = config.stash[_READER] = ScenarioReader(import_roots(config))
    return reader


def time_limit(config: pytest.Config) -> float | None:
    """The ``openprogram_scenario_time_limit`` ini value (``None``: the runner's default)."""
    raw = str(config.getini("openprogram_scenario_time_limit") or "").strip()
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not value > 0:
        raise pytest.UsageError(
            f"openprogram_scenario_time_limit must be a number of seconds > 0, got {raw!r}"
        )
    return value


class ScenarioItem(pytest.Item):
    """One scenario run.  ``result`` holds the ``ScenarioResult`` once the item ran (``None``
    for a file that did not load)."""

    def __init__(
        self,
        *,
        scenario: Scenario | None,
        load_error: str | None = None,
        deferred_fixtures: tuple[str, ...] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.scenario = scenario
        self.load_error = load_error
        self.deferred = deferred_fixtures is not None  # loaded when it runs (see ``_header``)
        self.result: ScenarioResult | None = None
        self.stash[OUTCOME] = ScenarioOutcome(self.name, str(self.path), load_error)
        fixtures = scenario.usefixtures if scenario is not None else deferred_fixtures
        if fixtures:
            self.add_marker(pytest.mark.usefixtures(*fixtures))
        self._fixtures_named = tuple(fixtures or ())
        # Fixtures as a test function has them: the autouse fixtures in scope (conftest files,
        # plugins) and those ``usefixtures:`` names, set up before the run, torn down after.
        manager = self.session._fixturemanager
        self._fixtureinfo = manager.getfixtureinfo(node=self, func=None, cls=None)
        self.fixturenames = self._fixtureinfo.names_closure
        self.funcargs: dict[str, Any] = {}

    def setup(self) -> None:
        from _pytest.fixtures import TopRequest

        request = TopRequest(self, _ispytest=True)  # type: ignore[arg-type]
        request._fillfixtures()

    def runtest(self) -> None:
        if self.deferred and self.scenario is None and self.load_error is None:
            self._load()
        if self.load_error is not None or self.scenario is None:
            raise ScenarioFailure(self.stash[OUTCOME])
        from .runner import run_scenario

        self.result = run_scenario(
            _with_ini_defaults(self.scenario, self.config),
            snapshot=self._snapshot(),
            snapshot_hint="--snapshot-update",
            time_limit_s=time_limit(self.config),
        )
        outcome = ScenarioOutcome(self.name, str(self.path), result=self.result)
        self.stash[OUTCOME] = outcome
        if not outcome.passed:
            raise ScenarioFailure(outcome)

    def _load(self) -> None:
        """Load a deferred item's file; it must say what its header said (the name and the
        fixtures the item was collected with), else the item fails saying so."""
        from .problems import ScenarioError

        try:
            scenario = _reader(self.config).load(self.path)
        except ScenarioError as exc:
            self.load_error = str(exc)
        else:
            named = (scenario.display_name, tuple(scenario.usefixtures))
            if named == (self.name, self._fixtures_named):
                self.scenario = scenario
            else:
                self.load_error = (
                    f"{self.path}: collected as {self.name!r} with fixtures "
                    f"{list(self._fixtures_named)}, but the file says {named[0]!r} with "
                    f"{list(named[1])}: the file changed during the run?"
                )
        self.stash[OUTCOME] = ScenarioOutcome(self.name, str(self.path), self.load_error)

    @property
    def obj(self) -> Any:
        """What syrupy reads (module and name) to place this item's snapshot."""
        from .snapshots import snapshot_owner

        return snapshot_owner(self.name)

    def _snapshot(self) -> Any:
        """A syrupy assertion bound to this item (``None`` when syrupy is not active)."""
        session = getattr(self.config, "_syrupy", None)
        if session is None or self.scenario is None or not self.scenario.expect.snapshot:
            return None
        from .snapshots import pytest_snapshot

        return pytest_snapshot(self, session)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, ScenarioFailure):
            return whole_text(str(excinfo.value))  # JUnit XML and xdist hold no lone surrogate
        return super().repr_failure(excinfo)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"scenario: {self.name}"


__all__ = [
    "FREEZE_OPTION",
    "SELECTION_OPTION",
    "ScenarioFailure",
    "ScenarioFile",
    "ScenarioItem",
    "Selection",
    "import_roots",
    "time_limit",
]


def _with_ini_defaults(scenario: Scenario, config: pytest.Config) -> Scenario:
    """The scenario with the ini's cassette defaults for what its file does not say
    (``openprogram_cassette_match_body = false`` relaxes body matching where ``match_body``
    is not written)."""
    cassette = scenario.cassette
    if cassette is None or "match_body" in cassette.model_fields_set:
        return scenario
    if bool(config.getini("openprogram_cassette_match_body")):
        return scenario
    relaxed = cassette.model_copy(update={"match_body": False})
    return scenario.model_copy(update={"cassette": relaxed})
