"""A weather agent: three tools, an agentic function that runs its own nested loop, a forecast
service reached over MCP (``city_agent.forecast_server``), and a tool that sends mail only with a
reviewer's approval."""

from __future__ import annotations

from openprogram import Registry, Runtime, agentic_function, function
from openprogram.mcp import MCPConnection

registry = Registry()

WEATHER = {"Rome": 24, "Oslo": 3, "Lima": 18}


@function(registry=registry)
def list_cities() -> list[str]:
    """The cities we have weather for."""
    return sorted(WEATHER)


@function(registry=registry)
def lookup_weather(city: str) -> str:
    """Current weather of one city, in degrees Celsius."""
    if city not in WEATHER:
        raise ValueError(f"no weather for {city}")
    return f"{city}: {WEATHER[city]} C"


@function(registry=registry)
def to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to Fahrenheit."""
    return round(celsius * 9 / 5 + 32, 1)


@agentic_function(registry=registry)
def summarize_cities(cities: list[str], runtime: Runtime) -> str:
    """Summarise the weather of several cities in one sentence."""
    return runtime.exec(
        "Look up the weather of " + ", ".join(cities) + " and summarise it in one sentence.",
        tools=[lookup_weather, to_fahrenheit],
    )


TOOLS = [list_cities, lookup_weather, summarize_cities]

OUTBOX: list[tuple[str, str]] = []
"""What ``send_forecast`` sent (the example's stand-in for a mail server)."""


@function(registry=registry, requires_approval=True)
def send_forecast(to: str, text: str) -> str:
    """E-mail a forecast.  Every message waits for a reviewer's approval (the runtime's
    approval gate): a denied one is never sent, and the reviewer may change the recipient."""
    OUTBOX.append((to, text))
    return f"sent to {to}"


MAIL_TOOLS = [lookup_weather, send_forecast]


def build_runtime(provider: object, model: str = "gpt-4o-mini") -> Runtime:
    """The agent's runtime over any provider (a real adapter, or a test double)."""
    return Runtime(provider, model, registry=registry, system_prompt="You are a weather agent.")


def ask(runtime: Runtime, question: str) -> str:
    """One question to the agent."""
    return str(runtime.exec(question, tools=TOOLS))


def forecast_service(server: object = None) -> MCPConnection:
    """The connection to the forecast service: the real server in-process unless another is
    given (a fake, a URL, a command).  Its tools are offered as ``forecast__{tool}``, their
    schemas sent with every request (``always_load``: the agent needs its one tool on most
    questions, so deferring it behind ``tool_search`` would cost a model call)."""
    if server is None:
        from .forecast_server import server as real

        server = real
    return MCPConnection("forecast", server, call_timeout_s=10, always_load=True)


def plan(runtime: Runtime, question: str, forecast: MCPConnection) -> str:
    """A question that may need tomorrow's forecast: the agent's tools and the service's."""
    return str(runtime.exec(question, tools=[*TOOLS, forecast]))


def mail_forecast(runtime: Runtime, request: str) -> str:
    """Ask the agent to mail a forecast (``send_forecast`` asks the runtime's approval gate)."""
    return str(runtime.exec(request, tools=MAIL_TOOLS))


__all__ = [
    "MAIL_TOOLS",
    "OUTBOX",
    "TOOLS",
    "ask",
    "build_runtime",
    "forecast_service",
    "mail_forecast",
    "plan",
    "registry",
    "send_forecast",
    "summarize_cities",
]
