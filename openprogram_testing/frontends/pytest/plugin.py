"""The pytest plugin (registered through the ``pytest11`` entry point).

Fixtures and markers of the harness (its options are all in ``frontends.pytest.options``).
Nothing heavy is imported at collection time: SDKs, vcrpy and hypothesis load only when a
fixture needs them.  ``op_cassette_dir`` and ``op_record_mode`` are override points, as
pytest-recording's ``vcr_cassette_dir`` and ``record_mode`` are: a ``conftest.py`` fixture of the
same name changes where the ``cassette`` fixture's files live or how it records.

Fixtures: ``scripted_provider``, ``provider_emulator``, ``cassette``, ``steering``,
``loop_runner``, ``exec_runner``, ``trace_snapshot``, ``runtime_override``, ``fake_mcp_server``,
``mcp_cassette``, ``otel_spans``;
an autouse fixture blocks real model requests (markers ``allow_model_requests``,
``op_no_invariants``, ``op_cassette``; options ``--openprogram-…``).  The runners live in
``openprogram_testing.frontends.pytest.runners``.
"""

from __future__ import annotations

import contextlib
import inspect
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from openprogram_testing.base.extras import MissingExtra, require
from openprogram_testing.core.approvals import ApprovalScriptError, ScriptedReviewer
from openprogram_testing.core.render import render_timeline, timeline_shown
from openprogram_testing.core.spans import SpanCapture
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.tree import Subject
from openprogram_testing.transport.scripted import ScriptedProvider, ScriptError

from .runners import ExecRunner, LoopRunner

# Every option (frontends.pytest.options); the YAML collector; the report.
pytest_plugins = [
    "openprogram_testing.frontends.pytest.options",
    "openprogram_testing.frontends.scenarios.collect",
    "openprogram_testing.frontends.report.pytest_plugin",
]

if TYPE_CHECKING:
    from openprogram_testing.transport.cassettes.session import CassetteSession
    from openprogram_testing.transport.emulator.server import ProviderEmulator


def pytest_configure(config: pytest.Config) -> None:
    """Shared hook (one per module): register every marker of the harness here."""
    config.addinivalue_line(
        "markers",
        "op_cassette(name=None, *, match_body=True, ignore_paths=(), allow_unplayed=False, "
        "mutations=()): the cassette the `cassette` fixture replays (default: "
        "cassettes/<test file path>/<test name>.yaml)",
    )
    # -- harness markers ---------------------------------------------------------------------------
    config.addinivalue_line(
        "markers",
        "allow_model_requests: let this test make real model API requests (the real-call guard "
        "blocks them by default)",
    )
    config.addinivalue_line(
        "markers",
        "op_no_invariants: `loop_runner` does not check the loop invariants in this test",
    )
    config.addinivalue_line(
        "markers",
        "moves_cache_prefix(reason): this test's runs change the cached prompt prefix (system "
        "prompt, tool array, earlier messages) between model calls on purpose; the runners do "
        "not check the prompt-cache rule (invariant 14), and the reason says why",
    )
    otlp = config.getoption("--openprogram-otlp", default=None)
    if otlp and not config.pluginmanager.has_plugin("openprogram-otlp"):
        from .otlp import SpanExport, traces_endpoint

        try:
            endpoint = traces_endpoint(otlp)
            exporter = SpanExport(endpoint)
        except (ValueError, ImportError) as exc:  # not a URL; the otlp extra not installed
            raise pytest.UsageError(f"--openprogram-otlp: {exc}") from None
        config.pluginmanager.register(exporter, "openprogram-otlp")
    from .repeat import MARKER_LINE, RepeatPlugin

    config.addinivalue_line("markers", MARKER_LINE)
    if not config.pluginmanager.has_plugin("openprogram-repeat"):
        config.pluginmanager.register(RepeatPlugin(), "openprogram-repeat")


def _need_extra(fixture: str, *modules: str) -> None:
    """Fail the test that uses ``fixture`` (not the whole session) with the install line when a
    dependency of the testing extra is missing."""
    __tracebackhide__ = True
    try:
        require(f"the `{fixture}` fixture", *modules)
    except MissingExtra as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture
def otel_spans() -> Iterator[SpanCapture]:
    """The OpenTelemetry spans of the runs the test starts (``openprogram.telemetry``), as
    plain dicts with ids and timestamps numbered (``otel_spans.spans()``, ``.tree()``), in the
    manner of Logfire's ``capfire``; an in-memory exporter, the process's global provider left
    alone.  Needs the otlp extra (the OpenTelemetry SDK)."""
    try:
        capture = SpanCapture()
    except ImportError as exc:
        pytest.fail(str(exc), pytrace=False)
    with capture:
        yield capture


@pytest.fixture
def schema_driven_provider(request: pytest.FixtureRequest) -> Any:
    """A ``SchemaDrivenProvider`` seeded with the test's id (so each test draws its own, repeatable
    arguments): it calls every tool it is offered with schema-valid arguments, then finishes."""
    from openprogram_testing.transport.schema_provider import SchemaDrivenProvider

    return SchemaDrivenProvider(seed=request.node.nodeid)


@pytest.fixture
def scripted_provider() -> Iterator[ScriptedProvider]:
    """An empty strict ``ScriptedProvider``; add turns with ``.add(...)``.  At teardown an
    unexpected model call or an unplayed turn fails the test."""
    __tracebackhide__ = True
    provider = ScriptedProvider()
    yield provider
    try:
        provider.assert_complete()
    except ScriptError as exc:  # the message says it all: no harness source around it
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def provider_emulator() -> Iterator[ProviderEmulator]:
    """A started strict ``ProviderEmulator`` (loopback HTTP, OpenAI and Anthropic wire formats);
    add turns with ``.add(...)``.  At teardown it is stopped (threads joined, port freed), then an
    unexpected request or an unplayed turn fails the test."""
    __tracebackhide__ = True
    try:
        from openprogram_testing.transport.emulator.server import ProviderEmulator
    except ModuleNotFoundError as exc:  # a dependency of the testing extra
        _need_extra("provider_emulator", exc.name or "")
        raise

    emulator = ProviderEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()
    emulator.assert_complete()


@pytest.fixture
def fake_mcp_server() -> Iterator[Callable[..., Any]]:
    """Make strict fake MCP servers: ``fake_mcp_server("files", [read, stat])`` returns a
    ``FakeMCPServer`` (tools from functions or recorded ``tools/list`` entries).  At teardown each
    is closed (its connections and HTTP servers too), then an unexpected call or an answer
    scripted and never asked for fails the test."""
    __tracebackhide__ = True
    try:
        from openprogram_testing.transport.mcp.fake import FakeMCPServer, MCPScriptError
    except ModuleNotFoundError as exc:  # the mcp extra
        pytest.fail(
            f"the `fake_mcp_server` fixture needs the mcp extra ({exc.name} not installed); "
            'install it with: pip install "openprogram-loop[mcp]"',
            pytrace=False,
        )
    made: list[FakeMCPServer] = []

    def make(name: str = "fake", tools: Any = ()) -> FakeMCPServer:
        server = FakeMCPServer(name, tools)
        made.append(server)
        return server

    try:
        yield make
    finally:
        for server in made:
            server.close()
    failures: list[str] = []
    for server in made:
        try:
            server.assert_complete()
        except MCPScriptError as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


@pytest.fixture
def mcp_cassette(
    request: pytest.FixtureRequest, op_cassette_dir: Path, op_record_mode: str
) -> Iterator[Callable[..., Any]]:
    """Make MCP cassettes: ``mcp_cassette("files", server=real_server)`` returns an
    ``MCPCassette`` at ``<op_cassette_dir>/<test file path>/<test>.mcp-files.json`` (or
    ``path=``), recorded from ``server`` under ``--openprogram-record-mode=once`` (or ``all``; or
    ``op_record_mode``) and replayed
    otherwise; give it to ``MCPConnection`` in place of the server.  At teardown a recording is
    written, then a request no recording matched, or a recorded call never made, fails the
    test."""
    __tracebackhide__ = True
    try:
        from openprogram_testing.transport.mcp.cassette import MCPCassette, MCPCassetteError
    except ModuleNotFoundError as exc:  # the mcp extra
        pytest.fail(
            f"the `mcp_cassette` fixture needs the mcp extra ({exc.name} not installed); "
            'install it with: pip install "openprogram-loop[mcp]"',
            pytrace=False,
        )
    from openprogram_testing.base.filenames import safe_stem, test_file_dir

    root = Path(str(request.config.rootpath))
    mode = op_record_mode
    made: list[MCPCassette] = []

    def make(name: str, server: Any = None, *, path: Any = None, **options: Any) -> MCPCassette:
        __tracebackhide__ = True
        if path is None:
            folder = test_file_dir(Path(str(request.node.path)), root)
            stem = safe_stem(f"{_test_name(request)}.mcp-{name}")
            path = root / op_cassette_dir / folder / f"{stem}.json"
        options.setdefault("mode", mode)
        try:
            cassette = MCPCassette(path, server, **options)
        except MCPCassetteError as exc:
            pytest.fail(f"{type(exc).__name__}: {exc}", pytrace=False)
        made.append(cassette)
        return cassette

    yield make
    failures: list[str] = []
    for cassette in made:
        try:
            cassette.close()
            cassette.assert_complete()
        except MCPCassetteError as exc:
            failures.append(f"{type(exc).__name__}: {exc}")
    if failures:
        pytest.fail("\n".join(failures), pytrace=False)


def _cassette_path(
    request: pytest.FixtureRequest, name: object, folder: Path | None = None
) -> Path:
    """``<folder>/<name>.yaml`` or by default ``<folder>/<test file path>/<test>.yaml`` (``folder``
    is ``op_cassette_dir``), named as snapshots are (``safe_stem``): the test file's path keeps
    ``tests/a/test_x.py`` and ``tests/b/test_x.py`` apart, the hash suffix ``[a/b]`` and
    ``[a-b]``; a test in a class is ``TestX.test_t``."""
    from openprogram_testing.base.filenames import safe_stem, test_file_dir

    root = Path(str(request.config.rootpath))
    folder = root / "cassettes" if folder is None else folder
    if name is None:
        within = test_file_dir(Path(str(request.node.path)), root)
        return folder / within / f"{safe_stem(_test_name(request))}.yaml"
    path = Path(str(name))
    if not path.suffix:
        path = path.with_suffix(".yaml")
    return path if path.is_absolute() else folder / path


def _test_name(request: pytest.FixtureRequest) -> str:
    """The test's id within its file, classes joined by ``.`` (``TestX.test_t[1]``)."""
    within = request.node.nodeid.split("::", 1)[1] if "::" in request.node.nodeid else ""
    return within.replace("::", ".") or request.node.name


def _legacy_cassette_path(request: pytest.FixtureRequest, folder: Path) -> Path:
    """Where the default cassette was looked for before names were path-aware (its names
    collided): ``<folder>/<module>/<test>.yaml``, unsafe characters as ``-``."""
    module = Path(str(request.node.path)).stem
    test = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
    return folder / module / f"{test}.yaml"


# -- override points (pytest-recording's manner: a conftest.py fixture of the same name wins) -----


@pytest.fixture
def op_cassette_dir(request: pytest.FixtureRequest) -> Path:
    """Where the ``cassette`` fixture reads and records cassettes: ``cassettes/`` under the
    rootdir.  Override it in a ``conftest.py`` to keep them elsewhere (a relative path is under
    the rootdir); a marker's absolute name still wins."""
    return Path(str(request.config.rootpath)) / "cassettes"


@pytest.fixture
def op_record_mode(request: pytest.FixtureRequest) -> str:
    """The ``cassette`` fixture's record mode: ``--openprogram-record-mode`` (default ``none``:
    replay only).  Override it in a ``conftest.py`` (e.g. ``once`` for a folder of tests being
    recorded); a marker's ``record_mode=`` still wins."""
    return str(request.config.getoption("--openprogram-record-mode") or "none")


@pytest.fixture
def cassette(
    request: pytest.FixtureRequest, op_cassette_dir: Path, op_record_mode: str
) -> Iterator[CassetteSession]:
    """Replay the test's cassette (``@pytest.mark.op_cassette(...)`` or, by default,
    ``<op_cassette_dir>/<test file path>/<test>.yaml``) around the test.
    ``--openprogram-record-mode=once`` (or ``op_record_mode``) records it (real model requests
    are allowed then).  At teardown, interactions left unplayed
    or a request that matched nothing fail the test.  ``fallback=[turns]`` on the marker answers
    requests the cassette does not hold from scripted turns (marked on the run; replay only)."""
    __tracebackhide__ = True
    _need_extra("cassette", "yaml", "vcr")
    from openprogram_testing.transport.cassettes.errors import CassetteError
    from openprogram_testing.transport.cassettes.session import use_cassette

    marker = request.node.get_closest_marker("op_cassette")
    args = marker.args if marker else ()
    kwargs = dict(marker.kwargs) if marker else {}
    name = args[0] if args else kwargs.pop("name", None)
    allowed = {
        "match_body",
        "ignore_paths",
        "allow_unplayed",
        "mutations",
        "redact_values",
        "record_mode",
        "fallback",
    }
    unknown = set(kwargs) - allowed
    if unknown or len(args) > 1:
        raise pytest.UsageError(
            f"@pytest.mark.op_cassette takes a name and match_body=, ignore_paths=, "
            f"allow_unplayed=, mutations=, redact_values=, record_mode=, fallback=; "
            f"got {sorted(unknown) or args[1:]}"
        )
    kwargs.setdefault("record_mode", op_record_mode)
    kwargs.setdefault("match_body", bool(request.config.getini("openprogram_cassette_match_body")))
    try:
        with contextlib.ExitStack() as stack:
            if kwargs["record_mode"] != "none":
                from openprogram.providers import guard

                kwargs.pop("fallback", None)  # recording records what is asked: nothing made up
                stack.enter_context(guard.allow_model_requests(True))
            folder = Path(str(request.config.rootpath)) / op_cassette_dir
            path = _cassette_path(request, name, folder)
            if name is None and kwargs["record_mode"] == "none":
                _refuse_legacy_name(request, path, folder)
            yield stack.enter_context(use_cassette(path, **kwargs))
    except CassetteError as exc:  # the message says it all: no contextlib or library frames
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return
    pytest.fail(failure, pytrace=False)


def _refuse_legacy_name(request: pytest.FixtureRequest, path: Path, folder: Path) -> None:
    """A default cassette still at its old, collision-prone name: say how to move it rather
    than report it missing (or, worse, replay another test's file)."""
    __tracebackhide__ = True
    legacy = _legacy_cassette_path(request, folder)
    if path.is_file() or not legacy.is_file():
        return
    root = Path(str(request.config.rootpath))
    new, old = _shown(path, root), _shown(legacy, root)
    pytest.fail(
        f"the cassette of this test is now named {new} (path-aware, so tests of the same name "
        f"in other files keep apart); found it at its old name {old}: move it (git mv {old} "
        f"{new})",
        pytrace=False,
    )


def _shown(path: Path, root: Path) -> str:
    """``path`` relative to the rootdir, or whole when it is elsewhere (``op_cassette_dir``)."""
    return str(path.relative_to(root)) if path.is_relative_to(root) else str(path)


# -- harness: real-call guard, steering, loop_runner, trace_snapshot ------------------------------


def _requests_allowed(request: pytest.FixtureRequest) -> bool:
    if request.node.get_closest_marker("allow_model_requests") is not None:
        return True
    if request.config.getoption("--openprogram-allow-model-requests", default=None):
        return True
    return bool(request.config.getini("openprogram_allow_model_requests"))


@pytest.fixture(autouse=True)
def _openprogram_model_request_guard(request: pytest.FixtureRequest) -> Iterator[None]:
    """Block real model API requests in every test (loopback and cassette playback still pass):
    a test must never reach a paid API by accident.  Opt out with
    ``@pytest.mark.allow_model_requests``, ``--openprogram-allow-model-requests`` or the ini
    option ``openprogram_allow_model_requests = true``.  The switch is process-wide (threads
    and event loops see it) and restored after the test."""
    try:
        from openprogram.providers import guard
    except ImportError:  # an openprogram without the guard: nothing to switch
        yield
        return
    previous = guard.get_allow_model_requests()  # the process-wide default, to restore
    guard.set_allow_model_requests(_requests_allowed(request))
    try:
        yield
    finally:
        guard.set_allow_model_requests(previous)


@pytest.fixture
def runtime_override(request: pytest.FixtureRequest) -> Iterator[Callable[..., None]]:
    """Every run of any ``Runtime`` in this test, wherever the application built it, uses the
    test's ``scripted_provider`` (``Runtime.override``).  Call it to use another provider or
    model for the rest of the test: ``runtime_override(emulator_adapter, model="m")``."""
    from openprogram import Runtime

    with contextlib.ExitStack() as stack:

        def use(provider: Any = None, *, model: str | None = None) -> None:
            stack.close()
            chosen = (
                provider if provider is not None else request.getfixturevalue("scripted_provider")
            )
            stack.enter_context(Runtime.override(provider=chosen, model=model))

        use()
        yield use


@pytest.fixture
def approvals(request: pytest.FixtureRequest) -> Iterator[ScriptedReviewer]:
    """A ``ScriptedReviewer`` answering every approval request of every run in this test,
    whatever ``Runtime`` the application built (``Runtime.override(approval_gate=...)``).
    Script it with ``approve`` / ``deny`` / ``modify``.  At teardown, if the test itself
    passed, a request nobody scripted (it was denied: the call never ran) or a required
    decision never asked for fails the test, naming it."""
    __tracebackhide__ = True
    from openprogram import Runtime

    reviewer = ScriptedReviewer()
    with Runtime.override(approval_gate=reviewer):
        yield reviewer
    if request.node.stash.get(_CALL_FAILED, False):
        return
    try:
        reviewer.assert_complete()
    except ApprovalScriptError as exc:  # the message names each request and rule
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return
    pytest.fail(failure, pytrace=False)


@pytest.fixture
def steering(request: pytest.FixtureRequest) -> Iterator[SteeringSchedule]:
    """A fresh ``SteeringSchedule``.  ``loop_runner`` uses it automatically when the test
    requests both fixtures.  At teardown, if a loop ran with it and the test itself passed, a
    required entry no run reached (or a simulated user's line the agent's reply did not fit)
    fails the test; after a failure the entries left are its consequence, not a second error."""
    __tracebackhide__ = True
    schedule = SteeringSchedule()
    yield schedule
    if not request.node.stash.get(_CALL_FAILED, False):
        _schedule_complete(schedule)


def _schedule_complete(schedule: SteeringSchedule) -> None:
    __tracebackhide__ = True
    if not schedule.polled:
        return  # never run (the test failed first, or used it for something else)
    try:
        schedule.assert_complete()
    except AssertionError as exc:  # SteeringNotFired / DialogueMismatch: the text says it all
        failure = f"{type(exc).__name__}: {exc}"
    else:
        return
    pytest.fail(failure, pytrace=False)


_RAN_KEY = pytest.StashKey[list[Subject]]()
_CALL_FAILED = pytest.StashKey[bool]()


def _runner_args(request: pytest.FixtureRequest) -> tuple[Any, ...]:
    check = (
        request.node.get_closest_marker("op_no_invariants") is None
        and not request.config.getoption("--openprogram-no-invariants", default=None)
        and bool(request.config.getini("openprogram_check_invariants"))
    )
    record = request.node.stash.setdefault(_RAN_KEY, [])
    return (
        request.getfixturevalue,
        request.fixturenames.__contains__,
        check,
        record,
        moves_cache_prefix_reason(request.node),
    )


def moves_cache_prefix_reason(node: pytest.Item) -> str | None:
    """The reason a test gives with ``@pytest.mark.moves_cache_prefix(reason=...)`` (``None``
    without the marker).  The marker without a reason is a usage error: the reason is what a
    reviewer reads when the prompt cache stops hitting."""
    marker = node.get_closest_marker("moves_cache_prefix")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason", marker.args[0] if marker.args else None)
    if not isinstance(reason, str) or not reason.strip():
        raise pytest.UsageError(
            f"{node.nodeid}: @pytest.mark.moves_cache_prefix needs reason='why the runs change "
            "the cached prefix'"
        )
    return reason


@pytest.fixture
def loop_runner(request: pytest.FixtureRequest) -> Iterator[LoopRunner]:
    """Run a loop and get its ``LoopTrace`` (see ``LoopRunner``); invariants are checked, and
    at teardown every ``schedule=`` it was given is judged as the ``steering`` fixture is."""
    __tracebackhide__ = True
    runner = LoopRunner(*_runner_args(request))
    yield runner
    for schedule in runner.schedules:
        _schedule_complete(schedule)


@pytest.fixture
def exec_runner(request: pytest.FixtureRequest) -> Iterator[ExecRunner]:
    """Run ``Runtime.exec`` and get the ``TraceTree`` of its runs (see ``ExecRunner``);
    invariants are checked on every run, nested ones included; schedules judged at teardown
    as ``loop_runner``'s."""
    __tracebackhide__ = True
    runner = ExecRunner(*_runner_args(request))
    yield runner
    for schedule in runner.schedules:
        _schedule_complete(schedule)


@pytest.fixture
def trace_snapshot(request: pytest.FixtureRequest) -> Any:
    """syrupy's ``snapshot`` storing traces as text (``TraceSnapshotExtension``: one
    ``__snapshots__/<module>/<test>.trace.txt`` file per snapshot):
    ``assert trace_snapshot == trace``.  Update with ``--snapshot-update``."""
    __tracebackhide__ = True
    _need_extra("trace_snapshot", "syrupy")
    from openprogram_testing.judges.snapshot import TraceSnapshotExtension

    return request.getfixturevalue("snapshot").use_extension(TraceSnapshotExtension)


@pytest.hookimpl
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run an ``async def`` test that no async plugin claimed (pytest alone skips it with a
    warning), through ``openprogram.run_sync``: async tests of the harness work with only
    ``openprogram`` and ``pytest`` installed.  pytest-asyncio and anyio keep the tests they own
    (their tests reach this hook already wrapped, or carry ``anyio_backend``).  Async fixtures
    still need such a plugin (see docs/testing-your-agent.md)."""
    function = pyfuncitem.obj
    if not inspect.iscoroutinefunction(function) or "anyio_backend" in pyfuncitem.funcargs:
        return None
    from openprogram import run_sync

    names = pyfuncitem._fixtureinfo.argnames
    arguments = {name: pyfuncitem.funcargs[name] for name in names}
    run_sync(lambda: function(**arguments))
    return True


def _snapshot_diffs(report: pytest.TestReport) -> None:
    """A failed trace snapshot's marked diff as a report section, whole (pytest cuts the
    assertion's explanation at default verbosity, so a second difference needed ``-vv``)."""
    module = sys.modules.get(
        "openprogram_testing.judges.snapshot"
    )  # never imported: no snapshot was taken
    if module is None:
        return
    diffs = [lines for lines in module.PENDING_DIFFS if lines]
    module.PENDING_DIFFS.clear()
    if report.failed and diffs:
        text = "\n\n".join("\n".join(lines) for lines in diffs)
        report.sections.append(("trace snapshot diff (- snapshot, + this run)", text))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """When a test that ran loops fails, show the last run's timeline in the report, once: not
    when the failure message already carries it (the assertion helpers and invariant checks
    include it)."""
    report = yield
    if call.when == "call":
        _snapshot_diffs(report)
    if report.failed and call.when == "call":
        item.stash[_CALL_FAILED] = True
        ran = item.stash.get(_RAN_KEY, None)
        error = call.excinfo.value if call.excinfo is not None else None
        if ran and not timeline_shown(error):
            title = "openprogram timeline (last run)"
            report.sections.append((title, render_timeline(ran[-1])))
    return report
