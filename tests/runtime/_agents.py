"""Registered functions the ``Runtime.exec`` tests share (runtime, harness and report areas): a
plain ``add`` tool, and a ``research`` agent whose body runs one nested ``exec`` — the smallest
program with a tree of runs."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from openprogram import Function, Registry, Runtime, agentic_function, function
from openprogram_testing import call, turn


def register_add(registry: Registry) -> Function:
    """Register the plain function tool ``add(a, b)`` in ``registry`` (the tool most runtime tests
    offer beside the one under test) and return it."""

    @function(registry=registry)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return add


def register_answers(registry: Registry, **answers: str) -> list[Function]:
    """Register one no-argument function per keyword, named by the keyword and returning its
    text, and return them in order: stand-in tools (choice functions, batch steps) whose bodies do
    not matter to the test."""

    def answering(text: str) -> Callable[[], str]:
        def answer() -> str:
            return text

        return answer

    return [
        function(registry=registry, name=name, description=f"Answer {text!r}.")(answering(text))
        for name, text in answers.items()
    ]


def register_research(registry: Registry) -> Function:
    """Register ``research(topic)`` in ``registry`` and return it: an agentic function whose body
    runs ``runtime.exec(f"research {topic}")`` with the tools it inherits and answers
    ``"research: "`` + the nested answer."""

    @agentic_function(registry=registry)
    def research(topic: str, runtime: Runtime) -> str:
        """Research a topic with the model."""
        return "research: " + runtime.exec(f"research {topic}")

    return research


def research_agent() -> tuple[Registry, list[Function]]:
    """A fresh registry holding ``research`` and ``add``, with the tools ``[research, add]`` to
    offer the outer run."""
    registry = Registry()
    add = register_add(registry)
    return registry, [register_research(registry), add]


def research_script(*adds: tuple[int, int]) -> list[Any]:
    """The model's side of one :func:`research_agent` run: the outer model calls
    ``research("cats")``, the nested model calls ``add(a, b)`` once per pair (all in one turn) and
    then answers ``"inner answer"``, and the outer model answers ``"outer answer"``."""
    return [
        turn(call("research", {"topic": "cats"})),
        turn(*(call("add", {"a": a, "b": b}) for a, b in adds)),
        "inner answer",
        "outer answer",
    ]
