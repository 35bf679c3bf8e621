"""Workloads that depend on other parts of the project (W4 runtime, W5 cassettes + adapters,
W6 property strategies).  Each reports ``pending`` with the reason when its part is missing."""

from __future__ import annotations

from typing import Any

from .workloads import Settings


async def run(key: str, cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    return None, "not implemented yet"
