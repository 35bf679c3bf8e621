"""Usage and cost: what a run (or a tree of runs) consumed, and budgets a test can hold it to.

Every assistant message carries the provider's ``Usage`` (input, output, cache read and cache
write tokens); ``usage_of`` sums them per run or over a whole ``TraceTree`` and counts the model
calls.  Cost comes only from a price table the user supplies (``Prices``: per model, in
currency units per million tokens): prices change, so none is bundled, and a model missing
from the table is an error rather than a free call::

    prices = Prices({"gpt-4o-mini": {"input": 0.15, "output": 0.60}})
    assert_usage(tree, max_output_tokens=2_000, max_model_calls=6, max_cost=0.01, prices=prices)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from openprogram_testing.core.render import lane_text, timeline_text
from openprogram_testing.core.trace import LoopTrace
from openprogram_testing.core.tree import TraceTree

if TYPE_CHECKING:
    from openprogram_testing.core.tree import TraceTree

TOKEN_KINDS: tuple[str, ...] = (
    "input_tokens",
    "output_tokens",
    "cache_read_tokens",
    "cache_write_tokens",
)
PRICE_KEYS: dict[str, str] = {
    "input": "input_tokens",
    "output": "output_tokens",
    "cache_read": "cache_read_tokens",
    "cache_write": "cache_write_tokens",
}
"""Price table keys (per million tokens) and the token count each prices."""


class UsageError(ValueError):
    """The usage cannot be judged: a provider reported a negative or non-numeric count, or a
    cost was asked for a model the price table does not list."""


@dataclass(slots=True)
class UsageTotals:
    """Summed usage: the four token counts, the model calls, and the token counts per model
    (``by_model``, what a cost is computed from)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    model_calls: int = 0
    by_model: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def total_tokens(self) -> int:
        return sum(getattr(self, k) for k in TOKEN_KINDS)

    def add(self, other: UsageTotals) -> UsageTotals:
        """Add ``other`` into this one (returns ``self``)."""
        for kind in TOKEN_KINDS:
            setattr(self, kind, getattr(self, kind) + getattr(other, kind))
        self.model_calls += other.model_calls
        for model, counts in other.by_model.items():
            mine = self.by_model.setdefault(model, dict.fromkeys(TOKEN_KINDS, 0))
            for kind in TOKEN_KINDS:
                mine[kind] += counts.get(kind, 0)
        return self

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the HTML report's records carry it)."""
        out: dict[str, Any] = {k: getattr(self, k) for k in TOKEN_KINDS}
        out["model_calls"] = self.model_calls
        out["by_model"] = {m: dict(c) for m, c in self.by_model.items()}
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> UsageTotals:
        by_model = {
            str(m): {k: _count(c.get(k, 0), f"{m} {k}") for k in TOKEN_KINDS}
            for m, c in (data.get("by_model") or {}).items()
        }
        totals = cls(model_calls=_count(data.get("model_calls", 0), "model_calls"))
        for kind in TOKEN_KINDS:
            setattr(totals, kind, _count(data.get(kind, 0), kind))
        totals.by_model = by_model
        return totals

    def line(self, prices: Prices | None = None) -> str:
        """``3 model calls, 1,200 in / 340 out tokens (cache 0 read / 0 write), cost 0.0012``."""
        text = (
            f"{self.model_calls} model call(s), {self.input_tokens:,} in / "
            f"{self.output_tokens:,} out tokens (cache {self.cache_read_tokens:,} read / "
            f"{self.cache_write_tokens:,} write)"
        )
        if prices is not None:
            try:
                text += f", cost {format_cost(prices.cost(self))}"
            except UsageError as exc:
                text += f", cost unknown ({exc})"
        return text


def _count(value: Any, what: str) -> int:
    """A token count as reported: a non-negative whole number (a float that is whole is
    accepted: some providers send ``12.0``)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise UsageError(f"{what} is not a number: {value!r}")
    if isinstance(value, float):
        if not math.isfinite(value) or value != int(value):
            raise UsageError(f"{what} is not a whole number: {value!r}")
        value = int(value)
    if value < 0:
        raise UsageError(f"{what} is negative: {value}")
    return int(value)


def trace_usage(trace: LoopTrace) -> UsageTotals:
    """The usage of one run: its assistant messages' usage summed, its model calls counted."""
    total = UsageTotals(model_calls=_count(trace.model_calls, "model_calls"))
    for k, message in enumerate(trace.assistant_messages):
        model = message.model or "?"
        counts = total.by_model.setdefault(model, dict.fromkeys(TOKEN_KINDS, 0))
        for kind in TOKEN_KINDS:
            n = _count(getattr(message.usage, kind, 0), f"assistant message {k} {kind}")
            counts[kind] += n
            setattr(total, kind, getattr(total, kind) + n)
    return total


def usage_of(
    subject: LoopTrace | TraceTree, *, run: str | Sequence[str] | None = None, nested: bool = True
) -> UsageTotals:
    """The usage of a run, or of a ``TraceTree``: every run in it by default (what the agent
    cost), the run at ``run`` and those nested in it, or with ``nested=False`` that run alone."""

    if isinstance(subject, LoopTrace):
        if run:
            raise TypeError("run= addresses a nested run of a TraceTree (run_exec / exec_runner)")
        return trace_usage(subject)
    if not isinstance(subject, TraceTree):
        raise TypeError(f"expected a LoopTrace or a TraceTree, got {type(subject).__name__}")
    try:
        node = subject[run] if run else subject
    except KeyError as exc:  # a wrong path is the test's failure, shown with the tree
        raise AssertionError(f"{exc.args[0]}\n\nrun timeline:\n{timeline_text(subject)}") from None
    total = UsageTotals()
    for each in node.walk() if nested else [node]:
        total.add(trace_usage(each.trace))
    return total


# -- prices ------------------------------------------------------------------------------------


class Prices:
    """A price table: per model name, the price per million tokens of ``input``, ``output``,
    ``cache_read`` and ``cache_write`` (a kind left out costs nothing).  ``"*"`` prices every
    model not listed.  Prices are the user's: the harness ships none."""

    def __init__(self, table: Mapping[str, Mapping[str, float]]) -> None:
        if not isinstance(table, Mapping) or not table:
            raise ValueError("a price table maps model names to {input, output, ...} prices")
        self.table: dict[str, dict[str, float]] = {}
        for model, row in table.items():
            if not isinstance(row, Mapping):
                raise ValueError(f"prices[{model!r}] must map input/output/... to prices")
            unknown = set(row) - set(PRICE_KEYS)
            if unknown:
                raise ValueError(
                    f"prices[{model!r}]: unknown key(s) {sorted(unknown)}; use "
                    + ", ".join(PRICE_KEYS)
                )
            for key, price in row.items():
                ok = isinstance(price, int | float) and not isinstance(price, bool)
                if not ok or not math.isfinite(price) or price < 0:
                    raise ValueError(f"prices[{model!r}][{key!r}] must be a number >= 0")
            self.table[str(model)] = {k: float(v) for k, v in row.items()}

    @classmethod
    def load(cls, path: str) -> Prices:
        """A price table from a JSON or YAML file (a mapping of model names to prices)."""
        from pathlib import Path

        text = Path(path).read_text(encoding="utf-8")
        if path.endswith((".yaml", ".yml")):
            import yaml

            data = yaml.safe_load(text)
        else:
            import json

            data = json.loads(text)
        return cls(data)

    def row(self, model: str) -> dict[str, float]:
        row = self.table.get(model, self.table.get("*"))
        if row is None:
            listed = ", ".join(sorted(self.table))
            raise UsageError(f"no price for model {model!r} in the price table (listed: {listed})")
        return row

    def cost(self, usage: UsageTotals) -> float:
        """The cost of ``usage`` (``inf`` when the counts are past what a float holds)."""
        total = 0.0
        for model, counts in usage.by_model.items():
            if not any(counts.values()):
                continue  # calls that reported no usage cost nothing, priced or not
            row = self.row(model)
            for key, kind in PRICE_KEYS.items():
                try:
                    total += counts.get(kind, 0) * row.get(key, 0.0) / 1_000_000
                except OverflowError:
                    return math.inf
        return total


def format_cost(cost: float) -> str:
    return "inf" if math.isinf(cost) else f"{cost:.6f}".rstrip("0").rstrip(".") or "0"


# -- the assertion ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Limit:
    """One budget that was exceeded: ``name`` (``max_output_tokens``), the ``limit`` and what
    the run ``used``."""

    name: str
    limit: float
    used: float


class UsageOverBudget(AssertionError):
    """The run used more than a budget allows.  ``over`` lists every exceeded ``Limit``;
    ``usage`` is the summed ``UsageTotals`` and ``cost`` its cost (``None`` without prices)."""

    def __init__(
        self, reason: str, over: list[Limit], usage: UsageTotals, cost: float | None, timeline: str
    ) -> None:
        super().__init__(f"{reason}\n\nrun timeline:\n{timeline}")
        self.reason = reason
        self.over = over
        self.usage = usage
        self.cost = cost
        self.timeline_shown = True  # the plugin prints the timeline only once


BUDGETS: tuple[str, ...] = (
    "max_input_tokens",
    "max_output_tokens",
    "max_cache_read_tokens",
    "max_cache_write_tokens",
    "max_total_tokens",
    "max_model_calls",
    "max_cost",
)


def budget_problems(
    usage: UsageTotals, budgets: Mapping[str, float | None], prices: Prices | None
) -> tuple[list[Limit], float | None]:
    """The exceeded budgets (and the cost, when prices were given).  ``max_cost`` without
    prices, a negative budget, or an unknown budget name is a ``ValueError``."""
    given = {k: v for k, v in budgets.items() if v is not None}
    unknown = set(given) - set(BUDGETS)
    if unknown:
        raise ValueError(f"unknown budget(s) {sorted(unknown)}; use {', '.join(BUDGETS)}")
    if not given:
        raise ValueError("give at least one budget (" + ", ".join(BUDGETS) + ")")
    for name, value in given.items():
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        if not ok or value != value or value < 0:  # NaN; an int past float range is fine
            raise ValueError(f"{name} must be a number >= 0, got {value!r}")
    if "max_cost" in given and prices is None:
        raise ValueError("max_cost needs prices= (a price table per model; none is bundled)")
    cost = prices.cost(usage) if prices is not None else None
    used: dict[str, float] = {
        "max_input_tokens": usage.input_tokens,
        "max_output_tokens": usage.output_tokens,
        "max_cache_read_tokens": usage.cache_read_tokens,
        "max_cache_write_tokens": usage.cache_write_tokens,
        "max_total_tokens": usage.total_tokens,
        "max_model_calls": usage.model_calls,
        "max_cost": cost if cost is not None else 0.0,
    }
    over = [Limit(n, v, used[n]) for n, v in given.items() if used[n] > v]
    return over, cost


def assert_usage(
    subject: LoopTrace | TraceTree,
    *,
    max_input_tokens: int | None = None,
    max_output_tokens: int | None = None,
    max_cache_read_tokens: int | None = None,
    max_cache_write_tokens: int | None = None,
    max_total_tokens: int | None = None,
    max_model_calls: int | None = None,
    max_cost: float | None = None,
    prices: Prices | Mapping[str, Mapping[str, float]] | None = None,
    run: str | Sequence[str] | None = None,
    nested: bool = True,
) -> UsageTotals:
    """The run (a ``TraceTree``: all its runs, see ``usage_of``) stayed within every budget
    given; returns the summed ``UsageTotals``.  ``max_cost`` needs ``prices``.  Raises
    ``UsageOverBudget`` naming each exceeded budget, or ``UsageError`` when the reported usage
    cannot be judged (negative counts, a model without a price)."""
    __tracebackhide__ = True
    table = prices if isinstance(prices, Prices) or prices is None else Prices(prices)
    usage = usage_of(subject, run=run, nested=nested)
    budgets = {
        "max_input_tokens": max_input_tokens,
        "max_output_tokens": max_output_tokens,
        "max_cache_read_tokens": max_cache_read_tokens,
        "max_cache_write_tokens": max_cache_write_tokens,
        "max_total_tokens": max_total_tokens,
        "max_model_calls": max_model_calls,
        "max_cost": max_cost,
    }
    over, cost = budget_problems(usage, budgets, table)
    if over:
        reason = over_budget_text(over, usage, table)
        where = f"in run {run if isinstance(run, str) else '/'.join(run)}: " if run else ""
        raise UsageOverBudget(where + reason, over, usage, cost, lane_text(subject, run))
    return usage


def over_budget_text(over: Iterable[Limit], usage: UsageTotals, prices: Prices | None) -> str:
    parts = []
    for limit in over:
        if limit.name == "max_cost":
            parts.append(f"cost {format_cost(limit.used)} > max_cost {format_cost(limit.limit)}")
        else:
            parts.append(f"{limit.name.removeprefix('max_')} {limit.used:,} > {limit.name} "
                         f"{limit.limit:,}")  # fmt: skip
    return "over budget: " + "; ".join(parts) + f" (used: {usage.line(prices)})"


__all__ = [
    "BUDGETS",
    "PRICE_KEYS",
    "TOKEN_KINDS",
    "Limit",
    "Prices",
    "UsageError",
    "UsageOverBudget",
    "UsageTotals",
    "assert_usage",
    "budget_problems",
    "format_cost",
    "trace_usage",
    "usage_of",
]
