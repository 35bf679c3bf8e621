"""Property tests of the gating layers: every drawn configuration (tools with every gating
option, toolsets with ``includes``, one run's policy) offers exactly what the reference model
says, and the check fails when the runtime gates differently."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from openprogram_testing.strategies import GatedTool, GatingConfig, check_gating, gating_configs


@settings(max_examples=300, deadline=None)
@given(gating_configs())
def test_every_configuration_offers_what_the_reference_model_says(config: GatingConfig) -> None:
    check_gating(config)


def test_the_check_fails_when_the_runtime_gates_differently(monkeypatch) -> None:
    config = GatingConfig(
        tools=(GatedTool("alpha", check="raise"), GatedTool("beta", defer=True)),
        only_available=True,
    )
    check_gating(config)  # alpha is unavailable: the array holds tool_search only
    monkeypatch.setattr("openprogram.gating.is_available", lambda tool: True)
    with pytest.raises(
        AssertionError, match=r"offered \['alpha', 'tool_search'\], expected \['tool_search'\]"
    ):
        check_gating(config)


def test_the_reference_model_of_includes_cycles_and_full() -> None:
    config = GatingConfig(
        tools=(
            GatedTool("alpha", toolsets=("files",)),
            GatedTool("beta", toolsets=("net",), exposed=False),
            GatedTool("gamma", toolsets=("net",)),
            GatedTool("delta"),
        ),
        includes={"files": ("net",), "net": ("files", "full")},
        toolset="files",
    )
    assert config.expected() == (["alpha", "gamma", "delta"], [])
    check_gating(config)
