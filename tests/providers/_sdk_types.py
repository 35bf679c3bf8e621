"""Validate request JSON against an SDK's own TypedDict params with pydantic — strictly.

The SDK params use ``Iterable[...]`` (which pydantic validates lazily) and allow unknown keys.
``strict_type`` rebuilds a TypedDict tree with ``Iterable`` → ``list`` and ``extra="forbid"`` on
every TypedDict, so an unknown key, a missing required key or a wrong shape anywhere fails.
"""

from __future__ import annotations

import collections.abc
import typing
from typing import Annotated, Any, Literal, NotRequired, Required, Union

from pydantic import TypeAdapter
from typing_extensions import TypedDict, is_typeddict

_cache: dict[Any, Any] = {}


def strict_type(tp: Any) -> Any:
    origin = typing.get_origin(tp)
    if is_typeddict(tp):
        if tp in _cache:
            return _cache[tp]
        hints = typing.get_type_hints(tp, include_extras=True)
        fields: dict[str, Any] = {}
        _cache[tp] = dict[str, Any]  # placeholder while this type's own fields are built
        for key, hint in hints.items():
            # Requiredness from the annotation itself: with ``from __future__ import annotations``
            # the class's ``__required_keys__`` cannot see ``Required[...]``.
            required = key in tp.__required_keys__
            while typing.get_origin(hint) in (
                Required,
                NotRequired,
                typing.Required,
                typing.NotRequired,
            ):
                required = typing.get_origin(hint) in (Required, typing.Required)
                hint = typing.get_args(hint)[0]
            inner = strict_type(hint)
            fields[key] = Required[inner] if required else NotRequired[inner]
        built = TypedDict(tp.__name__, fields)  # type: ignore[misc]
        built.__pydantic_config__ = {"extra": "forbid", "arbitrary_types_allowed": True}  # type: ignore[attr-defined]
        _cache[tp] = built
        return built
    if origin is Annotated:
        base, *meta = typing.get_args(tp)
        return Annotated[(strict_type(base), *meta)]  # type: ignore[return-value]
    if origin in (Union, getattr(__import__("types"), "UnionType", Union)):
        return Union[tuple(strict_type(a) for a in typing.get_args(tp))]  # noqa: UP007
    if origin in (collections.abc.Iterable, collections.abc.Sequence, list):
        (arg,) = typing.get_args(tp) or (Any,)
        return list[strict_type(arg)]  # type: ignore[misc]
    if origin in (dict, collections.abc.Mapping) or origin is Literal:
        return tp
    return tp


def validate(tp: Any, value: Any) -> None:
    """Raise ``pydantic.ValidationError`` if ``value`` does not fit ``tp`` exactly."""
    TypeAdapter(strict_type(tp)).validate_python(value)
