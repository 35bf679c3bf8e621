"""Sanity of the strategies: they generate every kind of scenario the spec lists, deterministically
under a seed, and shrink to minimal examples."""

from __future__ import annotations

from functools import lru_cache

import pytest
from hypothesis import HealthCheck, find, given, seed, settings

from openprogram_testing.strategies import (
    GeneratedScenario,
    GenTurn,
    exact_script,
    model_turns,
    provider_scripts,
    scenarios,
    steering_schedules,
)
from tests.properties._settings import fixed_settings

REQUIRED_KINDS = {
    # model turns
    "text",
    "thinking",
    "single_call",
    "parallel_calls",
    "chunked",
    "call_valid",
    "call_schema",
    "call_raw",
    "call_unknown",
    "ending_length",
    "ending_error",
    "ending_aborted",
    "ending_cut",
    # tools
    "tool_returns",
    "tool_echo",
    "tool_raises",
    "tool_sequence",
    "raising_tool_called",
    # steering schedules and options
    "steer_after_tool",
    "steer_after_call",
    "steer_before_round",
    "steer_follow_up",
    "mode_skip",
    "mode_after_batch",
    "max_iterations",
    # outcomes
    "termination_completed",
    "termination_max_iterations",
    "termination_error",
    "termination_aborted",
    "skipped",
    "delivered",
    "undelivered",
}

_SAMPLE = fixed_settings(400, suppress_health_check=[HealthCheck.too_slow])


@lru_cache(maxsize=1)
def _collect() -> tuple[GeneratedScenario, ...]:
    seen: list[GeneratedScenario] = []

    @_SAMPLE
    @given(generated=scenarios())
    def sample(generated: GeneratedScenario) -> None:
        seen.append(generated)

    sample()
    return tuple(seen)


def test_scenarios_generate_every_kind() -> None:
    kinds: set[str] = set()
    for generated in _collect():
        kinds |= generated.kinds
    assert not REQUIRED_KINDS - kinds, f"never generated: {sorted(REQUIRED_KINDS - kinds)}"


def test_generation_is_deterministic_under_a_seed() -> None:
    def draw_all() -> list[GeneratedScenario]:
        seen: list[GeneratedScenario] = []

        @seed(1234)
        @settings(max_examples=30, database=None, deadline=None)
        @given(generated=scenarios())
        def sample(generated: GeneratedScenario) -> None:
            seen.append(generated)

        sample()
        return seen

    assert draw_all() == draw_all()


def test_scripts_are_exact() -> None:
    """A generated script has exactly the turns its run consumes: no unexpected model call and no
    unplayed turn for the strict scripted provider."""
    for generated in _collect()[:150]:
        assert generated.expected_outcome().model_calls == len(generated.script)


def test_exact_script_trims_and_pads() -> None:
    one_call = GenTurn(calls=(), text="hi")
    padded = exact_script(GeneratedScenario(script=()))
    assert padded.script == (GenTurn(text="done"),)
    trimmed = exact_script(GeneratedScenario(script=(one_call, one_call, one_call)))
    assert trimmed.script == (one_call,)


def _find(strategy, condition):  # type: ignore[no-untyped-def]
    return find(
        strategy, condition, settings=settings(database=None, derandomize=True, max_examples=2000)
    )


def test_failures_shrink_to_minimal_examples() -> None:
    # The simplest parallel pick: two valid calls, nothing else in the turn.
    parallel = _find(model_turns(), lambda t: len(t.calls) >= 2)
    assert [c.kind for c in parallel.calls] == ["valid", "valid"]
    assert parallel.ending == "stop" and parallel.thinking is None and parallel.chunk_size is None
    # A run cut by the cap shrinks to a tiny one: at most two turns, one call, one message.
    capped = _find(scenarios(), lambda g: g.expected_outcome().termination == "max_iterations")
    assert capped.expected_outcome().cap <= 2 and len(capped.script) <= 2
    assert sum(len(t.calls) for t in capped.script) <= 1 and len(capped.steering) <= 1
    # (The shrink of a skipped call is checked by test_shrink_to_yaml's planted skip bug.)


def test_component_strategies_draw_their_types() -> None:
    @settings(max_examples=40, database=None, deadline=None)
    @given(turn=model_turns(), script=provider_scripts(), schedule=steering_schedules())
    def check(turn: GenTurn, script: tuple[GenTurn, ...], schedule: tuple) -> None:  # type: ignore[type-arg]
        assert isinstance(turn, GenTurn)
        assert 1 <= len(script) <= 5 and all(isinstance(t, GenTurn) for t in script)
        assert len(schedule) <= 3
        turn.scripted()  # builds a real ScriptedTurn

    check()


def test_profiles_are_selected_by_the_environment(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from openprogram_testing.strategies import active_profile, load_profile, property_settings

    monkeypatch.delenv("HYPOTHESIS_PROFILE", raising=False)
    monkeypatch.delenv("CI", raising=False)
    assert active_profile() == "dev"
    monkeypatch.setenv("CI", "true")
    assert active_profile() == "ci"
    ci = property_settings()
    assert ci.derandomize and ci.database is None and ci.deadline is None
    assert ci.max_examples >= 700
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "deep")
    assert active_profile() == "deep" and property_settings().max_examples > ci.max_examples
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "nope")
    with pytest.raises(ValueError, match=r"unknown HYPOTHESIS_PROFILE 'nope'.*dev, ci, deep"):
        active_profile()
    previous = settings.get_current_profile_name()
    monkeypatch.setenv("HYPOTHESIS_PROFILE", "ci")
    try:
        assert load_profile() == "ci" and settings.default.derandomize
    finally:
        settings.load_profile(previous)


def test_calls_keep_their_meaning_when_a_tool_is_deleted() -> None:
    """The call table has the same length whatever the run declares, and a call to a tool the
    run does not declare is bound to a declared one (or to an unknown tool when there is none):
    deleting a tool while shrinking leaves every later draw meaning a comparable call."""
    from openprogram_testing.frontends.strategies.generate import _call_table
    from openprogram_testing.frontends.strategies.universe import TOOL_NAMES, UNKNOWN_TOOL

    full = _call_table(TOOL_NAMES, 3)
    assert all(len(_call_table(TOOL_NAMES, k)) == len(full) for k in range(4))
    one = _call_table(TOOL_NAMES, 1)
    assert {c.name for c in one} == {"t0", UNKNOWN_TOOL}
    assert [c.kind for c in one] == [c.kind for c in full]
    assert all(c.kind == "unknown" for c in _call_table(TOOL_NAMES, 0))
    # x is kept when a valid call is rebound: the shrinker still moves it down monotonically.
    assert one[10 + 5] == full[5]
