"""Spellings of 0.1 that 0.2.0 renamed, kept until 0.3 (see CHANGELOG.md).

Each answers as 0.1 did and warns naming its replacement, so an upgrade says what changed
instead of failing on a name the user cannot look up.  They live in one module so that 0.3
deletes one module.  (A run's path compared with a 0.1 tuple is the path type's own business:
``steering.RunAddress``.)
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Collection

from openprogram.providers.apis import api_named


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


__all__ = ["record_provider"]
