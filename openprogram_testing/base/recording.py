"""The side channels of a recorded run: notes from beneath the loop (cassette interactions,
injected faults), the HTTP exchanges themselves, and announcements of finished traces.

The transport layers (cassettes, the provider emulator) call ``annotate``/``annotate_in_flight``
unconditionally; whatever records a run (``run_loop``'s trace, a trace tree's recorder) opens a
``recording`` for it, and the note lands on that run at the event where it happened.  They also
announce each ``HttpExchange`` they serve to the exchange listeners (the HTML report's, around a
test), which is how the traffic of a client that is not openprogram (pydantic-ai, an OpenAI SDK
client) reaches the report.  Whatever produces a finished ``LoopTrace`` hands it to
``announce_trace``; a report or a coverage count listens with ``add_trace_listener``.  This module
sits below the recorders and imports none of them, not even for the type checker, so the
transport never imports the trace layer above it and no import cycle runs through here.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol


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


SERVED_FROM_SCRIPT = "script"
"""Annotation kind: a cassette's fallback script answered a model call the recording did not
hold (``CassetteSession(fallback=...)``); the timeline, snapshot and report show it."""

NESTED_RUN = "nested_run"
"""Annotation kind: a ``Runtime`` run (its ``run_id`` is the text) ran inside a tool call."""

FAULT = "fault"
"""Annotation kind: a fault was injected into the answer to a model call (a cassette's mutation
or the provider emulator's fault)."""

CASSETTE = "cassette"
"""Annotation kind: a cassette interaction was replayed as the answer to a model call."""


def shown_notes(annotations: Sequence[Annotation]) -> list[Annotation]:
    """The notes every view of a run shows (the text timeline, the HTML report), in the order
    they happened: all but ``NESTED_RUN``, which the views draw as the nested run's lane.  One
    selection, so a fault the report shows is never missing from the timeline a failure
    prints."""
    ordered = sorted(annotations, key=lambda n: n.event_index)  # stable: kept in order
    return [note for note in ordered if note.kind != NESTED_RUN]


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


def current_run() -> str | None:
    """Which run of the recording in progress is making its model call right now, as a message
    names it (``"run plan/compare"``, ``"the outermost run"``), when the recorder can tell
    (a trace tree's can: runs nest inside tool calls), else ``None``.  A transport names it in a
    failure, so a message about a nested run's request says it was that run's."""
    current = _current.get()
    label = getattr(current, "run_label", None)
    if not callable(label):
        return None
    try:
        found = label()
    except Exception:
        return None
    return found if isinstance(found, str) else None


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


@dataclass(slots=True)
class HttpExchange:
    """One HTTP request a client sent and the answer it got, as the layer serving it saw it:
    the provider emulator (``source="emulator"``, the answer as planned), a cassette replaying
    a recording (``source="cassette"``, the recorded request that matched and the answer sent)
    or a cassette's fallback script (``source="script"``, the request the recording could not
    answer and the scripted turn sent instead).
    Bodies are what was on the wire (bytes, text, or the parsed JSON value); nothing here is
    redacted yet: whoever stores an exchange redacts it as a cassette is."""

    source: Literal["emulator", "cassette", "script"]
    index: int
    method: str
    url: str
    at: float
    """When it arrived (``time.monotonic()``): the report shows the spacing."""
    request_headers: Mapping[str, Any] = field(default_factory=dict)
    request_body: Any = None
    status: int | None = None
    """The HTTP status answered (``None``: the connection was dropped before one)."""
    response_headers: Mapping[str, Any] = field(default_factory=dict)
    response_body: Any = None


ExchangeListener = Callable[[HttpExchange], Any]
_exchange_listeners: list[ExchangeListener] = []
_exchange_lock = threading.Lock()


def add_exchange_listener(listener: ExchangeListener) -> None:
    """Call ``listener(exchange)`` for every HTTP exchange the emulator or a cassette serves
    from now on (in any thread: the emulator answers on its handler threads)."""
    with _exchange_lock:
        _exchange_listeners.append(listener)


def remove_exchange_listener(listener: ExchangeListener) -> None:
    """Stop calling ``listener`` (one that is not registered is ignored)."""
    with _exchange_lock, contextlib.suppress(ValueError):
        _exchange_listeners.remove(listener)


def exchanges_wanted() -> bool:
    """Whether anyone listens: the transport builds an ``HttpExchange`` only then."""
    return bool(_exchange_listeners)


def announce_exchange(exchange: HttpExchange) -> None:
    """Hand ``exchange`` to every listener.  A failing listener is a warning, never the
    failure of the request being served."""
    with _exchange_lock:
        listeners = list(_exchange_listeners)
    _notify(listeners, exchange, "exchange listener")


# -- announcing finished traces ------------------------------------------------------------------

TraceListener = Callable[[Any], None]
"""Called with each finished ``LoopTrace``: typed loosely because this module names nothing of
the trace layer above it (a listener typed ``Callable[[LoopTrace], None]`` is accepted)."""
_listeners: list[TraceListener] = []
_listeners_lock = threading.Lock()


def add_trace_listener(listener: TraceListener) -> None:
    """Call ``listener(trace)`` for every finished run from now on (``run_loop``, the scenario
    runner, trace trees), so a report or a coverage count sees every run of a session without
    each producer knowing about it.  Listeners run on the thread that finished the run."""
    with _listeners_lock:
        _listeners.append(listener)


def remove_trace_listener(listener: TraceListener) -> None:
    """Stop calling ``listener`` (a listener that is not registered is ignored)."""
    with _listeners_lock:
        try:
            _listeners.remove(listener)
        except ValueError:
            pass


def announce_trace(trace: object) -> None:
    """Hand a finished trace to every listener.  Whatever produces a ``LoopTrace`` calls this
    once per run.  A failing listener is reported as a warning, never as the run's failure:
    observing a run must not change its outcome."""
    with _listeners_lock:
        listeners = list(_listeners)
    _notify(listeners, trace, "trace listener")


# -- the rule for everything that only observes a run -------------------------------------------


def observer_failed(what: str, exc: BaseException, *, then: str = "", stacklevel: int = 3) -> None:
    """An observer of a run (a listener, a capture, a report) failed: say so as a
    ``RuntimeWarning`` naming it, never as the run's failure, because an option that only
    observes may not change a verdict.  The one place this rule is written."""
    message = f"{what} failed ({type(exc).__name__}: {exc})" + (f"; {then}" if then else "")
    warnings.warn(message, RuntimeWarning, stacklevel=stacklevel + 1)


def _notify(listeners: list[Callable[[Any], None]], value: object, kind: str) -> None:
    for listener in listeners:
        try:
            listener(value)
        except Exception as exc:
            observer_failed(f"{kind} {listener!r}", exc, stacklevel=4)


__all__ = [
    "CASSETTE",
    "FAULT",
    "NESTED_RUN",
    "SERVED_FROM_SCRIPT",
    "Annotation",
    "ExchangeListener",
    "HttpExchange",
    "Recorder",
    "TraceListener",
    "add_exchange_listener",
    "add_trace_listener",
    "annotate",
    "annotate_in_flight",
    "announce_exchange",
    "announce_trace",
    "current_run",
    "exchanges_wanted",
    "observer_failed",
    "recording",
    "remove_exchange_listener",
    "remove_trace_listener",
    "shown_notes",
]
