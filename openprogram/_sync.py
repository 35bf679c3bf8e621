"""The bridges between sync and async code: ``run_sync`` (async code called from sync code) and
``run_in_daemon_thread`` (a sync tool body awaited by the loop with a time limit).

``run_sync(awaitable)`` is the one sync-over-async bridge of the project: ``Runtime.exec`` and the
harness's sync entry points use it.  With no event loop running in the calling thread it runs
the awaitable on that thread's own reusable event loop (``asyncio.run`` would build and tear
down a loop per call, and a second ``asyncio.run`` inside a running loop is an error).  Inside a
running loop (a sync tool body run by the loop, or sync code called from async code) the calling
thread must block, so the awaitable runs on a helper thread (one persistent helper per calling
thread, with its own loop) in a copy of the caller's context: context variables (the tool menu
and depth of an enclosing ``exec``) are inherited and nothing deadlocks.

Exceptions come back as they were raised by the awaitable: they are never chained to the
``RuntimeError: no running event loop`` used to find out whether a loop runs.

``sync_twin(async_method, name, doc)`` makes a sync method of an async one through ``run_sync``
(``Runtime.exec`` of ``Runtime.aexec``), with the async one's parameter list.

``run_in_daemon_thread`` runs a blocking callable on a *daemon* worker thread and returns an
asyncio future for its outcome.  The loop uses it for sync tools with ``tool_timeout_s``: a tool
that never returns is abandoned after its time limit and its thread must not keep the interpreter
alive (``loop.run_in_executor(None, ...)`` would: the default executor's threads are joined when
``asyncio.run`` finishes and again at interpreter exit).  See ``docs/decisions.md``.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import queue
import threading
from collections.abc import Awaitable, Callable, Coroutine
from concurrent.futures import Future
from typing import Any, Concatenate, ParamSpec, TypeVar

T = TypeVar("T")
S = TypeVar("S")
P = ParamSpec("P")

LEFTOVER_GRACE_S = 1.0
"""How long ``run_sync`` waits for tasks the awaitable left behind (after cancelling them)
before abandoning them: a task that swallows cancellation must not hang the caller forever."""


def run_sync(awaitable: Awaitable[T] | Callable[[], Awaitable[T]]) -> T:
    """Run ``awaitable`` (a coroutine, any awaitable, or a zero-argument callable returning one)
    to completion from sync code and return its result or raise its exception.

    Safe in every thread and inside a running event loop (see the module docstring).  Tasks the
    awaitable leaves running are cancelled when it finishes, as ``asyncio.run`` does.
    """
    if callable(awaitable) and not hasattr(awaitable, "__await__"):
        make: Callable[[], Awaitable[T]] = awaitable
    else:
        ready: Awaitable[T] = awaitable

        def make() -> Awaitable[T]:
            return ready

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False
    else:
        running = True
    # Outside the ``except`` block on purpose: an exception raised from here on must not carry
    # the "no running event loop" RuntimeError as its ``__context__``.
    if not running:
        return run_on_thread_loop(_as_coroutine(make()))
    return _run_on_helper_thread(contextvars.copy_context(), make)


def sync_twin(
    async_method: Callable[Concatenate[S, P], Awaitable[T]], name: str, doc: str
) -> Callable[Concatenate[S, P], T]:
    """The sync twin of an async method: a method with the same parameters and result that runs
    the instance's own ``async_method`` (a subclass override included) through ``run_sync``.
    Its parameter list is the async one's (for type checkers and ``inspect.signature`` alike),
    so the two entry points cannot drift apart; ``name`` and ``doc`` are the twin's own
    (``exec = sync_twin(aexec, "exec", ...)`` in the class body)."""
    attribute = getattr(async_method, "__name__", "")

    @functools.wraps(async_method)
    def twin(self: S, /, *args: P.args, **kwargs: P.kwargs) -> T:
        method: Callable[P, Awaitable[T]] = getattr(self, attribute)
        return run_sync(lambda: method(*args, **kwargs))

    owner = getattr(async_method, "__qualname__", "").rpartition(".")[0]
    twin.__name__ = name
    twin.__qualname__ = f"{owner}.{name}" if owner else name
    twin.__doc__ = doc
    return twin


async def _await(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _as_coroutine(awaitable: Awaitable[T]) -> Coroutine[Any, Any, T]:
    if asyncio.iscoroutine(awaitable):
        return awaitable
    return _await(awaitable)


# -- the calling thread's own loop ----------------------------------------------------------------

_thread_loops = threading.local()


class _ThreadLoop:
    """One event loop per thread for ``run_sync``; closed when its thread ends."""

    __slots__ = ("loop",)

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()

    def __del__(self) -> None:
        loop = self.loop
        if not loop.is_closed() and not loop.is_running():
            loop.close()


def run_on_thread_loop(coro: Coroutine[Any, Any, T]) -> T:
    """``asyncio.run`` semantics (a task with a copy of the current context; tasks it leaves
    behind are cancelled, and waited for at most ``LEFTOVER_GRACE_S``) on this thread's reusable
    loop.  The thread must not be running an event loop."""
    holder: _ThreadLoop | None = getattr(_thread_loops, "holder", None)
    if holder is None or holder.loop.is_closed():
        holder = _thread_loops.holder = _ThreadLoop()
    loop = holder.loop
    task = loop.create_task(coro)
    try:
        return loop.run_until_complete(task)
    except BaseException:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                loop.run_until_complete(asyncio.wait([task], timeout=LEFTOVER_GRACE_S))
        raise
    finally:
        leftovers = asyncio.all_tasks(loop)
        if leftovers:
            for leftover in leftovers:
                leftover.cancel()
            loop.run_until_complete(asyncio.wait(leftovers, timeout=LEFTOVER_GRACE_S))


# -- helper threads (run_sync inside a running loop) -------------------------------------------

_Job = tuple[contextvars.Context, Callable[[], Awaitable[Any]], "Future[Any]"]


def _serve(jobs: queue.SimpleQueue[_Job | None]) -> None:
    """A helper thread's body: run each job's awaitable on this thread's loop, in the job's
    context, until the owner goes away."""
    while True:
        job = jobs.get()
        if job is None:
            return
        context, make, future = job
        try:
            future.set_result(context.run(_run_made, make))
        except BaseException as exc:  # handed to the waiting owner thread
            future.set_exception(exc)
        del job, context, make, future


def _run_made(make: Callable[[], Awaitable[Any]]) -> Any:
    return run_on_thread_loop(_as_coroutine(make()))


class _Helper:
    """The persistent helper thread of one owner thread.

    The owner is blocked while its helper works (it is waiting for the result), so one helper
    per owner suffices; a nested ``run_sync`` on the helper gets the helper's own helper.  The
    thread does not reference this object: when the owner thread ends, its thread-local data is
    released, ``__del__`` posts the stop sentinel and the helper thread exits.
    """

    __slots__ = ("busy", "jobs")

    def __init__(self) -> None:
        self.jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self.busy = False
        threading.Thread(
            target=_serve, args=(self.jobs,), name="openprogram-sync", daemon=True
        ).start()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):  # interpreter shutdown
            self.jobs.put(None)


_helpers = threading.local()


def _run_on_helper_thread(context: contextvars.Context, make: Callable[[], Awaitable[T]]) -> T:
    helper: _Helper | None = getattr(_helpers, "helper", None)
    if helper is None:
        helper = _helpers.helper = _Helper()
    elif helper.busy:  # re-entered while waiting (not reachable from a blocked loop): own helper
        helper = _Helper()
    future: Future[T] = Future()
    helper.busy = True
    try:
        helper.jobs.put((context, make, future))
        return future.result()
    finally:
        helper.busy = False


# -- daemon workers (timed sync tools) ----------------------------------------------------------

_WORKER_IDLE_S = 30.0
"""An idle worker thread exits after this long without work."""

_work: queue.SimpleQueue[tuple[Callable[[], Any], Callable[[bool, Any], None]]] = (
    queue.SimpleQueue()
)
_idle_lock = threading.Lock()
_idle = 0


def _worker() -> None:
    global _idle
    while True:
        try:
            fn, report = _work.get(timeout=_WORKER_IDLE_S)
        except queue.Empty:
            with _idle_lock:
                # A job may have been queued after the timeout and before the lock: keep serving.
                if not _work.empty():
                    continue
                _idle -= 1
            return
        with _idle_lock:
            _idle -= 1
        try:
            report(True, fn())
        except BaseException as exc:  # every outcome goes back to the awaiting loop
            report(False, exc)
        del fn, report
        with _idle_lock:
            _idle += 1


def run_in_daemon_thread(fn: Callable[[], T]) -> asyncio.Future[T]:
    """Call ``fn()`` on a daemon worker thread; the returned future (of the running loop) gets
    its result or exception (``BaseException``s included).  A worker stuck in ``fn`` forever is
    simply lost: it holds neither the event loop nor interpreter exit.  Cancelling the future
    does not stop ``fn`` (nothing can stop a running Python thread)."""
    global _idle
    loop = asyncio.get_running_loop()
    future: asyncio.Future[T] = loop.create_future()

    def settle(ok: bool, value: Any) -> None:
        if future.done():
            return
        if ok:
            future.set_result(value)
        else:
            future.set_exception(value)

    def report(ok: bool, value: Any) -> None:
        with contextlib.suppress(RuntimeError):  # the loop was closed meanwhile
            loop.call_soon_threadsafe(settle, ok, value)

    with _idle_lock:
        spawn = _idle == 0
        if spawn:
            _idle += 1  # counted as idle until it takes this job
    _work.put((fn, report))
    if spawn:
        threading.Thread(target=_worker, name="openprogram-tool", daemon=True).start()
    return future


__all__ = [
    "LEFTOVER_GRACE_S",
    "run_in_daemon_thread",
    "run_on_thread_loop",
    "run_sync",
    "sync_twin",
]
