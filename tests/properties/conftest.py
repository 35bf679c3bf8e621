"""Hypothesis profiles for the property suite (see ``openprogram_testing.strategies``).

``$HYPOTHESIS_PROFILE`` picks one of ``dev`` (default), ``ci`` (derandomized, bounded: what CI
runs — also chosen automatically when ``$CI`` is set) and ``deep`` (a long hunt).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from openprogram_testing.strategies import load_profile

PROFILE = load_profile()


@pytest.fixture(scope="module")
def event_runner() -> Iterator[asyncio.Runner]:
    """One event loop reused by every example of a module: examples stay synchronous and cheap
    (no loop creation per example)."""
    with asyncio.Runner() as loop_runner:
        yield loop_runner
