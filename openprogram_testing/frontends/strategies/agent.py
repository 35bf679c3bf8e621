"""Property tests for the user's own agent: generated runs over the project's real tools.

``agent_scenarios(tools)`` draws an ``AgentScenario``: rounds of schema-derived calls (valid
arguments and labelled near misses), steering and follow-up messages at random points, and
failures injected around the real tool (the call raises before the tool runs, or after it ran).
``check_agent_run`` checks a run against the loop invariants, the exact outcome of every
labelled call and injected failure, and the user's own predicates on the trace;
``check_agent(tools, predicates=...)`` does all of it as one hypothesis property, and writes a
falsifying example as a YAML scenario naming the tools by import path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

from hypothesis import strategies as st

from openprogram import run_sync
from openprogram.runs import STEERING_MODES, SteeringMode
from openprogram.tools import AgentTool, as_agent_tool
from openprogram_testing.core.trace import run_loop
from openprogram_testing.core.tree import run_exec
from openprogram_testing.judges.invariants import check_invariants
from openprogram_testing.transport.scripted import Part, ScriptedProvider, ScriptedTurn

from .agent_export import report_agent_failure
from .model import GeneratedScenario, GenSteering
from .profiles import property_settings
from .schema import (
    ALL_LABELS,
    CallLabel,
    SchemaCall,
    draw_arguments,
    label_applies,
    near_miss,
    tool_model,
)

if TYPE_CHECKING:
    from openprogram_testing.core.trace import LoopTrace

_calling: ContextVar[str | None] = ContextVar("openprogram_agent_calling", default=None)
"""The id of the generated call whose real tool is running: a model call made while it is set
comes from a run nested in that tool (an agentic function's ``runtime.exec``)."""

Predicate = Callable[["LoopTrace"], Any]
FailureWhere = Literal["before", "after"]
FAILURE_MESSAGES = ("injected failure", "service unavailable")


class InjectedToolFailure(RuntimeError):
    """Raised around a real tool by a generated scenario (before it runs, or after it ran)."""


@dataclass(frozen=True)
class AgentCall:
    """One call of a generated round: the schema-derived call and an optional injected failure
    (``where``: the tool does not run / the tool ran, then the call fails anyway)."""

    call: SchemaCall
    failure: FailureWhere | None = None
    message: str = FAILURE_MESSAGES[0]

    @property
    def expected_error(self) -> str | None:
        """The exact error result the loop must give, ``None`` when the tool's result stands (a
        failure injected ``after`` a tool that raised itself leaves the tool's error)."""
        if self.call.expected_error is not None:
            return self.call.expected_error  # refused before the tool (or a failure) can run
        return self.message if self.failure is not None else None


class Served(NamedTuple):
    """One model call of a run through a runtime, in the order they were made: ``round`` of the
    outer run's generated rounds (``None``: a final text), or, with ``owner`` (the id of the
    generated call whose tool started the nested run), a nested run's final text."""

    round: int | None
    owner: str | None = None


@dataclass(frozen=True)
class AgentScenario:
    """A generated run of the user's agent (plain data; ``run_sync`` runs it)."""

    rounds: tuple[tuple[AgentCall, ...], ...]
    steering: tuple[GenSteering, ...] = ()
    steering_mode: SteeringMode = "skip"
    prompt: str = "go"
    final_text: str = "done"
    tools: tuple[Any, ...] = field(default=(), compare=False, repr=False)
    runtime: Callable[[Any], Any] | None = field(default=None, compare=False, repr=False)
    """A factory ``f(provider) -> Runtime``: runs go through ``Runtime.exec`` (nested runs of
    agentic functions included) instead of the bare loop."""
    nested: list[LoopTrace] = field(default_factory=list, compare=False, repr=False)
    """The traces of the runs nested in the last run (with ``runtime``)."""
    raised: set[str] = field(default_factory=set, compare=False, repr=False)
    """Ids of the calls whose real tool raised during the last run (the tool's own error then
    stands instead of a failure injected after it)."""
    served: list[Served] = field(default_factory=list, compare=False, repr=False)
    """What each model call of the last run (with ``runtime``) was answered with, in order."""

    def call_id(self, round_index: int, index: int) -> str:
        return f"call_{round_index}_{index}"

    @property
    def calls(self) -> dict[str, AgentCall]:
        """Every call by its id."""
        return {
            self.call_id(r, i): c
            for r, batch in enumerate(self.rounds)
            for i, c in enumerate(batch)
        }

    def round_turn(self, round_index: int) -> ScriptedTurn:
        """The model's turn for generated round ``round_index`` (its calls, with their ids)."""
        parts: list[Part] = []
        for i, c in enumerate(self.rounds[round_index]):
            scripted = c.call.scripted()
            scripted.id = self.call_id(round_index, i)
            parts.append(scripted)
        return ScriptedTurn(parts=parts)

    def build_provider(self) -> ScriptedProvider:
        """The model: one turn per round, then text turns (enough for every follow-up).

        Through a runtime, the rounds are the outer run's: a model call made inside a tool
        (a nested run of an agentic function, whose menu is its own) is answered with the
        final text, so no round is played into a run that does not offer its tools.  Each
        answer is recorded in ``served`` (what the exported script replays, in order)."""
        finals = len(self.steering) + 1
        if self.runtime is None:
            turns: list[Any] = [self.round_turn(r) for r in range(len(self.rounds))]
            return ScriptedProvider(turns + [self.final_text] * finals, strict=False)
        self.served.clear()
        outer = iter(range(len(self.rounds)))

        def answer(_request: Any) -> ScriptedTurn | str:
            owner = _calling.get()
            if owner is not None:
                self.served.append(Served(None, owner))
                return self.final_text
            r = next(outer, None)
            self.served.append(Served(r))
            return self.final_text if r is None else self.round_turn(r)

        # One nested run per executed call at most, unless an agentic function runs several.
        budget = len(self.rounds) + finals + 2 * len(self.calls) + 20
        return ScriptedProvider([answer] * budget, strict=False)

    def build_tools(self) -> list[AgentTool]:
        """The real tools, each wrapped so this scenario's injected failures happen around it."""
        failures = {cid: c for cid, c in self.calls.items() if c.failure is not None}
        self.raised.clear()
        return [_wrap(as_agent_tool(tool), failures, self.raised) for tool in self.tools]

    def build_schedule(self) -> Any:

        return GeneratedScenario(steering=self.steering).build_schedule()

    async def run(self) -> LoopTrace:

        if self.runtime is not None:
            runtime = self.runtime(self.build_provider())
            tree = await run_exec(
                runtime, self.prompt, schedule=self.build_schedule(), tools=self.build_tools()
            )
            self.nested[:] = [node.trace for node in tree.walk() if node is not tree]
            return tree.trace
        return await run_loop(
            self.build_provider(),
            [self.prompt],
            tools=self.build_tools(),
            schedule=self.build_schedule(),
            steering_mode=self.steering_mode,
        )

    def run_sync(self, *, runner: Any = None) -> LoopTrace:
        """``run()`` to completion; pass an ``asyncio.Runner`` to reuse one event loop."""
        if runner is not None:
            return runner.get_loop().run_until_complete(self.run())  # type: ignore[no-any-return]

        return run_sync(self.run())


def _wrap(tool: AgentTool, failures: dict[str, AgentCall], raised: set[str]) -> AgentTool:
    original = tool.execute
    accepts = tool.accepts

    async def execute(
        arguments: Any, tool_call_id: str = "", cancel: Any = None, on_update: Any = None
    ) -> Any:
        planned = failures.get(tool_call_id)
        if planned is not None and planned.failure == "before":
            raise InjectedToolFailure(planned.message)
        given = {"tool_call_id": tool_call_id, "cancel": cancel, "on_update": on_update}
        calling = _calling.set(tool_call_id)
        try:
            value = original(arguments, **{k: v for k, v in given.items() if k in accepts})
            if inspect.isawaitable(value):
                value = await value
        except Exception:
            raised.add(tool_call_id)
            raise
        finally:
            _calling.reset(calling)
        if planned is not None:
            raise InjectedToolFailure(planned.message)
        return value

    extras = frozenset({"tool_call_id", "cancel", "on_update"})
    return AgentTool(tool.spec, execute, tool.validate, True, extras, tool.source, tool.meta)


_FAILURE: st.SearchStrategy[FailureWhere | None] = st.sampled_from(
    (None, None, None, "before", "after")
)
_MODE: st.SearchStrategy[SteeringMode] = st.sampled_from(STEERING_MODES)
_MESSAGE = st.sampled_from(FAILURE_MESSAGES)
_ANSWERED = r"(?i)^done"
"""A simulated user's ``expect``: the model's final text (``AgentScenario.final_text``) fits
it, so a line with it answers the reply a correct agent gives."""
_STEER = st.sampled_from(("after_call", "before_round", "follow_up", "when", "user"))


def agent_scenarios(
    tools: Sequence[Any],
    *,
    max_rounds: int = 3,
    max_calls: int = 3,
    labels: Sequence[CallLabel] = ALL_LABELS,
    steering: bool = True,
    failures: bool = True,
) -> st.SearchStrategy[AgentScenario]:
    """Generated runs over ``tools`` (anything the loop accepts as a tool): 1-``max_rounds``
    rounds of 1-``max_calls`` schema-derived calls, each possibly with an injected failure, and
    up to two steering messages: after a call, before a round, a follow-up, a ``when:`` entry
    (right after the 1st or 2nd call of a tool) or a line of a simulated user (answering the
    model's final text, with or without an ``expect`` it fits).  Simplest first: one valid
    call, no failure, no steering."""
    tools = tuple(tools)
    if not tools:
        raise ValueError("agent_scenarios needs at least one tool")
    models = [tool_model(t) for t in tools]
    possible = {m.name: [lb for lb in labels if label_applies(lb, m.schema)] for m in models}
    tool_index = st.integers(0, len(models) - 1)

    @st.composite
    def one_call(draw: st.DrawFn) -> AgentCall:
        model = models[draw(tool_index)]
        options = possible[model.name] or ["valid"]
        label = options[draw(st.integers(0, len(options) - 1))]
        call = near_miss(model, label, draw_arguments(draw, model.generator), draw)
        where = draw(_FAILURE) if failures else None
        message = draw(_MESSAGE) if where is not None else FAILURE_MESSAGES[0]
        return AgentCall(call, where, message)

    rounds = st.lists(
        st.lists(one_call(), min_size=1, max_size=max_calls).map(tuple),
        min_size=1,
        max_size=max_rounds,
    ).map(tuple)

    @st.composite
    def steering_items(draw: st.DrawFn) -> tuple[GenSteering, ...]:
        items = []
        for i in range(draw(st.integers(0, 2)) if steering else 0):
            kind = draw(_STEER)
            if kind == "follow_up":
                items.append(GenSteering(f"follow {i}", follow_up=True))
            elif kind == "when":  # steering right after the nth call of a tool (``when:``)
                name = models[draw(tool_index)].name
                nth = draw(st.integers(1, 2))
                items.append(GenSteering(f"steer {i}", when_tool=name, nth=nth))
            elif kind == "user":  # a simulated user's line, answering the model's final text
                expect = draw(st.sampled_from((None, _ANSWERED)))
                items.append(GenSteering(f"user {i}", user=True, expect=expect))
            elif kind == "before_round":
                items.append(GenSteering(f"steer {i}", before_round=draw(st.integers(0, 2))))
            else:
                where = (draw(st.integers(0, max_rounds - 1)), draw(st.integers(0, max_calls - 1)))
                items.append(GenSteering(f"steer {i}", after_call=where))
        return tuple(items)

    @st.composite
    def scenario(draw: st.DrawFn) -> AgentScenario:
        drawn_rounds = draw(rounds)
        mode = draw(_MODE)
        return AgentScenario(drawn_rounds, draw(steering_items()), mode, tools=tools)

    return scenario()


class AgentCheckFailed(AssertionError):
    """A generated run of the user's agent broke a check (invariant, label or predicate)."""


def agent_problems(scenario: AgentScenario, trace: LoopTrace) -> list[str]:
    """Every labelled call whose result differs from its label (skipped calls excepted)."""
    out = []
    calls = scenario.calls
    for result in trace.tool_results:
        planned = calls.get(result.tool_call_id)
        if planned is None or result.skipped:
            continue
        want = planned.expected_error
        if planned.failure == "after" and result.tool_call_id in scenario.raised:
            want = None  # the real tool raised first: its own error stands
            if not result.is_error:
                out.append(f"{result.tool_call_id}: the tool raised, got a result {result.text!r}")
        if want is not None and (not result.is_error or result.text != want):
            out.append(
                f"{result.tool_call_id} ({planned.call.label}"
                f"{', failure ' + planned.failure if planned.failure else ''}): expected the "
                f"error {want!r}, got {'an error' if result.is_error else 'a result'} "
                f"{result.text!r}"
            )
    return out


def check_agent_run(
    scenario: AgentScenario, trace: LoopTrace, predicates: Sequence[Predicate] = ()
) -> None:
    """The loop invariants, every labelled outcome, then each predicate (a predicate fails by
    raising or by returning a false value other than ``None``)."""

    check_invariants(trace)
    for nested in scenario.nested:
        check_invariants(nested)
    problems = agent_problems(scenario, trace)
    if problems:
        raise AgentCheckFailed(
            "labelled outcomes differ:\n" + "\n".join(f"  - {p}" for p in problems)
        )
    for predicate in predicates:
        verdict = predicate(trace)
        if verdict is not None and not verdict:
            name = getattr(predicate, "__name__", repr(predicate))
            raise AgentCheckFailed(f"predicate {name} is false for this run")


def check_agent(
    tools: Sequence[Any] | Callable[[], Sequence[Any]],
    *,
    predicates: Sequence[Predicate] = (),
    settings: Any = None,
    import_paths: dict[str, str] | None = None,
    runtime: Callable[[Any], Any] | None = None,
    **options: Any,
) -> None:
    """Run generated scenarios over the user's tools as one hypothesis property and check each
    run (``check_agent_run``).  ``tools`` is the tool list or a factory returning a fresh one
    per run (for tools with state); ``settings`` defaults to the active profile
    (``property_settings()``), always without a deadline; ``options`` go to
    ``agent_scenarios``.  A falsifying example is shrunk, written as a YAML scenario (tools by
    import path; ``import_paths`` maps a tool name to ``module:attribute`` where it cannot be
    found by itself) and attached to the failure.  ``runtime`` is a factory
    ``f(provider) -> Runtime`` when the agent is built on ``Runtime.exec``: runs then go through
    it (its configuration, nested runs of agentic functions; each nested run's trace is checked
    against the invariants too)."""
    from hypothesis import given
    from hypothesis import settings as Hsettings

    factory: Callable[[], Sequence[Any]] | None = tools if callable(tools) else None
    offered = tuple(factory() if factory is not None else tools)  # type: ignore[arg-type]
    runner = _runner()
    # No deadline: the first run of a real agent pays for its imports and schema builds.
    chosen = Hsettings(settings if settings is not None else property_settings(), deadline=None)

    @chosen
    @given(scenario=agent_scenarios(offered, **options))
    def agent_property(scenario: AgentScenario) -> None:
        if factory is not None:
            scenario = replace(scenario, tools=tuple(factory()))
        if runtime is not None:
            scenario = replace(scenario, runtime=runtime)
        with report_agent_failure(scenario, import_paths):
            check_agent_run(scenario, scenario.run_sync(runner=runner), predicates)

    try:
        agent_property()
    finally:
        runner.close()


def _runner() -> Any:
    import asyncio

    return asyncio.Runner()


__all__ = [
    "AgentCall",
    "AgentCheckFailed",
    "AgentScenario",
    "InjectedToolFailure",
    "Served",
    "agent_problems",
    "agent_scenarios",
    "check_agent",
    "check_agent_run",
]
