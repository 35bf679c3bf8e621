"""The checks of ``scripts/phoenix_check.py`` (run against a real Phoenix by
``python3 scripts/dev.py phoenix``, outside CI) hold on spans shaped as Phoenix's client returns
them when they say what the runs did, and fail when they do not.  The spans here are the
scenario's own, exported in memory and given the fields Phoenix adds on ingest (its span kind
and token counts); the real conversion is what the dev.py job checks."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from openprogram.telemetry import use_tracer_provider
from openprogram_testing import run_scenario

ROOT = Path(__file__).resolve().parents[2]
KINDS = {"invoke_agent": "AGENT", "chat": "LLM", "execute_tool": "TOOL"}


def load_check() -> Any:
    spec = importlib.util.spec_from_file_location(
        "phoenix_check", ROOT / "scripts" / "phoenix_check.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def phoenix_shaped(check: Any) -> tuple[list[dict[str, Any]], Any]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    with use_tracer_provider(provider), tracer.start_as_current_span(check.SCENARIO.stem) as root:
        result = run_scenario(check.SCENARIO)
        root.set_attribute("openprogram.test.outcome", "passed")
    assert result.passed, result.failure_text
    spans = []
    for span in exporter.get_finished_spans():
        attributes = dict(span.attributes or {})
        operation = attributes.get("gen_ai.operation.name")
        if operation == "chat":
            attributes["llm.token_count.prompt"] = attributes["gen_ai.usage.input_tokens"]
            attributes["llm.token_count.completion"] = attributes["gen_ai.usage.output_tokens"]
            attributes["llm.token_count.total"] = (
                attributes["llm.token_count.prompt"] + attributes["llm.token_count.completion"]
            )
        spans.append(
            {
                "name": span.name,
                "span_kind": KINDS.get(str(operation), "UNKNOWN"),
                "context": {"span_id": format(span.context.span_id, "016x")},
                "parent_id": format(span.parent.span_id, "016x") if span.parent else None,
                "attributes": attributes,
            }
        )
    return spans, result.tree


def test_the_phoenix_checks_hold_on_the_runs_and_fail_on_what_differs() -> None:
    check = load_check()
    spans, tree = phoenix_shaped(check)
    assert check.check(spans, tree) == []

    llm = next(s for s in spans if s["span_kind"] == "LLM")
    llm["attributes"]["llm.token_count.prompt"] += 1
    assert any("token counts" in p for p in check.check(spans, tree))
    llm["attributes"]["llm.token_count.prompt"] -= 1

    nested = next(s for s in spans if s["name"] == "invoke_agent plan_trip")
    tool_parent = nested["parent_id"]
    root = next(s for s in spans if s["parent_id"] is None)
    nested["parent_id"] = root["context"]["span_id"]
    assert any("under a tool span" in p for p in check.check(spans, tree))
    nested["parent_id"] = tool_parent

    skipped = next(s for s in spans if s["attributes"].get("openprogram.tool_call.skipped"))
    del skipped["attributes"]["openprogram.tool_call.skipped"]
    assert any("skipped" in p for p in check.check(spans, tree))
