"""Fake MCP servers for tests (the public names are at ``openprogram_testing.mcp``)."""
