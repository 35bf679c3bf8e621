"""The plain-data example: tools with scripted behaviours, model turns, steering and options.

A generated example is plain frozen data (hashable, comparable, printable by hypothesis); it
builds the real objects (``ScriptedProvider``, dict tools, ``SteeringSchedule``) on demand and
runs them through the real loop, so the same value can be run, predicted and exported.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

from openprogram.runs import SteeringMode
from openprogram_testing.core.dialogue import UserLine
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import run_loop
from openprogram_testing.transport.scripted import (
    ScriptedCall,
    ScriptedProvider,
    ScriptedThinking,
    ScriptedTurn,
)

from .oracle import Expected, predict
from .universe import X_SCHEMA, CallKind, Ending, ToolBehaviour


@dataclass(frozen=True)
class GenTool:
    """A tool with a scripted behaviour: return ``value``, echo its arguments, raise
    ``RuntimeError(value)``, or — ``sequence`` — play the ``(behaviour, value)`` pairs in
    ``value`` one per executed call, the last one repeating (a tool that fails, then works)."""

    name: str
    behaviour: ToolBehaviour = "returns"
    value: Any = "ok"

    @property
    def outcomes(self) -> tuple[tuple[str, Any], ...]:
        """The ``(behaviour, value)`` played by successive executed calls (the last repeats)."""
        if self.behaviour == "sequence":
            return tuple(self.value)
        return ((self.behaviour, self.value),)

    def build(self) -> dict[str, Any]:
        """The tool in dict form, instant; a fresh call counter per build."""
        outcomes = self.outcomes
        count = [0]

        # Async, like the tools the YAML scenario runner builds: an exported example then takes
        # the same path through the loop when it is replayed from its file.
        async def execute(args: dict[str, Any]) -> Any:
            behaviour, value = outcomes[min(count[0], len(outcomes) - 1)]
            count[0] += 1
            if behaviour == "raises":
                raise RuntimeError(value)
            if behaviour == "echo":
                return args
            return value

        return {
            "spec": {
                "name": self.name,
                "description": f"test tool {self.name}",
                "parameters": X_SCHEMA,
            },
            "execute": execute,
        }


@dataclass(frozen=True)
class GenCall:
    """A scripted tool call: ``kind`` says which path of tool-call handling it exercises (valid,
    schema violation, raw unparsable arguments, unknown tool)."""

    name: str
    kind: CallKind = "valid"
    args: Any = None  # a dict; kept as ``Any`` so frozen dataclasses stay hashable-agnostic
    raw: str | None = None

    def scripted(self) -> ScriptedCall:
        return ScriptedCall(
            name=self.name,
            arguments=dict(self.args or {}),
            raw=self.raw,
            unknown=self.kind == "unknown",
        )


@dataclass(frozen=True)
class GenTurn:
    """One model response, streamed as thinking → text → calls, then ``ending``."""

    text: str | None = None
    thinking: str | None = None
    calls: tuple[GenCall, ...] = ()
    ending: Ending = "stop"
    error: str | None = None
    status: int | None = None
    retryable: bool | None = None
    chunk_size: int | None = None

    @property
    def kinds(self) -> set[str]:
        """Labels of what this turn exercises (used by the strategy sanity tests)."""
        out: set[str] = set()
        if self.text is not None:
            out.add("text")
        if self.thinking is not None:
            out.add("thinking")
        if len(self.calls) == 1:
            out.add("single_call")
        if len(self.calls) > 1:
            out.add("parallel_calls")
        out.update(f"call_{c.kind}" for c in self.calls)
        if self.ending != "stop":
            out.add(f"ending_{self.ending}")
        if self.chunk_size is not None:
            out.add("chunked")
        return out

    def scripted(self, chunk_size: int | None = None) -> ScriptedTurn:
        """The ``ScriptedTurn``; ``chunk_size`` overrides the turn's own chunking."""
        parts: list[Any] = []
        if self.thinking is not None:
            parts.append(ScriptedThinking(text=self.thinking))
        if self.text is not None:
            parts.append(self.text)
        parts.extend(c.scripted() for c in self.calls)
        return ScriptedTurn(
            parts=parts,
            stop="length" if self.ending == "length" else None,
            error=self.error if self.ending in ("error", "aborted") else None,
            error_status=self.status if self.ending == "error" else None,
            error_retryable=self.retryable if self.ending == "error" else None,
            aborted=self.ending == "aborted",
            cut=self.ending == "cut",
            chunk_size=chunk_size if chunk_size is not None else self.chunk_size,
        )


@dataclass(frozen=True)
class GenSteering:
    """One scheduled user message: exactly one of ``after_tool``, ``after_call`` ((round, index)),
    ``before_round``, ``follow_up``, ``when_tool`` (right after the ``nth`` executed call of
    that tool: a ``when:`` entry) or ``user`` (a line of the simulated user, said when the
    model finishes; ``expect``, if given, a pattern the reply it answers must fit)."""

    message: str
    after_tool: int | None = None
    after_call: tuple[int, int] | None = None
    before_round: int | None = None
    follow_up: bool = False
    when_tool: str | None = None
    nth: int = 1
    user: bool = False
    expect: str | None = None

    @property
    def kind(self) -> str:
        if self.follow_up:
            return "follow_up"
        if self.user:
            return "user"
        if self.when_tool is not None:
            return "when"
        if self.after_tool is not None:
            return "after_tool"
        if self.after_call is not None:
            return "after_call"
        return "before_round"


@dataclass(frozen=True)
class GeneratedScenario:
    """A generated loop run.  ``run()``/``run_sync()`` execute it through the real loop."""

    tools: tuple[GenTool, ...] = ()
    script: tuple[GenTurn, ...] = ()
    steering: tuple[GenSteering, ...] = ()
    prompt: str = "go"
    max_iterations: int | None = None
    steering_mode: SteeringMode = "skip"

    # -- building the real objects ----------------------------------------------------------
    def build_provider(self, chunk_size: int | None = None) -> ScriptedProvider:
        """A fresh strict ``ScriptedProvider`` (``chunk_size`` re-chunks every turn)."""
        return ScriptedProvider([t.scripted(chunk_size) for t in self.script])

    def build_tools(self) -> list[dict[str, Any]]:
        """Fresh dict-form tools."""
        return [t.build() for t in self.tools]

    def build_schedule(self) -> Any:
        """A fresh harness ``SteeringSchedule`` (``None`` when nothing is scheduled)."""
        if not self.steering:
            return None

        schedule = SteeringSchedule()
        # The simulated user's lines, in order, as one dialogue (each said once, when the model
        # finishes; a line the run never reached is no failure of the agent: not required).
        lines = [UserLine(i.message, i.expect, required=False) for i in self.steering if i.user]
        for item in self.steering:
            if item.user:
                continue
            if item.follow_up:
                schedule.follow_up(item.message)
            elif item.when_tool is not None:
                schedule.when(item.when_tool, item.message, nth=item.nth, required=False)
            elif item.after_tool is not None:
                schedule.after_tool(item.after_tool, item.message)
            elif item.after_call is not None:
                schedule.after_call(item.after_call[0], item.after_call[1], item.message)
            else:
                assert item.before_round is not None
                schedule.before_round(item.before_round, item.message)
        if lines:
            schedule.simulated_user(lines)
        return schedule

    # -- running ----------------------------------------------------------------------------
    async def run(self, chunk_size: int | None = None) -> Any:
        """Run through the real loop; returns the harness ``LoopTrace``."""

        return await run_loop(
            self.build_provider(chunk_size),
            [self.prompt],
            tools=self.build_tools(),
            schedule=self.build_schedule(),
            max_iterations=self.max_iterations,
            steering_mode=self.steering_mode,
        )

    def run_sync(self, chunk_size: int | None = None, *, runner: Any = None) -> Any:
        """``run()`` to completion; pass an ``asyncio.Runner`` to reuse one event loop."""
        if runner is not None:
            # The runner's loop directly: ``Runner.run`` re-installs a SIGINT handler per call,
            # a measurable share of a fast example.
            return runner.get_loop().run_until_complete(self.run(chunk_size))
        import asyncio

        return asyncio.run(self.run(chunk_size))

    # -- the oracle -------------------------------------------------------------------------
    def expected_outcome(self) -> Expected:
        """What the loop must produce for this example (the reference model's prediction),
        computed once per example: the value is frozen, so the prediction cannot change."""
        return self._expected

    @cached_property
    def _expected(self) -> Expected:
        return predict(self)

    @property
    def kinds(self) -> set[str]:
        """Labels of what this example exercises (turn kinds, steering kinds, tool behaviours,
        the predicted termination, skipped/delivered/undelivered): coverage checks use them."""
        out: set[str] = set()
        for t in self.script:
            out |= t.kinds
        out.update(f"steer_{s.kind}" for s in self.steering)
        if self.max_iterations is not None:
            out.add("max_iterations")
        out.add(f"mode_{self.steering_mode}")
        behaviours = {t.name: t.behaviour for t in self.tools}
        out.update(f"tool_{b}" for b in behaviours.values())
        raising = {t.name for t in self.tools if any(b == "raises" for b, _ in t.outcomes)}
        if any(c.name in raising and c.kind == "valid" for t in self.script for c in t.calls):
            out.add("raising_tool_called")
        expected = self.expected_outcome()
        out.add(f"termination_{expected.termination}")
        if any(r.skipped for r in expected.tool_results):
            out.add("skipped")
        if expected.delivered:
            out.add("delivered")
        if expected.undelivered:
            out.add("undelivered")
        return out
