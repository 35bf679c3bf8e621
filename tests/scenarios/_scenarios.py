"""Helpers the scenario tests share: a small scenario to run, and the error a file load raises."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.scenarios import ScenarioError, load_scenario

#: A scenario (YAML, its ``expect:`` line still to append) in which the model calls tool ``t``,
#: which returns "ok", and then answers "done".
ONE_TOOL_CALL = """
prompt: hi
tools: [{name: t, returns: ok}]
script:
  - calls: [{name: t}]
  - done
"""


def load_error(path: Path, **options: Any) -> str:
    """The message of the ``ScenarioError`` that loading the scenario file at ``path`` (with
    ``load_scenario``'s ``options``) raises; the test fails if the file loads."""
    with pytest.raises(ScenarioError) as info:
        load_scenario(path, **options)
    return str(info.value)
