"""The forecast service: a small MCP server (the ``mcp`` SDK's ``MCPServer``) the agent reaches
as tools named ``forecast__{tool}``.

Run it on its own over stdio with ``python -m city_agent.forecast_server``; the agent's tests
connect to it in-process, stand a fake in its place, or replay its recorded traffic.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("forecast")

FORECASTS = {"Rome": "sunny, 26 C", "Oslo": "snow, -2 C", "Lima": "cloudy, 19 C"}


@server.tool()
def tomorrow(city: str) -> str:
    """Tomorrow's forecast for one city."""
    if city not in FORECASTS:
        # ToolError: the model reads this message (any other exception reaches it only as
        # "Error executing tool tomorrow")
        raise ToolError(f"no forecast for {city}")
    return f"{city} tomorrow: {FORECASTS[city]}"


@server.tool()
def alerts(region: str = "Europe") -> list[str]:
    """Weather alerts in force in a region."""
    return ["storm warning: Oslo"] if region == "Europe" else []


if __name__ == "__main__":
    server.run()
