"""Hostile expectations: an expected value a careless test writes, read everywhere matchers are.

``hostile_expectations()`` draws a ``HostileExpectation``: the expected arguments of one call with
one hostile ingredient (a ``Kind``: an unknown or misspelled ``$`` operator at any depth, an
unknown sibling of a known one, a lone tolerance, a bad tolerance or pattern, a matcher standing
for the whole arguments, a number past float range, a value thousands of levels deep, a value
with ``$`` keys inside ``$literal``) and what must follow: ``refused`` (a ``MatcherError``
naming ``operator`` where the value is read) or judged (a verdict, and for the run that made
exactly the expected value, a pass).  ``check_hostile_expectation`` reads it through
``assert_trajectory`` (every mode and argument check), ``SteeringSchedule.when`` and the scenario
models of ``expect.trajectory`` and ``when:``, and raises ``OutcomeMismatch`` naming the reader
that answered otherwise: a traceback, a refusal of a good value, or a verdict on a bad one.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

from hypothesis import strategies as st

from openprogram.types import AssistantMessage, TextContent, ToolCall, UserMessage
from openprogram_testing.core.matchers import MatcherError, _shown
from openprogram_testing.core.steering import SteeringSchedule
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.frontends.scenarios.expect_models import TrajectoryCall
from openprogram_testing.frontends.scenarios.model import WhenDef
from openprogram_testing.judges.trajectory import TrajectoryMismatch, assert_trajectory

from .checks import OutcomeMismatch

Kind = Literal[
    "unknown_operator",
    "unknown_sibling",
    "lone_tolerance",
    "bad_tolerance",
    "bad_pattern",
    "whole_arguments",
    "huge_number",
    "deep",
    "literal",
]
KINDS: tuple[Kind, ...] = get_args(Kind)

TYPOS = ("$regx", "$REGEX", "$Regex", "$eq", "$aprox", "$APPROX", "$tol", "$flags", "$gt", "$")
"""Misspellings and operators of other matcher languages a test writer reaches for."""
BAD_TOLERANCES: tuple[Any, ...] = (-1, -0.5, "1", [1], None, True, float("nan"), float("inf"))
BAD_PATTERNS: tuple[Any, ...] = (["^a"], 5, None, {"a": 1}, "(", "[z-a]")
DEEP = (1500, 3000, 5000)
"""Nesting of the ``deep`` kind: past the interpreter's recursion limit."""


class HostileExpectation:
    """Expected ``args`` of a call to ``tool``, the arguments the run ``made``, and the outcome
    every reader must give: ``refused`` naming ``operator`` (``None``: no operator is to blame,
    as for a matcher in place of the arguments), or a verdict, a pass when ``passes``.  Not a
    dataclass: its ``repr`` (what hypothesis prints of an example) stays short and finite for a
    value thousands of levels deep."""

    __slots__ = ("args", "kind", "made", "operator", "passes", "refused", "tool")

    def __init__(
        self,
        kind: Kind,
        args: Any,
        made: dict[str, Any],
        refused: bool,
        operator: str | None = None,
        *,
        passes: bool = False,
        tool: str = "t0",
    ) -> None:
        self.kind, self.args, self.made, self.refused = kind, args, made, refused
        self.operator, self.passes, self.tool = operator, passes, tool

    def __repr__(self) -> str:

        outcome = f"refused naming {self.operator!r}" if self.refused else "judged"
        return (
            f"HostileExpectation({self.kind}: args={_shown(self.args, 200)}, "
            f"made={_shown(self.made, 200)}, {outcome}{', passes' if self.passes else ''})"
        )


def _nest(value: Any, path: list[str]) -> dict[str, Any]:
    """``value`` under the argument names ``path`` (``["a", "b"]``: ``{a: {b: value}}``)."""
    for key in reversed(path[1:]):
        value = {key: value}
    return {path[0]: value}


def _deep(depth: int) -> Any:
    value: Any = 1
    for k in range(depth):
        value = {"k": value} if k % 2 else [value]
    return value


@st.composite
def _hostile(draw: st.DrawFn) -> HostileExpectation:
    kind = draw(st.sampled_from(KINDS))
    path = draw(st.lists(st.sampled_from(("a", "b", "city", "item")), min_size=1, max_size=4))
    made = _nest("x", path)
    unknown = draw(
        st.one_of(
            st.sampled_from(TYPOS),
            st.text("abcdefghijklmnopqrstuvwxyz_", min_size=1, max_size=8).map(lambda t: "$" + t),
        ).filter(lambda name: name not in ("$regex", "$approx", "$abs", "$rel", "$literal"))
    )
    if kind == "unknown_operator":
        return HostileExpectation(kind, _nest({unknown: "x"}, path), made, True, unknown)
    if kind == "unknown_sibling":
        known: dict[str, Any] = draw(st.sampled_from(({"$regex": "x"}, {"$approx": 1, "$abs": 1})))
        return HostileExpectation(kind, _nest({**known, unknown: 1}, path), made, True, unknown)
    if kind == "lone_tolerance":
        name = draw(st.sampled_from(("$abs", "$rel")))
        return HostileExpectation(kind, _nest({name: 1}, path), made, True, name)
    if kind == "bad_tolerance":
        name = draw(st.sampled_from(("$abs", "$rel")))
        bad = draw(st.sampled_from(BAD_TOLERANCES))
        value = {"$approx": 240, name: bad}
        return HostileExpectation(kind, _nest(value, path), made, True, name)
    if kind == "bad_pattern":
        bad = draw(st.sampled_from(BAD_PATTERNS))
        return HostileExpectation(kind, _nest({"$regex": bad}, path), made, True, "$regex")
    if kind == "whole_arguments":
        whole = draw(
            st.sampled_from(({"$regex": "a"}, {"$approx": 1}, {"$approx": 1, "$rel": 0.1}))
            | st.integers(-3, 3).map(lambda n: {"$literal": n})
        )
        return HostileExpectation(kind, whole, made, True, None)
    if kind == "huge_number":
        exponent = draw(st.integers(309, 5000))
        if draw(st.booleans()):  # a matcher past float range: refused
            value = {"$approx": 10**exponent}
            return HostileExpectation(kind, _nest(value, path), made, True, "$approx")
        huge = _nest(10**exponent, path)  # plain data past float range: judged, equal to itself
        return HostileExpectation(kind, huge, huge, False, passes=True)
    if kind == "deep":
        depth = draw(st.sampled_from(DEEP))
        deep = _nest(_deep(depth), path)
        return HostileExpectation(kind, deep, _nest(_deep(depth), path), False, passes=True)
    keys = draw(st.lists(st.sampled_from(("$ref", "$regex", "$id", "plain")), min_size=1))
    literal = {key: k for k, key in enumerate(keys)}
    return HostileExpectation(
        kind, _nest({"$literal": literal}, path), _nest(dict(literal), path), False, passes=True
    )


def hostile_expectations() -> st.SearchStrategy[HostileExpectation]:
    """Expected arguments with one hostile ingredient, each with the outcome it must get."""
    return _hostile()


def _trace(case: HostileExpectation) -> Any:

    call = ToolCall(id="c0", name=case.tool, arguments=case.made)
    messages: list[Any] = [
        UserMessage(content="go"),
        AssistantMessage(content=[call], stop_reason="toolUse"),
        AssistantMessage(content=[TextContent(text="done")]),
    ]
    return LoopTrace(events=[], messages=messages, termination="completed", model_calls=2)


def _readers(case: HostileExpectation) -> list[tuple[str, Any]]:
    """``(name, read)``: each place that reads expected arguments, as a call that raises what
    that place raises (a ``TrajectoryMismatch`` is a verdict, anything else an answer)."""

    trace = _trace(case)
    out: list[tuple[str, Any]] = []
    for mode in ("strict", "unordered", "subset", "superset"):
        for check in ("exact", "subset", "ignore"):
            out.append(
                (
                    f"assert_trajectory(mode={mode}, args={check})",
                    lambda m=mode, c=check: assert_trajectory(
                        trace, [(case.tool, case.args)], mode=m, args=c
                    ),
                )
            )
    out.append(
        ("SteeringSchedule.when", lambda: SteeringSchedule().when(case.tool, "m", args=case.args))
    )
    if case.kind != "deep":  # a scenario file is at most 100 levels deep: not read there
        out.append(("expect.trajectory", lambda: TrajectoryCall(name=case.tool, args=case.args)))
        out.append(("when:", lambda: WhenDef(tool=case.tool, args=case.args)))
    return out


def check_hostile_expectation(case: HostileExpectation) -> None:
    """Every reader gives ``case`` its outcome (see the module docstring), or
    ``OutcomeMismatch`` names the first that did not."""
    from pydantic import ValidationError

    problems: list[str] = []
    for name, read in _readers(case):
        try:
            read()
        except MatcherError as exc:
            if not case.refused:
                problems.append(f"{name}: refused a good expectation: {exc}")
            elif case.operator is not None and (
                exc.operator != case.operator and case.operator not in str(exc)
            ):
                problems.append(f"{name}: refused without naming {case.operator}: {exc}")
            continue
        except ValidationError as exc:  # the scenario models: our refusal, as pydantic shows it
            text = str(exc)
            if not case.refused:
                problems.append(f"{name}: refused a good expectation: {text[:300]}")
            elif case.operator is not None and case.operator not in text:
                problems.append(f"{name}: refused without naming {case.operator}: {text[:300]}")
            continue
        except TrajectoryMismatch as exc:
            if case.refused:
                problems.append(f"{name}: judged a value it must refuse: {exc.reason}")
            elif case.passes:
                problems.append(
                    f"{name}: failed the run that made the expected value: {exc.reason}"
                )
            continue
        except Exception as exc:  # a traceback: never an answer
            problems.append(f"{name}: raised {type(exc).__name__}: {str(exc)[:200]}")
            continue
        if case.refused:
            problems.append(f"{name}: accepted a value it must refuse")
    if problems:
        raise OutcomeMismatch(
            f"hostile expectation ({case.kind}) read wrongly:\n  " + "\n  ".join(problems[:8])
        )


__all__ = [
    "KINDS",
    "HostileExpectation",
    "check_hostile_expectation",
    "hostile_expectations",
]
