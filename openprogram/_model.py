"""``Model``: the base of every public data type — a slotted dataclass with pydantic's model API.

Why not ``pydantic.BaseModel``: the loop builds about twenty messages and events per round, and
on the benchmark machine a ``BaseModel`` costs 2-4 µs to construct (validation) against ~0.5 µs
for a slotted dataclass; ``import pydantic`` alone also costs more than the whole import-time
budget of ``openprogram``.  So the types are plain ``@dataclass(slots=True)`` classes
and pydantic comes in only when a value crosses a boundary.  Fields may be given by keyword (as
with pydantic) or in declaration order; the ``type``/``role`` tag is keyword-only with its
default, so it is never passed by accident.  The hot path passes fields positionally because a
keyword call costs CPython 3.11 about as much again as the construction itself.

At the boundaries:

- ``Model.model_validate(data)`` / ``model_validate_json(text)`` validate fully (pydantic's
  dataclass support; unknown keys are rejected, unions discriminated by their ``type``/``role``);
- ``model_dump(mode=...)`` / ``model_dump_json()`` serialise through the same ``TypeAdapter``, so
  every type still round-trips through JSON;
- ``model_copy(update=...)`` and ``model_json_schema()`` behave as pydantic's do.

Constructors do not validate (they are the hot path).  Data from outside — JSON, YAML, dicts —
goes through ``model_validate``; code that builds messages is checked by the type checker.
The ``TypeAdapter`` of each class is built on first use and cached.
"""

from __future__ import annotations

import copy
import dataclasses
from typing import TYPE_CHECKING, Any, ClassVar, Literal

if TYPE_CHECKING:
    from typing import Self

    from pydantic import TypeAdapter

_ADAPTERS: dict[Any, TypeAdapter[Any]] = {}


def type_adapter(tp: Any) -> TypeAdapter[Any]:
    """The cached pydantic ``TypeAdapter`` for ``tp`` (a ``Model`` class or a union of them)."""
    adapter = _ADAPTERS.get(tp)
    if adapter is None:
        from pydantic import TypeAdapter

        adapter = _ADAPTERS[tp] = TypeAdapter(tp)
    return adapter


class Model:
    """Mixin for the slotted dataclasses of ``openprogram.types`` and ``openprogram.events``."""

    __slots__ = ()
    __pydantic_config__: ClassVar[dict[str, Any]] = {"extra": "forbid"}

    @classmethod
    def model_validate(cls, obj: Any, *, strict: bool | None = None) -> Self:
        """Validate ``obj`` (a dict, or an instance) into this class; raises pydantic's
        ``ValidationError`` naming the bad field."""
        value: Self = type_adapter(cls).validate_python(obj, strict=strict)
        return value

    @classmethod
    def model_validate_json(cls, data: str | bytes, *, strict: bool | None = None) -> Self:
        value: Self = type_adapter(cls).validate_json(data, strict=strict)
        return value

    @classmethod
    def model_json_schema(cls) -> dict[str, Any]:
        return type_adapter(cls).json_schema()

    def model_dump(
        self,
        *,
        mode: Literal["python", "json"] = "python",
        include: Any = None,
        exclude: Any = None,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
    ) -> dict[str, Any]:
        out: dict[str, Any] = type_adapter(type(self)).dump_python(
            self,
            mode=mode,
            include=include,
            exclude=exclude,
            exclude_defaults=exclude_defaults,
            exclude_none=exclude_none,
        )
        return out

    def model_dump_json(
        self,
        *,
        indent: int | None = None,
        include: Any = None,
        exclude: Any = None,
        exclude_defaults: bool = False,
        exclude_none: bool = False,
    ) -> str:
        return (
            type_adapter(type(self))
            .dump_json(
                self,
                indent=indent,
                include=include,
                exclude=exclude,
                exclude_defaults=exclude_defaults,
                exclude_none=exclude_none,
            )
            .decode()
        )

    def model_copy(self, *, update: dict[str, Any] | None = None, deep: bool = False) -> Self:
        """A copy with ``update`` applied (not validated, as in pydantic)."""
        base = copy.deepcopy(self) if deep else self
        return dataclasses.replace(base, **(update or {}))  # type: ignore[type-var]


__all__ = ["Model", "type_adapter"]
