"""Spellings of 0.1 that 0.2.0 renamed, kept until 0.3 (see CHANGELOG.md).

Each answers as 0.1 did and warns naming its replacement, so an upgrade says what changed
instead of failing on a name the user cannot look up.  They live in one module so that 0.3
deletes one module (the call sites say ``deprecated.``).  A run's path compared with a 0.1 tuple
is the path type's own business (``steering.RunAddress``).  Nothing here imports the harness, so
every layer may use it.
"""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Collection
from typing import Any, TypeVar

from openprogram.providers.apis import api_named

F = TypeVar("F", bound=Callable[..., Any])

ONE_ARGUMENT: Any = object()
"""The default of a parameter 0.2.0 added in front of the one a 0.1 call passed alone."""


def warn(old: str, new: str, stacklevel: int = 3, *, where: str = "") -> None:
    """The one wording of a deprecated spelling: what to write instead, and when it goes
    (``where``: the place in a file that spells it, for spellings no Python line holds)."""
    place = f"{where}: " if where else ""
    warnings.warn(
        f"{place}{old} is {new} since openprogram-loop 0.2.0; write {new} ({old} goes in 0.3)",
        DeprecationWarning,
        stacklevel=stacklevel,
    )


def caller_stacklevel() -> int:
    """The ``stacklevel`` for :func:`warn` called in a module ``__getattr__`` serving an old
    name: the line that read the name, past the front doors' lazy loader (``_lazy.py``) when a
    front door read it on the caller's behalf, so the warning points at code the user can edit."""
    import inspect

    level = 3  # warn's caller (the __getattr__), then whoever read the name
    frame = inspect.currentframe()
    reader = frame.f_back.f_back if frame is not None and frame.f_back is not None else None
    while reader is not None and reader.f_code.co_filename.endswith("_lazy.py"):
        level += 1
        reader = reader.f_back
    return level


def renamed_keyword(old: str, new: str) -> Callable[[F], F]:
    """A function whose parameter ``old`` (0.1) is now ``new``: ``old=`` still works, warning
    with the name to write; both at once is a ``TypeError`` saying which to keep."""

    def wrap(fn: F) -> F:
        @functools.wraps(fn)
        def call(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True  # a failing assertion points at the caller's line
            if old in kwargs:
                if new in kwargs:
                    raise TypeError(f"{fn.__name__}() got {old}= and {new}=; give {new}= alone")
                warn(f"{fn.__name__}({old}=...)", f"{fn.__name__}({new}=...)")
                kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def record_provider(provider: str, api: str, recordable: Collection[str]) -> str:
    """``openprogram-testing record --provider P`` (0.1: ``openai | openai-responses |
    anthropic``) is ``--api`` since 0.2.0: the API name ``P`` stands for, with a warning on
    stderr and a ``DeprecationWarning`` naming the ``--api`` to write.  A value that names no
    recordable API, or an ``--api`` that says otherwise, is the command's usage error saying
    what to write."""
    import typer

    named = api_named(provider)
    if named is None or named.name not in recordable:
        raise typer.BadParameter(
            f"--provider is --api since 0.2.0, and {provider!r} names no recordable API; "
            f"use --api with one of {', '.join(recordable)}"
        )
    if api not in ("openai_chat", named.name):  # openai_chat: --api's default, i.e. not given
        raise typer.BadParameter(
            f"--provider {provider} and --api {api} disagree; give --api alone"
        )
    message = (
        f"--provider is deprecated since 0.2.0 and goes in 0.3: use --api {named.name} "
        f"(recording with --api {named.name} now)"
    )
    sys.stderr.write(f"warning: {message}\n")
    warnings.warn(message, DeprecationWarning, stacklevel=2)
    return named.name


__all__ = ["ONE_ARGUMENT", "caller_stacklevel", "record_provider", "renamed_keyword", "warn"]
