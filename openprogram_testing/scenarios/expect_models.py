"""The ``expect`` keys that judge what the model chose and what it cost: ``trajectory`` (the
tool calls, compared by ``openprogram_testing.trajectory``).

They live apart from ``model`` so the scenario model stays one page; ``Expectations`` takes
them as fields, and they follow the same rules: strict keys, fields only ever added.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

ArgModeName = Literal["exact", "ignore", "subset"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TrajectoryCall(_Strict):
    """One expected call: the tool ``name`` and, optionally, its ``args`` (values may be
    ``{$regex: ...}`` or ``{$approx: N, $abs: ..., $rel: ...}``; without ``args`` the name
    alone is checked)."""

    name: str = Field(min_length=1)
    args: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _matchers_compile(self) -> TrajectoryCall:
        if self.args is not None:
            from ..trajectory import value_matcher

            value_matcher(self.args)  # a bad $regex or $approx is a load error, placed here
        return self


class TrajectoryExpect(_Strict):
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


__all__ = ["TrajectoryCall", "TrajectoryExpect"]
