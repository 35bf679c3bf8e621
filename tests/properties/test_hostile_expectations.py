"""Hostile expectations (unknown operators, bad tolerances and patterns, a matcher for the whole
arguments, numbers past float range, values thousands deep, ``$literal``) drawn by the project's
own strategy: every reader refuses the bad ones naming the operator and judges the rest, and
every kind is drawn.  A planted bug (unknown operators compared as data again) is found."""

from __future__ import annotations

import collections
from typing import Any

import pytest
from hypothesis import given

import openprogram_testing.core.matchers as matchers_module
from openprogram_testing.frontends.strategies.hostile_matchers import KINDS
from openprogram_testing.strategies import (
    HostileExpectation,
    OutcomeMismatch,
    check_hostile_expectation,
    hostile_expectations,
)
from tests.properties._settings import fixed_settings, half_property_settings

_HALF = half_property_settings()
_HUNT = fixed_settings(200, print_blob=False)


@_HALF
@given(case=hostile_expectations())
def test_hostile_expectations_are_refused_or_judged(case: HostileExpectation) -> None:
    check_hostile_expectation(case)


def test_every_kind_is_drawn() -> None:
    drawn: collections.Counter[str] = collections.Counter()

    @_HUNT
    @given(case=hostile_expectations())
    def sample(case: HostileExpectation) -> None:
        drawn[case.kind] += 1

    sample()
    assert all(drawn[k] for k in KINDS), drawn


def test_a_planted_bug_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    real = matchers_module._operator

    def lenient(value: Any, operators: list[str], root: str, at: Any) -> Any:
        if any(k not in matchers_module.OPERATORS for k in operators):
            return dict(value)  # the old reading: an unknown operator compared as data
        return real(value, operators, root, at)

    monkeypatch.setattr(matchers_module, "_operator", lenient)

    @_HUNT
    @given(case=hostile_expectations())
    def hunt(case: HostileExpectation) -> None:
        check_hostile_expectation(case)

    with pytest.raises(OutcomeMismatch, match=r"accepted a value it must refuse|judged a value"):
        hunt()
