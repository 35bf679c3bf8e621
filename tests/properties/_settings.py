"""Hypothesis settings the property tests share."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import HealthCheck, settings

from openprogram_testing.strategies import property_settings


def fixed_settings(
    max_examples: int,
    *,
    suppress_health_check: Sequence[HealthCheck] = tuple(HealthCheck),
    **options: Any,
) -> settings:
    """Settings for a test whose examples must be the same on every run, whatever the active
    profile: derandomized, no example database, no deadline, ``max_examples`` sized for what the
    test samples or hunts, the given health checks off (all by default), and any other
    ``options`` (``print_blob=False`` for a hunt that is expected to fail)."""
    return settings(
        max_examples=max_examples,
        derandomize=True,
        database=None,
        deadline=None,
        suppress_health_check=list(suppress_health_check),
        **options,
    )


def half_property_settings() -> settings:
    """The active profile's settings (``property_settings()``) with half its examples, at least
    10: for a property that runs each example twice, so it keeps the cost of a plain one."""
    profile = property_settings()
    return settings(profile, max_examples=max(10, profile.max_examples // 2))
