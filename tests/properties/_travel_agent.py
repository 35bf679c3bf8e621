"""A small agent built on ``Runtime.exec`` for the agent property tests: a planner that is an
``@agentic_function`` offering a nested ``@agentic_function`` (and an async ``@function``) to its
own run, each nested run with a narrower menu than the one above it (importable by path for the
YAML export: ``tests.properties._travel_agent:planner``)."""

from __future__ import annotations

from typing import Any

from openprogram import Runtime, agentic_function, function


@function
def find_flight(city: str) -> str:
    """Find a flight.

    Args:
        city: Where to.
    """
    return f"flight to {city}"


@function
async def weather(city: str) -> str:
    """The weather of a city.

    Args:
        city: Which city.
    """
    return f"sunny in {city}"


@agentic_function
def pick_hotel(city: str, runtime: Runtime) -> str:
    """Pick a hotel with the help of the weather.

    Args:
        city: Where.
    """
    return str(runtime.exec(f"Pick a hotel in {city}", tools=[weather]))


@agentic_function
def planner(goal: str, runtime: Runtime) -> str:
    """Plan a trip.

    Args:
        goal: What the traveller wants.
    """
    return str(runtime.exec(f"Plan: {goal}", tools=[pick_hotel, weather]))


def make_runtime(provider: Any) -> Runtime:
    """The agent's runtime on the test's model."""
    return Runtime(provider, "test-model")


TOOLS = [planner, find_flight]
