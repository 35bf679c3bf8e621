"""A small MCP server the tests start as a stdio subprocess: ``python stdio_server.py [mode]``.

Modes: ``serve`` (the default: tools ``add``, ``shout``, ``sleep``, ``die``), ``crash`` (exits before
answering anything), ``silent`` (reads its input and never answers), ``garbage`` (answers every
line with text that is not JSON-RPC), ``big`` (with a tool that answers 10 MB of text)."""

from __future__ import annotations

import sys
import time


def serve(big: bool = False) -> None:
    import anyio
    from mcp.server.mcpserver import MCPServer

    server = MCPServer("stdio-demo")

    @server.tool()
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @server.tool()
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    @server.tool()
    async def sleep(seconds: float) -> str:
        """Sleep, then say so."""
        await anyio.sleep(seconds)
        return "slept"

    @server.tool()
    def die() -> str:
        """Exit the server process in the middle of the call."""
        import os

        os._exit(1)

    if big:

        @server.tool()
        def flood() -> str:
            """Answer ten megabytes of text."""
            return "x" * 10_000_000

    server.run("stdio")


def main() -> None:
    mode = sys.argv[1] if len(sys.argv) > 1 else "serve"
    if mode == "crash":
        sys.stderr.write("stdio_server: crashing on purpose\n")
        sys.exit(3)
    if mode == "garbage":
        for _ in sys.stdin:
            sys.stdout.write("this is not JSON-RPC {\n")
            sys.stdout.flush()
        return
    if mode == "silent":
        for _ in sys.stdin:
            pass
        time.sleep(3600)
        return
    serve(big=mode == "big")


if __name__ == "__main__":
    main()
