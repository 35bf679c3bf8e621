"""The ``scaffold`` and ``diff`` commands of ``openprogram-testing``: a recording becomes a test,
and what drifted between two recordings.  They register on the one ``commands.app`` when this
module is imported (``cli`` does), and keep their logic in ``scenarios.scaffold`` and ``drift``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from openprogram_testing.frontends.drift import RecordingUnreadable, diff_recordings
from openprogram_testing.frontends.scenarios.scaffold import (
    ScaffoldError,
    scaffold_cassette,
    scaffold_target,
)
from openprogram_testing.frontends.scenarios.scaffold_record import scaffold_record

from .app import UsageProblem, app, out


@app.command()
def scaffold(
    cassette: Annotated[
        Path,
        typer.Argument(
            help="A recorded cassette, an HTML report (with --test) or a run record JSON file."
        ),
    ],
    out_file: Annotated[Path, typer.Option("--out", "-o", help="Scenario file to write.")],
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="module:attr of your real tools (a cassette only)."),
    ] = None,
    test: Annotated[
        str | None,
        typer.Option("--test", help="The report's test: its id, or a unique part of it."),
    ] = None,
    run: Annotated[
        int | None, typer.Option("--run", help="Which run of the test (1-based).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write a scenario that replays CASSETTE (a recording, or a run of an HTML report or of a
    run record JSON file) and expects what the recorded run did."""

    try:  # before anything is read: a refused target leaves nothing behind
        scaffold_target(out_file, cassette, force=force)
    except ScaffoldError as exc:
        raise UsageProblem(str(exc)) from None
    from_report = cassette.suffix.lower() in (".html", ".htm", ".json")
    if not from_report and (test is not None or run is not None):
        raise UsageProblem("--test and --run pick a run of an HTML report or a run record JSON")
    if from_report and agent is not None:
        raise UsageProblem("--agent belongs to a cassette; a report's run replays stub tools")
    try:
        if from_report:
            result = scaffold_record(cassette, out_file, test=test, run=run)
        else:
            result = scaffold_cassette(cassette, out_file, agent=agent)
    except ScaffoldError as exc:
        raise UsageProblem(f"cannot scaffold {cassette}: {exc}") from None
    trace = result.trace
    nested = sum(1 for _ in result.tree.walk()) - 1 if result.tree is not None else 0
    runs = f"; {nested} nested run(s), each expected" if nested else ""
    out.print(
        f"scenario written to {escape(str(out_file))}: it passes as written "
        f"(termination {trace.termination}, {trace.model_calls} model call(s), "
        f"{len(trace.tool_calls)} tool call(s){runs}); loosen its expectations where variation "
        "is harmless"
    )


@app.command()
def diff(
    old: Annotated[Path, typer.Argument(help="The earlier recording (a cassette).")],
    new: Annotated[Path, typer.Argument(help="The re-recorded cassette.")],
    strict: Annotated[
        bool, typer.Option("--strict", help="Fail on changed text or usage too.")
    ] = False,
) -> int:
    """What the model did differently in NEW than in OLD, interaction by interaction.  Exit 1
    when tools, arguments, stop reasons or errors changed (with --strict: anything), else 0."""

    try:
        drift = diff_recordings(old, new)
    except RecordingUnreadable as exc:
        raise UsageProblem(str(exc)) from None
    out.print(escape(drift.report()))
    failed = drift.behaviour_changed or (strict and bool(drift.changes))
    return 1 if failed else 0


__all__ = ["diff", "scaffold"]
