"""A small travel agent the bundled scenarios import: a planner (an ``@agentic_function``)
opens a nested run that offers another agentic function, whose own nested run looks the
weather up."""

from __future__ import annotations

from openprogram import Registry, Runtime, agentic_function, function

registry = Registry()

WEATHER = {"Rome": 24, "Oslo": 3, "Lima": 18}


@function(registry=registry)
def get_weather(city: str) -> str:
    """Current weather of a city, in degrees Celsius."""
    if city not in WEATHER:
        raise ValueError(f"no weather for {city}")
    return f"{city}: {WEATHER[city]} C"


@agentic_function(registry=registry)
def compare_options(cities: list[str], runtime: Runtime) -> str:
    """Compare the weather of several cities."""
    return str(runtime.exec("Compare the weather of " + ", ".join(cities), tools=[get_weather]))


@agentic_function(registry=registry)
async def plan_trip(goal: str, runtime: Runtime) -> str:
    """Plan a trip towards a goal."""
    return str(await runtime.aexec("Plan a trip: " + goal, tools=[compare_options]))
