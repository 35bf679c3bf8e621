"""Shared test configuration.  Fixtures of the harness come from the installed pytest11 plugin."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def conformance_dir() -> Path:
    """The shared real-world recordings: ``$OPENPROGRAM_CONFORMANCE_CASSETTES`` or
    ``../shared/conformance/cassettes`` beside the project."""
    env = os.environ.get("OPENPROGRAM_CONFORMANCE_CASSETTES")
    return Path(env) if env else ROOT.parent / "shared" / "conformance" / "cassettes"


@pytest.fixture
def conformance_cassettes() -> Path:
    path = conformance_dir()
    if not path.is_dir():
        pytest.skip(
            f"conformance recordings not found at {path} "
            "(set OPENPROGRAM_CONFORMANCE_CASSETTES to their folder)"
        )
    return path
