"""The commands of ``openprogram-testing`` (the entry point, with its clean errors and exit
codes, is ``openprogram_testing.frontends.cli.main``).

    openprogram-testing run scenarios/ [-k EXPR] [-n WORKERS] [--junit-xml FILE] [--html FILE]
    openprogram-testing validate scenarios/
    openprogram-testing schema
    openprogram-testing show FILE        # a scenario, a result/trace JSON, or a cassette YAML
    openprogram-testing record SCENARIO --api openai_chat --out cassette.yaml
    openprogram-testing emulator [--port N]
    openprogram-testing scaffold CASSETTE --out scenario_x.yaml [--agent module:attr]
    openprogram-testing diff OLD NEW [--strict]   # what the model did differently

``run`` hands the scenario files to pytest (the plugin's YAML collector runs them), so ``-n`` is
pytest-xdist and ``--junit-xml`` is pytest's JUnit writer; the rich progress bar and table are a
pytest reporter plugin (``openprogram_testing.frontends.report.terminal``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape

from openprogram.providers.apis import PROVIDER_APIS, ProviderAPI
from openprogram_testing.base.deprecated import record_provider
from openprogram_testing.base.paths import OutsideProject, writable_target
from openprogram_testing.frontends.scenarios.collect import (
    FREEZE_OPTION,
    SELECTION_OPTION,
    Selection,
)
from openprogram_testing.frontends.scenarios.loader import (
    ScenarioReader,
    load_scenario,
    scenario_json_schema,
)
from openprogram_testing.frontends.scenarios.model import SCENARIO_PATTERNS, is_scenario_file
from openprogram_testing.frontends.scenarios.problems import ScenarioError
from openprogram_testing.frontends.scenarios.runner import run_scenario
from openprogram_testing.transport.cassettes.show import render_cassette

from .app import UsageProblem, app, err, out
from .shards import empty_shard, select

# -- discovery --------------------------------------------------------------------------------


def discover(paths: Iterable[Path]) -> list[Path]:
    """Scenario files named on the command line (any YAML file) or found under directories
    (files matching ``SCENARIO_PATTERNS``), sorted, without duplicates."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    p
                    for p in path.rglob("*")
                    if p.is_file() and is_scenario_file(p) and "__snapshots__" not in p.parts
                )
            )
        elif path.is_file():
            found.append(path)
        else:
            raise UsageProblem(f"no such file or directory: {path}")
    unique: dict[Path, None] = {}
    for p in found:
        unique.setdefault(p, None)
    return list(unique)


# -- run: scenarios through pytest -------------------------------------------------------------


OWN_PROCESS = False
"""Whether the command is its process's own (``openprogram-testing`` from a shell, not a call of
``cli.main`` with arguments): pytest's session then keeps the collector's frozen objects until
the process exits (``collect.FREEZE_OPTION``)."""


def pytest_args(
    files: list[Path],
    *,
    keyword: str | None = None,
    workers: int = 1,
    junit_xml: Path | None = None,
    html: Path | None = None,
    coverage: bool = False,
    fail_under: float | None = None,
    update_snapshots: bool = False,
    import_roots: list[Path] | None = None,
    selection_file: Path | None = None,
    timelines: bool = False,
    results: bool = False,
    records: Path | None = None,
    shard: str | None = None,
    roots: list[Path] | None = None,
    otlp: str | None = None,
) -> list[str]:
    """The pytest command line that runs ``files`` as ``run`` was asked to.

    With ``selection_file`` (what ``run`` passes) the files are listed there and pytest is given
    the folders holding them, each once, so collection stays linear in the number of files
    (``collect.Selection``); without it, each file is its own argument."""
    if selection_file is not None:
        selection = Selection.of(files)
        selection.write(selection_file)
        # ``roots``: a shard passes the whole suite's, so pytest's rootdir and the test ids
        # are the same in every shard as in the unsharded run
        folders = roots if roots is not None else selection.roots()
        args = [str(r) for r in folders] + [SELECTION_OPTION, str(selection_file)]
    else:
        args = [str(f) for f in files]
    # Files named explicitly are scenarios whatever their name: let the collector take them.
    extra = sorted({f.name for f in files if not is_scenario_file(f)})
    if extra:
        args += ["-o", "openprogram_scenarios=" + "\n".join(extra)]
    args += ["-p", "no:terminal", "-p", "no:cacheprovider", "--openprogram-scenario-details"]
    # the objects alive after start-up and collection stay out of the collector's full walks:
    # until the process exits when the command is the process, else until the session ends
    args += [FREEZE_OPTION, "process" if OWN_PROCESS else "session"]
    if timelines:  # a passing scenario's timeline is rendered only to be printed
        args.append("--openprogram-scenario-timelines")
    if results:  # and its result JSON (every event) only to be written
        args.append("--openprogram-scenario-results")
    # Deprecation notices of other plugins' configuration are not about the scenarios.
    args += ["-W", "ignore::pytest.PytestDeprecationWarning"]
    if keyword:
        args += ["-k", keyword]
    if workers > 1:
        args += ["-n", str(workers), "-p", "xdist"]
    if junit_xml is not None:
        args.append(f"--junitxml={junit_xml}")
    if html is not None:
        args.append(f"--openprogram-html={html}")
    if coverage:
        args.append("--openprogram-coverage")
    if fail_under is not None:
        args.append(f"--openprogram-coverage-fail-under={fail_under:g}")
    if update_snapshots:
        args.append("--snapshot-update")
    if records is not None:
        args.append(f"--openprogram-records={records}")
    if shard is not None:
        args.append(f"--openprogram-records-shard={shard}")
    if otlp:
        args.append(f"--openprogram-otlp={otlp}")
    args += [f"--openprogram-import-root={root}" for root in import_roots or ()]
    return args


ScenarioPaths = Annotated[list[Path], typer.Argument(help="Scenario files or directories.")]
"""The scenario files and directories ``run`` and ``validate`` take."""

ImportRoots = Annotated[
    list[Path] | None,
    typer.Option("--import-root", help="Look up scenario import: paths here (repeatable)."),
]
"""``--import-root``: one option, spelled and explained alike for ``run`` and ``validate``."""


@app.command()
def run(
    paths: ScenarioPaths,
    keyword: Annotated[
        str | None, typer.Option("-k", help="Only scenarios matching this pytest -k expression.")
    ] = None,
    workers: Annotated[
        int, typer.Option("-n", "--workers", min=1, help="Run on N pytest-xdist workers.")
    ] = 1,
    junit_xml: Annotated[
        Path | None, typer.Option("--junit-xml", help="Write a JUnit XML report here.")
    ] = None,
    html: Annotated[
        Path | None, typer.Option("--html", help="Write the HTML report of the runs here.")
    ] = None,
    coverage: Annotated[
        bool, typer.Option("--coverage", help="Print the loop-behaviour coverage table.")
    ] = False,
    fail_under: Annotated[
        float | None,
        typer.Option("--coverage-fail-under", help="Fail below this loop-behaviour coverage %."),
    ] = None,
    update_snapshots: Annotated[
        bool,
        typer.Option(
            "--update-snapshots", "--snapshot-update", help="Write/overwrite stored snapshots."
        ),
    ] = False,
    results_dir: Annotated[
        Path | None,
        typer.Option("--results-dir", help="Write one result JSON per scenario (for `show`)."),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Print the timeline of every scenario.")
    ] = False,
    import_root: ImportRoots = None,
    shard: Annotated[
        str | None, typer.Option("--shard", help="Run shard I of N (I/N) of the files (CI jobs).")
    ] = None,
    records: Annotated[
        Path | None, typer.Option("--records", help="Write the run records for `report merge`.")
    ] = None,
    otlp: Annotated[
        str | None,
        typer.Option(
            "--otlp",
            metavar="URL",
            help="Export each scenario's runs as an OpenTelemetry trace to this OTLP/HTTP "
            "endpoint (the otlp extra).",
        ),
    ] = None,
) -> None:
    """Run scenarios through pytest and print a report; exit 1 if any failed."""
    import pytest

    from openprogram_testing.frontends.report.terminal import ScenarioReporter

    files = discover(paths)
    where = ", ".join(str(p) for p in paths)
    if not files:
        raise UsageProblem(
            f"no scenario files found in {where} "
            f"(directories are searched for {', '.join(SCENARIO_PATTERNS)})"
        )
    if workers > 1 and not _has("xdist"):
        raise UsageProblem("-n needs pytest-xdist: pip install pytest-xdist")
    chosen, suite_roots = None, None
    if shard is not None:
        chosen = select(files, shard)
        suite_roots = Selection.of(files).roots()
        files = chosen.files
        if not files:  # more shards than files: this one has nothing to run, and says so
            empty_shard(chosen, records)
            return
    for target, what in (
        (html, "the HTML report"),
        (results_dir, "the results folder"),
        (records, "the run records"),
    ):
        if target is not None:
            try:
                writable_target(target, what)
            except OutsideProject as exc:
                raise UsageProblem(str(exc)) from None
    selection_dir = tempfile.TemporaryDirectory(prefix="openprogram-run-")
    args = pytest_args(
        files,
        keyword=keyword,
        workers=workers,
        junit_xml=junit_xml,
        html=html,
        coverage=coverage,
        fail_under=fail_under,
        update_snapshots=update_snapshots,
        import_roots=import_root,
        selection_file=Path(selection_dir.name) / "selected.txt",
        timelines=verbose,
        results=results_dir is not None,
        records=records,
        shard=chosen.option if chosen is not None else None,
        roots=suite_roots,
        otlp=otlp,
    )
    reporter = ScenarioReporter(out, err, verbose=verbose)
    try:
        code = pytest.main(args, plugins=[reporter])
    finally:
        reporter.stop()
        selection_dir.cleanup()
    if code == pytest.ExitCode.NO_TESTS_COLLECTED:
        filt = f" matching -k {keyword!r}" if keyword else ""
        raise UsageProblem(f"no scenario files{filt} found in {where}")
    if code in (pytest.ExitCode.USAGE_ERROR, pytest.ExitCode.INTERNAL_ERROR) and not reporter.rows:
        raise UsageProblem(f"pytest could not run the scenarios (exit code {int(code)})")
    session = _session_report(reporter)
    reporter.print_report(
        coverage=session.coverage if session is not None and (coverage or fail_under) else None,
        html=session.html if session is not None else None,
    )
    if session is not None and session.below:
        out.print(f"[bold red]FAIL:[/] {escape(session.below)}")
    if junit_xml is not None:
        out.print(f"JUnit XML written to {escape(str(junit_xml))}")
    if results_dir is not None:
        _write_results(results_dir, reporter)
    if code != pytest.ExitCode.OK:
        raise typer.Exit(1)


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _session_report(reporter: Any) -> Any:
    """The report plugin of the session ``run`` just ran (it unregisters at exit, so the
    reporter keeps a reference as it is configured)."""
    return getattr(reporter, "session_report", None)


def _write_results(results_dir: Path, reporter: Any) -> None:
    results_dir.mkdir(parents=True, exist_ok=True)
    for row in reporter.rows.values():
        if row.result is not None:
            target = results_dir / f"{Path(row.path).stem}.result.json"
            writable_target(target, "a result file")  # a planted link among them
            target.write_text(json.dumps(row.result, indent=2) + "\n", encoding="utf-8")


# -- validate / schema ------------------------------------------------------------------------


@app.command()
def validate(
    paths: ScenarioPaths,
    import_root: ImportRoots = None,
) -> None:
    """Check scenario files without running them; exit 1 if any is invalid."""
    files = discover(paths)
    if not files:
        raise UsageProblem("no scenario files found in " + ", ".join(str(p) for p in paths))
    bad = 0
    reader = ScenarioReader(import_root or ())
    for f in files:
        try:
            reader.load(f)
        except ScenarioError as exc:
            bad += 1
            out.print(escape(str(exc)))
        else:
            out.print(f"[green]ok[/] {escape(str(f))}")
    total = len(files)
    if bad:
        out.print(f"\n[bold red]{bad} of {total} scenario file(s) invalid[/]")
        raise typer.Exit(1)
    out.print(f"\n[bold green]{total} scenario file(s) valid[/]")


@app.command()
def schema() -> None:
    """Print the JSON Schema of the scenario format (for editors)."""
    sys.stdout.write(json.dumps(scenario_json_schema(), indent=2) + "\n")


# -- show ------------------------------------------------------------------------------------


@app.command()
def show(
    file: Annotated[Path, typer.Argument(help="Scenario YAML, result/trace JSON or cassette.")],
) -> None:
    """Render a scenario run, a result or trace JSON, or a cassette as a readable timeline."""
    if not file.is_file():
        raise UsageProblem(f"no such file: {file}")
    text = file.read_text(encoding="utf-8")
    if file.suffix == ".json":
        out.print(escape(_show_json(file, text)))
        return
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageProblem(f"{file}: not valid YAML: {exc}") from None
    if isinstance(data, dict) and "interactions" in data:
        from openprogram_testing.transport.cassettes.errors import CassetteError
        from openprogram_testing.transport.cassettes.files import load_interactions

        try:
            interactions = load_interactions(file)
        except CassetteError as exc:
            raise UsageProblem(str(exc)) from None
        out.print(escape(render_cassette(file, {"interactions": interactions})))
        return
    result = run_scenario(load_scenario(file))
    out.print(escape(result.timeline))
    if result.passed:
        out.print(f"\n[green]PASSED[/] {escape(result.name)}")
    else:
        out.print("\n[bold red]FAILED[/] " + escape(result.summary))
        raise typer.Exit(1)


def _show_json(file: Path, text: str) -> str:
    from pydantic import TypeAdapter, ValidationError

    from openprogram.events import AgentEvent
    from openprogram_testing.core.trace import LoopTrace, render_timeline

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageProblem(f"{file}: not valid JSON: {exc}") from None
    header = ""
    if isinstance(data, dict) and data.get("kind") == "openprogram-scenario-result":
        verdict = "PASSED" if data.get("passed") else "FAILED"
        header = f"scenario {data.get('name')!r}: {verdict}\n"
        header += "".join(f"  - {f}\n" for f in data.get("failures") or [])
        runs = data.get("runs")
        if isinstance(runs, list) and len(runs) > 1 and isinstance(data.get("timeline"), str):
            return header + str(data["timeline"])  # a tree of runs: its timeline has every lane
        data = data.get("trace") or {}
    raw = data.get("events") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise UsageProblem(
            f'{file}: expected a scenario result, a trace {{"events": [...]}} or a list of events'
        )
    try:
        events = TypeAdapter(list[AgentEvent]).validate_python(raw)
    except ValidationError as exc:
        raise UsageProblem(
            f"{file}: the events do not validate: {exc.errors()[0]['msg']} "
            f"at {exc.errors()[0]['loc']}"
        ) from None
    extra: dict[str, Any] = {}
    if isinstance(data, dict):
        if isinstance(data.get("cap"), int):
            extra["cap"] = data["cap"]
        if isinstance(data.get("steering_mode"), str):
            extra["steering_mode"] = data["steering_mode"]
    trace = LoopTrace.from_events(events, **extra)
    return header + render_timeline(trace)


# -- record / emulator ------------------------------------------------------------------------

RECORDABLE: dict[str, ProviderAPI] = {a.name: a for a in PROVIDER_APIS if a.recordable}
"""The wire APIs ``record`` can record against (from the table of provider APIs)."""


@app.command()
def record(
    scenario_file: Annotated[Path, typer.Argument(help="The scenario whose prompts/tools to use.")],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Cassette file to write.")],
    api: Annotated[str, typer.Option("--api", help=" | ".join(RECORDABLE))] = "openai_chat",
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
    provider: Annotated[str | None, typer.Option("--provider", hidden=True)] = None,  # 0.1's --api
) -> None:
    """Record a cassette of a scenario's prompts/tools against a real provider (keys from env)."""
    if provider is not None:  # 0.1's name of --api, until 0.3
        api = record_provider(provider, api, RECORDABLE)
    if api not in RECORDABLE:
        raise UsageProblem(f"unknown API {api!r}; use one of {', '.join(RECORDABLE)}")
    entry = RECORDABLE[api]
    # An API without key variables (bedrock) takes botocore's credential chain, which says
    # itself when it finds nothing, before anything is sent.
    if entry.key_vars and not any(os.environ.get(k) for k in entry.key_vars):
        raise UsageProblem(
            f"recording against {api} needs a real API key: set {entry.key_vars[0]} in the "
            "environment (nothing was sent)"
        )
    scenario = load_scenario(scenario_file)
    from openprogram.providers import guard, provider_from_env
    from openprogram_testing.core.trace import render_timeline, run_loop_sync
    from openprogram_testing.frontends.scenarios.runner import loop_options
    from openprogram_testing.frontends.scenarios.stubs import build_tools
    from openprogram_testing.transport.cassettes.session import use_cassette

    adapter = provider_from_env(api)
    default_model = entry.record_model or ""
    with guard.allow_model_requests(True), use_cassette(out_file, record_mode="all"):
        # the runner's own mapping of the scenario's options: the recording sends what a
        # replay of it will send
        trace = run_loop_sync(
            adapter,
            scenario.prompt_list,
            tools=build_tools(scenario, adapter, model or default_model),
            model=model or default_model,
            **loop_options(scenario),
        )
    out.print(escape(render_timeline(trace)))
    out.print(
        f"\ncassette written to {escape(str(out_file))} ({trace.model_calls} model call(s), "
        f"termination {trace.termination})"
    )


def _emulator_script(scenario: Any) -> tuple[list[Any], str | None, dict[int, list[Any]]]:
    """What ``emulator --scenario`` serves: the scenario's model script, or its cassette with
    the scenario's faults (interaction index → its faults)."""
    if scenario.cassette is None:
        from openprogram_testing.frontends.scenarios.runner import build_provider

        return list(build_provider(scenario).turns), None, {}
    from openprogram_testing.frontends.scenarios.checks import cassette_file
    from openprogram_testing.frontends.scenarios.replay import mutations_for
    from openprogram_testing.transport.cassettes.errors import CassetteError
    from openprogram_testing.transport.cassettes.files import load_interactions

    path, refused = cassette_file(scenario)
    if path is None:
        raise UsageProblem(str(refused))
    try:
        count = len(load_interactions(path))
        built = mutations_for(scenario.cassette.faults, count)
    except (CassetteError, OSError, ValueError) as exc:
        raise UsageProblem(f"cannot serve {path}: {exc}") from None
    if isinstance(built, dict):
        return [], str(path), built
    return [], str(path), {i: list(built) for i in range(count)} if built else {}


@app.command()
def emulator(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).")] = 0,
    host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
    reply: Annotated[
        list[str] | None, typer.Option("--reply", help="A text reply to serve (repeatable).")
    ] = None,
    scenario_file: Annotated[
        Path | None,
        typer.Option(
            "--scenario", help="Serve this scenario's model script, or its cassette and faults."
        ),
    ] = None,
    cassette: Annotated[
        Path | None, typer.Option("--cassette", help="Serve the responses of this cassette.")
    ] = None,
    echo: Annotated[
        bool, typer.Option("--echo/--no-echo", help="Echo the last user message when out of turns.")
    ] = True,
) -> None:
    """Start the loopback provider emulator for manual use (Ctrl-C stops it)."""
    from openprogram_testing.transport.emulator.server import echo_responder

    from . import emulator as emulator_module

    if scenario_file is not None:
        turns, cassette_path, faults = _emulator_script(load_scenario(scenario_file))
        try:
            served = emulator_module.serve(
                turns,
                host=host,
                port=port,
                fallback=echo_responder if echo else None,
                on_ready=lambda e: emulator_module.announce(e, lambda t: out.print(escape(t))),
                cassette=cassette_path,
                faults=faults,
            )
        except (OSError, ValueError, TypeError) as exc:
            raise UsageProblem(str(exc)) from None
        out.print(f"served {len(served.requests)} request(s)")
        return
    code = emulator_module.main_emulator(
        list(reply or []),
        host=host,
        port=port,
        cassette=str(cassette) if cassette is not None else None,
        echo=echo,
        write=lambda line: out.print(escape(line)),
    )
    if code:
        raise typer.Exit(code)


__all__ = ["SCENARIO_PATTERNS", "UsageProblem", "app", "discover", "pytest_args"]
