"""A raw loopback HTTP server for tests that need a real socket: one that answers with bytes
an HTTP library would never produce on purpose, stalls mid-body, and tells the test when the
client closed the connection (the only way to see that an adapter let go of a socket)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterable
from typing import Any

Answer = Callable[[bytes], Iterable[bytes]]
"""The request's bytes (head and body) → the pieces of the response, sent as they come."""


def http_head(status: int = 200, headers: dict[str, str] | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in (headers or {}).items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunked(piece: bytes) -> bytes:
    """One piece of a ``Transfer-Encoding: chunked`` body (``b""`` is the last chunk)."""
    return f"{len(piece):x}\r\n".encode() + piece + b"\r\n"


def whole(status: int, body: bytes, headers: dict[str, str] | None = None) -> Answer:
    """An answer with a ``Content-Length`` body, then the connection is held open."""
    head = http_head(status, {"Content-Length": str(len(body)), **(headers or {})})
    return lambda _request: [head + body]


class LoopbackServer:
    """Serves every connection with ``answer`` (settable between requests); after the last
    piece the connection stays open until the client closes it (``close_after=True``: the
    server closes it).  Connections are numbered from 1 in the order they were accepted;
    :meth:`wait_closed` waits until the client closed one of them."""

    def __init__(self, answer: Answer, *, close_after: bool = False) -> None:
        self.answer = answer
        self.close_after = close_after
        self.connections = 0
        self.requests: list[bytes] = []
        self._closed: set[int] = set()
        self._changed = threading.Condition()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> LoopbackServer:
        return self

    def __exit__(self, *exc: Any) -> None:
        self._listener.close()

    def wait_closed(self, connection: int | None = None, timeout: float = 2.0) -> bool:
        """Whether the client closed ``connection`` (default: the latest) within ``timeout``."""
        number = self.connections if connection is None else connection
        with self._changed:
            return self._changed.wait_for(lambda: number in self._closed, timeout)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            with self._changed:
                self.connections += 1
                number = self.connections
            threading.Thread(target=self._serve, args=(conn, number), daemon=True).start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        with conn:
            try:
                request = _read_request(conn)
                self.requests.append(request)
                for piece in self.answer(request):
                    conn.sendall(piece)
                if self.close_after:
                    return
                while conn.recv(65536):
                    pass
            except OSError:
                pass
            with self._changed:
                self._closed.add(number)
                self._changed.notify_all()


def _read_request(conn: socket.socket) -> bytes:
    data = b""
    while b"\r\n\r\n" not in data:
        piece = conn.recv(65536)
        if not piece:
            raise OSError("closed before the request ended")
        data += piece
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n"):
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        piece = conn.recv(65536)
        if not piece:
            break
        body += piece
    return head + b"\r\n\r\n" + body


__all__ = ["Answer", "LoopbackServer", "chunked", "http_head", "whole"]
