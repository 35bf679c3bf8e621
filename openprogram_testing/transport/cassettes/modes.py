"""The cassette record modes, in one place: the ``cassette`` fixture's command-line option
offers them and ``CassetteSession`` checks against them.  A module of its own (and the
``cassettes`` package loads its names on first use), so the pytest plugin reads them without
loading the cassette machinery."""

from __future__ import annotations

from typing import Literal, get_args

RecordMode = Literal["none", "once", "new_episodes", "all"]
"""vcrpy's record modes: ``none`` replays only and never reaches the network."""

RECORD_MODES: tuple[str, ...] = get_args(RecordMode)

__all__ = ["RECORD_MODES", "RecordMode"]
