"""The ``expect`` keys that judge what the model chose and what it cost: ``trajectory`` (the
tool calls, compared by ``judges.trajectory``) and ``usage`` (token, call and cost
budgets, judged by ``openprogram_testing.judges.usage``).

They live apart from ``model`` so the scenario model stays one page; ``Expectations`` takes
them as fields, and they follow the same rules: strict keys, fields only ever added.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from openprogram_testing.core.matchers import arguments_matcher

ArgModeName = Literal["exact", "ignore", "subset"]


class Strict(BaseModel):
    """The base of every scenario model: an unknown key is an error (a typo never passes
    silently), and a field may be written by its name or its alias."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TrajectoryCall(Strict):
    """One expected call: the tool ``name`` and, optionally, its ``args`` (values may be
    ``{$regex: ...}`` or ``{$approx: N, $abs: ..., $rel: ...}``, and ``{$literal: ...}`` is a
    value with ``$`` keys as written; any other ``$`` key is refused; without ``args`` the name
    alone is checked)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _matchers_compile(self) -> TrajectoryCall:
        if self.args is not None:
            arguments_matcher(self.args)  # a bad or unknown $ operator is a load error, placed here
        return self


class TrajectoryExpect(Strict):
    """``expect.trajectory``: the run's tool calls fit ``calls`` in ``mode`` (``strict``: the
    same calls in order; ``unordered``; ``subset``: the run made at least these;
    ``superset``: the run made nothing else), arguments compared by ``args`` (``exact``,
    ``ignore``, ``subset`` of the listed keys, or a mapping tool name -> one of those, ``"*"``
    for the rest)."""

    mode: Literal["strict", "unordered", "subset", "superset"] = "strict"
    args: ArgModeName | dict[str, ArgModeName] = "exact"
    calls: list[str | TrajectoryCall]

    def expected(self) -> list[Any]:
        """``calls`` as ``assert_trajectory`` takes them."""
        out: list[Any] = []
        for c in self.calls:
            if isinstance(c, str):
                out.append(c)
            else:
                out.append({"name": c.name} if c.args is None else {"name": c.name, "args": c.args})
        return out


class PriceRow(Strict):
    """Prices per million tokens of one model (a kind left out costs nothing)."""

    input: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    output: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    cache_read: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    cache_write: float = Field(default=0.0, ge=0, allow_inf_nan=False)


class UsageExpect(Strict):
    """``expect.usage``: budgets the run must stay within (token counts summed over its model
    calls, the number of model calls, the cost).  ``max_cost`` needs ``prices``: per model name
    (``"*"`` for any other), the prices per million tokens; none are bundled."""

    max_input_tokens: int | None = Field(default=None, ge=0)
    max_output_tokens: int | None = Field(default=None, ge=0)
    max_cache_read_tokens: int | None = Field(default=None, ge=0)
    max_cache_write_tokens: int | None = Field(default=None, ge=0)
    max_total_tokens: int | None = Field(default=None, ge=0)
    max_model_calls: int | None = Field(default=None, ge=0)
    max_cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    prices: dict[str, PriceRow] | None = Field(default=None, min_length=1)

    @model_validator(mode="after")
    def _something_to_check(self) -> UsageExpect:
        if not self.budgets():
            raise ValueError("give at least one budget (max_input_tokens, max_output_tokens, ...)")
        if self.max_cost is not None and self.prices is None:
            raise ValueError("max_cost needs prices (per model, per million tokens)")
        return self

    def budgets(self) -> dict[str, float]:
        return {
            name: value
            for name, value in self.model_dump(exclude={"prices"}).items()
            if value is not None
        }

    def price_table(self) -> dict[str, dict[str, float]] | None:
        if self.prices is None:
            return None
        return {model: row.model_dump() for model, row in self.prices.items()}


__all__ = ["PriceRow", "Strict", "TrajectoryCall", "TrajectoryExpect", "UsageExpect"]
