"""An SDK MCP server served over streamable HTTP on loopback, on a thread: how a fake server
is reached by agents that only speak HTTP (other frameworks' MCP clients, a subprocess).

uvicorn runs the SDK's own Starlette app (``Server.streamable_http_app()``) on a socket this
module binds to ``127.0.0.1`` on a free port, so the port is known before the server starts and
nothing listens beyond loopback.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 10.0


class LoopbackServer:
    """``start()`` returns the URL; ``stop()`` shuts uvicorn down and joins its thread."""

    def __init__(self, server: Any, path: str = "/mcp") -> None:
        self.server = server
        self.path = path
        self.url: str | None = None
        self._uvicorn: Any = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = None

    def start(self) -> str:
        import uvicorn

        app = self.server.streamable_http_app(streamable_http_path=self.path)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", lifespan="on")
        self._uvicorn = uvicorn.Server(config)
        self._socket = sock
        self._thread = threading.Thread(
            target=self._uvicorn.run,
            kwargs={"sockets": [sock]},
            name=f"openprogram-mcp-http-{port}",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self._uvicorn.started:
            if not self._thread.is_alive():
                raise RuntimeError("the MCP HTTP server stopped while starting")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError(f"the MCP HTTP server did not start in {START_TIMEOUT_S:g}s")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}{self.path}"
        return self.url

    def stop(self) -> None:
        if self._uvicorn is not None:
            self._uvicorn.should_exit = True
        if self._thread is not None:
            self._thread.join(STOP_TIMEOUT_S)
        if self._socket is not None:
            self._socket.close()
        self._uvicorn = self._thread = self._socket = None


__all__ = ["LoopbackServer"]
