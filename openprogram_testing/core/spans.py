"""Spans of the runs under test, as plain data: the ``otel_spans`` fixture's capture.

``openprogram.telemetry`` writes every run as OpenTelemetry GenAI spans when a tracer provider
is set.  ``SpanCapture`` sets one for the runs started inside it (an in-memory exporter of the
OpenTelemetry SDK, through ``use_tracer_provider``: the process's global provider is left
alone) and gives the finished spans back as plain dicts, in the manner of Logfire's
``capfire``: span and trace ids numbered 1, 2, ... in start order, timestamps numbered in
time order, so two runs of the same test compare equal::

    def test_research_is_nested(otel_spans):
        runtime.exec("go", tools=[research])
        assert otel_spans.tree() == [
            ("invoke_agent", [("chat m", []), ("execute_tool research", [...]), ...])
        ]

Needs the OpenTelemetry SDK (the ``otlp`` extra); without it, making a capture raises an
``ImportError`` with the install line.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any

from openprogram.telemetry import RUN_ID, RUN_PARENT_ID, use_tracer_provider

OTLP_EXTRA = (
    "spans need the OpenTelemetry SDK: pip install 'openprogram-loop[otlp]' "
    "(opentelemetry-sdk and the OTLP exporter)"
)

Span = dict[str, Any]
"""A finished span as plain data (``span_dicts``)."""

_SINKS: ContextVar[tuple[Any, tuple[Any, ...]]] = ContextVar(
    "openprogram_testing_span_sinks", default=(None, ())
)
"""The harness's span receivers open in this context: ``(resource, span processors)``.  A
capture opened inside another (a scenario's ``expect.spans`` inside ``--openprogram-otlp`` or
the ``otel_spans`` fixture) sends its runs' spans to every enclosing receiver too, so each view
of a run sees the same spans."""


@contextmanager
def spans_to(processor: Any, resource: Any = None) -> Iterator[Any]:
    """Route the spans of the runs started in the block to ``processor`` and to every
    enclosing receiver, through a provider made for the block (yielded); ``resource`` (else the
    enclosing one's) names the service."""
    from opentelemetry.sdk.trace import TracerProvider

    outer_resource, outer = _SINKS.get()
    resource = resource if resource is not None else outer_resource
    # no exit hook: the block's provider owns none of its processors (their owners flush them)
    provider = TracerProvider(shutdown_on_exit=False)
    if resource is not None:
        provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    processors = (processor, *outer)
    for each in processors:
        provider.add_span_processor(each)
    token = _SINKS.set((resource, processors))
    try:
        with use_tracer_provider(provider):
            yield provider
    finally:
        _SINKS.reset(token)


class SpanCapture:
    """The spans of the runs started while it is open (``with SpanCapture() as spans:``, or
    the ``otel_spans`` fixture), as plain dicts."""

    def __init__(self) -> None:
        try:
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import SimpleSpanProcessor
            from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
                InMemorySpanExporter,
            )
        except ImportError:
            raise ImportError(OTLP_EXTRA) from None
        self._exporter = InMemorySpanExporter()
        self._processor = SimpleSpanProcessor(self._exporter)
        self.provider: Any = TracerProvider()  # the block's own, once entered
        self.provider.add_span_processor(self._processor)
        self._stack = ExitStack()

    def __enter__(self) -> SpanCapture:
        self.provider = self._stack.enter_context(spans_to(self._processor))
        return self

    def __exit__(self, *exc: object) -> None:
        self._stack.close()

    def spans(self) -> list[Span]:
        """The finished spans so far, as plain dicts (``span_dicts``)."""
        return span_dicts(self._exporter.get_finished_spans())

    def tree(self) -> list[tuple[str, list[Any]]]:
        """The finished spans as nested ``(name, children)`` pairs, in start order."""
        return span_tree(self.spans())

    def clear(self) -> None:
        self._exporter.clear()


def span_dicts(spans: Sequence[Any]) -> list[Span]:
    """Finished SDK spans as plain dicts, in start order: ``name``, ``kind``, ``span_id``,
        ``parent_id`` and ``trace_id`` (numbered 1, 2, ... in order of appearance; a parent outside
        the spans given is ``None``), ``start_time``/``end_time`` (numbered in time order),
        ``attributes`` (sequences as lists), ``events`` (name, timestamp, attributes) and
        ``status`` (``{"code": "UNSET"|"OK"|"ERROR", "description": ...}``).  The run ids of
    ``openprogram.run.id``/``parent_id`` (numbered per process) are numbered per call as well;
    measured durations (``gen_ai.response.time_to_first_chunk``) are kept as measured."""
    ordered = sorted(spans, key=lambda s: (s.start_time or 0, s.context.span_id))
    span_ids = {s.context.span_id: i for i, s in enumerate(ordered, 1)}
    trace_ids: dict[int, int] = {}
    for s in ordered:
        trace_ids.setdefault(s.context.trace_id, len(trace_ids) + 1)
    times = sorted(
        {t for s in ordered for t in (s.start_time, s.end_time, *(e.timestamp for e in s.events))
         if t is not None}
    )  # fmt: skip
    clock = {t: i for i, t in enumerate(times, 1)}
    runs: dict[Any, str] = {}  # the process's run ids ("run-17"), numbered per capture
    for s in ordered:
        run_id = (s.attributes or {}).get(RUN_ID)
        if run_id is not None:
            runs.setdefault(run_id, f"run-{len(runs) + 1}")
    return [
        {
            "name": s.name,
            "kind": s.kind.name,
            "trace_id": trace_ids[s.context.trace_id],
            "span_id": span_ids[s.context.span_id],
            "parent_id": span_ids.get(s.parent.span_id) if s.parent is not None else None,
            "start_time": clock.get(s.start_time),
            "end_time": clock.get(s.end_time),
            "attributes": _plain(s.attributes, runs),
            "events": [
                {
                    "name": e.name,
                    "timestamp": clock.get(e.timestamp),
                    "attributes": _plain(e.attributes),
                }
                for e in s.events
            ],
            "status": {"code": s.status.status_code.name, "description": s.status.description},
        }
        for s in ordered
    ]


def _plain(attributes: Any, runs: dict[Any, str] | None = None) -> dict[str, Any]:
    out = {k: list(v) if isinstance(v, tuple) else v for k, v in dict(attributes or {}).items()}
    for key in (RUN_ID, RUN_PARENT_ID):
        if runs is not None and key in out:
            out[key] = runs.get(out[key], out[key])
    return out


def span_tree(spans: Sequence[Span]) -> list[tuple[str, list[Any]]]:
    """``spans`` (plain dicts) as nested ``(name, children)`` pairs in start order; a span
    whose parent is not among them is a root."""
    known = {s["span_id"] for s in spans}
    children: dict[int | None, list[Span]] = {}
    for s in spans:
        parent = s["parent_id"] if s["parent_id"] in known else None
        children.setdefault(parent, []).append(s)

    def build(parent: int | None) -> list[tuple[str, list[Any]]]:
        return [(s["name"], build(s["span_id"])) for s in children.get(parent, [])]

    return build(None)


def span_tree_entries(entries: Any, where: str, depth: int = 0) -> list[tuple[str, list[Any]]]:
    """``expect.spans`` entries as ``(name, children)`` pairs (the ``span_tree`` form); a
    ``ValueError`` naming the entry for anything else (a mapping of more than one key, a
    non-list of children, nesting deeper than any run tree)."""
    if depth > 64:
        raise ValueError(f"{where}: nested more than 64 levels")
    if not isinstance(entries, list):
        raise ValueError(f"{where}: a list of span names or {{name: [children]}} mappings")
    out: list[tuple[str, list[Any]]] = []
    for i, entry in enumerate(entries):
        here = f"{where}[{i}]"
        if isinstance(entry, str):
            out.append((entry, []))
        elif isinstance(entry, dict) and len(entry) == 1:
            ((name, children),) = entry.items()
            if not isinstance(name, str):
                raise ValueError(f"{here}: a span name is a string")
            out.append((name, span_tree_entries(children, f"{here}.{name}", depth + 1)))
        else:
            raise ValueError(f"{here}: a span name, or one {{name: [children]}} mapping")
    return out
