"""A trace as plain JSON data for the HTML report: rounds, model calls, tool executions,
arrivals of steering and follow-up messages, annotations, durations and nested runs.

The record is built where the trace lives (in the test process, or a pytest-xdist worker) and
travels as JSON: nothing in it refers back to Python objects.  Long texts are clipped (with the
number of characters cut) so one runaway tool result cannot make a report unloadable.
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from openprogram.events import ToolExecutionStart
from openprogram.texts import clip as clip_text
from openprogram.types import (
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
)
from openprogram_testing.base.recording import NESTED_RUN, shown_notes
from openprogram_testing.core.rounds import Round, child_traces, split_rounds
from openprogram_testing.judges.usage import UsageError, trace_usage
from openprogram_testing.transport.cassettes.files import decoded_body
from openprogram_testing.transport.cassettes.redaction import REDACTED, Redactor

from .behaviours import exhibited

if TYPE_CHECKING:
    from openprogram_testing.base.recording import Annotation, HttpExchange
    from openprogram_testing.core.trace import LoopTrace
    from openprogram_testing.core.tree import TraceTree
    from openprogram_testing.transport.cassettes.redaction import Redactor

TEXT_LIMIT = 20_000
"""Characters kept of any one text in a record; the rest is replaced by a note of its length."""


def clip(text: str, limit: int = TEXT_LIMIT) -> str:
    """``openprogram.texts.clip`` with the report's limit."""
    return clip_text(text, limit)


def pretty(value: Any) -> str:
    """Arguments and structured results as indented JSON (``repr`` for what JSON cannot hold)."""
    try:
        return clip(json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=repr))
    except (TypeError, ValueError):
        return clip(repr(value))


def content_text(content: Any) -> str:
    if isinstance(content, str):
        return clip(content)
    parts: list[str] = []
    for block in content:
        if isinstance(block, TextContent):
            parts.append(block.text)
        elif isinstance(block, ImageContent):
            parts.append(f"[image {block.mime_type}, {len(block.data_b64)} base64 characters]")
    return clip("\n".join(parts))


def _ms(trace: LoopTrace, start: int | None, end: int | None) -> float | None:
    """Milliseconds between two events of the trace (``None`` without arrival times)."""
    times = trace.event_times
    if not times or start is None or end is None or end >= len(times) or start >= len(times):
        return None
    return round((times[end] - times[start]) * 1000, 3)


def _call(call: ToolCall) -> dict[str, Any]:
    out: dict[str, Any] = {"id": call.id, "name": call.name, "args": pretty(call.arguments)}
    if call.raw_arguments is not None:
        out["raw"] = clip(call.raw_arguments)
    return out


def _reply(trace: LoopTrace, r: Round) -> dict[str, Any] | None:
    m = r.reply
    if m is None:
        return None
    text = "".join(b.text for b in m.content if isinstance(b, TextContent))
    thinking = "".join(b.thinking for b in m.content if isinstance(b, ThinkingContent))
    out: dict[str, Any] = {
        "stop": m.stop_reason,
        "text": clip(text),
        "calls": [_call(c) for c in m.tool_calls],
        "ms": _ms(trace, r.first_index, r.reply_index),
    }
    if thinking:
        out["thinking"] = clip(thinking)
    if m.error_message is not None:
        out["error"] = clip(m.error_message)
    if m.error_status is not None:
        out["status"] = m.error_status
    if m.error_retryable is not None:
        out["retryable"] = m.error_retryable
    if m.usage.input_tokens or m.usage.output_tokens:
        out["usage"] = [m.usage.input_tokens, m.usage.output_tokens]
    return out


def _tools(trace: LoopTrace, r: Round) -> list[dict[str, Any]]:
    calls = {c.id: c for c in (r.reply.tool_calls if r.reply is not None else [])}
    out: list[dict[str, Any]] = []
    for t in r.tools:
        res: ToolResultMessage = t.result
        call = calls.get(res.tool_call_id)
        status = "skipped" if res.skipped else "error" if res.is_error else "ok"
        item: dict[str, Any] = {
            "index": t.index,
            "id": res.tool_call_id,
            "name": res.tool_name,
            "args": pretty(call.arguments) if call is not None else "",
            "status": status,
            "result": content_text(res.content),
            "ms": _ms(trace, t.start_index, t.end_index),
        }
        if t.updates:
            item["updates"] = t.updates
        if t.decided is not None:
            item["approval"] = _approval(t.asked, t.decided)
        if res.details is not None:
            item["details"] = pretty(res.details)
        out.append(item)
    return out


def _approval(asked: Any, decided: Any) -> dict[str, Any]:
    """The call's approval request and decision, as the report shows them."""
    out: dict[str, Any] = {"outcome": decided.outcome}
    if asked is not None and asked.reason:
        out["reason"] = clip(asked.reason)
    if decided.args is not None:
        out["args"] = pretty(decided.args)
    if decided.message:
        out["message"] = clip(decided.message)
    return out


def _arrivals(trace: LoopTrace, rounds: list[Round], r: Round) -> list[dict[str, Any]]:
    """User messages delivered before this round's model call, with where they arrived: with
    the prompt, after tool call *k* of the previous round (and what they skipped), or after
    the previous reply."""
    previous = rounds[r.index - 1] if r.index > 0 else None
    out: list[dict[str, Any]] = []
    for a in r.arrivals:
        item: dict[str, Any] = {"kind": a.origin, "text": content_text(a.message.content)}
        if previous is not None and a.origin != "prompt":
            executed = previous.executed
            if previous.calls:
                item["after_tool"] = executed[-1].index if executed else None
                item["skipped"] = [
                    f"{t.result.tool_name} ({t.result.tool_call_id})" for t in previous.skipped
                ]
            else:
                item["after_reply"] = True
        out.append(item)
    return out


def _annotations(r: Round, notes: list[Annotation], after: list[int]) -> list[dict[str, Any]]:
    """Transport notes (cassette interactions, faults, answers from a fallback script; the
    ``shown_notes`` of the run, as the timeline shows them) that happened during this round, with
    the event they follow (``model`` while the reply streamed, else the tool call index).
    ``notes`` are in event order and ``after`` holds each one's preceding event, so a round
    finds its own by bisection: a long run is not rescanned once per round."""
    out: list[dict[str, Any]] = []
    lo = bisect.bisect_left(after, r.first_index)
    hi = bisect.bisect_right(after, r.last_index)
    for note in notes[lo:hi]:
        where = "model"
        for t in r.tools:
            if t.start_index is not None and t.start_index < note.event_index <= t.end_index:
                where = f"tool {t.index}"
        out.append({"kind": note.kind, "text": clip(note.text), "at": where})
    return out


def trace_record(trace: LoopTrace | TraceTree, *, label: str = "run") -> dict[str, Any]:
    """The JSON-ready record of one run (and, for a trace tree, its nested runs as lanes, each
    with the id of the tool call that started it)."""
    tree: Any = trace
    if not hasattr(tree, "events") and hasattr(tree, "trace"):  # a TraceTree node
        trace = tree.trace
    trace = cast("LoopTrace", trace)
    rounds = split_rounds(trace)
    notes = shown_notes(trace.annotations)  # what the text timeline shows too
    after = [note.event_index - 1 for note in notes]
    times = trace.event_times
    duration = round((times[-1] - times[0]) * 1000, 3) if times else None
    record: dict[str, Any] = {
        "label": label,
        "termination": trace.termination,
        "model_calls": trace.model_calls,
        "cap": trace.cap,
        "steering_mode": trace.steering_mode,
        "ms": duration,
        "behaviours": exhibited(tree),  # a tree's record counts its nested runs too
        "rounds": [
            {
                "index": r.index,
                "ms": _ms(trace, r.first_index, r.last_index),
                "arrivals": _arrivals(trace, rounds, r),
                "reply": _reply(trace, r),
                "tools": _tools(trace, r),
                "notes": _annotations(r, notes, after),
            }
            for r in rounds
        ],
        "undelivered": [content_text(u.content) for u in trace.undelivered],
        "final_text": clip(trace.final_text),
        "usage": _usage(trace),
        "children": [],
    }
    if trace.system_prompt:
        record["system_prompt"] = clip(trace.system_prompt)
    for node, child in child_traces(tree):
        # a tree node carries its own nested runs; a bare trace is a leaf
        lane = trace_record(node if node is not child else child, label=_child_label(node))
        call_id = getattr(node, "tool_call_id", None) or getattr(node, "call_id", None)
        if call_id:
            lane["call_id"] = str(call_id)  # drawn at that tool call of the parent's rounds
        record["children"].append(lane)
    return record


def _usage(trace: LoopTrace) -> dict[str, Any]:
    """This run's usage (its nested runs have their own), or why it cannot be summed."""

    try:
        return trace_usage(trace).to_dict()
    except UsageError as exc:
        return {"error": clip(str(exc))}


def _child_label(node: Any) -> str:
    """``exec from <tool> (<call id>)`` when the tree node says which call started it."""
    name = getattr(node, "tool_name", None) or getattr(node, "name", None)
    call_id = getattr(node, "tool_call_id", None) or getattr(node, "call_id", None)
    if name and call_id:
        return f"exec from {name} ({call_id})"
    if name:
        return f"exec from {name}"
    return "nested run"


def run_label(info: Any) -> str:
    """How a lane names a ``Runtime`` run: ``exec from research (call call_1, depth 1)``."""
    if info.kind != "exec":
        return f"{info.kind} ask (depth {info.depth})"
    return f"exec from {info.tool_name} (call {info.tool_call_id}, depth {info.depth})"


class RunCollector:
    """Turns announced traces into report records, one per outermost run.

    A trace of a ``Runtime`` run (``trace.run`` set) whose parent run was collected becomes a
    nested lane of its parent's record, and what it exhibits counts for every run above it
    (the parent's ``nested_exec`` is read from the parent's own trace, as ``exhibited`` reads
    it, never added here: one reading for the report, the coverage table and a caller's
    ``exhibited(tree)``).  Trace trees announce their runs parent
    first, which is the order this relies on; a child whose parent was never seen stays a
    run of its own.  A run announced twice (by a runner, then by the test's ``capture_runs``)
    is recorded once."""

    def __init__(self) -> None:
        self.runs: list[dict[str, Any]] = []
        self._records: dict[str, dict[str, Any]] = {}
        self._parents: dict[str, str] = {}

    def add(self, trace: LoopTrace) -> dict[str, Any]:
        info = getattr(trace, "run", None)
        if info is not None and info.run_id in self._records:
            return self._records[info.run_id]
        parent_id = getattr(info, "parent_id", None)
        if info is None or parent_id not in self._records:
            record = trace_record(trace)
            self._adopt(trace, record)
            record["label"] = f"run {len(self.runs) + 1}"
            self.runs.append(record)
            if info is not None:
                self._records[info.run_id] = record
            return record
        record = trace_record(trace, label=run_label(info))
        if info.tool_call_id is not None:
            record["call_id"] = info.tool_call_id  # drawn at that tool call of the parent
        self._records[info.run_id] = record
        self._parents[info.run_id] = parent_id
        self._records[parent_id]["children"].append(record)
        counts = dict(record["behaviours"])
        ancestor: str | None = parent_id
        while ancestor is not None:
            _merge(self._records[ancestor]["behaviours"], counts)
            ancestor = self._parents.get(ancestor)
        return record

    def _adopt(self, trace: LoopTrace, record: dict[str, Any]) -> None:
        """Runs that a tool of ``trace`` started through ``Runtime.exec`` (announced before
        it, noted on it as ``NESTED_RUN``) move under ``record`` as nested lanes."""
        for note in trace.annotations:
            if note.kind != NESTED_RUN:
                continue
            child = self._records.get(note.text)
            if child is None:
                continue
            # Its runs were announced just before it: look from the end (no rescan per run).
            at = next((i for i in range(len(self.runs) - 1, -1, -1) if self.runs[i] is child), -1)
            if at < 0:
                continue
            del self.runs[at]
            start = next(
                (
                    e
                    for e in reversed(trace.events[: note.event_index])
                    if isinstance(e, ToolExecutionStart)
                ),
                None,
            )
            if start is not None:
                child["label"] = f"exec from {start.tool_name} (call {start.tool_call_id})"
                child["call_id"] = start.tool_call_id
            record["children"].append(child)
            _merge(record["behaviours"], child["behaviours"])


def http_records(exchanges: Sequence[HttpExchange]) -> list[dict[str, Any]]:
    """A test's HTTP exchanges as JSON records, in the order they arrived, redacted as a
    cassette is (credential headers replaced, then key shapes, credential-named fields and every
    secret value seen anywhere in them): ``source``, ``index``, ``method``, ``url``, ``at_ms``
    (since the first), ``request`` and ``response`` (``headers``, ``body``; the response's
    ``status``, ``None`` for a dropped connection)."""

    ordered = sorted(exchanges, key=lambda x: x.at)
    redactor = Redactor()
    for x in ordered:  # learn every secret first, so an early body loses a later one too
        redactor.headers(x.request_headers)
        redactor.headers(x.response_headers)
        redactor.uri(x.url)
    start = ordered[0].at if ordered else 0.0
    return [
        {
            "source": x.source,
            "index": x.index,
            "method": x.method,
            "url": redactor.uri(x.url),
            "at_ms": round((x.at - start) * 1000, 3),
            "request": {
                "headers": _headers(redactor, x.request_headers),
                "body": _body(redactor, x.request_body, x.request_headers),
            },
            "response": {
                "status": x.status,
                "headers": _headers(redactor, x.response_headers),
                "body": _body(redactor, x.response_body, x.response_headers),
            },
        }
        for x in ordered
    ]


def _headers(redactor: Redactor, headers: Mapping[str, Any]) -> dict[str, str]:
    """Headers as ``name: value`` text; a credential's value is ``REDACTED``, never shown."""

    kept = redactor.headers(headers)
    return {
        str(name): ", ".join(kept[str(name)]) if str(name) in kept else REDACTED for name in headers
    }


def _body(redactor: Redactor, body: Any, headers: Mapping[str, Any]) -> str:
    """A body as redacted text: JSON pretty-printed, binary framing named, not dumped."""

    if body is None or body in (b"", ""):
        return ""
    kind = next((str(v) for k, v in headers.items() if str(k).lower() == "content-type"), "")
    if isinstance(body, bytes | bytearray) and ("eventstream" in kind or "octet" in kind):
        return f"[{len(body)} bytes of {kind}]"
    if isinstance(body, bytes | bytearray | str):
        text = decoded_body(body) or ""
        try:
            body = json.loads(text)
        except ValueError:
            if "x-www-form-urlencoded" in kind.lower():  # an OAuth token request's secret
                text = redactor.form(text)
            return clip(redactor.body(text))
    try:
        text = json.dumps(body, indent=2, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        text = repr(body)
    return clip(redactor.body(text))


def _merge(into: dict[str, int], counts: dict[str, int]) -> None:
    for name, n in counts.items():
        into[name] = into.get(name, 0) + n


__all__ = ["TEXT_LIMIT", "RunCollector", "clip", "content_text", "http_records", "pretty",
           "run_label", "trace_record"]  # fmt: skip
