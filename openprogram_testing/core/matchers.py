"""Argument matchers: how a tool call the run made is compared with one a test names.

``assert_trajectory`` pairs whole runs of calls; steering conditions (``SteeringSchedule.when``)
fire on one call.  Both compare a call with the same matchers, defined here once: ``MadeCall``
and ``ExpectedCall`` (the two sides), ``value_matcher`` (the YAML forms ``{$regex: ...}`` and
``{$approx: ..., $abs: ..., $rel: ...}``, compiled patterns, callables) and
``arguments_difference`` (``exact``, ``ignore``, ``subset``, or a check per tool).
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from openprogram.texts import clip

ArgMode: TypeAlias = Literal["exact", "ignore", "subset"]
ArgCheck: TypeAlias = "ArgMode | Callable[[Mapping[str, Any], Mapping[str, Any]], bool]"
"""How one tool's arguments are compared: a mode, or ``check(expected_args, actual_args)``."""
ARG_MODES: tuple[str, ...] = ("exact", "ignore", "subset")


# -- the two sides -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MadeCall:
    """One tool call of the run: its position (0-based over the calls compared), the model's
    ``name`` and ``arguments`` (``raw_arguments`` when they were not JSON) and ``lane``, the
    path of the run that made it (``"plan/survey"``; ``""`` for the outer run)."""

    index: int
    name: str
    arguments: Mapping[str, Any]
    raw_arguments: str | None
    id: str
    lane: str = ""

    def describe(self) -> str:
        where = f" in run {self.lane}" if self.lane else ""
        if self.raw_arguments is not None:
            shown = f"non-JSON arguments {_clip(self.raw_arguments)!r}"
        else:
            shown = _clip(_json(self.arguments))
        return f"call {self.index} {self.name} {shown} ({self.id}{where})"


@dataclass(frozen=True, slots=True)
class ExpectedCall:
    """One entry of ``expected``: a tool name, and the arguments to compare (``None``: the name
    alone is checked), either a mapping (values may be matchers) or ``check(actual_args)``."""

    index: int
    name: str
    args: Mapping[str, Any] | Callable[[Mapping[str, Any]], bool] | None = None
    want: dict[str, Any] | None = field(default=None, init=False, compare=False, repr=False)
    """``args`` as they are compared (``arguments_matcher``), built once: an entry is compared
    with many calls."""

    def __post_init__(self) -> None:
        if isinstance(self.args, Mapping):
            object.__setattr__(self, "want", arguments_matcher(self.args))

    def describe(self) -> str:
        if self.args is None:
            return f"{self.name} (any arguments)"
        if callable(self.args):
            return f"{self.name} (arguments checked by {callable_name(self.args)})"
        return f"{self.name} {_clip(_json(self.args))}"


# -- argument matching ---------------------------------------------------------------------------


class Approx:
    """A number within ``abs`` (absolute) or ``rel`` (relative) of ``value``; YAML:
    ``{$approx: 100, $abs: 5}``.  Booleans and non-numbers never match."""

    __slots__ = ("abs", "rel", "value")

    def __init__(self, value: float, *, abs: float = 0.0, rel: float = 0.0) -> None:
        self.value = _finite(value, "the value ($approx)", negative=True)
        self.abs = _finite(abs, "the tolerance abs ($abs)", negative=False)
        self.rel = _finite(rel, "the tolerance rel ($rel)", negative=False)

    def __call__(self, actual: Any) -> bool:
        if not _is_number(actual):
            return False
        try:
            got = float(actual)
        except OverflowError:  # an int too large for a float is near no finite value
            return False
        tolerance = max(self.abs, self.rel * abs(self.value))
        return math.isfinite(got) and abs(got - self.value) <= tolerance

    def __repr__(self) -> str:
        return f"approx({self.value:g}, abs={self.abs:g}, rel={self.rel:g})"


def _finite(value: Any, what: str, *, negative: bool) -> float:
    """``value`` as a float, or the ``ValueError`` naming ``what`` and the value given: a
    bool, text, a list, NaN, infinity, a number too large for a float, or (for a tolerance) a
    negative number is refused."""
    bound = "" if negative else " >= 0"
    problem = f"approx: {what} must be a finite number{bound}, got {_shown(value)}"
    if not _is_number(value):
        raise ValueError(problem)
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(problem + " (too large for a float)") from None
    if not math.isfinite(number) or (not negative and number < 0):
        raise ValueError(problem)
    return number


def _shown(value: Any, limit: int = 80) -> str:
    """``repr(value)``, short: an integer too long to print (past Python's digit limit) is
    described, and a long text is clipped."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 200:
        return f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    try:
        return _clip(repr(value), limit)
    except (ValueError, RecursionError):
        return f"a {type(value).__name__} too deep or too large to show"


class Matches:
    """A string the regular expression ``pattern`` finds a match in (``search``); YAML:
    ``{$regex: "^Os"}``.  A pattern given as text runs on the ``regex`` engine when it is
    installed, stopped after ``MATCH_TIME_LIMIT_S`` (a pattern that backtracks without end is
    an error naming it, not a hung test); a compiled ``re.Pattern`` runs as it is."""

    __slots__ = ("pattern", "text")

    def __init__(self, pattern: str | re.Pattern[str]) -> None:
        text_pattern = isinstance(pattern, re.Pattern) and isinstance(pattern.pattern, str)
        if not (isinstance(pattern, str) or text_pattern):
            raise ValueError(  # not a pattern at all: say so, not what compiling it raised
                f"a regular expression ($regex) must be text, got {_shown(pattern)}"
            )
        self.text = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        try:
            if isinstance(pattern, re.Pattern):
                self.pattern: Any = pattern
            else:
                self.pattern = _engine().compile(pattern)
        except Exception as exc:  # re.error, regex.error, TypeError: all a bad pattern
            raise ValueError(f"invalid regular expression {pattern!r}: {exc}") from None

    def __call__(self, actual: Any) -> bool:
        if not isinstance(actual, str):
            return False
        limit, bounded = MATCH_TIME_LIMIT_S, False
        deadline = _DEADLINE.get()
        if deadline is not None:
            left = deadline - time.monotonic()
            if left <= 0:
                raise ValueError(self._late("the scenario's time limit"))
            limit, bounded = min(limit, left), left < limit
        if isinstance(self.pattern, re.Pattern):
            return self.pattern.search(actual) is not None
        try:
            return self.pattern.search(actual, timeout=limit) is not None
        except TimeoutError:
            within = "the scenario's time limit" if bounded else f"{MATCH_TIME_LIMIT_S:g} s"
            raise ValueError(self._late(within)) from None

    def _late(self, within: str) -> str:
        return (
            f"the regular expression {self.text!r} did not finish within {within} "
            "(catastrophic backtracking?); simplify it"
        )

    def __repr__(self) -> str:
        return f"matches({self.text!r})"


MATCH_TIME_LIMIT_S = 5.0
"""How long one ``Matches`` search may take on the ``regex`` engine."""

_DEADLINE: ContextVar[float | None] = ContextVar("openprogram_match_deadline", default=None)


@contextmanager
def match_deadline(deadline: float | None) -> Iterator[None]:
    """Inside, every ``Matches`` search also stops at ``deadline`` (a ``time.monotonic()``
    value; ``None``: no deadline), and one started after it fails at once: a scenario bounds
    all the regexes of its ``expect.trajectory`` by its ``time_limit_s``, not each search by
    ``MATCH_TIME_LIMIT_S`` (hundreds of calls times a slow pattern would run far past it)."""
    token = _DEADLINE.set(deadline)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def _engine() -> Any:
    try:
        import regex
    except ImportError:  # the harness without its testing extra: the standard engine
        return re
    return regex


OPERATORS: tuple[str, ...] = ("$regex", "$approx", "$abs", "$rel", "$literal")
"""The ``$`` keys an expected value may hold: ``{$regex: ...}``, ``{$approx: ..., $abs: ...,
$rel: ...}`` and ``{$literal: ...}`` (the value as written, its ``$`` keys being keys)."""

KNOWN_TEXT = "known: $regex, $approx (with $abs, $rel), $literal"


class MatcherError(ValueError):
    """An expected value that cannot be compared: an unknown or misplaced ``$`` operator, a bad
    pattern or tolerance.  Raised where the value is read (the file, the assertion), never at a
    verdict.  ``path`` is where in the value (``args.flight``), ``operator`` the ``$`` key
    concerned (``None`` when none is) and ``reason`` the message without the path."""

    def __init__(self, path: str, reason: str, operator: str | None = None) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason
        self.operator = operator


_Where: TypeAlias = "tuple[_Where, str] | None"
"""A place in a value, as a chain (parent, key): the text is built only when a message needs it
(paths of a deep value cost nothing until one is shown)."""


def _where_text(root: str, where: _Where) -> str:
    parts: list[str] = []
    while where is not None:
        where, step = where
        parts.append(step)
    parts.reverse()
    if len(parts) > PATH_SHOWN:  # a value thousands deep: its path's ends say where
        hidden = len(parts) - PATH_SHOWN
        parts[PATH_SHOWN // 2 : -PATH_SHOWN // 2] = [f"...({hidden} levels)..."]
    return root + "".join(parts)


PATH_SHOWN = 40
"""How many steps of a path a message shows (the first and the last half)."""


def value_matcher(value: Any, *, path: str = "args") -> Any:
    """``value`` as it is compared: the YAML matcher forms (``{$regex: ...}``, ``{$approx: ...,
    $abs: ..., $rel: ...}``) become matchers, ``{$literal: v}`` becomes ``v`` as written, a
    compiled pattern becomes ``Matches``, and mappings and lists are converted inside; anything
    else is compared with ``==`` (so ``pytest.approx`` works too) or, if callable, called with
    the actual value.  A mapping with any other key starting with ``$`` is a ``MatcherError``
    naming it (``path`` is what the message calls ``value``): a misspelled operator compared as
    data would fail for the wrong reason, or pass where nothing was checked.  Any depth: the
    walk keeps its own stack."""
    out: list[Any] = [None]
    todo: list[tuple[Any, Any, Any, _Where]] = [(value, out, 0, None)]
    while todo:
        item, parent, slot, where = todo.pop()
        converted: Any
        if isinstance(item, re.Pattern):
            converted = Matches(item)
        elif isinstance(item, Mapping):
            operators = sorted(k for k in item if isinstance(k, str) and k.startswith("$"))
            if operators:
                converted = _operator(item, operators, path, where)
            else:
                converted = dict.fromkeys(item)
                todo.extend(
                    (v, converted, k, (where, f".{k}")) for k, v in reversed(list(item.items()))
                )
        elif isinstance(item, list | tuple):
            converted = [None] * len(item)
            todo.extend(
                (v, converted, i, (where, f"[{i}]")) for i, v in reversed(list(enumerate(item)))
            )
        else:
            converted = item
        parent[slot] = converted
    return out[0]


def _operator(value: Mapping[Any, Any], operators: list[str], root: str, at: _Where) -> Any:
    """The matcher an operator mapping stands for, or the ``MatcherError`` saying why none."""

    def where() -> str:
        return _where_text(root, at)

    unknown = [k for k in operators if k not in OPERATORS]
    if unknown:
        name = unknown[0]
        raise MatcherError(
            where(),
            f"unknown matcher operator {name!r}{_near(name)}; {KNOWN_TEXT} (a key that starts "
            "with $ is expected as written inside {$literal: ...})",
            name,
        )
    keys = set(value)
    others = sorted(repr(k) for k in keys if k not in operators)
    if others:
        raise MatcherError(
            where(),
            f"{operators[0]!r} cannot stand next to the key {others[0]}: a matcher is a mapping of "
            "its operators alone (a mapping with $ keys is expected as written inside "
            "{$literal: ...})",
            operators[0],
        )
    if "$literal" in keys or "$regex" in keys:
        name = "$literal" if "$literal" in keys else "$regex"
        if keys != {name}:
            extra = sorted(keys - {name})[0]
            raise MatcherError(where(), f"{name!r} takes no other operator, got {extra!r}", extra)
        if name == "$literal":
            return value[name]
        try:
            return Matches(value[name])
        except ValueError as exc:
            raise MatcherError(where(), str(exc), name) from None
    if "$approx" not in keys:
        name = operators[0]
        raise MatcherError(
            where(), f"{name!r} goes with $approx ({{$approx: 240, {name}: 1}}), not alone", name
        )
    try:
        return Approx(value["$approx"], abs=value.get("$abs", 0.0), rel=value.get("$rel", 0.0))
    except ValueError as exc:  # the message names the operator at fault: "($abs)"
        at_fault = next((k for k in ("$abs", "$rel") if f"({k})" in str(exc)), "$approx")
        raise MatcherError(where(), str(exc), at_fault) from None


def _near(name: str) -> str:
    import difflib

    close = difflib.get_close_matches(name.lower(), OPERATORS, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def arguments_matcher(args: Mapping[str, Any], *, path: str = "args") -> dict[str, Any]:
    """Expected arguments as they are compared (``value_matcher``): a mapping of argument names.
    A matcher standing for the whole arguments (``{$regex: ...}``) is a ``MatcherError``: the
    arguments are an object, so it could only fail, or break ``subset``; it goes under an
    argument's name."""
    compiled = value_matcher(args, path=path)
    if not isinstance(compiled, Mapping):
        raise MatcherError(
            path,
            f"the arguments are a mapping of argument names, got the matcher {_clip(_json(args))}:"
            " put it under an argument's name ({city: {$regex: ...}})",
        )
    return dict(compiled)


def as_written(value: Any) -> Any:
    """An expectation that ``value`` (arguments a run made, a recorded call's) is compared as
    written: ``{$literal: value}`` when a ``$`` key is inside it, else ``value`` itself (kept
    plain, so it is still looked up by its JSON).  A recorded value never turns into an
    operator, nor is it refused as one."""
    todo = [value]
    while todo:
        item = todo.pop()
        if isinstance(item, Mapping):
            if any(isinstance(k, str) and k.startswith("$") for k in item):
                return {"$literal": value}
            todo.extend(item.values())
        elif isinstance(item, list | tuple):
            todo.extend(item)
    return value


def value_difference(want: Any, got: Any, path: str) -> str | None:
    """The first place ``got`` does not fit ``want`` (``path: expected ..., got ...``), else
    ``None``.  Mappings need the same keys, lists the same length.  Any depth: the walk keeps
    its own stack, in the order a recursive walk would report (a key's value before the next
    key, extra keys and a length after the items)."""
    todo: list[tuple[Any, Any, _Where] | str] = [(want, got, None)]
    while todo:
        item = todo.pop()
        if isinstance(item, str):  # a difference found when the container was opened
            return item
        w, g, where = item
        if isinstance(w, Approx | Matches) or (callable(w) and not isinstance(w, type)):
            if not w(g):
                return (
                    f"{_where_text(path, where)}: {_shown(g, 120)} does not fit {callable_name(w)}"
                )
        elif isinstance(w, Mapping):
            if not isinstance(g, Mapping):
                return f"{_where_text(path, where)}: expected an object, got {_clip(_json(g))}"
            extra = [k for k in g if k not in w]
            if extra:
                todo.append(
                    f"{_where_text(path, (where, f'.{extra[0]}'))}: not expected "
                    f"(got {_clip(_json(g[extra[0]]))})"
                )
            for key in reversed(list(w)):
                if key in g:
                    todo.append((w[key], g[key], (where, f".{key}")))
                else:
                    todo.append(
                        f"{_where_text(path, (where, '.' + str(key)))}: missing "
                        f"(expected {_clip(_json(w[key]))})"
                    )
        elif isinstance(w, list):
            if not isinstance(g, list):
                return f"{_where_text(path, where)}: expected a list, got {_clip(_json(g))}"
            if len(w) != len(g):
                todo.append(f"{_where_text(path, where)}: expected {len(w)} item(s), got {len(g)}")
            todo.extend(
                (w[i], g[i], (where, f"[{i}]")) for i in reversed(range(min(len(w), len(g))))
            )
        elif isinstance(w, bool) != isinstance(g, bool) or not _equal(w, g):
            return f"{_where_text(path, where)}: expected {_clip(_json(w))}, got {_clip(_json(g))}"
    return None


def _equal(want: Any, got: Any) -> bool:
    """``want == got``; a comparison that cannot finish (two values nested past the recursion
    limit, an ``__eq__`` that raises) is not equal."""
    try:
        return bool(want == got)
    except (RecursionError, ValueError, TypeError):
        return False


def arguments_difference(expected: ExpectedCall, made: MadeCall, check: ArgCheck) -> str | None:
    """Why ``made``'s arguments do not fit ``expected`` under ``check``, else ``None``.  Non-JSON
    arguments fit nothing but ``ignore``: the tool never ran with them."""
    if expected.args is None or check == "ignore":
        return None
    if made.raw_arguments is not None:
        return f"args: the model's arguments were not JSON: {_clip(made.raw_arguments)!r}"
    if callable(expected.args):
        ok = call_check(expected.args, made.arguments)
        return None if ok else f"args: rejected by {callable_name(expected.args)}"
    if callable(check):
        ok = call_check(check, expected.args, made.arguments)
        return None if ok else f"args: rejected by {callable_name(check)}"
    want = expected.want if expected.want is not None else arguments_matcher(expected.args)
    if check == "subset":
        for key, value in want.items():
            if key not in made.arguments:
                return f"args.{key}: missing (expected {_clip(_json(value))})"
            found = value_difference(value, made.arguments[key], f"args.{key}")
            if found:
                return found
        return None
    return value_difference(want, dict(made.arguments), "args")


def call_check(check: Callable[..., Any], *values: Any) -> bool:
    try:
        return bool(check(*values))
    except Exception as exc:  # a check that raises is a failed check, named in the message
        raise ValueError(f"argument check {callable_name(check)} raised {exc!r}") from exc


def expected_calls(expected: Sequence[Any]) -> list[ExpectedCall]:
    """``expected`` as entries: a tool name, a ``(name, args)`` pair, or a mapping with
    ``name`` and optional ``args``.  Anything else is a ``ValueError`` naming the entry."""
    if isinstance(expected, str | bytes | Mapping):
        raise TypeError("expected is a list of calls (tool names or {name, args} mappings)")
    out: list[ExpectedCall] = []
    for k, entry in enumerate(expected):
        if isinstance(entry, str):
            out.append(ExpectedCall(k, entry))
        elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
            out.append(ExpectedCall(k, entry[0], _args(k, entry[1])))
        elif hasattr(entry, "name") and isinstance(getattr(entry, "arguments", None), Mapping):
            # A ToolCall or MadeCall: what a run sent, compared as written.
            out.append(ExpectedCall(k, entry.name, as_written(entry.arguments)))
        elif isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            unknown = set(entry) - {"name", "args"}
            if unknown:
                raise ValueError(f"expected[{k}]: unknown key(s) {sorted(unknown)}; use name, args")
            out.append(ExpectedCall(k, entry["name"], _args(k, entry.get("args"))))
        else:
            raise ValueError(
                f"expected[{k}] must be a tool name, (name, args) or {{name, args}}, got {entry!r}"
            )
    return out


def _args(k: int, args: Any) -> Any:
    if isinstance(args, Approx | Matches):
        raise MatcherError(
            f"expected[{k}].args",
            f"the arguments are a mapping of argument names, got the matcher {args!r}: put it "
            "under an argument's name ({'city': Matches(...)})",
        )
    if args is None or callable(args) or isinstance(args, Mapping):
        if isinstance(args, Mapping):
            arguments_matcher(args, path=f"expected[{k}].args")  # a bad matcher fails here
        return args
    raise ValueError(f"expected[{k}].args must be a mapping or a callable, got {args!r}")


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=repr)
    except (TypeError, ValueError, RecursionError):
        return _shown(value)


def _clip(text: str, limit: int = 120) -> str:
    return clip(text, limit)


def callable_name(check: Any) -> str:
    if isinstance(check, Approx | Matches):
        return repr(check)
    return getattr(check, "__qualname__", None) or repr(check)


__all__ = [
    "ARG_MODES",
    "KNOWN_TEXT",
    "MATCH_TIME_LIMIT_S",
    "OPERATORS",
    "Approx",
    "ArgCheck",
    "ArgMode",
    "ExpectedCall",
    "MadeCall",
    "MatcherError",
    "Matches",
    "arguments_difference",
    "arguments_matcher",
    "as_written",
    "call_check",
    "callable_name",
    "expected_calls",
    "match_deadline",
    "value_difference",
    "value_matcher",
]
