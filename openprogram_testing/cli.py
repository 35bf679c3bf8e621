"""The ``openprogram-testing`` command (SPEC §9.8): run, validate and inspect YAML scenarios.

    openprogram-testing run scenarios/ [-k EXPR] [-n WORKERS] [--junit-xml FILE]
    openprogram-testing validate scenarios/
    openprogram-testing schema
    openprogram-testing show FILE        # a scenario, a result/trace JSON, or a cassette YAML
    openprogram-testing record SCENARIO --provider openai --out cassette.yaml
    openprogram-testing emulator [--port N]

Exit codes: 0 success, 1 a scenario failed or a file is invalid, 2 usage problems (nothing to run,
missing API keys, unreadable input).  Errors are printed as one clean message, never a traceback.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .scenarios import (
    SCENARIO_PATTERNS,
    Scenario,
    ScenarioError,
    ScenarioResult,
    is_scenario_file,
    load_scenario,
    run_scenario,
    scenario_json_schema,
)

app = typer.Typer(
    name="openprogram-testing",
    help="Run, validate and inspect OpenProgram loop scenarios.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_out = Console(highlight=False, soft_wrap=True)
_err = Console(stderr=True, highlight=False, soft_wrap=True)


class UsageProblem(Exception):
    """Bad command-line input: printed as ``error: …``, exit code 2."""


# -- discovery and filtering ------------------------------------------------------------------


def discover(paths: Iterable[Path]) -> list[Path]:
    """Scenario files named on the command line (any YAML file) or found under directories
    (files matching ``SCENARIO_PATTERNS``), sorted, without duplicates."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(
                sorted(
                    p for p in path.rglob("*")
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


def matches(expression: str | None, *names: str) -> bool:
    """``-k``: case-insensitive substrings joined with ``and``/``or``, each optionally negated
    with ``not`` (``or`` binds loosest)."""
    if not expression:
        return True
    haystack = " ".join(names).lower()
    for alternative in expression.lower().split(" or "):
        ok = True
        for term in alternative.split(" and "):
            term = term.strip()
            negate = term.startswith("not ")
            if negate:
                term = term[4:].strip()
            if (term in haystack) == negate:
                ok = False
                break
        if ok:
            return True
    return False


# -- running ----------------------------------------------------------------------------------


def _row(result: ScenarioResult) -> dict[str, Any]:
    trace = result.trace
    return {
        "name": result.name,
        "path": result.path,
        "passed": result.passed,
        "error": False,
        "failure_text": result.failure_text,
        "failures": list(result.failures),
        "termination": getattr(trace, "termination", None),
        "model_calls": getattr(trace, "model_calls", None),
        "duration_s": result.duration_s,
        "snapshot_written": result.snapshot_written,
        "result": result.to_dict(),
    }


def _error_row(path: Path, message: str) -> dict[str, Any]:
    return {
        "name": path.name,
        "path": str(path),
        "passed": False,
        "error": True,
        "failure_text": message,
        "failures": [message],
        "termination": None,
        "model_calls": None,
        "duration_s": 0.0,
        "snapshot_written": False,
        "result": None,
    }


def run_one(path: str, update_snapshots: bool = False) -> dict[str, Any]:
    """Load and run one scenario file; a plain dict so it crosses process boundaries."""
    try:
        scenario = load_scenario(path)
    except ScenarioError as exc:
        return _error_row(Path(path), str(exc))
    try:
        return _row(
            run_scenario(
                scenario, update_snapshots=update_snapshots, snapshot_hint="--update-snapshots"
            )
        )
    except Exception as exc:  # a harness bug must not hide the other scenarios' results
        return _error_row(Path(path), f"the scenario could not run: {type(exc).__name__}: {exc}")


def _select(files: list[Path], keyword: str | None) -> list[Path]:
    if not keyword:
        return files
    selected: list[Path] = []
    for f in files:
        try:
            name = load_scenario(f).display_name
        except ScenarioError:
            name = f.stem  # still selectable by file name; the run reports the error
        if matches(keyword, name, f.name):
            selected.append(f)
    return selected


@app.command()
def run(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files or directories.")],
    keyword: Annotated[
        str | None, typer.Option("-k", help="Only scenarios whose name/file matches (and/or/not).")
    ] = None,
    workers: Annotated[
        int, typer.Option("-n", "--workers", min=1, help="Run in N worker processes.")
    ] = 1,
    junit_xml: Annotated[
        Path | None, typer.Option("--junit-xml", help="Write a JUnit XML report here.")
    ] = None,
    update_snapshots: Annotated[
        bool, typer.Option("--update-snapshots", help="Write/overwrite stored snapshots.")
    ] = False,
    results_dir: Annotated[
        Path | None,
        typer.Option("--results-dir", help="Write one result JSON per scenario (for `show`)."),
    ] = None,
    verbose: Annotated[
        bool, typer.Option("-v", "--verbose", help="Print the timeline of every scenario.")
    ] = False,
) -> None:
    """Run scenarios and print a report; exit 1 if any failed."""
    started = time.perf_counter()
    files = discover(paths)
    files = _select(files, keyword)
    if not files:
        where = ", ".join(str(p) for p in paths)
        filt = f" matching -k {keyword!r}" if keyword else ""
        raise UsageProblem(
            f"no scenario files{filt} found in {where} "
            f"(directories are searched for {', '.join(SCENARIO_PATTERNS)})"
        )
    rows = _run_all(files, workers, update_snapshots)
    elapsed = time.perf_counter() - started
    _report(rows, elapsed, verbose)
    if junit_xml is not None:
        write_junit_xml(junit_xml, rows, elapsed)
        _out.print(f"JUnit XML written to {escape(str(junit_xml))}")
    if results_dir is not None:
        results_dir.mkdir(parents=True, exist_ok=True)
        for row in rows:
            if row["result"] is not None:
                target = results_dir / f"{Path(row['path']).stem}.result.json"
                target.write_text(json.dumps(row["result"], indent=2) + "\n", encoding="utf-8")
    if not all(r["passed"] for r in rows):
        raise typer.Exit(1)


def _run_all(files: list[Path], workers: int, update: bool) -> list[dict[str, Any]]:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    rows: dict[Path, dict[str, Any]] = {}
    progress = Progress(
        TextColumn("running scenarios"), BarColumn(), MofNCompleteColumn(),
        TextColumn("{task.description}"), console=_err, transient=True,
    )
    with progress:
        task = progress.add_task("", total=len(files))
        if workers > 1 and len(files) > 1:
            import multiprocessing

            # spawn, not fork: the progress bar runs a thread while the workers start.
            context = multiprocessing.get_context("spawn")
            with ProcessPoolExecutor(min(workers, len(files)), mp_context=context) as pool:
                futures = {pool.submit(run_one, str(f), update): f for f in files}
                for future in as_completed(futures):
                    f = futures[future]
                    try:
                        rows[f] = future.result()
                    except Exception as exc:  # a worker died: report, do not crash
                        rows[f] = _error_row(f, f"the worker failed: {type(exc).__name__}: {exc}")
                    progress.update(task, advance=1, description=f.name)
        else:
            progress.update(task, description="loading provider SDKs")
            _preload_sdks(files)
            for f in files:
                progress.update(task, description=f.name)
                rows[f] = run_one(str(f), update)
                progress.update(task, advance=1)
    return [rows[f] for f in files]


def _preload_sdks(files: list[Path]) -> None:
    """Import the SDKs the cassette scenarios need up front, so a one-off import of several
    seconds is not billed to whichever scenario happens to run first."""
    import importlib

    modules = {"openai_chat": "openai", "openai_responses": "openai", "anthropic": "anthropic"}
    wanted: set[str] = set()
    for f in files:
        try:
            scenario = load_scenario(f)
        except ScenarioError:
            continue
        if scenario.cassette is not None:
            wanted.add(modules[scenario.cassette.api])
    for name in sorted(wanted):
        try:
            importlib.import_module(name)
        except ImportError:
            pass  # the scenario itself reports the missing SDK


def _report(rows: list[dict[str, Any]], elapsed: float, verbose: bool) -> None:
    table = Table(title="OpenProgram scenarios", title_justify="left")
    table.add_column("scenario", overflow="fold")
    table.add_column("result")
    table.add_column("termination")
    table.add_column("model calls", justify="right")
    table.add_column("time", justify="right")
    for row in rows:
        if row["error"]:
            status = "[bold red]ERROR[/]"
        elif row["passed"]:
            status = "[green]PASS[/]"
        else:
            status = "[bold red]FAIL[/]"
        if row["snapshot_written"]:
            status += " (snapshot written)"
        table.add_row(
            escape(row["name"]),
            status,
            row["termination"] or "-",
            "-" if row["model_calls"] is None else str(row["model_calls"]),
            f"{row['duration_s'] * 1000:.0f} ms",
        )
    _out.print(table)
    for row in rows:
        if not row["passed"]:
            title = "invalid scenario file" if row["error"] else "FAILED"
            _out.print(f"\n[bold red]{title}[/] {escape(row['path'] or row['name'])}")
            _out.print(escape(row["failure_text"]))
        elif verbose and row["result"] is not None:
            _out.print(f"\n[green]PASSED[/] {escape(row['name'])}")
            _out.print(escape(row["result"]["timeline"]))
    passed = sum(1 for r in rows if r["passed"])
    errors = sum(1 for r in rows if r["error"])
    failed = len(rows) - passed - errors
    parts = [f"{passed} passed"]
    if failed:
        parts.append(f"{failed} failed")
    if errors:
        parts.append(f"{errors} invalid")
    colour = "green" if passed == len(rows) else "red"
    _out.print(f"\n[bold {colour}]{', '.join(parts)}[/] in {elapsed:.2f}s")


def write_junit_xml(target: Path, rows: list[dict[str, Any]], elapsed: float) -> None:
    """A JUnit XML report (one ``testcase`` per scenario) as CI systems read it."""
    import xml.etree.ElementTree as ET

    failures = sum(1 for r in rows if not r["passed"] and not r["error"])
    errors = sum(1 for r in rows if r["error"])
    suites = ET.Element("testsuites")
    suite = ET.SubElement(
        suites, "testsuite", name="openprogram-scenarios", tests=str(len(rows)),
        failures=str(failures), errors=str(errors), skipped="0", time=f"{elapsed:.3f}",
    )
    for row in rows:
        case = ET.SubElement(
            suite, "testcase", classname="scenarios", name=row["name"],
            file=row["path"] or "", time=f"{row['duration_s']:.3f}",
        )
        if row["error"]:
            node = ET.SubElement(case, "error", message="invalid scenario file")
            node.text = row["failure_text"]
        elif not row["passed"]:
            first = row["failures"][0].splitlines()[0] if row["failures"] else "failed"
            node = ET.SubElement(case, "failure", message=first)
            node.text = row["failure_text"]
    target.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suites).write(target, encoding="utf-8", xml_declaration=True)


# -- validate / schema ------------------------------------------------------------------------


@app.command()
def validate(
    paths: Annotated[list[Path], typer.Argument(help="Scenario files or directories.")],
) -> None:
    """Check scenario files without running them; exit 1 if any is invalid."""
    files = discover(paths)
    if not files:
        raise UsageProblem("no scenario files found in " + ", ".join(str(p) for p in paths))
    bad = 0
    for f in files:
        try:
            load_scenario(f)
        except ScenarioError as exc:
            bad += 1
            _out.print(escape(str(exc)))
        else:
            _out.print(f"[green]ok[/] {escape(str(f))}")
    total = len(files)
    if bad:
        _out.print(f"\n[bold red]{bad} of {total} scenario file(s) invalid[/]")
        raise typer.Exit(1)
    _out.print(f"\n[bold green]{total} scenario file(s) valid[/]")


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
        _out.print(escape(_show_json(file, text)))
        return
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise UsageProblem(f"{file}: not valid YAML: {exc}") from None
    if isinstance(data, dict) and "interactions" in data:
        from .cassettes import CassetteError, load_interactions

        try:
            interactions = load_interactions(file)
        except CassetteError as exc:
            raise UsageProblem(str(exc)) from None
        _out.print(escape(render_cassette(file, {"interactions": interactions})))
        return
    result = run_scenario(load_scenario(file))
    _out.print(escape(result.timeline))
    if result.passed:
        _out.print(f"\n[green]PASSED[/] {escape(result.name)}")
    else:
        _out.print("\n[bold red]FAILED[/] " + escape(result.failure_text.split("\ntimeline:")[0]))
        raise typer.Exit(1)


def _show_json(file: Path, text: str) -> str:
    from pydantic import TypeAdapter, ValidationError

    from openprogram.events import AgentEvent

    from .trace import LoopTrace, render_timeline

    try:
        data = json.loads(text)
    except ValueError as exc:
        raise UsageProblem(f"{file}: not valid JSON: {exc}") from None
    header = ""
    if isinstance(data, dict) and data.get("kind") == "openprogram-scenario-result":
        verdict = "PASSED" if data.get("passed") else "FAILED"
        header = f"scenario {data.get('name')!r}: {verdict}\n"
        header += "".join(f"  - {f}\n" for f in data.get("failures") or [])
        data = data.get("trace") or {}
    raw = data.get("events") if isinstance(data, dict) else data
    if not isinstance(raw, list):
        raise UsageProblem(
            f"{file}: expected a scenario result, a trace {{\"events\": [...]}} or a list of events"
        )
    try:
        events = TypeAdapter(list[AgentEvent]).validate_python(raw)
    except ValidationError as exc:
        raise UsageProblem(f"{file}: the events do not validate: {exc.errors()[0]['msg']} "
                           f"at {exc.errors()[0]['loc']}") from None
    extra: dict[str, Any] = {}
    if isinstance(data, dict):
        if isinstance(data.get("cap"), int):
            extra["cap"] = data["cap"]
        if isinstance(data.get("steering_mode"), str):
            extra["steering_mode"] = data["steering_mode"]
    trace = LoopTrace.from_events(events, **extra)
    return header + render_timeline(trace)


def render_cassette(file: Path, data: dict[str, Any]) -> str:
    """One block per recorded interaction: the request (model, history roles, tools, last
    message) and the response (status and, for SSE bodies, the streamed text and tool calls)."""
    interactions = data.get("interactions") or []
    lines = [f"cassette {file} — {len(interactions)} interaction(s)"]
    for i, interaction in enumerate(interactions):
        request = interaction.get("request") or {}
        response = interaction.get("response") or {}
        lines.append("")
        lines.append(f"#{i} {request.get('method', '?')} {request.get('uri', '?')}")
        body = _json_body(request.get("body"))
        if isinstance(body, dict):
            lines.extend("  " + line for line in _describe_request(body))
        status = response.get("status") or {}
        code = status.get("code") if isinstance(status, dict) else status
        lines.append(f"  ← {code} {status.get('message', '') if isinstance(status, dict) else ''}")
        lines.extend("    " + line for line in _describe_response(response))
    return "\n".join(lines)


def _body_text(body: Any) -> str | None:
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, bytes):
        import gzip

        if body[:2] == b"\x1f\x8b":
            try:
                body = gzip.decompress(body)
            except OSError:
                return None
        return body.decode("utf-8", "replace")
    return body if isinstance(body, str) else None


def _json_body(body: Any) -> Any:
    text = _body_text(body)
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


def _describe_request(body: dict[str, Any]) -> list[str]:
    out = [f"model {body.get('model')!r}, stream={body.get('stream', False)}"]
    messages = body.get("messages") or body.get("input") or []
    if isinstance(messages, list):
        roles = [str(m.get("role") or m.get("type")) for m in messages if isinstance(m, dict)]
        out.append(f"history ({len(roles)}): {', '.join(roles)}")
    tools = body.get("tools") or []
    names = [
        t.get("name") or (t.get("function") or {}).get("name") for t in tools if isinstance(t, dict)
    ]
    if names:
        out.append(f"tools: {', '.join(str(n) for n in names)}")
    for key in ("tool_choice", "parallel_tool_calls"):
        if key in body:
            out.append(f"{key}: {json.dumps(body[key])}")
    return out


def _describe_response(response: dict[str, Any]) -> list[str]:
    text = _body_text(response.get("body"))
    if text is None:
        return ["(no body)"]
    from .faults import frame_data, frame_event, split_frames

    if "data:" not in text:
        return [_clip(text, 300)]
    frames = split_frames(text)
    kinds: dict[str, int] = {}
    texts: list[str] = []
    for frame in frames:
        event = frame_event(frame)
        data = frame_data(frame)
        try:
            payload = json.loads(data) if data and data != "[DONE]" else None
        except ValueError:
            payload = None
        kind = event or (payload.get("object") if isinstance(payload, dict) else None) or (
            "[DONE]" if data == "[DONE]" else "data"
        )
        kinds[kind] = kinds.get(kind, 0) + 1
        texts.extend(_fragments(payload))
    summary = ", ".join(f"{k} x{n}" if n > 1 else k for k, n in kinds.items())
    out = [f"{len(frames)} SSE frame(s): {summary}"]
    joined = "".join(texts)
    if joined:
        out.append(f"streamed text/arguments: {_clip(joined, 300)!r}")
    return out


def _fragments(payload: Any) -> list[str]:
    """Text and argument fragments of one frame, whatever the API."""
    if not isinstance(payload, dict):
        return []
    out: list[str] = []
    for choice in payload.get("choices") or []:
        delta = choice.get("delta") or {}
        if isinstance(delta.get("content"), str):
            out.append(delta["content"])
        for call in delta.get("tool_calls") or []:
            fn = call.get("function") or {}
            if fn.get("name"):
                out.append(f"[call {fn['name']}]")
            if isinstance(fn.get("arguments"), str):
                out.append(fn["arguments"])
    kind = payload.get("type")
    if kind in ("response.output_text.delta", "response.function_call_arguments.delta"):
        out.append(str(payload.get("delta", "")))
    delta = payload.get("delta")
    if kind == "content_block_delta" and isinstance(delta, dict):
        out.append(str(delta.get("text") or delta.get("partial_json") or ""))
    block = payload.get("content_block")
    is_block = kind == "content_block_start" and isinstance(block, dict)
    if is_block and block.get("type") == "tool_use":
        out.append(f"[call {block.get('name')}]")
    return out


def _clip(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


# -- record / emulator ------------------------------------------------------------------------

_KEYS = {"openai": "OPENAI_API_KEY", "openai-responses": "OPENAI_API_KEY",
         "anthropic": "ANTHROPIC_API_KEY"}


@app.command()
def record(
    scenario_file: Annotated[Path, typer.Argument(help="The scenario whose prompts/tools to use.")],
    out: Annotated[Path, typer.Option("--out", "-o", help="Cassette file to write.")],
    provider: Annotated[
        str, typer.Option("--provider", help="openai | openai-responses | anthropic")
    ] = "openai",
    model: Annotated[str | None, typer.Option("--model", help="Model name.")] = None,
) -> None:
    """Record a cassette of a scenario's prompts/tools against a real provider (keys from env)."""
    if provider not in _KEYS:
        raise UsageProblem(f"unknown provider {provider!r}; use one of {', '.join(_KEYS)}")
    key = _KEYS[provider]
    if not os.environ.get(key):
        raise UsageProblem(
            f"recording against {provider} needs a real API key: set {key} in the environment "
            "(nothing was sent)"
        )
    scenario = load_scenario(scenario_file)
    from openprogram.providers import guard, provider_from_env

    from .cassettes import use_cassette
    from .scenarios import build_schedule, build_tools
    from .trace import run_loop_sync

    adapter = provider_from_env(provider)
    default_model = {"anthropic": "claude-3-5-haiku-latest"}.get(provider, "gpt-4o-mini")
    options = scenario.options
    with guard.allow_model_requests(True), use_cassette(out, record_mode="all"):
        trace = run_loop_sync(
            adapter,
            scenario.prompt_list,
            tools=build_tools(scenario, adapter, model or default_model),
            schedule=build_schedule(scenario),
            system_prompt=scenario.system_prompt,
            model=model or default_model,
            max_iterations=options.max_iterations,
            tool_choice=_choice(scenario),
            parallel_tool_calls=options.parallel_tool_calls,
            steering_mode=options.steering_mode,
            tool_timeout_s=options.tool_timeout_s,
        )
    from .trace import render_timeline

    _out.print(escape(render_timeline(trace)))
    _out.print(f"\ncassette written to {escape(str(out))} ({trace.model_calls} model call(s), "
               f"termination {trace.termination})")


def _choice(scenario: Scenario) -> Any:
    choice = scenario.options.tool_choice
    return choice.model_dump() if hasattr(choice, "model_dump") else choice


@app.command()
def emulator(
    port: Annotated[int, typer.Option("--port", help="Port on 127.0.0.1 (0: a free one).")] = 0,
    host: Annotated[str, typer.Option("--host", help="Interface to bind.")] = "127.0.0.1",
    reply: Annotated[
        list[str] | None, typer.Option("--reply", help="A text reply to serve (repeatable).")
    ] = None,
    scenario_file: Annotated[
        Path | None, typer.Option("--scenario", help="Serve this scenario's model script.")
    ] = None,
    cassette: Annotated[
        Path | None, typer.Option("--cassette", help="Serve the responses of this cassette.")
    ] = None,
    echo: Annotated[
        bool, typer.Option("--echo/--no-echo", help="Echo the last user message when out of turns.")
    ] = True,
) -> None:
    """Start the loopback provider emulator for manual use (Ctrl-C stops it)."""
    try:
        from . import emulator as emulator_module
    except ImportError as exc:  # pragma: no cover - the emulator ships with the harness
        raise UsageProblem(f"the provider emulator is not available: {exc}") from None
    if scenario_file is not None:
        from .scenarios import build_provider

        scenario = load_scenario(scenario_file)
        if scenario.cassette is not None:
            raise UsageProblem(f"{scenario_file} replays a cassette; use --cassette instead")
        turns = build_provider(scenario).turns
        try:
            served = emulator_module.serve(
                turns, host=host, port=port,
                fallback=emulator_module.echo_responder if echo else None,
                on_ready=lambda e: emulator_module.announce(e, lambda t: _out.print(escape(t))),
            )
        except (OSError, ValueError) as exc:
            raise UsageProblem(str(exc)) from None
        _out.print(f"served {len(served.requests)} request(s)")
        return
    code = emulator_module.main_emulator(
        list(reply or []), host=host, port=port,
        cassette=str(cassette) if cassette is not None else None, echo=echo,
        write=lambda line: _out.print(escape(line)),
    )
    if code:
        raise typer.Exit(code)


# -- entry point ------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point: clean messages and exit codes instead of tracebacks."""
    try:
        code = app(args=argv, standalone_mode=False)
    except typer.Exit as exc:
        return exc.exit_code
    except typer.Abort:
        return 1
    except typer.TyperException as exc:  # click's usage errors (typer vendors click)
        if type(exc).__name__ != "NoArgsIsHelpError":  # that one already printed the help
            exc.show()  # type: ignore[attr-defined]
        return int(getattr(exc, "exit_code", 2))
    except UsageProblem as exc:
        _err.print(f"[bold red]error:[/] {escape(str(exc))}")
        return 2
    except ScenarioError as exc:
        _err.print(f"[bold red]invalid scenario:[/]\n{escape(str(exc))}")
        return 1
    except KeyboardInterrupt:
        _err.print("interrupted")
        return 130
    except Exception as exc:
        _err.print(f"[bold red]error:[/] {type(exc).__name__}: {escape(str(exc))}")
        return 1
    return code if isinstance(code, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["SCENARIO_PATTERNS", "app", "discover", "is_scenario_file", "main", "matches",
           "run_one", "write_junit_xml"]
