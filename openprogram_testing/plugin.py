"""The pytest plugin (registered through the ``pytest11`` entry point).

Fixtures, markers and options of the harness.  Options are namespaced (``--openprogram-…``) so
the plugin coexists with pytest-recording, which owns ``--record-mode``.  Nothing heavy is
imported at collection time: SDKs, vcrpy and hypothesis load only when a fixture needs them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from .scripted import ScriptedProvider

if TYPE_CHECKING:
    from .emulator import ProviderEmulator


@pytest.fixture
def scripted_provider() -> Iterator[ScriptedProvider]:
    """An empty strict ``ScriptedProvider``; add turns with ``.add(...)``.  At teardown an
    unexpected model call or an unplayed turn fails the test."""
    provider = ScriptedProvider()
    yield provider
    provider.assert_complete()


@pytest.fixture
def provider_emulator() -> Iterator[ProviderEmulator]:
    """A started strict ``ProviderEmulator`` (loopback HTTP, OpenAI and Anthropic wire formats);
    add turns with ``.add(...)``.  At teardown it is stopped (threads joined, port freed), then an
    unexpected request or an unplayed turn fails the test."""
    from .emulator import ProviderEmulator

    emulator = ProviderEmulator().start()
    try:
        yield emulator
    finally:
        emulator.stop()
    emulator.assert_complete()
