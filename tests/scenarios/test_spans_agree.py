"""The spans of a run and its trace say the same: over every bundled scenario, the
OpenTelemetry span tree (``openprogram.telemetry``) and the trace tree the harness judges agree
on the runs and their nesting, the model calls, the tool calls, the skips, the errors, the
deliveries, the usage and the termination.  And the comparison fails on spans that disagree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")


from openprogram.types import AssistantMessage, UserMessage
from openprogram_testing import LoopTrace, SpanCapture, TraceTree
from openprogram_testing.scenarios import SCENARIO_PATTERNS, load_scenario, run_scenario

SUITE = Path(__file__).resolve().parents[2] / "scenarios"
FILES = sorted(p for pattern in SCENARIO_PATTERNS for p in SUITE.glob(pattern))

OPERATION = "gen_ai.operation.name"


def spans_of(path: Path) -> tuple[Any, list[dict[str, Any]]]:
    """Run the scenario at ``path`` with its spans captured: (what it ran, its spans)."""
    with SpanCapture() as capture:  # a scenario's own expect.spans capture sends here too
        result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text
    ran = result.tree if result.tree is not None else result.trace
    return ran, capture.spans()


class Spans:
    """The spans of one scenario (plain dicts), by id and by parent, in start order."""

    def __init__(self, spans: list[dict[str, Any]]) -> None:
        self.spans = spans
        self.by_id = {s["span_id"]: s for s in spans}

    def children(self, span: dict[str, Any], operation: str) -> list[dict[str, Any]]:
        return [
            s
            for s in self.spans
            if s["parent_id"] == span["span_id"] and attr(s, OPERATION) == operation
        ]

    def parent(self, span: dict[str, Any]) -> dict[str, Any] | None:
        return self.by_id.get(span["parent_id"])

    def runs(self) -> list[dict[str, Any]]:
        return [s for s in self.spans if attr(s, OPERATION) == "invoke_agent"]


def attr(span: dict[str, Any], key: str) -> Any:
    return span["attributes"].get(key)


def disagreements(ran: LoopTrace | TraceTree, spans: list[dict[str, Any]]) -> list[str]:
    """What the spans say differently from the trace tree (empty: they agree)."""
    view = Spans(spans)
    runs = view.runs()
    problems: list[str] = []
    if isinstance(ran, LoopTrace):
        pairs: list[tuple[str, LoopTrace, Any, TraceTree | None]] = [("", ran, None, None)]
        if len(runs) != 1:
            return [f"a bare run has {len(runs)} invoke_agent spans"]
        by_run = {"": runs[0]}
    else:
        # span_dicts numbers the process's run ids in start order; the tree's runs, in the
        # order they started, are numbered the same way
        numbered = {node.run.run_id: f"run-{i}" for i, node in enumerate(ran.walk(), 1)}
        pairs = [(numbered[node.run.run_id], node.trace, node, node.parent) for node in ran.walk()]
        by_run = {attr(s, "openprogram.run.id"): s for s in runs}
        if len(runs) != len(pairs) or set(by_run) != {p[0] for p in pairs}:
            problems.append(f"runs: trace {[p[0] for p in pairs]}, spans {list(by_run)}")
            return problems
    for run_id, trace, node, parent in pairs:
        span = by_run[run_id]
        where = f"run {run_id or '(bare)'}"
        problems.extend(f"{where}: {p}" for p in _one_run(view, span, trace))
        if node is not None and parent is not None:
            problems.extend(
                f"{where}: {p}"
                for p in _nesting(view, span, node, by_run, numbered[parent.run.run_id])
            )
    return problems


def _one_run(view: Spans, span: dict[str, Any], trace: LoopTrace) -> list[str]:
    problems = []
    chats = view.children(span, "chat")
    tools = view.children(span, "execute_tool")
    if len(chats) != trace.model_calls or attr(span, "openprogram.run.model_calls") != (
        trace.model_calls
    ):
        problems.append(f"model calls: trace {trace.model_calls}, chat spans {len(chats)}")
    made = [(r.tool_call_id, r.tool_name) for r in trace.tool_results]
    spanned = [(attr(t, "gen_ai.tool.call.id"), attr(t, "gen_ai.tool.name")) for t in tools]
    if made != spanned:
        problems.append(f"tool calls: trace {made}, spans {spanned}")
    skipped = [r.tool_call_id for r in trace.skipped]
    marked = [
        attr(t, "gen_ai.tool.call.id") for t in tools if attr(t, "openprogram.tool_call.skipped")
    ]
    if skipped != marked:
        problems.append(f"skipped: trace {skipped}, spans {marked}")
    errors = [r.tool_call_id for r in trace.tool_results if r.is_error and not r.skipped]
    failed = [attr(t, "gen_ai.tool.call.id") for t in tools if t["status"]["code"] == "ERROR"]
    if errors != failed:
        problems.append(f"tool errors: trace {errors}, spans {failed}")
    assistant = [m for m in trace.messages if isinstance(m, AssistantMessage)]
    used_in = sum(
        m.usage.input_tokens + m.usage.cache_read_tokens + m.usage.cache_write_tokens
        for m in assistant
    )
    used_out = sum(m.usage.output_tokens for m in assistant)
    spanned_in = sum(attr(c, "gen_ai.usage.input_tokens") or 0 for c in chats)
    spanned_out = sum(attr(c, "gen_ai.usage.output_tokens") or 0 for c in chats)
    if (used_in, used_out) != (spanned_in, spanned_out):
        problems.append(f"usage: trace {(used_in, used_out)}, spans {(spanned_in, spanned_out)}")
    first_answer = next(
        (i for i, m in enumerate(trace.messages) if isinstance(m, AssistantMessage)), None
    )
    delivered = (
        0
        if first_answer is None
        else sum(isinstance(m, UserMessage) for m in trace.messages[first_answer:])
    )
    events = [
        e for e in span["events"] if e["name"] in ("openprogram.steering", "openprogram.follow_up")
    ]
    if delivered != len(events):
        problems.append(f"delivered user messages: trace {delivered}, span events {len(events)}")
    if attr(span, "openprogram.run.termination") != trace.termination:
        problems.append(
            f"termination: trace {trace.termination}, span {attr(span, 'openprogram.run.termination')}"
        )
    return problems


def _nesting(
    view: Spans,
    span: dict[str, Any],
    node: TraceTree,
    by_run: dict[str, dict[str, Any]],
    parent_id: str,
) -> list[str]:
    assert node.parent is not None
    parent_span = by_run[parent_id]
    if node.kind == "choices":  # an ask of the decision: the work run is named, not nested
        if attr(span, "openprogram.run.parent_id") != parent_id:
            return [f"a choices run's parent: {attr(span, 'openprogram.run.parent_id')}"]
        return []
    call = view.parent(span)
    if call is None or attr(call, OPERATION) != "execute_tool":
        return ["a nested run is not under an execute_tool span"]
    problems = []
    if attr(call, "gen_ai.tool.call.id") != node.tool_call_id:
        problems.append(
            f"under the call {attr(call, 'gen_ai.tool.call.id')}, started by {node.tool_call_id}"
        )
    if view.parent(call) is not parent_span:
        problems.append("the call that started it is not a call of its parent run")
    return problems


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_the_spans_say_what_the_trace_tree_says(path: Path) -> None:
    ran, spans = spans_of(path)
    assert disagreements(ran, spans) == []


def test_every_kind_of_fact_is_compared_somewhere_in_the_suite() -> None:
    """The suite exercises what the comparison reads: nested runs, skips, tool errors, usage,
    deliveries (otherwise the agreement above could hold by having nothing to compare)."""
    seen: set[str] = set()
    for path in FILES:
        ran, spans = spans_of(path)
        names = {s["name"] for s in spans}
        if any(n.startswith("invoke_agent ") for n in names):
            seen.add("nested")
        if any(attr(s, "openprogram.tool_call.skipped") for s in spans):
            seen.add("skip")
        if any(
            s["status"]["code"] == "ERROR" and s["name"].startswith("execute_tool") for s in spans
        ):
            seen.add("tool error")
        if any(attr(s, "gen_ai.usage.input_tokens") for s in spans):
            seen.add("usage")
        if any(e["name"] == "openprogram.follow_up" for s in spans for e in s["events"]):
            seen.add("follow-up")
        if any(e["name"] == "openprogram.steering" for s in spans for e in s["events"]):
            seen.add("steering")
    assert seen == {"nested", "skip", "tool error", "usage", "follow-up", "steering"}


@pytest.mark.parametrize(
    "break_it, says",
    [
        ("drop a chat span", "model calls"),
        ("unmark a skip", "skipped"),
        ("change usage", "usage"),
        ("move the nested run", "nested run is not under"),
    ],
)
def test_the_comparison_fails_on_spans_that_disagree(break_it: str, says: str) -> None:
    steered = next(f for f in FILES if f.stem == "scenario_36_imported_agent_steered_nested_run")
    ran, spans = spans_of(steered)
    assert disagreements(ran, spans) == []
    if break_it == "drop a chat span":
        spans = [
            s for s in spans if s is not next(x for x in spans if x["name"].startswith("chat"))
        ]
    elif break_it == "unmark a skip":
        skipped = next(s for s in spans if attr(s, "openprogram.tool_call.skipped"))
        del skipped["attributes"]["openprogram.tool_call.skipped"]
    elif break_it == "change usage":
        chat = next(s for s in spans if s["name"].startswith("chat"))
        chat["attributes"]["gen_ai.usage.input_tokens"] = 10**6
    else:
        view = Spans(spans)
        nested = next(s for s in view.runs() if s["parent_id"] is not None)
        nested["parent_id"] = next(s for s in view.runs() if s["parent_id"] is None)["span_id"]
    problems = disagreements(ran, spans)
    assert any(says in p for p in problems), problems
