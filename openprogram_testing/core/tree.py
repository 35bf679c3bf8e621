"""Trace trees: run ``Runtime.exec`` and keep what every run of the loop did, nested ones too.

An agent built on ``Runtime.exec`` runs the loop more than once: the outer run, one run per
nested ``exec`` that an ``@agentic_function`` starts from inside a tool call, and one per ask of a
``choices=`` decision.  ``run_exec`` runs ``Runtime.aexec`` and returns a ``TraceTree``: the
outer run's ``LoopTrace`` plus one child per nested run, each linked to the tool call that
started it (``tool_call_id``, ``tool_name``, ``depth``)::

    tree = await run_exec(runtime, "summarise these cities", tools=[summarize_cities])
    tree.trace.termination                  # the outer run
    tree["summarize_cities"].final_text     # the run started by its summarize_cities call
    print(tree.timeline())                  # nested runs as indented lanes

A nested run is addressed by the path of tool names that led to it (``"plan/summarize_cities"``
or ``("plan", "summarize_cities")``); ``SteeringSchedule`` entries take the same paths.  Events
come from the runtime's public run observer (``Runtime.observe``), so the runs never interleave.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeAlias

from openprogram import Handover, RunInfo, run_sync
from openprogram.events import AgentEvent, MessageStart
from openprogram.functions import current_runtime
from openprogram.loop import effective_cap
from openprogram.types import AssistantMessage, UserMessage
from openprogram_testing.base.failures import TimelineNote
from openprogram_testing.base.recording import (
    NESTED_RUN,
    Annotation,
    annotate,
    announce_trace,
    recording,
)
from openprogram_testing.judges.invariants import check_invariants as check_tree_invariants
from openprogram_testing.transport.scripted import ModelRequest

from .model_input import ModelInput
from .render import render_snapshot, render_timeline
from .rounds import opening_prompts
from .steering import Delivery, RunAddress, RunLike, RunPath, SteeringSchedule, run_path
from .trace import LoopTrace

CHOICES_STEP = ":choices"
"""The path step of a ``choices=`` ask (``tree[":choices"]``): not a tool name, so it never
clashes with one."""


@dataclass(eq=False)
class TraceTree:
    """One run of the loop and the runs nested in it.

    ``trace`` is the run's ``LoopTrace``; ``run`` its ``RunInfo``; ``children`` the runs started
    inside it, in the order they started (nested ``exec`` runs, then ``choices=`` asks).  The
    root also holds what ``exec`` returned (``result``) or raised (``exception``).
    """

    trace: LoopTrace
    run: RunInfo
    children: list[TraceTree] = field(default_factory=list)
    parent: TraceTree | None = field(default=None, repr=False)
    result: Any = None
    exception: BaseException | None = None

    # -- where this run sits ---------------------------------------------------------------
    @property
    def tool_call_id(self) -> str | None:
        """The id of the parent's tool call that started this run (``None`` at the root)."""
        return self.run.tool_call_id

    @property
    def tool_name(self) -> str | None:
        return self.run.tool_name

    @property
    def depth(self) -> int:
        return self.run.depth

    @property
    def kind(self) -> str:
        return self.run.kind

    @property
    def path(self) -> RunAddress:
        """Where this run is, as ``tree[...]``, steering's ``run=`` and a scenario's
        ``expect.runs`` write it: the tool names that led here joined by ``/``
        (``"plan_trip/compare_options"``; ``""`` for the root).  A ``str``; compared with a
        tuple it answers as the 0.1 tuple did and warns (see ``RunAddress``)."""
        return RunAddress(self.trace.path)

    @property
    def steps(self) -> RunPath:
        """The tool names that led here, one by one (``()`` for the root)."""
        return run_path(self.trace.path)

    @property
    def label(self) -> str:
        """``outermost run`` or ``run summarize_cities (call call_1, depth 1)``."""
        if self.parent is None:
            return "outermost run"
        if self.kind != "exec":
            return f"{self.kind} run of {self.parent.path or 'the outermost run'}"
        return f"run {self.path} (call {self.tool_call_id}, depth {self.depth})"

    # -- the outer run's results, for convenience -------------------------------------------
    @property
    def termination(self) -> str:
        return self.trace.termination

    @property
    def final_text(self) -> str:
        return self.trace.final_text

    # -- walking and addressing -------------------------------------------------------------
    def walk(self) -> Iterator[TraceTree]:
        """This run and every run nested in it, depth first, in start order (each node's
        ``path`` is the string ``tree[...]`` takes)."""
        yield self
        for child in self.children:
            yield from child.walk()

    @property
    def runs(self) -> list[TraceTree]:
        return list(self.walk())

    @property
    def traces(self) -> list[LoopTrace]:
        return [node.trace for node in self.walk()]

    def find_all(self, run: RunLike) -> list[TraceTree]:
        """Every run at ``run`` (a tool called twice starts two runs at the same path)."""
        want = "/".join(run_path(run))
        return [node for node in self.walk() if node.path == want]

    def find(self, run: RunLike) -> TraceTree | None:
        """The first run at ``run`` (see ``find_all``), or ``None``."""
        found = self.find_all(run)
        return found[0] if found else None

    def __getitem__(self, run: RunLike) -> TraceTree:
        node = self.find(run)
        if node is None:
            known = ", ".join(repr(n.path) for n in self.walk() if n.path) or "none"
            raise KeyError(f"no run at {'/'.join(run_path(run))!r}; nested runs: {known}")
        return node

    # -- rendering ----------------------------------------------------------------------------
    timeline = render_timeline
    snapshot_text = render_snapshot

    def __repr__(self) -> str:
        return (
            f"TraceTree({self.label}, termination={self.trace.termination!r}, "
            f"runs={len(self.runs)})"
        )


class _Recorder:
    """The run observer: every event of every run, grouped by run, and what each run took from
    the runtime's ``steer()``/``follow_up()`` queues, as the runtime reports it when it hands it
    over (so such a message is a handed-over one, not a stray user message)."""

    def __init__(self, runtime: Any) -> None:
        self.order: list[str] = []
        self.infos: dict[str, RunInfo] = {}
        self.runtimes: dict[str, Any] = {}  # the Runtime each run belongs to
        self.events: dict[str, list[AgentEvent]] = {}
        self.requests: dict[str, list[ModelRequest]] = {}
        recorded = getattr(getattr(runtime, "provider", None), "requests", None)
        self.provider_requests: list[Any] | None = recorded if isinstance(recorded, list) else None
        self.handovers: dict[str, list[Handover]] = {}
        self.times: dict[str, list[float]] = {}
        self.annotations: dict[str, list[Annotation]] = {}
        self.current: str | None = None  # the run whose event came last: the one running now

    def __call__(self, info: RunInfo, event: AgentEvent) -> None:
        run_id = info.run_id
        events = self.events.get(run_id)
        if events is None:
            events = self.events[run_id] = []
            self.infos[run_id] = info
            self.runtimes[run_id] = current_runtime.get()  # set by the Runtime running it
            self.order.append(run_id)
            self.requests[run_id] = []
            self.times[run_id] = []
            self.annotations[run_id] = []
            parent = info.parent_id
            if info.kind == "exec" and parent is not None and parent in self.annotations:
                # The parent run started a nested exec here (inside its tool call): noted on
                # it as a run_exec inside a traced tool notes it, so a run's trace alone says
                # how many nested runs it started (``exhibited(tree.trace)``, the report).
                self.annotations[parent].append(
                    Annotation(len(self.events[parent]), NESTED_RUN, run_id)
                )
        self.current = run_id
        events.append(event)
        self.times[run_id].append(time.perf_counter())  # durations in the HTML report
        if (
            self.provider_requests
            and type(event) is MessageStart
            and isinstance(event.message, AssistantMessage)
        ):
            # The model call that produced this message is the provider's latest request: runs
            # nest inside tool calls, never beside each other, so requests arrive in run order.
            self.requests[run_id].append(self.provider_requests[-1])

    def note(self, kind: str, text: str) -> None:
        """A note from beneath the loop (a fault, a cassette interaction) for the run making the
        model call: runs nest inside tool calls and a model call follows its own run's event,
        so that is the run whose event came last."""
        run_id = self.current
        if run_id is not None:
            self.annotations[run_id].append(Annotation(len(self.events[run_id]), kind, text))

    def run_label(self) -> str | None:
        """The run whose event came last (the one making the model call now, see ``note``), as
        a message names it: ``"the outermost run"`` or ``"run a/b"`` (its tool path)."""
        run_id = self.current
        steps: list[str] = []
        seen: set[str] = set()
        while run_id is not None and run_id not in seen:
            seen.add(run_id)
            info = self.infos.get(run_id)
            if info is None:
                return None
            if info.parent_id is None:
                break
            steps.append(info.tool_name or "?" if info.kind == "exec" else CHOICES_STEP)
            run_id = info.parent_id
        return f"run {'/'.join(reversed(steps))}" if steps else "the outermost run"

    def handed_over(self, handover: Handover) -> None:
        if handover.run is not None:
            self.handovers.setdefault(handover.run.run_id, []).append(handover)


async def run_exec(
    runtime: Any,
    content: str | UserMessage | Sequence[str | UserMessage],
    *,
    schedule: SteeringSchedule | None = None,
    raises: bool = True,
    check_invariants: bool = False,
    **exec_kwargs: Any,
) -> TraceTree:
    """Run ``runtime.aexec(content, **exec_kwargs)`` and return the ``TraceTree`` of its runs.

    ``schedule`` steers any run of it (entries name nested runs by tool path).  What ``aexec``
    returns is ``tree.result``.  If it raises, the exception is re-raised with the tree's
    timeline attached as a note, or, with ``raises=False``, kept in ``tree.exception``.
    ``check_invariants=True`` checks every run against the loop invariants before returning
    (``exec_runner`` does by default; outside pytest it is the caller's choice, as
    ``check_invariants(tree)`` afterwards).  Every run's trace is announced to the trace
    listeners.
    """
    recorder = _Recorder(runtime)
    sched = schedule if schedule is not None else SteeringSchedule()
    already = len(sched.delivered)
    detach = sched.attach(runtime)
    result: Any = None
    failure: BaseException | None = None
    try:
        with runtime.observe(recorder), runtime.observe(sched.observe), recording(recorder):
            result = await runtime.aexec(content, **exec_kwargs)
    except BaseException as exc:  # re-raised below, once the tree exists
        failure = exc
    finally:
        detach()
    cap = effective_cap(exec_kwargs.get("max_iterations"))
    roots = build_trees(recorder, sched, sched.delivered[already:], runtime, cap)
    tree = roots[0] if roots else None
    if tree is None:  # aexec failed before its first run started (bad arguments)
        assert failure is not None
        raise failure
    tree.result = result
    tree.exception = failure
    for node in tree.walk():
        announce_trace(node.trace)
    # Inside a tool of a traced loop run (a scenario's agentic tool), note which run this was,
    # so the report files it under the tool call that started it.
    annotate(NESTED_RUN, tree.run.run_id)
    if check_invariants:
        check_tree_invariants(tree)
    if failure is not None and raises:
        try:
            failure.add_note(TimelineNote("runs timeline:\n" + render_timeline(tree)))
        except Exception:
            pass
        raise failure
    return tree


Subject: TypeAlias = LoopTrace | TraceTree
"""What a judge reads: one run's trace or the tree of an ``exec`` with its nested runs."""


def run_exec_sync(
    runtime: Any,
    content: str | UserMessage | Sequence[str | UserMessage],
    **kwargs: Any,
) -> TraceTree:
    """``run_exec`` for synchronous code (through ``openprogram.run_sync``)."""
    return run_sync(lambda: run_exec(runtime, content, **kwargs))


def build_trees(
    recorder: _Recorder,
    schedule: SteeringSchedule,
    delivered: Sequence[Delivery],
    runtime: Any,
    cap: int | None,
    order: Sequence[str] | None = None,
) -> list[TraceTree]:
    """The trees of the runs ``recorder`` saw, one per outermost run, in the order they started.
    ``runtime`` is the one that ran them (``None``: each run's own, as it recorded it); ``cap``
    the outermost runs' model-call cap (``None``: unknown, the loop's default unless the run
    ended at its cap); ``order`` the runs to build (default: all; a caller rebuilding one tree
    passes its runs, parents first, so reading after each of n runs is not n² work)."""
    nodes: dict[str, TraceTree] = {}
    roots: list[TraceTree] = []
    for run_id in recorder.order if order is None else order:
        info = recorder.infos[run_id]
        parent = nodes.get(info.parent_id) if info.parent_id is not None else None
        if parent is None:
            path: RunPath = ()
        elif info.kind != "exec":
            path = (*parent.steps, CHOICES_STEP)
        else:
            path = (*parent.steps, info.tool_name or "?")
        events = recorder.events[run_id]
        handed = [d for d in delivered if d.run is not None and d.run.run_id == run_id]
        handed.extend(_deliveries(recorder.handovers.get(run_id, ()), path))
        owner = runtime if runtime is not None else recorder.runtimes.get(run_id)
        trace = LoopTrace.from_events(
            events,
            cap=cap if parent is None and cap is not None else effective_cap(None),
            steering_mode=getattr(owner, "steering_mode", "skip"),
            schedule=schedule,
            # what the run can call: its array, and the deferred tools tool_search may load
            tool_names=[*info.tools, *info.deferred],
            requests=recorder.requests[run_id] if recorder.provider_requests is not None else None,
        )
        trace.handed_over = handed
        trace.prompts = opening_prompts(trace)
        trace.event_times = recorder.times[run_id]
        trace.annotations = recorder.annotations[run_id]
        trace.system_prompt = getattr(owner, "system_prompt", None)
        trace.model_input = ModelInput.of(info.system_prompt, info.tool_choice, info.tool_specs)
        if cap is None and trace.termination == "max_iterations":  # it ended at its own cap
            trace.cap = trace.model_calls
        trace.run = info
        trace.path = RunAddress("/".join(path))
        node = TraceTree(trace, info, parent=parent)
        nodes[run_id] = node
        if parent is None:
            roots.append(node)
        else:
            parent.children.append(node)
    return roots


def _deliveries(handovers: Sequence[Handover], path: RunPath) -> list[Delivery]:
    """What a run took from the runtime's queues as ``Delivery`` records, placed as a schedule
    places its own: after a call, for the next round; at the first poll, for round 0; at the
    end of a round or for a follow-up, for the next round."""
    out: list[Delivery] = []
    for h in handovers:
        p = h.point
        after = p.calls_in_run - 1 if p.call_index is not None else None
        target = p.round + 1 if p.batch_done or p.call_index is not None else 0
        if p.hook == "follow_up":
            target = p.round + 1
        out.extend(
            Delivery(m, p.hook, after, target, p.call_index, None, p.run, path) for m in h.messages
        )
    return out


__all__ = ["CHOICES_STEP", "Subject", "TraceTree", "run_exec", "run_exec_sync"]
