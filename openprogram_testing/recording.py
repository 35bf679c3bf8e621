"""Notes from beneath the loop on the run being recorded: cassette interactions, injected faults.

The transport layers (cassettes, the provider emulator) call ``annotate``/``annotate_in_flight``
unconditionally; whatever records a run (``run_loop``'s trace, a trace tree's recorder) opens a
``recording`` for it, and the note lands on that run at the event where it happened.  This
module sits below the recorders, so the transport never imports the trace layer above it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol


@dataclass(slots=True)
class Annotation:
    """Something that happened beneath the loop during a run (a cassette interaction replayed,
    a fault injected into a response), placed at ``event_index``: the number of loop events
    emitted when it happened (so it belongs just after event ``event_index - 1``)."""

    event_index: int
    kind: str
    text: str


class Recorder(Protocol):
    """What records runs: takes a note for the run it is recording right now."""

    def note(self, kind: str, text: str) -> None: ...


NESTED_RUN = "nested_run"
"""Annotation kind: a ``Runtime`` run (its ``run_id`` is the text) ran inside a tool call."""

_current: contextvars.ContextVar[Recorder | None] = contextvars.ContextVar(
    "openprogram_trace_recording", default=None
)
_in_flight: dict[int, tuple[Recorder, Recorder | None]] = {}
"""The recorders in progress in this process (any thread), each with the recorder it was
opened inside (a trace tree started from a tool of a recorded loop run)."""
_in_flight_lock = threading.Lock()


@contextlib.contextmanager
def recording(recorder: Recorder) -> Iterator[Recorder]:
    """Send the notes of whatever runs inside the block (in this context) to ``recorder``, and
    count it as in flight for ``annotate_in_flight``."""
    parent = _current.get()
    token = _current.set(recorder)
    with _in_flight_lock:
        _in_flight[id(recorder)] = (recorder, parent)
    try:
        yield recorder
    finally:
        _current.reset(token)
        with _in_flight_lock:
            _in_flight.pop(id(recorder), None)


def annotate(kind: str, text: str) -> None:
    """Note on the run being recorded (if any) what happened beneath the loop right now: a
    cassette interaction replayed, a fault injected.  A no-op outside any recording, so the
    transport layers can call it unconditionally."""
    current = _current.get()
    if current is not None:
        current.note(kind, text)


def annotate_in_flight(kind: str, text: str) -> bool:
    """Like ``annotate``, for what serves a run from another thread (the provider emulator
    answering a request on its handler thread, where the run's context is not visible): the
    note goes to the one recording in progress in this process, which is the sender, as a
    request is answered while the run that sent it is in progress.  A recording opened inside
    another (a trace tree run from a recorded run's tool) is the one sending while it is open.
    Nothing else links a served request to its run, so with several recordings side by side the
    note is placed nowhere rather than on a wrong run; returns whether it was placed."""
    with _in_flight_lock:
        open_ = list(_in_flight.values())
        outer = {id(parent) for _, parent in open_ if parent is not None}
        innermost = [r for r, _ in open_ if id(r) not in outer]
        if len(innermost) != 1:
            return False
        innermost[0].note(kind, text)
        return True


__all__ = [
    "NESTED_RUN",
    "Annotation",
    "Recorder",
    "annotate",
    "annotate_in_flight",
    "recording",
]
