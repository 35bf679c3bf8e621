"""Scripted turns that answer what a replayed cassette does not hold (``fallback=``).

A fault injected into a replay (or any drift) makes the code under test ask something that was
never recorded; replay then has nothing to answer with and the run can only fail.  Asked for, a
``ScriptFallback`` answers such a request from scripted turns instead: the provider emulator's
planner renders the next turn in the request's own wire format (no server, no socket), so the
real adapter parses it as it would a provider's answer.

Never silent: every answer served from the script is noted on the run being traced (kind
``script``: the timeline, the trace snapshot and the HTML report show it), listed in
``CassetteSession.served_from_script``, announced to the traffic observers as an exchange of
source ``script``, and fallback turns never used fail the cassette at exit as unplayed
interactions do: a fallback that answered nothing did not test what it was there for.  Off by
default: without it an unmatched request stays a loud failure.  The turns are planned by an
emulator that never listens (no socket), so nothing here reads its address.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from openprogram_testing.base.recording import (
    SERVED_FROM_SCRIPT,
    HttpExchange,
    annotate,
    announce_exchange,
    exchanges_wanted,
)
from openprogram_testing.transport.emulator.server import ProviderEmulator


class ScriptFallback:
    """The fallback turns of one cassette session, answered in order (strict: one turn per
    request; a request past the last turn is the cassette's ordinary mismatch error)."""

    def __init__(self, turns: Sequence[Any]) -> None:

        self.emulator = ProviderEmulator(list(turns))
        self.total = self.emulator.remaining
        self.served: list[str] = []

    @property
    def remaining(self) -> int:
        return int(self.emulator.remaining)

    def serve(self, request: Any, why: str) -> dict[str, Any]:
        """Answer ``request`` (vcrpy's) from the next turn, as a served response dict (the
        shape ``CassetteSession.serve`` returns), and note it on the traced run."""

        parts = urlsplit(str(request.uri))
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        body = request.body or b""
        raw = body.encode("utf-8") if isinstance(body, str) else bytes(body)
        headers = {str(k).lower(): str(v) for k, v in dict(request.headers).items()}
        turn = self.total - self.remaining
        plan = _off_the_loop(self.emulator.plan, str(request.method), target, headers, raw)
        mark = (
            f"served from script: fallback turn {turn} answered {request.method} {parts.path} "
            f"(HTTP {plan.status}); the cassette holds no answer for it: {_first_line(why)}"
        )
        self.served.append(mark)
        annotate(SERVED_FROM_SCRIPT, mark)
        answer = served(plan)
        if exchanges_wanted():  # the HTML report shows the traffic of any client
            announce_exchange(
                HttpExchange(
                    "script",
                    turn,
                    str(request.method),
                    str(request.uri),
                    time.monotonic(),
                    headers,
                    raw,
                    plan.status if plan.kind != "drop" else None,
                    {k: ", ".join(v) for k, v in answer["headers"].items()},
                    answer["body"]["string"],
                )
            )
        return answer

    def problem(self) -> str | None:
        """What is wrong with the fallback at the end (a request it could not answer, turns
        never used), or ``None``."""
        try:
            self.emulator.assert_complete()
        except AssertionError as exc:
            return f"the fallback script: {exc}"
        except Exception as exc:  # the emulator's own errors (a bad request, a responder bug)
            return f"the fallback script: {type(exc).__name__}: {exc}"
        return None


def _off_the_loop(fn: Any, *args: Any) -> Any:
    """``fn(*args)`` on a worker thread when this thread runs an event loop: the emulator's
    planner renders a turn with ``asyncio.run``, which cannot nest in a running loop (an async
    client replaying).  The call is short and the replay stub is synchronous anyway."""
    import asyncio

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return fn(*args)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="cassette-fallback") as pool:
        return pool.submit(fn, *args).result()


_HEAD = re.compile(r"^.*? has no unplayed interaction for \S+ \S+: ")


def _first_line(text: str) -> str:
    """Why the cassette could not answer, without the head naming the file and request (the
    mark says which request already)."""
    line = _HEAD.sub("", text.splitlines()[0] if text else "", count=1)
    return line if len(line) <= 200 else line[:199] + "…"


def served(plan: Any) -> dict[str, Any]:
    """A planned answer (``emulator.plan.Plan``) as the response dict a replay serves: status,
    headers, body and the ``_pieces`` (delays, bytes) and ``_disconnect`` the playback hooks
    send, so stalls and cut streams in a fallback turn reach the client as they would from
    the emulator's socket."""
    headers: dict[str, list[str]] = {k: [v] for k, v in plan.headers.items()}
    headers["content-type"] = [plan.content_type]
    pieces: list[tuple[float, bytes]] = []
    disconnect = False
    if plan.kind == "drop":
        return _response(plan.status, headers, [(0.0, b"")], True)
    stall = plan.stall
    if plan.kind == "json":
        delay = (stall[1] if stall else 0.0) + plan.latency
        body = plan.body
        if plan.disconnect_after == 0:
            body, disconnect = body[: len(body) // 2], True
        headers["content-length"] = [str(len(body))]
        return _response(plan.status, headers, [(delay, body)], disconnect)
    frames = plan.frames
    for i in range(len(frames) + 1):
        delay = plan.latency
        if stall is not None and i == min(stall[0], len(frames)):
            delay += stall[1]
        if plan.disconnect_after is not None and i >= plan.disconnect_after:
            disconnect = True
            break
        if i == len(frames) or (plan.end_after is not None and i >= plan.end_after):
            break
        pieces.append((delay, frames[i]))
    return _response(plan.status, headers, pieces or [(0.0, b"")], disconnect)


def _response(
    status: int, headers: dict[str, list[str]], pieces: list[tuple[float, bytes]], cut: bool
) -> dict[str, Any]:
    return {
        "status": {"code": status, "message": ""},
        "headers": headers,
        "body": {"string": b"".join(chunk for _, chunk in pieces)},
        "_pieces": pieces,
        "_disconnect": cut,
    }


__all__ = ["SERVED_FROM_SCRIPT", "ScriptFallback", "served"]
