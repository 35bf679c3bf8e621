"""Hypothesis strategies drawing tool-gating configurations, and a reference model of what a
configuration offers.

A ``GatingConfig`` is plain data: the tools (each with its gating options: exposure, the
sources it is unsafe for, a check that passes, fails or raises, environment variables it
needs, deferral, the toolsets it joins), user toolsets (with ``includes``, cycles allowed), and
one run's policy (toolset, sources, deny, allow, the runtime's disabled list, availability, the
tools loaded before the run).  ``build()`` makes the real objects (a ``Registry`` of
``@function`` tools, the ``Runtime`` and ``exec`` options); ``expected()`` says, without the
runtime's code, which tools the provider's array must hold and which deferred ones it must
leave out; ``check_gating(config)`` runs it and compares.

    from hypothesis import given
    from openprogram_testing.strategies import check_gating, gating_configs

    @given(gating_configs())
    def test_menus(config):
        check_gating(config)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from hypothesis import strategies as st

from openprogram import Registry, Runtime, function
from openprogram_testing.transport.scripted import ScriptedProvider

CheckKind = Literal["none", "pass", "fail", "raise"]

NAMES = ("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta")
SOURCES = ("sms", "telegram", "plan")
TOOLSETS = ("files", "net", "ops")
ENV = "OPENPROGRAM_GATING_STRATEGY_KEY"
"""The one environment variable a drawn tool may require: set or unset per example."""


@dataclass(frozen=True)
class GatedTool:
    """One tool's gating options."""

    name: str
    exposed: bool = True
    unsafe_for: tuple[str, ...] = ()
    check: CheckKind = "none"
    needs_env: bool = False
    defer: bool = False
    toolsets: tuple[str, ...] = ()


@dataclass(frozen=True)
class GatingConfig:
    """A registry and one run's gating policy (see the module docstring)."""

    tools: tuple[GatedTool, ...]
    includes: dict[str, tuple[str, ...]] = field(default_factory=dict)
    toolset: str | None = None
    sources: tuple[str, ...] = ()
    deny: tuple[str, ...] | None = None
    allow: tuple[str, ...] | None = None
    disabled: tuple[str, ...] = ()
    only_available: bool = False
    env_set: bool = False
    loaded: tuple[str, ...] = ()

    # -- the real objects ---------------------------------------------------------------------
    def build(self) -> tuple[Any, dict[str, Any], dict[str, Any]]:
        """``(registry, Runtime keyword arguments, exec keyword arguments)``."""

        registry = Registry()
        for tool in self.tools:
            function(
                registry=registry,
                name=tool.name,
                description=f"The {tool.name} tool.",
                parameters={"type": "object", "properties": {}},
                exposed=tool.exposed,
                unsafe_for=tool.unsafe_for,
                check_fn=_check(tool.check),
                requires_env=(ENV,) if tool.needs_env else (),
                defer=tool.defer,
                toolsets=tool.toolsets,
            )(_body(tool.name))
        for name, included in self.includes.items():
            registry.define_toolset(
                name, [t.name for t in self.tools if name in t.toolsets], includes=included
            )
        runtime = {"disabled_tools": list(self.disabled), "only_available": self.only_available}
        run: dict[str, Any] = {"tools_source": list(self.sources)}
        if self.toolset is not None:
            run["toolset"] = self.toolset
        if self.deny is not None:
            run["tools_deny"] = list(self.deny)
        if self.allow is not None:
            run["tools_allow"] = list(self.allow)
        return registry, runtime, run

    # -- the reference model ------------------------------------------------------------------
    def expected(self) -> tuple[list[str], list[str]]:
        """``(the provider array's tool names, the deferred names it leaves out)``."""
        by_name = {t.name: t for t in self.tools}
        order = self._members()
        menu = [by_name[n] for n in order if by_name[n].exposed]
        kept = []
        for tool in menu:
            if set(tool.unsafe_for) & set(self.sources):
                continue
            if self.deny is not None and tool.name in self.deny:
                continue
            if self.allow is not None and tool.name not in self.allow:
                continue
            if tool.name in self.disabled:
                continue
            if self.only_available and not self._available(tool):
                continue
            kept.append(tool)
        deferred = [t.name for t in kept if t.defer]
        if not deferred:
            return [t.name for t in kept], []
        hidden = [n for n in deferred if n not in self.loaded]
        array = [t.name for t in kept if t.name not in hidden]
        return [*array, "tool_search"], hidden

    def _members(self) -> list[str]:
        """The tool names of the run's toolset, in the order the registry gives them."""
        if self.toolset is None or self.toolset == "full":
            return [t.name for t in self.tools]
        out: list[str] = []
        visiting: set[str] = set()

        def walk(name: str) -> None:
            visiting.add(name)
            for child in self.includes.get(name, ()):
                if child in visiting:
                    continue
                if child == "full":
                    visiting.add(child)
                    out.extend(t.name for t in self.tools if t.exposed and t.name not in out)
                    continue
                walk(child)
            out.extend(t.name for t in self.tools if name in t.toolsets and t.name not in out)

        walk(self.toolset)
        return out

    def _available(self, tool: GatedTool) -> bool:
        if tool.check in ("fail", "raise"):
            return False
        return not tool.needs_env or self.env_set


def _check(kind: CheckKind) -> Callable[[], bool] | None:
    if kind == "none":
        return None
    if kind == "pass":
        return lambda: True
    if kind == "fail":
        return lambda: False

    def explode() -> bool:
        raise RuntimeError("the check raised")

    return explode


def _body(name: str) -> Callable[[], str]:
    def body() -> str:
        return name

    body.__name__ = name
    return body


# -- strategies ---------------------------------------------------------------------------------


@st.composite
def gated_tools(draw: Any, names: Sequence[str] = NAMES) -> tuple[GatedTool, ...]:
    """Tools with distinct names and every gating option drawn."""
    chosen = draw(st.lists(st.sampled_from(names), min_size=0, max_size=len(names), unique=True))
    return tuple(
        GatedTool(
            name,
            exposed=draw(st.booleans()),
            unsafe_for=tuple(draw(st.lists(st.sampled_from(SOURCES), max_size=2, unique=True))),
            check=draw(st.sampled_from(("none", "pass", "fail", "raise"))),
            needs_env=draw(st.booleans()),
            defer=draw(st.booleans()),
            toolsets=tuple(draw(st.lists(st.sampled_from(TOOLSETS), max_size=2, unique=True))),
        )
        for name in chosen
    )


@st.composite
def gating_configs(draw: Any) -> GatingConfig:
    """A registry of drawn tools, toolsets with ``includes`` (cycles and ``"full"`` included)
    and one run's policy: every layer, each left at its default (restrict nothing) often."""
    tools = draw(gated_tools())
    names = [t.name for t in tools]
    used = sorted({s for t in tools for s in t.toolsets})
    includes = {
        name: tuple(draw(st.lists(st.sampled_from([*TOOLSETS, "full"]), max_size=2, unique=True)))
        for name in used
    }
    for name in list(includes):  # an included toolset must be defined: keep the known ones
        includes[name] = tuple(i for i in includes[name] if i in includes or i == "full")
    some = st.lists(st.sampled_from(names), unique=True) if names else st.just([])
    return GatingConfig(
        tools=tools,
        includes=includes,
        toolset=draw(st.sampled_from([None, "full", *used])),
        sources=tuple(draw(st.lists(st.sampled_from(SOURCES), max_size=2, unique=True))),
        deny=draw(st.none() | some.map(tuple)),
        allow=draw(st.none() | some.map(tuple)),
        disabled=tuple(draw(some)),
        only_available=draw(st.booleans()),
        env_set=draw(st.booleans()),
        loaded=tuple(draw(some)),
    )


def check_gating(config: GatingConfig) -> None:
    """Run ``config`` through ``Runtime.exec`` with a scripted model and assert the provider's
    array and the run's deferred tools are the reference model's (an ``AssertionError`` naming
    the configuration otherwise)."""
    import os

    registry, runtime_options, run_options = config.build()
    provider = ScriptedProvider(["ok"])
    runtime = Runtime(provider, registry=registry, **runtime_options)
    runtime.loaded_tools.add(config.loaded)
    previous = os.environ.pop(ENV, None)
    if config.env_set:
        os.environ[ENV] = "set"
    try:
        runtime.exec("go", **run_options)
    finally:
        os.environ.pop(ENV, None)
        if previous is not None:
            os.environ[ENV] = previous
    array, hidden = config.expected()
    got = provider.requests[0].tool_names
    record = runtime.last_run
    deferred = list(record.run.deferred) if record is not None and record.run else []
    if got != array or deferred != hidden:
        raise AssertionError(
            f"gating configuration {config!r}\n  offered {got}, expected {array}\n"
            f"  left out {deferred}, expected {hidden}"
        )


__all__ = [
    "GatedTool",
    "GatingConfig",
    "check_gating",
    "gated_tools",
    "gating_configs",
]
