"""A cancel signal shared by a run, its provider stream and its tools.

Thread-safe (a sync ``Runtime.exec`` may run its loop on a helper thread while another thread
cancels) and awaitable without polling: ``await token.wait()`` wakes the event loop that awaits it.
"""

from __future__ import annotations

import asyncio
import threading


class CancelledRun(Exception):
    """Raised by ``Runtime.exec`` when a run ended with termination ``aborted``."""


class CancelToken:
    __slots__ = ("_event", "_lock", "_waiters", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._lock = threading.Lock()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def is_set(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str | None = None) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            waiters, self._waiters = self._waiters, []
        for loop, fut in waiters:
            loop.call_soon_threadsafe(_resolve, fut)

    async def wait(self) -> None:
        """Return once the token is cancelled."""
        if self._event.is_set():
            return
        loop = asyncio.get_running_loop()
        fut: asyncio.Future[None] = loop.create_future()
        with self._lock:
            if self._event.is_set():
                return
            self._waiters.append((loop, fut))
        await fut


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


__all__ = ["CancelToken", "CancelledRun"]
