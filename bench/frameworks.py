"""The benchmarked configurations.  Each is a module exposing ``name``, ``label``, ``version()``
and ``async run(script) -> final_text`` (see ``bench.common.Framework``).

The floor and ours need nothing beyond the project; the peers need the ``bench`` extra
(``pip install -e '.[bench]'``) and are skipped with a reason when it is not installed.
"""

from __future__ import annotations

import importlib
from typing import Any

from .common import Framework

OURS = "openprogram"
FLOOR = "floor"
PEERS = ("pydantic-ai", "openai-agents", "langgraph")

MODULES = {
    FLOOR: "bench.fw_floor",
    OURS: "bench.fw_openprogram",
    "pydantic-ai": "bench.fw_pydantic_ai",
    "openai-agents": "bench.fw_openai_agents",
    "langgraph": "bench.fw_langgraph",
}

ALL = (FLOOR, OURS, *PEERS)


def load(name: str) -> Framework:
    """Import one configuration; ``ImportError`` says which package is missing."""
    if name not in MODULES:
        raise ValueError(f"unknown framework {name!r}; choose from {', '.join(ALL)}")
    module: Any = importlib.import_module(MODULES[name])
    return module  # type: ignore[no-any-return]


def load_many(names: list[str]) -> tuple[list[Framework], dict[str, str]]:
    """The loadable configurations among ``names`` and, for the others, why not."""
    loaded: list[Framework] = []
    skipped: dict[str, str] = {}
    for n in names:
        try:
            loaded.append(load(n))
        except ImportError as exc:
            skipped[n] = f"not installed ({exc.name or exc}); pip install -e '.[bench]'"
    return loaded, skipped
