"""The one ``openprogram-testing`` application and its consoles, which every command module
registers on and prints to: kept apart from the commands so a command module (``shards``,
``recording_commands``) and ``commands`` can import each other's pieces without a cycle."""

from __future__ import annotations

import typer
from rich.console import Console

app = typer.Typer(
    name="openprogram-testing",
    help="Run, validate and inspect OpenProgram loop scenarios.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

out = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


class UsageProblem(Exception):
    """Bad command-line input: printed as ``error: …``, exit code 2."""
