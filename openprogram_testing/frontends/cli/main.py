"""The ``openprogram-testing`` command's entry point: clean messages and exit codes.

Exit codes: 0 success, 1 a scenario failed or a file is invalid, 2 usage problems (nothing to
run, missing API keys, unreadable input, the testing extra not installed).  Errors are one
message, never a traceback.  The commands themselves are in ``frontends.cli.commands``,
imported only once the testing extra (typer, rich, PyYAML, pytest) is known to be installed,
so a bare ``pip install openprogram`` gets the install line instead of an ``ImportError``.
"""

from __future__ import annotations

import sys

from openprogram_testing.base.extras import INSTALL_LINE, missing

CLI_MODULES = ("typer", "rich", "yaml", "pytest")
"""What the command needs from the testing extra."""


def main(argv: list[str] | None = None) -> int:
    """Console-script entry point."""
    absent = missing(*CLI_MODULES)
    if absent:
        sys.stderr.write(
            f"error: openprogram-testing needs the testing extra ({', '.join(absent)} not "
            f"installed); install it with: {INSTALL_LINE}\n"
        )
        return 2
    import faulthandler

    import typer

    # importing these registers their commands on the app: scaffold and diff, report merge
    from . import commands, recording_commands, shards  # noqa: F401
    from .app import UsageProblem, app, err

    commands.OWN_PROCESS = argv is None  # the shell's command line, not an in-process call

    if not faulthandler.is_enabled():  # a crash of trusted scenario code (os.abort in a
        try:  # factory) prints its Python stack instead of ending silently
            faulthandler.enable()
        except (AttributeError, OSError, ValueError):  # stderr without a file descriptor
            pass
    from openprogram_testing.frontends.scenarios.problems import ScenarioError

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
        err.print(f"[bold red]error:[/] {_escape(str(exc))}")
        return 2
    except ScenarioError as exc:
        err.print(f"[bold red]invalid scenario:[/]\n{_escape(str(exc))}")
        return 1
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130
    except Exception as exc:
        err.print(f"[bold red]error:[/] {type(exc).__name__}: {_escape(str(exc))}")
        return 1
    return code if isinstance(code, int) else 0


def __getattr__(name: str) -> object:
    """``frontends.cli.main.app``: the typer application, imported on first use."""
    if name == "app":
        from . import commands, recording_commands, shards  # noqa: F401  (register them)
        from .app import app

        return app
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


__all__ = ["CLI_MODULES", "main"]
