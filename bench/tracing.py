"""``python -m bench.tracing KIND [bench options]``: ``python -m bench`` with a tracer provider set
first, to measure what writing runs as OpenTelemetry spans (``openprogram.telemetry``) costs.

KIND is ``noop`` (the API's ``NoOpTracerProvider``), ``sdk-off`` (the SDK's ``TracerProvider``
with the ``ALWAYS_OFF`` sampler: every span is dropped at its start) or ``sdk`` (the SDK's
``TracerProvider`` without a span processor: every span is built and ended, then dropped, so the
number is the cost of the spans themselves, with no exporter's).  Run it beside plain ``python -m
bench`` (no provider at all); see bench/RESULTS.md, "Runs as spans".  Needs the ``otlp`` extra.
"""

from __future__ import annotations

import sys

KINDS = ("noop", "sdk-off", "sdk")


def install(kind: str) -> None:
    from opentelemetry import trace

    if kind == "noop":
        trace.set_tracer_provider(trace.NoOpTracerProvider())
        return
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    trace.set_tracer_provider(
        TracerProvider(sampler=ALWAYS_OFF) if kind == "sdk-off" else TracerProvider()
    )


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in KINDS:
        print(f"usage: python -m bench.tracing {{{','.join(KINDS)}}} [bench options]")
        return 2
    install(argv[0])
    from .cli import main as bench

    return bench(argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
