"""Package front doors that load each name on first use.

The harness's front doors (the package itself, ``cassettes``, ``scenarios``) keep importing cheap:
a name is imported from its module the first time it is read, then cached on the front door, so
the plugin and the CLI never pay for vcrpy, PyYAML or pydantic they do not use."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any

_HARNESS = __name__.rpartition(".")[0]


def lazy_names(
    package: str, exports: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for the front door ``package``: ``exports`` maps each public
    name to the module that defines it, named under the harness (``"core.trace"``), wherever
    the front door itself sits."""
    namespace = sys.modules[package].__dict__

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        defining = importlib.import_module(f"{_HARNESS}.{module}")
        value = getattr(defining, name)
        if name in vars(defining):  # not an old name its module serves with a warning each time
            namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__
