"""Running a scenario through the real loop and judging the run.

``run_scenario`` never raises for a failing expectation: the ``ScenarioResult`` says what
failed, then shows the timeline.  Every run has a wall-clock limit (``options.time_limit_s``,
else the caller's, else ``DEFAULT_TIME_LIMIT_S``): a run or a regex that goes past it fails its
scenario by name instead of hanging a directory run.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openprogram import CancelledRun, ProviderError, run_sync
from openprogram.events import AgentEnd
from openprogram.loop import ABORTED_TEXT
from openprogram.providers.base import Provider
from openprogram.runtime import Runtime
from openprogram.texts import clip, whole_text, whole_values
from openprogram.types import Usage
from openprogram_testing.core.approvals import ApprovalScriptError, ScriptedReviewer
from openprogram_testing.core.dialogue import UserLine
from openprogram_testing.core.spans import SpanCapture, span_tree_entries
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import LoopTrace, render_timeline, run_loop
from openprogram_testing.core.tree import Subject, TraceTree, run_exec
from openprogram_testing.judges import invariants
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.session import use_cassette
from openprogram_testing.transport.schema_provider import SchemaDrivenProvider
from openprogram_testing.transport.scripted import (
    ScriptedProvider,
    ScriptedTurn,
    ToolNotOffered,
    call,
    think,
)

from .checks import cassette_file
from .expectations import check_expectations
from .imports import load_runtime
from .loader import load_scenario
from .model import FunctionChoice, Scenario, TurnDef
from .replay import cassette_adapter, mutations_for
from .stubs import build_tools

DEFAULT_TIME_LIMIT_S = 60.0
"""A scenario's wall-clock limit when neither the file nor the caller sets one."""

MIN_CHECK_S = 0.5
"""Time the expectation checks always get, even when the run used up the limit."""


"""What a scenario's run leaves: a bare loop run's trace, or the tree of a ``Runtime.exec`` run."""

FAILURE_LIMIT = 4_000
"""Characters kept of one failure line of a scenario (see ``openprogram.texts.clip``)."""


@dataclass(slots=True)
class ScenarioResult:
    """The outcome of one scenario: ``passed``, the failed expectations (``failures``), the trace
    and its rendered timeline.  ``failure_text`` is what test reports show.

    ``trace`` is the outermost run's ``LoopTrace``; a scenario run through ``Runtime.exec``
    also has its ``tree`` (a ``TraceTree``: ``result.tree["plan/compare"]``), which the
    timeline and the snapshot show whole.  The ``timeline`` text is rendered when first read
    (a failure, ``-v``, a result file), not for every passing scenario of a suite."""

    name: str
    path: str | None
    passed: bool
    failures: list[str] = field(default_factory=list)
    trace: LoopTrace | None = None
    duration_s: float = 0.0
    snapshot_written: bool = False
    tree: TraceTree | None = None
    _timeline: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # one runaway value (a 20 MB reply quoted by an expectation) must not become a 20 MB
        # failure message, terminal block and report: every line is clipped, with the count cut
        self.failures = [clip(f, FAILURE_LIMIT) for f in self.failures]

    @property
    def timeline(self) -> str:
        """The run's timeline as text (every lane of a tree of runs; empty without a run)."""
        if self._timeline is None:
            ran = self.tree if self.tree is not None else self.trace
            if ran is None:
                self._timeline = ""
            else:
                self._timeline = render_timeline(ran)
        return self._timeline

    @property
    def summary(self) -> str:
        """Which scenario failed and its failed expectations, one a line (no timeline)."""
        if self.passed:
            return ""
        lines = [f"scenario {self.name!r} failed" + (f" ({self.path})" if self.path else "")]
        lines.extend(f"  - {f}" for f in self.failures)
        return whole_text("\n".join(lines))

    @property
    def failure_text(self) -> str:
        """The ``summary``, then the timeline: what test reports show."""
        if self.passed:
            return ""
        if not self.timeline:
            return self.summary
        return whole_text(f"{self.summary}\n\ntimeline:\n{self.timeline}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what ``openprogram-testing run --results-dir`` writes and ``show`` reads).
        ``trace`` is the outermost run; ``runs`` lists every run with its tool path (one entry
        for a bare loop run, the nested runs of a ``Runtime.exec`` run after it)."""

        nodes: list[tuple[str, LoopTrace]] = []
        if isinstance(self.tree, TraceTree):
            nodes = [(node.path, node.trace) for node in self.tree.walk()]
        elif self.trace is not None:
            nodes = [("", self.trace)]
        runs = [_run_dict(path, trace) for path, trace in nodes]
        record: dict[str, Any] = whole_values({
            "kind": "openprogram-scenario-result",
            "name": self.name,
            "path": self.path,
            "passed": self.passed,
            "failures": list(self.failures),
            "duration_s": round(self.duration_s, 4),
            "timeline": self.timeline,
            "trace": runs[0] if runs else {"events": [], "cap": None, "steering_mode": "skip",
                                            "termination": None},
            "runs": runs,
        })  # fmt: skip
        return record


def _run_dict(path: str, trace: LoopTrace) -> dict[str, Any]:

    end = next((e for e in reversed(trace.events) if isinstance(e, AgentEnd)), None)
    return {
        "path": path,
        "events": [e.model_dump(mode="json") for e in trace.events],
        "cap": trace.cap,
        "steering_mode": trace.steering_mode,
        "termination": end.termination if end is not None else None,
    }


def run_scenario(
    scenario: Scenario | str | Path,
    *,
    update_snapshots: bool = False,
    snapshot: Any = None,
    snapshot_hint: str = "update_snapshots=True",
    time_limit_s: float | None = None,
    import_roots: Sequence[str | Path] = (),
) -> ScenarioResult:
    """Run a scenario (or load and run a file) through the real loop and check it.  Never
    raises for a failing expectation; a broken scenario file raises ``ScenarioError``.

    ``snapshot`` is a syrupy assertion (the pytest collector passes one); without it
    ``update_snapshots`` decides whether a missing or different snapshot is written, and
    ``snapshot_hint`` is the flag failure messages tell the user to pass.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario, import_roots=import_roots)

    return run_sync(
        arun_scenario(
            scenario,
            update_snapshots=update_snapshots,
            snapshot=snapshot,
            snapshot_hint=snapshot_hint,
            time_limit_s=time_limit_s,
        )
    )


async def arun_scenario(
    scenario: Scenario,
    *,
    update_snapshots: bool = False,
    snapshot: Any = None,
    snapshot_hint: str = "update_snapshots=True",
    time_limit_s: float | None = None,
) -> ScenarioResult:
    """The async twin of ``run_scenario``."""
    started = time.perf_counter()
    limit = scenario.options.time_limit_s or time_limit_s or DEFAULT_TIME_LIMIT_S
    deadline = time.monotonic() + limit
    name = scenario.display_name
    path = str(scenario.path) if scenario.path is not None else None

    def failed(message: str) -> ScenarioResult:
        return ScenarioResult(
            name, path, False, [message], duration_s=time.perf_counter() - started
        )

    capture = _span_capture(scenario)
    if isinstance(capture, str):
        return failed(capture)
    with capture if capture is not None else contextlib.nullcontext():
        task = asyncio.ensure_future(execute(scenario))  # (the task copies the capture's context)
    try:
        done, _ = await asyncio.wait({task}, timeout=limit)
        if not done:
            await _stop(task)
            return failed(
                f"the run did not finish within the time limit of {limit:g} s "
                "(options.time_limit_s)"
            )
        trace, provider, failures = task.result()
    except Exception as exc:
        return failed(f"the run raised {type(exc).__name__}: {_text(exc)}")
    if provider is not None:
        try:
            provider.assert_complete()
        except ToolNotOffered as exc:
            failures.append(menu_failure(exc, trace))
        except AssertionError as exc:
            failures.append(f"model script: {exc}")
    failures.extend(_check_schedule(trace))
    check_deadline = max(deadline, time.monotonic() + MIN_CHECK_S)
    failures.extend(check_expectations(scenario, trace, deadline=check_deadline))
    if scenario.check_invariants:
        failures.extend(_check_invariants(trace))
    if capture is not None:
        failures.extend(_check_spans(scenario, capture))
    written = False
    if scenario.expect.snapshot:
        from .snapshots import check_snapshot  # syrupy: only when a snapshot is asked for

        problem, written = check_snapshot(
            scenario, trace, snapshot=snapshot, update=update_snapshots, hint=snapshot_hint
        )
        if problem:
            failures.append(problem)

    tree = trace if isinstance(trace, TraceTree) else None
    return ScenarioResult(
        name=name,
        path=path,
        passed=not failures,
        failures=failures,
        trace=trace.trace if isinstance(trace, TraceTree) else trace,
        duration_s=time.perf_counter() - started,
        snapshot_written=written,
        tree=tree,
    )


def _span_capture(scenario: Scenario) -> SpanCapture | str | None:
    """The capture of the scenario's spans when ``expect.spans`` asks for them (else ``None``);
    the failure line when the OpenTelemetry SDK is not installed."""
    if scenario.expect.spans is None:
        return None
    try:
        return SpanCapture()
    except ImportError as exc:
        return f"expect.spans: {exc}"


def _check_spans(scenario: Scenario, capture: SpanCapture) -> list[str]:
    """``expect.spans`` against the span tree of the scenario's runs, both drawn as indented
    names when they differ."""
    expected = span_tree_entries(scenario.expect.spans, "expect.spans")
    got = capture.tree()
    if got == expected:
        return []
    return [
        "expect.spans: the runs' span tree differs\n  expected:\n"
        + _drawn(expected, "    ")
        + "\n  got:\n"
        + _drawn(got, "    ")
    ]


def _drawn(tree: list[tuple[str, list[Any]]], indent: str) -> str:
    lines: list[str] = []

    def walk(nodes: list[tuple[str, list[Any]]], depth: int) -> None:
        for name, children in nodes:
            lines.append(f"{indent}{'  ' * depth}{name}")
            walk(children, depth + 1)

    walk(tree, 0)
    return "\n".join(lines) or f"{indent}(no spans)"


def _check_schedule(ran: Subject) -> list[str]:
    """The steering entries no run reached and the simulated user's mismatches, as failures
    (``SteeringSchedule.assert_complete``)."""
    outer = getattr(ran, "trace", ran)  # a TraceTree's outermost run, or the trace itself
    schedule = getattr(outer, "schedule", None)
    if schedule is None:
        return []
    try:
        schedule.assert_complete()
    except AssertionError as exc:
        return [str(exc)]
    return []


def _check_invariants(ran: Subject) -> list[str]:
    """The loop invariants on every run of ``ran`` (a trace, or a tree with its nested runs)."""

    try:
        invariants.check_invariants(ran)  # through the module: tests swap it
    except invariants.InvariantViolation as exc:
        return [exc.summary]  # the timeline is shown below
    return []


STOP_GRACE_S = 2.0
"""How long a run past its limit may take to wind down once cancelled."""


async def _stop(task: asyncio.Future[Any]) -> None:
    """Cancel a run past its limit and give it ``STOP_GRACE_S`` to end (the loop answers the
    open calls); a run that ignores cancellation is left behind rather than waited for."""
    task.cancel()
    await asyncio.wait({task}, timeout=STOP_GRACE_S)
    if task.done() and not task.cancelled():
        task.exception()  # retrieved: a late error must not be logged as "never retrieved"


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return "<unprintable>"


def loop_options(scenario: Scenario, runtime: Runtime | None = None) -> dict[str, Any]:
    """``run_loop`` keyword arguments from ``options`` (a ``runtime:`` factory's Runtime gives
    the defaults the scenario leaves open)."""
    options = scenario.options
    choice: Any = options.tool_choice
    if choice is None and "tool_choice" not in options.model_fields_set:
        choice = "auto"  # what Runtime.exec sends: the same request, whichever way it is run
    if isinstance(choice, FunctionChoice):
        choice = {"type": "function", "name": choice.name}
    system_prompt = scenario.system_prompt
    timeout = options.tool_timeout_s
    steering_mode = options.steering_mode
    if runtime is not None:
        system_prompt = system_prompt if system_prompt is not None else runtime.system_prompt
        timeout = timeout if timeout is not None else runtime.tool_timeout_s
        if "steering_mode" not in options.model_fields_set:
            steering_mode = runtime.steering_mode
    return dict(
        schedule=build_schedule(scenario),
        system_prompt=system_prompt,
        max_iterations=options.max_iterations,
        tool_choice=choice,
        parallel_tool_calls=options.parallel_tool_calls,
        steering_mode=steering_mode,
        tool_timeout_s=timeout,
    )


def _runtime(scenario: Scenario, provider: Provider, model: str) -> Runtime | None:
    """The ``Runtime`` the scenario runs on, or ``None`` for a bare loop run.

    A scenario with nested runs (an imported agentic function, an ``agentic:`` stub), with
    imported tools or with a ``runtime:`` factory runs through ``Runtime.exec``, as the
    application does: its runs are traced as a tree and its requests are the ones ``exec``
    sends.  The scenario's own options win over the factory's defaults."""
    if scenario.runtime is not None:
        roots = [scenario.root] if scenario.root is not None else []
        runtime = load_runtime(scenario.runtime, provider, roots)
        if "model" in scenario.options.model_fields_set or scenario.cassette is not None:
            runtime.model = model
    elif scenario.imported_tools or _has_agentic_stub(scenario) or has_deferred_stub(scenario):
        runtime = Runtime(provider, model=model)
    else:
        return None
    options = scenario.options
    if scenario.system_prompt is not None:
        runtime.system_prompt = scenario.system_prompt
    if options.tool_timeout_s is not None:
        runtime.tool_timeout_s = options.tool_timeout_s
    if "steering_mode" in options.model_fields_set or scenario.runtime is None:
        runtime.steering_mode = options.steering_mode
    return runtime


def has_deferred_stub(scenario: Scenario) -> bool:
    """A stub marked ``defer``: the run needs ``Runtime.exec``, which splits the menu and
    offers ``tool_search``."""
    return any(t.defer for t in scenario.tools)


def _has_agentic_stub(scenario: Scenario) -> bool:
    return any(o.agentic is not None for t in scenario.tools for o in [t, *(t.sequence or [])])


async def execute(
    scenario: Scenario,
) -> tuple[Subject, ScriptedProvider | SchemaDrivenProvider | None, list[str]]:
    """Run the scenario; returns what ran (a ``LoopTrace``, or the ``TraceTree`` of a run
    through ``Runtime.exec``), the scripted provider (``None`` for cassettes) and failures
    found while running (a cassette left with unplayed interactions, an exception of
    ``exec`` that is not the run's own ending)."""
    model = scenario.options.model
    if scenario.cassette is None:
        provider = build_provider(scenario)
        done, found = await _run(scenario, provider, model)
        return done, provider, found

    cassette = scenario.cassette
    cassette_path, refused = cassette_file(scenario)
    if cassette_path is None:
        raise ValueError(refused)
    adapter, recorded_model, count = cassette_adapter(cassette.api, cassette_path, model)
    if "model" not in scenario.options.model_fields_set:
        model = recorded_model  # unset: the recording's, so the replay sends what it recorded
    # Given: the run sends it, and the cassette compares it as any other part of the request
    # (the body's ``model``, or the request path for APIs that name the model there), so a
    # scenario never passes under a model name the recording did not answer.
    ran: Subject | None = None
    failures: list[str] = []
    try:
        with use_cassette(
            cassette_path,
            match_body=cassette.match_body,
            ignore_paths=cassette.ignore_paths,
            allow_unplayed=cassette.allow_unplayed,
            mutations=mutations_for(cassette.faults, count),
            fallback=scripted_turns(cassette.fallback_turns),
        ):
            ran, failures = await _run(scenario, adapter, model)
    except CassetteError as exc:
        if ran is None:
            raise
        return ran, None, [*failures, f"cassette: {exc}"]  # raised when the cassette closed
    return ran, None, failures


async def _run(scenario: Scenario, provider: Provider, model: str) -> tuple[Subject, list[str]]:
    """The scenario's run over ``provider`` (its script, or a cassette's adapter): a bare loop
    run, or a ``Runtime.exec`` run traced as a tree (see ``_runtime``)."""

    runtime = _runtime(scenario, provider, model)
    reviewer = build_reviewer(scenario, runtime)
    if reviewer is None:
        return await _run_on(scenario, provider, model, runtime)
    with Runtime.override(approval_gate=reviewer):
        ran, failures = await _run_on(scenario, provider, model, runtime)
    try:
        reviewer.assert_complete()
    except ApprovalScriptError as exc:
        failures.extend(f"approvals: {line}" for line in str(exc).splitlines())
    return ran, failures


def build_reviewer(scenario: Scenario, runtime: Runtime | None = None) -> ScriptedReviewer | None:
    """The scripted reviewer of ``approvals``: strict, so a request no entry fits fails the
    scenario (also with no ``approvals`` at all); ``None`` only when the scenario scripts no
    decision and its ``runtime:`` factory brings its own approval gate (the application's
    gate is then what the scenario tests)."""
    if not scenario.approvals and runtime is not None and runtime.approval_gate is not None:
        return None
    reviewer = ScriptedReviewer()
    for i, entry in enumerate(scenario.approvals):
        condition = entry.when
        tool = condition.tool if condition is not None else entry.tool
        args = condition.args if condition is not None else entry.args
        nth = condition.nth if condition is not None else entry.nth
        common: dict[str, Any] = dict(
            args=args, nth=nth, times=entry.times, required=not entry.optional
        )
        if entry.approve:
            reviewer.approve(tool, **common)
        elif entry.deny is not None:
            reviewer.deny(tool, entry.deny, **common)
        else:
            reviewer.modify(tool, entry.modify, **common)
        reviewer.rules[-1].label = f"approvals[{i}]"
    return reviewer


async def _run_on(
    scenario: Scenario, provider: Provider, model: str, runtime: Runtime | None
) -> tuple[Subject, list[str]]:
    tools = build_tools(scenario, provider, model, runtime)
    if runtime is None:
        trace = await run_loop(
            provider, scenario.prompt_list, model=model, tools=tools, **loop_options(scenario)
        )
        return trace, []

    options = loop_options(scenario, runtime)
    tree = await run_exec(
        runtime,
        scenario.prompt_list,
        schedule=options["schedule"],
        raises=False,
        tools=tools,
        tool_choice=options["tool_choice"],
        parallel_tool_calls=options["parallel_tool_calls"],
        max_iterations=options["max_iterations"],
    )
    failure = tree.exception
    ending = {"error": ProviderError, "aborted": CancelledRun}.get(tree.termination)
    if failure is None or (ending is not None and isinstance(failure, ending)):
        return tree, []
    return tree, [f"the run raised {type(failure).__name__}: {_text(failure)}"]


def menu_failure(refused: ToolNotOffered, ran: Subject) -> str:
    """The scripted provider's refusal of a call its model call's menu contradicts (one rule,
    enforced where the call is played: ``ToolNotOffered``), placed in the scenario file and in
    the run that made the call."""
    where = "the outermost run"
    if isinstance(ran, TraceTree):
        for node in ran.walk():
            if any(r.index == refused.request_index for r in node.trace.requests or ()):
                where = "the outermost run" if not node.path else f"run {node.path}"
                break
    return (
        f"script[{refused.turn_index}].calls[{refused.call_index}].name ({where}): "
        + refused.reason("'unknown_tool: true'")
    )


def build_provider(scenario: Scenario) -> ScriptedProvider | SchemaDrivenProvider:
    """The strict ``ScriptedProvider`` playing the scenario's model script (or the
    ``SchemaDrivenProvider`` that ``schema_driven`` describes)."""
    if scenario.schema_driven is not None:
        spec = scenario.schema_driven
        return SchemaDrivenProvider(
            seed=spec.seed, tools=spec.tools, per_round=spec.per_round, chunk_size=spec.chunk_size
        )

    return ScriptedProvider(scripted_turns(scenario.turns))


def scripted_turns(defs: Sequence[TurnDef]) -> list[ScriptedTurn]:
    """``ScriptedTurn``s of a scenario's turns (the model script, a cassette's fallback)."""

    turns = []
    for t in defs:
        parts: list[Any] = []
        if t.thinking is not None:
            parts.append(think(t.thinking))
        if t.text is not None:
            parts.append(t.text)
        parts.extend(
            call(c.name, c.args, id=c.id, raw=c.raw_args, unknown=c.unknown_tool) for c in t.calls
        )
        turns.append(
            ScriptedTurn(
                parts=parts,
                stop=t.stop,
                error=t.error if t.error is not None else (ABORTED_TEXT if t.aborted else None),
                error_status=t.status,
                error_retryable=t.retryable,
                error_retry_after_s=t.retry_after,
                aborted=t.aborted,
                cut=t.cut,
                chunk_size=t.chunk_size,
                usage=Usage(**t.usage.model_dump()) if t.usage is not None else None,
            )
        )
    return turns


def build_schedule(scenario: Scenario) -> SteeringSchedule | None:
    """The ``SteeringSchedule`` of ``steering``, ``follow_ups`` and ``simulated_user`` (``None``
    if all are empty).  Each entry carries its place in the file, for the failure of an entry
    never reached."""
    if not scenario.steering and not scenario.follow_ups and not scenario.simulated_user:
        return None

    schedule = SteeringSchedule()
    for i, entry in enumerate(scenario.steering):
        run, required, when = entry.run, not entry.optional, entry.when
        if entry.after_tool is not None:
            schedule.after_tool(entry.after_tool, entry.message, run=run, required=required)
        elif entry.after_call is not None:
            position = entry.after_call
            schedule.after_call(
                position.round, position.index, entry.message, run=run, required=required
            )
        elif entry.before_round is not None:
            schedule.before_round(entry.before_round, entry.message, run=run, required=required)
        elif when is not None:
            schedule.when(
                when.tool, entry.message, args=when.args, nth=when.nth, run=run, required=required
            )
        else:
            schedule.follow_up(entry.message, run=run, required=required)
        schedule.entries[-1].label = f"steering[{i}]"
    for k, message in enumerate(scenario.follow_ups):
        schedule.follow_up(message)
        schedule.entries[-1].label = f"follow_ups[{k}]"
    lines = [
        UserLine(line)
        if isinstance(line, str)
        else UserLine(line.say, line.expect, not line.optional)
        for line in scenario.simulated_user
    ]
    if lines:
        schedule.simulated_user(lines)
        for k, said in enumerate(schedule.entries[-len(lines) :]):
            said.label = f"simulated_user[{k}]"
    return schedule


__all__ = [
    "DEFAULT_TIME_LIMIT_S",
    "ScenarioResult",
    "arun_scenario",
    "build_provider",
    "build_reviewer",
    "build_schedule",
    "execute",
    "loop_options",
    "run_scenario",
]
