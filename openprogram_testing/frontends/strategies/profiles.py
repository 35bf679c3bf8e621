"""Hypothesis profiles of the loop property suite (``dev``, ``ci``, ``deep``) and how the active one
is chosen from the environment (``$HYPOTHESIS_PROFILE``, else ``ci`` when ``$CI`` is set)."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import settings

PROFILES = ("dev", "ci", "deep")


def register_profiles() -> None:
    """Register the hypothesis profiles of the loop property suite (idempotent):

    - ``dev`` (default): 100 examples per property, quick local feedback;
    - ``ci``: derandomized (the same examples every run), no deadline, enough examples that the
      suite runs well over 1,000 scenarios in a few seconds;
    - ``deep``: 5,000 examples per property, for a hunt (``HYPOTHESIS_PROFILE=deep``).
    """
    from hypothesis import HealthCheck

    common: dict[str, Any] = dict(
        deadline=None, suppress_health_check=[HealthCheck.too_slow], print_blob=True
    )
    settings.register_profile("dev", max_examples=100, **common)
    settings.register_profile("ci", max_examples=700, derandomize=True, database=None, **common)
    settings.register_profile("deep", max_examples=5000, **common)


def active_profile(default: str = "dev") -> str:
    """The profile to use: ``$HYPOTHESIS_PROFILE``, else ``ci`` when ``$CI`` is set, else
    ``default``.  An unknown name is a ``ValueError`` listing the known ones."""
    register_profiles()
    name = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if os.environ.get("CI") else default)
    try:
        settings.get_profile(name)
    except Exception:
        raise ValueError(
            f"unknown HYPOTHESIS_PROFILE {name!r}: use one of {', '.join(PROFILES)}"
        ) from None
    return name


def property_settings(default: str = "dev") -> settings:
    """The active profile's settings, to decorate a property with (``@property_settings()``)
    without changing hypothesis's global default for unrelated tests."""
    return settings.get_profile(active_profile(default))


def load_profile(default: str = "dev") -> str:
    """Make the active profile (see ``active_profile``) hypothesis's global default; returns its
    name."""
    name = active_profile(default)
    settings.load_profile(name)
    return name
