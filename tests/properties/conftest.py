"""Shared fixtures of the property suite.

Hypothesis profiles (``openprogram_testing.strategies.register_profiles``): ``$HYPOTHESIS_PROFILE``
picks ``dev`` (default), ``ci`` (derandomized, bounded: what CI runs; also chosen when ``$CI`` is
set) or ``deep`` (a long hunt); ``test_loop_properties`` applies it to its properties only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest


@pytest.fixture(scope="module")
def event_runner() -> Iterator[asyncio.Runner]:
    """One event loop reused by every example of a module: examples stay synchronous and cheap
    (no loop creation per example)."""
    with asyncio.Runner() as loop_runner:
        yield loop_runner
