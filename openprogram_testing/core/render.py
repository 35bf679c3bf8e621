"""Text renderings of a loop trace: a timeline for people and a normalised snapshot.

- ``render_timeline(trace)``: one numbered line per event (runs of ``message_update`` collapsed
  into one line), indented per round.  Used in assertion failure messages (invariant violations
  cite the event numbers), by ``openprogram-testing show``; ``color=True`` renders it with rich.
- ``render_snapshot(trace)``: the snapshot format.  Stable across runs and re-chunkings: no event
  numbers, no delta counts, tool call ids renamed ``call#1``, ``call#2``… in order of appearance,
  usage/model names left out, and provider ids, UUIDs, timestamps, durations, thinking
  signatures and SSE ``obfuscation`` fields replaced by placeholders.  Long texts are truncated
  with the number of characters cut, so a change beyond the cut still shows as a length change.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from openprogram.events import (
    AgentEnd,
    AgentStart,
    MessageEnd,
    MessageStart,
    MessageUpdate,
    ToolApprovalEnd,
    ToolApprovalStart,
    ToolExecutionEnd,
    ToolExecutionStart,
    ToolExecutionUpdate,
    TurnEnd,
    TurnStart,
)
from openprogram.texts import clip, whole_text
from openprogram.types import (
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from openprogram_testing.base import deprecated
from openprogram_testing.base.failures import TimelineNote, TraceFailure
from openprogram_testing.base.recording import FAULT, SERVED_FROM_SCRIPT, shown_notes

from .model_input import ModelInput, schema_digest
from .rounds import Origins, ReadableTrace, ScheduleReading, split_rounds


class _Entry(Protocol):
    def describe(self) -> str: ...


class _PendingSchedule(ScheduleReading, Protocol):
    """A schedule as the renderers read it: also what it still holds (undelivered entries)."""

    @property
    def pending(self) -> Sequence[_Entry]: ...


class RenderableTrace(ReadableTrace, Protocol):
    """What the renderers read of a trace (``LoopTrace`` satisfies it).  A protocol rather than
    ``LoopTrace`` itself, so ``trace`` (which renders its failures) can import this module
    without an import cycle."""

    @property
    def schedule(self) -> _PendingSchedule | None: ...
    @property
    def cap(self) -> int: ...
    @property
    def steering_mode(self) -> str: ...
    @property
    def model_input(self) -> ModelInput | None: ...


class _RunInfo(Protocol):
    @property
    def tool_call_id(self) -> str | None: ...
    @property
    def depth(self) -> int: ...
    @property
    def kind(self) -> str: ...


class RenderableTree(Protocol):
    """What the renderers read of a trace tree (``TraceTree`` satisfies it): each run's trace
    and the runs nested in it, each linked to the tool call that started it."""

    @property
    def trace(self) -> RenderableTrace: ...
    @property
    def run(self) -> _RunInfo: ...
    @property
    def children(self) -> Sequence[RenderableTree]: ...
    @property
    def path(self) -> str: ...


SNAPSHOT_HEADER = "# openprogram trace v"
SNAPSHOT_FORMAT = 2
"""The snapshot format version, written in every snapshot's first line.  2 added the ``sent``
line of each run (what its model calls received besides the conversation); a snapshot of
another version is refused with the way to re-write it (``snapshot_format_problem``), never
compared line by line."""

TIMELINE_TEXT_LIMIT = 120
SNAPSHOT_TEXT_LIMIT = 300
SNAPSHOT_RESULT_LIMIT = 200

_PATTERNS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r'("obfuscation"\s*:\s*)"[^"]*"'), r'\1"<obfuscation>"'),
    (
        re.compile(
            r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b"
        ),
        "<uuid>",
    ),
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?\b"),
        "<timestamp>",
    ),
    (
        re.compile(r"\b(req|msg|resp|chatcmpl|toolu|call|fc|rs|srvtoolu)([_-])[A-Za-z0-9]{10,}\b"),
        r"\1\2<id>",
    ),
    (re.compile(r"\b\d+\.\d+\s?s\b|\b\d+(?:\.\d+)?\s?ms\b"), "<duration>"),
]


@dataclass
class _Renderer:
    trace: RenderableTrace
    snapshot: bool
    ids: dict[str, str] = field(default_factory=dict)
    lines: list[tuple[str, int, str, str]] = field(
        default_factory=list
    )  # (number, depth, text, style)
    stream: tuple[int, str] | None = None  # snapshot mode: stream summary awaiting its message
    # Trace trees: the runs nested in this one (by the tool call that started them), rendered
    # as indented lanes right after that call's tool_execution_start; ``base`` is the lane's
    # indentation and ``prefix`` tags its event numbers (``r1#3``: event 3 of nested run 1).
    node: RenderableTree | None = None
    base: int = 0
    prefix: str = ""
    counter: list[int] = field(default_factory=lambda: [0])
    # The trace read once (``openprogram_testing.core.rounds``): each turn_start's round number and
    # each user message's origin, as every other view of the run reads them.
    origins: Origins | None = None
    round_of: dict[int, int] = field(default_factory=dict)

    # -- helpers ---------------------------------------------------------------------------
    def cid(self, raw: str) -> str:
        if not self.snapshot:
            return raw
        if raw not in self.ids:
            self.ids[raw] = f"call#{len(self.ids) + 1}"
        return self.ids[raw]

    def norm(self, text: str) -> str:
        if not self.snapshot:
            return text
        # Longest first, so ``call_1`` never rewrites part of ``call_10``; one pass through a
        # regex, so an alias is never rewritten again.
        raws = sorted((r for r in self.ids if len(r) >= 4), key=len, reverse=True)
        if raws:
            pattern = re.compile("|".join(re.escape(r) for r in raws))
            text = pattern.sub(lambda m: self.ids[m.group(0)], text)
        for pattern, repl in _PATTERNS:
            text = pattern.sub(repl, text)
        return text

    def q(self, text: str, limit: int) -> str:
        return json.dumps(clip(self.norm(text), limit), ensure_ascii=False)

    def args(self, args: Any, limit: int = 200) -> str:
        try:
            text = json.dumps(args, sort_keys=True, ensure_ascii=False, default=repr)
        except Exception:
            text = repr(args)
        return clip(self.norm(text), limit)

    def decision(self, e: ToolApprovalEnd) -> str:
        """``approved``, ``modified {args}``, ``denied: message``, ``timed_out: ...``."""
        if e.outcome == "modified":
            return f"modified {self.args(e.args)}"
        if e.message:
            return f"{e.outcome}: {clip(self.norm(e.message), 200)}"
        return e.outcome

    def add(self, number: str, depth: int, text: str, style: str = "") -> None:
        if number and self.prefix:
            number = self.prefix + number
        self.lines.append((number, self.base + depth, text, style))

    def nested(self, tool_call_id: str | None, depth: int) -> None:
        """Render the runs started by ``tool_call_id`` (``None``: the ``choices=`` asks, after
        the run) as lanes indented under ``depth``."""
        if self.node is None:
            return
        for child in self.node.children:
            if child.run.tool_call_id != tool_call_id:
                continue
            self.counter[0] += 1
            tag = f"r{self.counter[0]}"
            where = child.path
            if child.run.kind != "exec":
                head = f"{child.run.kind} run"
            else:
                call = self.cid(child.run.tool_call_id or "?")
                head = f"run {where} (call {call}, depth {child.run.depth})"
            self.add("" if self.snapshot else f"{tag}:", depth + 1, f"┌ {head}", "bold magenta")
            _Renderer(
                child.trace,
                self.snapshot,
                self.ids,
                self.lines,
                node=child,
                base=self.base + depth + 2,
                prefix="" if self.snapshot else tag,
                counter=self.counter,
            ).run()

    def script_marks(self) -> list[tuple[int, str, str]]:
        """The notes shown where they happened (``event_index``, kind, text).  The timeline
        shows what the HTML report shows (``recording.shown_notes``: faults injected, cassette
        interactions replayed, answers from a fallback script); the snapshot only the answers
        from a script, which change what the run was answered with (a snapshot recorded with
        one cannot pass a run without it), while its mutations show in the run itself."""
        notes = getattr(self.trace, "annotations", None) or ()
        shown = shown_notes(notes)
        if self.snapshot:
            shown = [n for n in shown if n.kind == SERVED_FROM_SCRIPT]
        return [(n.event_index, n.kind, n.text) for n in shown]

    def mark(self, marks: list[tuple[int, str, str]], before: int, depth: int) -> None:
        while marks and marks[0][0] <= before:
            _, kind, text = marks.pop(0)
            line = self.norm(clip(text, 300))
            if kind == SERVED_FROM_SCRIPT:  # its text says what it is
                self.add("", depth + 1, "! " + line, "bold red")
            elif kind == FAULT:
                self.add("", depth + 1, "! fault injected: " + line, "bold red")
            else:  # a cassette interaction replayed, or a note of a kind added later
                self.add("", depth + 1, f"~ {kind} {line}", "dim")

    def content(self, blocks: Any, limit: int) -> str:
        if isinstance(blocks, str):
            return self.q(blocks, limit)
        parts: list[str] = []
        for b in blocks:
            if isinstance(b, TextContent):
                parts.append(self.q(b.text, limit))
            elif isinstance(b, ImageContent):
                parts.append(f"<image {b.mime_type} {len(b.data_b64)} b64 chars>")
        return " + ".join(parts) if parts else '""'

    def describe_message(self, message: Message) -> tuple[str, list[str]]:
        """A headline and (for assistant messages) one sub-line per content block."""
        limit = SNAPSHOT_TEXT_LIMIT if self.snapshot else TIMELINE_TEXT_LIMIT
        if isinstance(message, UserMessage):
            assert self.origins is not None
            return f"{self.origins.of(message)} {self.content(message.content, limit)}", []
        if isinstance(message, ToolResultMessage):
            return "result " + self.result_text(message), []
        assert isinstance(message, AssistantMessage)
        head = f"assistant stop={message.stop_reason}"
        if message.error_message is not None:
            head += f" error={self.q(message.error_message, limit)}"
        if message.error_status is not None:
            head += f" status={message.error_status}"
        if message.error_retryable is not None:
            head += f" retryable={message.error_retryable}"
        if message.error_retry_after_s is not None:
            head += f" retry_after_s={message.error_retry_after_s:g}"
        if not self.snapshot:
            u = message.usage
            if u.input_tokens or u.output_tokens:
                head += f" usage={u.input_tokens}/{u.output_tokens}"
        subs: list[str] = []
        for b in message.content:
            if isinstance(b, TextContent):
                subs.append(f"text {self.q(b.text, limit)}")
            elif isinstance(b, ThinkingContent):
                extra = " redacted" if b.redacted else ""
                if b.signature:
                    extra += " signed" if self.snapshot else f" signature={b.signature[:16]}…"
                subs.append(f"thinking{extra} {self.q(b.thinking, limit)}")
            elif isinstance(b, ToolCall):
                line = f"call {self.cid(b.id)} {b.name} {self.args(b.arguments)}"
                if b.raw_arguments is not None:
                    line += f" raw={self.q(b.raw_arguments, 120)}"
                subs.append(line)
        return head, subs

    def result_text(self, r: ToolResultMessage) -> str:
        status = "SKIPPED" if r.skipped else "error" if r.is_error else "ok"
        limit = SNAPSHOT_RESULT_LIMIT if self.snapshot else TIMELINE_TEXT_LIMIT
        return f"{self.cid(r.tool_call_id)} {r.tool_name} {status} {self.content(r.content, limit)}"

    def sent(self) -> None:
        """The line of what every model call of the run was sent besides the conversation
        (``ModelInput``), when the trace knows it: a changed system prompt, menu or
        ``tool_choice`` changes the snapshot even when the model answers the same."""
        sent = getattr(self.trace, "model_input", None)
        if sent is None:
            return
        if sent.system_prompt is None:
            system = "none"
        else:
            system = self.q(sent.system_prompt, SNAPSHOT_TEXT_LIMIT)
            if len(sent.system_prompt) > SNAPSHOT_TEXT_LIMIT:  # a change past the cut shows too
                system += f" sha={schema_digest([{'system': sent.system_prompt}])}"
        choice = json.dumps(sent.tool_choice, sort_keys=True, ensure_ascii=False, default=repr)
        tools = ", ".join(sent.tool_names)
        self.add(
            "",
            1,
            f"sent system={system} tools=[{tools}] tool_choice={choice} "
            f"schemas={sent.schema_digest}",
        )

    def flush_stream(self) -> None:
        if self.stream is not None:
            self.add("", self.stream[0], self.stream[1], "dim")
            self.stream = None

    # -- walking the events ----------------------------------------------------------------
    def run(self) -> list[tuple[str, int, str, str]]:
        events = self.trace.events
        self.origins = Origins(self.trace)
        self.round_of = {
            r.turn_start: r.index for r in split_rounds(self.trace) if r.turn_start is not None
        }
        depth = 0
        i = 0
        marks = self.script_marks()
        while i < len(events):
            self.mark(marks, i, depth)
            e = events[i]
            num = f"#{i}"
            if isinstance(e, AgentStart):
                depth = 0
                self.add(num, 0, "agent_start", "bold")
                if self.snapshot:
                    self.sent()
            elif isinstance(e, TurnStart):
                self.add(num, 0, f"turn_start round {self.round_of[i]}", "bold cyan")
                depth = 1
            elif isinstance(e, TurnEnd):
                n = len(e.tool_results)
                self.add(num, depth, f"turn_end {n} result{'s' if n != 1 else ''}", "cyan")
                depth = 0
            elif isinstance(e, MessageUpdate):
                j = i
                kinds: list[str] = []
                while j < len(events) and isinstance(events[j], MessageUpdate):
                    kinds.append(events[j].event.type)  # type: ignore[union-attr]
                    j += 1
                if self.snapshot:
                    # Shown under the assistant message it built (after its content blocks).
                    self.flush_stream()
                    self.stream = (depth + 1, "stream " + _stream_summary(kinds, counts=False))
                else:
                    span = f"#{i}-{j - 1}" if j - 1 > i else num
                    self.add(
                        span,
                        depth + 1,
                        f"message_update ({j - i}): {_stream_summary(kinds, counts=True)}",
                        "dim",
                    )
                i = j
                continue
            elif isinstance(e, MessageStart):
                if not self.snapshot:
                    self.add(num, depth, f"message_start {e.message.role}", "dim")
            elif isinstance(e, MessageEnd):
                m = e.message
                if self.snapshot and isinstance(m, ToolResultMessage):
                    pass  # shown by its tool_execution_end line
                else:
                    head, subs = self.describe_message(m)
                    prefix = "" if self.snapshot else "message_end "
                    style = (
                        "red"
                        if isinstance(m, AssistantMessage) and m.error_message
                        else ("green" if isinstance(m, UserMessage) else "")
                    )
                    self.add(num, depth, prefix + head, style)
                    for s in subs:
                        self.add("", depth + 1, s, "")
                    if isinstance(m, AssistantMessage):
                        self.flush_stream()
            elif isinstance(e, ToolExecutionStart):
                self.add(
                    num,
                    depth,
                    f"tool_execution_start {self.cid(e.tool_call_id)} {e.tool_name} "
                    f"{self.args(e.args)}",
                    "yellow",
                )
                self.nested(e.tool_call_id, depth)
            elif isinstance(e, ToolApprovalStart):
                reason = f" reason={self.q(e.reason, 200)}" if e.reason else ""
                self.add(
                    num,
                    depth + 1,
                    f"tool_approval_start {self.cid(e.tool_call_id)} {e.tool_name} "
                    f"{self.args(e.args)}{reason}",
                    "cyan",
                )
            elif isinstance(e, ToolApprovalEnd):
                self.add(
                    num,
                    depth + 1,
                    f"tool_approval_end {self.cid(e.tool_call_id)} {self.decision(e)}",
                    "cyan" if e.runs else "red",
                )
            elif isinstance(e, ToolExecutionUpdate):
                self.add(
                    num,
                    depth + 1,
                    f"tool_execution_update {self.cid(e.tool_call_id)} {self.args(e.partial, 120)}",
                    "dim",
                )
            elif isinstance(e, ToolExecutionEnd):
                text = self.result_text(e.result)
                if e.tool_call_id != e.result.tool_call_id:
                    text += f" (event id {self.cid(e.tool_call_id)})"
                if e.is_error != e.result.is_error:
                    text += f" (event is_error={e.is_error})"
                style = "magenta" if e.result.skipped else "red" if e.is_error else "yellow"
                self.add(num, depth, "tool_execution_end " + text, style)
            elif isinstance(e, AgentEnd):
                depth = 0
                self.add(
                    num,
                    0,
                    f"agent_end termination={e.termination} model_calls={e.model_calls} "
                    f"messages={len(e.messages)} undelivered={len(e.undelivered)}",
                    "bold",
                )
                for u in e.undelivered:
                    self.add(
                        "", 1, f"undelivered {self.content(u.content, TIMELINE_TEXT_LIMIT)}", "red"
                    )
            else:  # pragma: no cover - an event type this renderer does not know
                self.add(num, depth, f"{getattr(e, 'type', type(e).__name__)}", "")
            i += 1
        self.mark(marks, len(events), 0)
        self.flush_stream()
        self.nested(None, 0)
        return self.lines


def _stream_summary(kinds: list[str], *, counts: bool) -> str:
    """``start text toolcall done`` (block kinds, stable under re-chunking), or with ``counts``
    every event type with repeat counts (``text_delta(3)``)."""
    out: list[str] = []
    if counts:
        runs: list[list[Any]] = []
        for k in kinds:
            if runs and runs[-1][0] == k:
                runs[-1][1] += 1
            else:
                runs.append([k, 1])
        return " ".join(k if n == 1 else f"{k}({n})" for k, n in runs)
    for k in kinds:
        if k.endswith("_start") and k != "start":
            out.append(k[: -len("_start")])
        elif k in ("start", "done", "error"):
            out.append(k)
    return " ".join(out)


def _plain(lines: list[tuple[str, int, str, str]], numbered: bool) -> str:
    width = max((len(n) for n, *_ in lines), default=0) if numbered else 0
    out = []
    for number, depth, text, _style in lines:
        pad = "  " * depth
        out.append(f"{number.ljust(width)}  {pad}{text}" if numbered else f"{pad}{text}")
    return whole_text("\n".join(out))


def _rich(lines: list[tuple[str, int, str, str]]) -> str:
    from rich.console import Console
    from rich.text import Text

    console = Console(force_terminal=True, color_system="standard", width=200, highlight=False)
    width = max((len(n) for n, *_ in lines), default=0)
    with console.capture() as capture:
        for number, depth, text, style in lines:
            row = Text(number.ljust(width) + "  ", style="dim")
            row.append("  " * depth + text, style=style or None)
            console.print(row, soft_wrap=True)
    return whole_text(capture.get().rstrip("\n"))


def _renderer(subject: RenderableTrace | RenderableTree, snapshot: bool) -> _Renderer:
    if hasattr(subject, "children"):
        tree: RenderableTree = subject  # type: ignore[assignment]
        return _Renderer(tree.trace, snapshot, node=tree)
    return _Renderer(subject, snapshot)


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def render_timeline(subject: RenderableTrace | RenderableTree, *, color: bool = False) -> str:
    """A numbered, human-readable timeline of a trace, or of a trace tree with its nested runs
    as indented lanes (rich-coloured with ``color=True``)."""
    lines = _renderer(subject, snapshot=False).run()
    if color:
        try:
            return _rich(lines)
        except ImportError:
            pass
    return _plain(lines, numbered=True)


@deprecated.renamed_keyword("trace", "subject")  # 0.1's name
def render_snapshot(subject: RenderableTrace | RenderableTree) -> str:
    """The stable, normalised text form of a trace (or trace tree) used for snapshots."""
    r = _renderer(subject, snapshot=True)
    trace = r.trace
    lines = r.run()
    runs = f" runs={r.counter[0] + 1}" if r.node is not None else ""
    header = [
        f"{SNAPSHOT_HEADER}{SNAPSHOT_FORMAT}: cap={trace.cap} "
        f"steering_mode={trace.steering_mode}{runs}"
    ]
    if trace.schedule is not None and trace.schedule.pending:
        header.extend(
            f"# pending schedule entry: {r.norm(e.describe())}" for e in trace.schedule.pending
        )
    return "\n".join([*header, _plain(lines, numbered=False)]) + "\n"


def snapshot_format_problem(stored: str, *, update_hint: str = "--snapshot-update") -> str | None:
    """Why a stored snapshot cannot be compared with one rendered now (its header names another
    format version), else ``None``.  Every format change makes every stored snapshot differ; a
    line diff of that would bury the one thing to do, so the message says it.  A stored text
    without the header (a string a test stored as is) is compared as usual."""
    first = stored.split("\n", 1)[0]
    if not first.startswith(SNAPSHOT_HEADER):
        return None
    version = first[len(SNAPSHOT_HEADER) :].split(":", 1)[0]
    if version == str(SNAPSHOT_FORMAT):
        return None
    return (
        f"the stored snapshot is in trace format v{clip(version, 20)} and this harness writes "
        f"v{SNAPSHOT_FORMAT} (v2 added each run's 'sent' line: system prompt, offered tools, "
        f"tool_choice, schema digest); run once with {update_hint} to re-write it, then review "
        "the new lines"
    )


def want_color() -> bool:
    """Colour for failure messages only on a real terminal and unless ``NO_COLOR`` is set
    (``FORCE_COLOR`` forces it)."""
    import os
    import sys

    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    stream = sys.__stdout__
    return bool(stream is not None and stream.isatty() and os.environ.get("TERM") != "dumb")


# -- the timeline a failure shows ------------------------------------------------------------


def timeline_shown(error: BaseException | None) -> bool:
    """Whether a failure already shows a run's timeline (its message or a note carries it), so
    the pytest report does not print it a second time."""
    if error is None:
        return False
    if isinstance(error, TraceFailure):
        return error.timeline_shown
    if getattr(error, "timeline_shown", False) or getattr(error, "timeline", ""):
        return True
    return any(isinstance(note, TimelineNote) for note in getattr(error, "__notes__", ()))


def lane_text(subject: Any, run: str | Sequence[str] | None) -> str:
    """The timeline a failure about the run at ``run`` shows: that run's lane alone (with the
    runs nested in it), after the path of runs that led to it, instead of the whole tree (a
    deep agent's tree is easily a hundred lines, most of them about other runs).  Without
    ``run``, or when there is no run there, the whole ``subject``'s timeline."""
    node = None
    if run and hasattr(subject, "find"):
        try:
            node = subject.find(run)
        except Exception:
            node = None
    if node is None:
        return timeline_text(subject)
    chain: list[str] = []
    at = node
    while at is not None:
        chain.append(at.label)
        at = at.parent
    return "path: " + " > ".join(reversed(chain)) + "\n" + timeline_text(node)


def timeline_text(trace: RenderableTrace | RenderableTree | Any) -> str:
    """The run's timeline for a failure message (coloured on a terminal); never raises, so a
    rendering problem cannot hide the real failure."""
    try:
        return render_timeline(trace, color=want_color())
    except Exception as exc:
        return f"(timeline unavailable: {exc!r})"


__all__ = [
    "SNAPSHOT_FORMAT",
    "lane_text",
    "render_snapshot",
    "render_timeline",
    "snapshot_format_problem",
    "timeline_shown",
    "timeline_text",
    "want_color",
]
