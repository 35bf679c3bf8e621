"""Exporting a test session's runs over OTLP: each test is one trace named after it.

``--openprogram-otlp URL`` (``openprogram-testing run --otlp URL``) sends, for every test, a
root span named after the test (its node id) with the test's verdict on it
(``openprogram.test.outcome``: ``passed``, ``failed``, ``skipped``, ...; status ``ERROR`` when
it failed) and, under it, every run the test made as ``openprogram.telemetry`` writes it:
``invoke_agent`` / ``chat`` / ``execute_tool``, nested runs under the tool call that started
them.  It goes through the official OTLP/HTTP exporter (``opentelemetry-exporter-otlp-proto-http``)
to any endpoint: Phoenix, Jaeger, Langfuse, Logfire, a collector.

Observing only: the export never changes a verdict.  An endpoint that is down costs the
exporter's own timeout at the end of the session and a warning, not a failure.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any
from urllib.parse import urlsplit

import pytest

from openprogram_testing.core.spans import OTLP_EXTRA, spans_to

OUTCOME = "openprogram.test.outcome"
"""The root span's attribute holding the test's verdict."""
NODE_ID = "openprogram.test.nodeid"
TRACES_PATH = "/v1/traces"
_OUTCOMES = pytest.StashKey[list[str]]()


def traces_endpoint(url: str) -> str:
    """The OTLP/HTTP traces URL for ``url``: as given when it names a path, else with
    ``/v1/traces`` (``http://localhost:6006`` → ``http://localhost:6006/v1/traces``).  Anything
    but an http(s) URL with a host is a ``ValueError`` saying so."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ValueError(f"--otlp takes an http(s) URL of an OTLP endpoint, got {url!r}")
    if parts.path in ("", "/"):
        return url.rstrip("/") + TRACES_PATH
    return url


class SpanExport:
    """The plugin behind ``--openprogram-otlp``: one trace per test, flushed at the session's
    end (in each pytest-xdist worker: every process exports its own tests)."""

    def __init__(self, url: str) -> None:
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor
        except ImportError:
            raise ImportError(OTLP_EXTRA) from None

        self.resource = Resource.create({"service.name": "openprogram-testing"})
        self.processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=url))
        self.provider = TracerProvider(resource=self.resource)
        self.provider.add_span_processor(self.processor)
        self.tracer = self.provider.get_tracer("openprogram_testing")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Generator[None]:
        from opentelemetry import context, trace

        outcomes: list[str] = []
        item.stash[_OUTCOMES] = outcomes
        root = self.tracer.start_span(item.nodeid, attributes={NODE_ID: item.nodeid})
        token = context.attach(trace.set_span_in_context(root))
        try:
            # the runs of the test: through spans_to, so a capture opened inside the test (a
            # scenario's expect.spans, otel_spans) still sends its spans here too
            with spans_to(self.processor, self.resource):
                return (yield)
        finally:
            context.detach(token)
            verdict = _verdict(outcomes)
            root.set_attribute(OUTCOME, verdict)
            if verdict == "failed":
                root.set_status(trace.Status(trace.StatusCode.ERROR, "the test failed"))
            root.end()

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        outcomes = item.stash.get(_OUTCOMES, None)
        if outcomes is not None:
            if report.failed:
                outcomes.append("failed")
            elif report.skipped:
                outcomes.append("xfailed" if hasattr(report, "wasxfail") else "skipped")
            elif call.when == "call":
                outcomes.append("xpassed" if hasattr(report, "wasxfail") else "passed")
        return report

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.provider.shutdown()


def _verdict(outcomes: list[str]) -> str:
    """A test's verdict from its phases' outcomes: a failure in any phase fails it."""
    for worst in ("failed", "skipped", "xfailed", "xpassed", "passed"):
        if worst in outcomes:
            return worst
    return "passed"
