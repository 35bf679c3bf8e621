"""Trajectory assertions: did the run call the right tools, with the right arguments?

``assert_tool_results`` looks at what the tools returned; a regression in an agent is usually
in what the *model* chose: a tool it no longer calls, one it calls twice, arguments that
drifted.  ``assert_trajectory`` compares the tool calls a run made with the calls a test
expects, in one of four modes, and compares arguments exactly, not at all, by the listed keys,
or with a matcher per tool or per value::

    assert_trajectory(trace, ["search_flights", {"name": "book_flight", "args": {"seats": 2}}],
                      mode="strict", args="subset")

The mode names say what ``expected`` is to the run: ``strict`` (the same calls in the same
order), ``unordered`` (the same calls in any order), ``subset`` (``expected`` is a subset of
the run: it made at least these) and ``superset`` (``expected`` is a superset of the run: it
made nothing else).  Calls are paired one to one (a maximum bipartite matching, so an early
loose entry never steals the only call a later strict entry fits), and a failure is a
``TrajectoryMismatch`` naming the first missing, extra or out-of-order call and the argument
path that differs, then the run's timeline.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from openprogram_testing.core.matchers import (
    ARG_MODES,
    Approx,
    ArgCheck,
    ExpectedCall,
    MadeCall,
    MatcherError,
    Matches,
    arguments_difference,
    expected_calls,
    value_difference,
    value_matcher,
)
from openprogram_testing.core.render import lane_text, timeline_text
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.core.tree import TraceTree

if TYPE_CHECKING:
    from openprogram_testing.core.tree import TraceTree

Mode: TypeAlias = Literal["strict", "unordered", "subset", "superset"]

MODES: tuple[str, ...] = ("strict", "unordered", "subset", "superset")
MismatchKind: TypeAlias = Literal["missing", "extra", "order", "arguments"]


class TrajectoryMismatch(AssertionError):
    """The run's tool calls are not the expected ones.  Carries the facts: ``kind`` (missing,
    extra, order, arguments), the ``expected`` entry and the ``made`` call concerned (either may
    be ``None``), ``arg_path`` (``args.passengers[0].name``) when an argument differs, the
    ``mode``, and ``reason``: the one line the message starts with."""

    def __init__(
        self,
        reason: str,
        *,
        kind: MismatchKind,
        mode: str,
        expected: ExpectedCall | None,
        made: MadeCall | None,
        arg_path: str | None,
        timeline: str,
    ) -> None:
        super().__init__(f"{reason}\n\nrun timeline:\n{timeline}")
        self.reason = reason
        self.kind = kind
        self.mode = mode
        self.expected = expected
        self.made = made
        self.arg_path = arg_path
        self.timeline_shown = True  # the plugin prints the timeline only once


# -- reading both sides ----------------------------------------------------------------------


def made_calls(
    subject: LoopTrace | TraceTree, *, run: str | Sequence[str] | None = None, nested: bool = False
) -> list[MadeCall]:
    """The tool calls of a trace, or of a tree's run at ``run``; with ``nested=True`` the calls
    of the runs nested in it too, each right after the call that started its run."""

    if isinstance(subject, LoopTrace):
        if run:
            raise TypeError("run= addresses a nested run of a TraceTree (run_exec / exec_runner)")
        return [_made(i, c, "") for i, c in enumerate(subject.tool_calls)]
    if not isinstance(subject, TraceTree):
        raise TypeError(f"expected a LoopTrace or a TraceTree, got {type(subject).__name__}")
    try:
        node = subject[run] if run else subject
    except KeyError as exc:  # a wrong path is the test's failure, shown with the tree
        raise AssertionError(f"{exc.args[0]}\n\nrun timeline:\n{timeline_text(subject)}") from None
    out: list[MadeCall] = []
    stack: list[tuple[TraceTree, int]] = [(node, 0)]
    pending: dict[int, list[Any]] = {}
    # Depth first without recursion (a deep tree must not hit the recursion limit): each frame
    # is a run and the position of its next call.
    while stack:
        tree, at = stack.pop()
        calls = pending.setdefault(id(tree), tree.trace.tool_calls)
        if at >= len(calls):
            continue
        call = calls[at]
        out.append(_made(len(out), call, tree.path))
        stack.append((tree, at + 1))
        if nested:
            started = [c for c in tree.children if c.tool_call_id == call.id]
            stack.extend((c, 0) for c in reversed(started))
    return out


def _made(index: int, call: Any, lane: str) -> MadeCall:
    return MadeCall(index, call.name, call.arguments, call.raw_arguments, call.id, lane)


# -- pairing -----------------------------------------------------------------------------------


class _Pairing:
    """Which made call each expected entry is paired with: a maximum bipartite matching over
    the entries and calls that fit (same name, arguments fit).  Exact plain entries are looked
    up by their arguments' JSON; the rest are tried against the calls of their name only, so
    thousands of calls stay fast; augmenting paths (Kuhn) fix what the greedy first pass got
    wrong."""

    def __init__(
        self, expected: list[ExpectedCall], made: list[MadeCall], checks: Any, stop_early: bool
    ) -> None:
        self.expected, self.made, self.checks = expected, made, checks
        self.by_name: dict[str, list[int]] = {}
        for call in made:
            self.by_name.setdefault(call.name, []).append(call.index)
        self.fits: dict[tuple[int, int], bool] = {}
        self.of_expected: dict[int, int] = {}
        self.of_made: dict[int, int] = {}
        self._greedy()
        for e in range(len(expected)):
            if e not in self.of_expected and not self._augment(e) and stop_early:
                break  # the verdict is known: this entry has no call

    def fit(self, e: int, m: int) -> bool:
        key = (e, m)
        found = self.fits.get(key)
        if found is None:
            want = self.expected[e]
            found = self.fits[key] = (
                arguments_difference(want, self.made[m], self.checks(want.name)) is None
            )
        return found

    def _greedy(self) -> None:
        buckets: dict[tuple[str, str], list[int]] = {}
        for call in reversed(self.made):
            if call.raw_arguments is None:
                buckets.setdefault((call.name, _key(call.arguments)), []).append(call.index)
        cursor: dict[str, int] = {}
        for want in self.expected:
            plain = isinstance(want.args, Mapping) and self.checks(want.name) == "exact"
            if plain and _is_plain(want.args):
                bucket = buckets.get((want.name, _key(want.args)), [])
                while bucket and bucket[-1] in self.of_made:
                    bucket.pop()
                if bucket:
                    self._pair(want.index, bucket.pop())
                continue
            candidates = self.by_name.get(want.name, [])
            start = cursor.get(want.name, 0) if want.args is None else 0
            for pos in range(start, len(candidates)):
                m = candidates[pos]
                if m not in self.of_made and self.fit(want.index, m):
                    self._pair(want.index, m)
                    if want.args is None:
                        cursor[want.name] = pos + 1
                    break

    def _pair(self, e: int, m: int) -> None:
        self.of_expected[e] = m
        self.of_made[m] = e

    def _augment(self, root: int) -> bool:
        """Pair the unpaired entry ``root`` along an augmenting path (Kuhn's algorithm, depth
        first without recursion: thousands of calls must not hit the recursion limit)."""
        seen: set[int] = set()
        stack: list[list[int]] = [[root, 0]]  # [entry, next candidate position]
        taken: list[int] = []  # the call each frame but the last reached its child through
        while stack:
            frame = stack[-1]
            candidates = self.by_name.get(self.expected[frame[0]].name, [])
            deeper = False
            while frame[1] < len(candidates):
                m = candidates[frame[1]]
                frame[1] += 1
                if m in seen or not self.fit(frame[0], m):
                    continue
                seen.add(m)
                taken.append(m)
                owner = self.of_made.get(m)
                if owner is None:
                    for (e, _), call in zip(stack, taken, strict=True):
                        self._pair(e, call)
                    return True
                stack.append([owner, 0])
                deeper = True
                break
            if not deeper:
                stack.pop()
                if taken:
                    taken.pop()
        return False


def _key(args: Any) -> str:
    """The JSON an exact plain entry is looked up by; a value that has none (nested past the
    recursion limit, an integer past the digit limit) gets a key of its own, equal to no other,
    and is compared by ``arguments_difference`` instead."""
    try:
        return json.dumps(args, sort_keys=True, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return f"\x00{id(args)}"


def _is_plain(value: Any) -> bool:
    """JSON data with no matcher in it (a plain entry is found by its JSON; a ``$`` key is an
    operator, ``$literal`` included).  Any depth: the walk keeps its own stack."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, Mapping):
            for k, v in item.items():
                if not isinstance(k, str) or k.startswith("$"):
                    return False
                todo.append(v)
        elif isinstance(item, list):
            todo.extend(item)
        elif not (
            item is None
            or isinstance(item, str | int | bool)
            or (isinstance(item, float) and math.isfinite(item))
        ):
            return False
    return True


# -- the assertion ----------------------------------------------------------------------------


TrajectoryListener = Callable[[dict[str, Any]], None]
"""Told of every trajectory check: ``{"mode", "args", "run", "passed"}`` (the coverage report
lists which tests checked a trajectory, and how)."""

_listeners: list[TrajectoryListener] = []
_listeners_lock = threading.Lock()


def add_trajectory_listener(listener: TrajectoryListener) -> None:
    """Call ``listener(check)`` for every trajectory check from now on."""
    with _listeners_lock:
        _listeners.append(listener)


def remove_trajectory_listener(listener: TrajectoryListener) -> None:
    """Stop calling ``listener`` (one not registered is ignored)."""
    with _listeners_lock:
        if listener in _listeners:
            _listeners.remove(listener)


def _announce(mode: str, args: Any, run: Any, passed: bool) -> None:
    if not _listeners:
        return
    if isinstance(args, str):
        how = args
    elif isinstance(args, Mapping):
        how = "per tool"
    else:
        how = "custom"
    where = "/".join(run) if run and not isinstance(run, str) else (run or "")
    check = {"mode": mode, "args": how, "run": where, "passed": passed}
    with _listeners_lock:
        listeners = list(_listeners)
    for listener in listeners:
        listener(check)


def trajectory_mismatch(
    subject: LoopTrace | TraceTree,
    expected: Sequence[Any],
    *,
    mode: Mode = "strict",
    args: ArgCheck | Mapping[str, ArgCheck] = "exact",
    run: str | Sequence[str] | None = None,
    nested: bool = False,
) -> TrajectoryMismatch | None:
    """What ``assert_trajectory`` would raise, or ``None`` when the trajectory fits (the
    scenario runner reports it as a line instead of raising)."""
    if mode not in MODES:
        raise ValueError(f"unknown trajectory mode {mode!r}; use one of {', '.join(MODES)}")
    checks = _checks(args)
    wanted = expected_calls(expected)
    made = made_calls(subject, run=run, nested=nested)
    found = _strict(wanted, made, checks) if mode == "strict" else None
    if mode != "strict":
        found = _matched(mode, wanted, made, checks)
    _announce(mode, args, run, found is None)
    if found is None:
        return None
    kind, want, call, path, reason = found
    where = f"in run {run if isinstance(run, str) else '/'.join(run)}: " if run else ""
    return TrajectoryMismatch(
        f"{where}trajectory ({mode}, {len(wanted)} expected, {len(made)} made): {reason}",
        kind=kind,
        mode=mode,
        expected=want,
        made=call,
        arg_path=path,
        timeline=lane_text(subject, run),
    )


def assert_trajectory(
    subject: LoopTrace | TraceTree,
    expected: Sequence[Any],
    *,
    mode: Mode = "strict",
    args: ArgCheck | Mapping[str, ArgCheck] = "exact",
    run: str | Sequence[str] | None = None,
    nested: bool = False,
) -> None:
    """The tool calls of the run (a ``LoopTrace``, a ``TraceTree``'s outer run, or with ``run=``
    its nested run at that path; ``nested=True`` adds the calls of the runs nested inside) fit
    ``expected`` in ``mode`` (strict, unordered, subset, superset).  ``args`` compares
    arguments: ``exact``, ``ignore``, ``subset`` (the listed keys), or per tool name a mode or
    ``check(expected_args, actual_args) -> bool``.  An entry without ``args`` checks the name
    alone.  Raises ``TrajectoryMismatch``."""
    __tracebackhide__ = True
    failure = trajectory_mismatch(subject, expected, mode=mode, args=args, run=run, nested=nested)
    if failure is not None:
        raise failure


Found: TypeAlias = tuple[MismatchKind, ExpectedCall | None, MadeCall | None, str | None, str]


def _checks(args: Any) -> Callable[[str], ArgCheck]:
    def valid(check: Any, where: str) -> ArgCheck:
        if callable(check) or check in ARG_MODES:
            return check  # type: ignore[no-any-return]
        raise ValueError(f"{where}: use one of {', '.join(ARG_MODES)} or a callable, got {check!r}")

    if isinstance(args, Mapping):
        per_tool = {name: valid(check, f"args[{name!r}]") for name, check in args.items()}
        default = per_tool.pop("*", "exact")
        return lambda name: per_tool.get(name, default)
    single = valid(args, "args")
    return lambda name: single


def _strict(
    expected: list[ExpectedCall], made: list[MadeCall], checks: Callable[[str], ArgCheck]
) -> Found | None:
    def fits(e: ExpectedCall, m: MadeCall) -> bool:
        return e.name == m.name and arguments_difference(e, m, checks(e.name)) is None

    for i in range(max(len(expected), len(made))):
        if i >= len(made):
            want = expected[i]
            return (
                "missing",
                want,
                None,
                None,
                f"missing {want.describe()} at call {i}: the run made only {len(made)} call(s)",
            )
        if i >= len(expected):
            return ("extra", None, made[i], None, f"extra {made[i].describe()}: not expected")
        want, call = expected[i], made[i]
        if fits(want, call):
            continue
        if want.name == call.name:
            path = arguments_difference(want, call, checks(want.name))
            return ("arguments", want, call, _path(path), f"{call.describe()}: {path}")
        if not any(fits(e, call) for e in expected[i:]):
            return (
                "extra",
                want,
                call,
                None,
                f"extra {call.describe()}: expected {want.describe()} at call {i}",
            )
        later = next((m for m in made[i + 1 :] if fits(want, m)), None)
        if later is None:
            return (
                "missing",
                want,
                call,
                None,
                f"missing {want.describe()} at call {i}: the run made {call.describe()} instead",
            )
        return (
            "order",
            want,
            call,
            None,
            f"out of order: expected {want.describe()} at call "
            f"{i}, the run made it later as call {later.index}; at call {i} it made "
            f"{call.describe()}",
        )
    return None


def _matched(
    mode: str, expected: list[ExpectedCall], made: list[MadeCall], checks: Any
) -> Found | None:
    pairing = _Pairing(expected, made, checks, stop_early=mode != "superset")
    if mode in ("unordered", "subset"):
        for want in expected:
            if want.index in pairing.of_expected:
                continue
            same = [m for m in made if m.name == want.name and m.index not in pairing.of_made]
            if same:
                path = arguments_difference(want, same[0], checks(want.name))
                return (
                    "arguments",
                    want,
                    same[0],
                    _path(path),
                    f"missing {want.describe()} "
                    f"(expected[{want.index}]): the nearest, {same[0].describe()}, differs "
                    f"at {path}",
                )
            return (
                "missing",
                want,
                None,
                None,
                f"missing {want.describe()} (expected[{want.index}]): the run made no "
                f"{'other ' if want.name in pairing.by_name else ''}call of {want.name}",
            )
    if mode in ("unordered", "superset"):
        for call in made:
            if call.index not in pairing.of_made:
                return (
                    "extra",
                    None,
                    call,
                    None,
                    f"extra {call.describe()}: not expected"
                    + (
                        " (no entry left for it)"
                        if any(e.name == call.name for e in expected)
                        else ""
                    ),
                )
    return None


def _path(difference: str | None) -> str | None:
    return difference.split(":", 1)[0] if difference else None


__all__ = [
    "ARG_MODES",
    "MODES",
    "Approx",
    "ExpectedCall",
    "MadeCall",
    "MatcherError",
    "Matches",
    "TrajectoryListener",
    "TrajectoryMismatch",
    "add_trajectory_listener",
    "arguments_difference",
    "assert_trajectory",
    "expected_calls",
    "made_calls",
    "remove_trajectory_listener",
    "trajectory_mismatch",
    "value_difference",
    "value_matcher",
]
