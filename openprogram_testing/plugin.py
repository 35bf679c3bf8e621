"""The pytest plugin (registered through the ``pytest11`` entry point).

Fixtures, markers and options of the harness.  Options are namespaced (``--openprogram-…``) so
the plugin coexists with pytest-recording, which owns ``--record-mode``.  Nothing heavy is
imported at collection time: SDKs, vcrpy and hypothesis load only when a fixture needs them.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from .scripted import ScriptedProvider

if TYPE_CHECKING:
    from .cassettes import CassetteSession
    from .emulator import ProviderEmulator


def pytest_addoption(parser: pytest.Parser) -> None:
    """Shared hook (one per module): add every option of the harness here."""
    group = parser.getgroup("openprogram", "openprogram_testing harness")
    group.addoption(
        "--openprogram-record-mode",
        action="store",
        default="none",
        choices=("none", "once", "new_episodes", "all"),
        help="Cassette record mode for the `cassette` fixture (default: none = replay only, "
        "never reach the network).  Recording allows real model requests.",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Shared hook (one per module): register every marker of the harness here."""
    config.addinivalue_line(
        "markers",
        "op_cassette(name=None, *, match_body=False, allow_unplayed=False, mutations=()): "
        "the cassette the `cassette` fixture replays (default: cassettes/<module>/<test>.yaml)",
    )


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


def _cassette_path(request: pytest.FixtureRequest, name: object) -> Path:
    """``cassettes/<name>.yaml`` under the rootdir, or ``cassettes/<module>/<test>.yaml``."""
    root = Path(str(request.config.rootpath)) / "cassettes"
    if name is None:
        module = Path(str(request.node.path)).stem
        test = re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
        return root / module / f"{test}.yaml"
    path = Path(str(name))
    if not path.suffix:
        path = path.with_suffix(".yaml")
    return path if path.is_absolute() else root / path


@pytest.fixture
def cassette(request: pytest.FixtureRequest) -> Iterator[CassetteSession]:
    """Replay the test's cassette (``@pytest.mark.op_cassette(...)`` or, by default,
    ``cassettes/<module>/<test>.yaml``) around the test.  ``--openprogram-record-mode=once``
    records it (real model requests are allowed then).  At teardown, interactions left unplayed
    or a request that matched nothing fail the test."""
    from .cassettes import use_cassette

    marker = request.node.get_closest_marker("op_cassette")
    args = marker.args if marker else ()
    kwargs = dict(marker.kwargs) if marker else {}
    name = args[0] if args else kwargs.pop("name", None)
    mode = str(request.config.getoption("--openprogram-record-mode") or "none")
    kwargs.setdefault("record_mode", mode)
    with contextlib.ExitStack() as stack:
        if kwargs["record_mode"] != "none":
            from openprogram.providers import guard

            stack.enter_context(guard.allow_model_requests(True))
        yield stack.enter_context(use_cassette(_cassette_path(request, name), **kwargs))
