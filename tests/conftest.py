"""Shared test configuration.  Fixtures of the harness come from the installed pytest11 plugin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# PyYAML's C extension cannot be imported twice: in-process pytester runs drop the modules their
# inner session imported, so a `yaml` first imported inside one would be imported again afterwards,
# with node classes the C parser no longer recognises ("could not determine a constructor for the
# tag None" in later cassette loads). Importing them here keeps one copy for the whole session.
import vcr.serializers.yamlserializer  # noqa: F401
import yaml  # noqa: F401

ROOT = Path(__file__).resolve().parent.parent


def conformance_dir() -> Path:
    """The shared real-world recordings: ``$OPENPROGRAM_CONFORMANCE_CASSETTES`` or
    ``../shared/conformance/cassettes`` beside the project."""
    env = os.environ.get("OPENPROGRAM_CONFORMANCE_CASSETTES")
    return Path(env) if env else ROOT.parent / "shared" / "conformance" / "cassettes"


def require_conformance_dir() -> Path:
    """:func:`conformance_dir`, or the calling test skipped with where it was looked for: the
    recordings are shared beside the project, never copied into it."""
    path = conformance_dir()
    if not path.is_dir():
        pytest.skip(
            f"conformance recordings not found at {path} "
            "(set OPENPROGRAM_CONFORMANCE_CASSETTES to their folder)"
        )
    return path


@pytest.fixture
def conformance_cassettes() -> Path:
    return require_conformance_dir()
