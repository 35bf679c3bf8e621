"""The YAML form of a fault: one entry of a scenario's ``cassette.faults``.

Its keys are the fault kinds of ``transport.faults.FAULT_KINDS`` (and their options), checked
against that table, which also builds the fault; a 0.1 key (``corrupt_frame``) still reads, with
a warning, until 0.3.  Apart from ``model`` so the scenario model stays one readable module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from openprogram_testing.base import deprecated
from openprogram_testing.transport.faults import FAULT_KINDS

if TYPE_CHECKING:
    from openprogram_testing.transport.faults import FaultKind, Mutation


def _old_fault_keys(schema: dict[str, Any]) -> None:
    """The JSON Schema still accepts a 0.1 fault key (marked deprecated), as the loader does,
    so an editor does not flag a file that loads."""

    properties = schema.setdefault("properties", {})
    for kind in FAULT_KINDS.values():
        if kind.old_key is not None and kind.name in properties:
            old = dict(properties[kind.name], deprecated=True)
            old["description"] = f"Deprecated since 0.2.0 (goes in 0.3): write {kind.name}."
            properties[kind.old_key] = old


class FaultDef(BaseModel):
    """A frame-addressed fault applied to the recorded bodies at playback: exactly one kind key
    (the kinds and what each takes: ``transport.faults.FAULT_KINDS``), with the options of that
    kind; ``interaction`` (0-based) limits it to one recorded response (default: all)."""

    model_config = ConfigDict(
        extra="forbid", populate_by_name=True, json_schema_extra=lambda s: _old_fault_keys(s)
    )

    truncate_after: int | None = Field(default=None, ge=0)
    disconnect: bool | None = None
    drop_terminal: Literal[True] | None = None
    malformed_frame: int | None = Field(default=None, ge=0)
    crc_mismatch: int | None = Field(default=None, ge=0)
    garble_tool_arguments: int | None = Field(default=None, ge=0)
    inject_error: int | None = Field(default=None, ge=0)
    http_error: int | None = Field(default=None, ge=400, le=599)
    headers: dict[str, str] | None = None
    stall: float | None = Field(default=None, ge=0)
    after_frame: int | None = Field(default=None, ge=0)
    latency: float | None = Field(default=None, ge=0)
    rechunk: list[Annotated[int, Field(ge=1)]] | int | None = None
    interaction: int | None = Field(default=None, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _old_keys(cls, data: Any) -> Any:
        """A 0.1 key (``corrupt_frame``) reads as its new name, warning (the loader warns
        first, naming file:line, and hands the new key on)."""

        if not isinstance(data, dict):
            return data
        for kind in FAULT_KINDS.values():
            if kind.old_key is not None and kind.old_key in data and kind.name in data:
                raise ValueError(
                    f"{kind.old_key!r} is the 0.1 name of {kind.name!r}: give {kind.name!r} alone"
                )
            if kind.old_key is not None and kind.old_key in data:
                deprecated.warn(f"the fault key {kind.old_key}:", f"{kind.name}:")
                data = {kind.name if k == kind.old_key else k: v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _exactly_one(self) -> FaultDef:
        kind = self.kind  # raises naming the kinds when not exactly one is set

        for other in FAULT_KINDS.values():
            for option in other.options:
                if getattr(self, option) is not None and option not in kind.options:
                    raise ValueError(f"{option!r} belongs to {other.name!r}")
        return self

    @property
    def kind(self) -> FaultKind:
        """The ``FaultKind`` of this entry (the one kind key it sets)."""

        kinds = [k for k in FAULT_KINDS.values() if getattr(self, k.name) is not None]
        if len(kinds) != 1:
            raise ValueError(
                f"a fault has exactly one of {', '.join(FAULT_KINDS)}"
                + (f" (got {', '.join(k.name for k in kinds)})" if kinds else "")
            )
        return kinds[0]

    def build(self) -> Mutation:
        """The fault mutation this entry describes."""
        kind = self.kind
        options = {o: getattr(self, o) for o in kind.options if getattr(self, o) is not None}
        return kind.build(getattr(self, kind.name), options)


__all__ = ["FaultDef"]
