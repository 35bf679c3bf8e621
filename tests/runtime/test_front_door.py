"""The front door ``openprogram``: its public names are pinned and each one resolves."""

from __future__ import annotations

import pytest
from syrupy.assertion import SnapshotAssertion

import openprogram


def test_the_public_names_are_pinned(snapshot: SnapshotAssertion) -> None:
    # The names are stored in __snapshots__/.  Adding a name is fine: accept it with
    # --snapshot-update.  Removing or renaming one breaks users.
    assert sorted(openprogram.__all__) == snapshot
    assert len(set(openprogram.__all__)) == len(openprogram.__all__)


@pytest.mark.parametrize("name", openprogram.__all__)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(openprogram, name) is not None
    assert name in dir(openprogram)
