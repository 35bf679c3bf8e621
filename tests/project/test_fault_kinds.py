"""The fault kinds are listed once (``transport.faults.FAULT_KINDS``) and every reader follows
that one table: the docs' fault table, the YAML model (its keys and its error message), the
replay, the scenario checks and the ``Fault.*`` constructors.  A kind added to the table but
missed by a reader fails here, and so does a reader that lists a kind the table does not have."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from pydantic import ValidationError

from openprogram_testing.frontends.scenarios.checks import _frame_fields
from openprogram_testing.frontends.scenarios.fault_defs import FaultDef
from openprogram_testing.frontends.scenarios.replay import build_mutation
from openprogram_testing.transport.faults import FAULT_KINDS, Fault

ROOT = Path(__file__).resolve().parents[2]

YAML_EXAMPLES = {
    "truncate_after": 2,
    "drop_terminal": True,
    "malformed_frame": 1,
    "crc_mismatch": 1,
    "garble_tool_arguments": 0,
    "inject_error": 2,
    "http_error": 503,
    "stall": 0.5,
    "latency": 0.01,
    "rechunk": [1, 3],
}
"""One YAML value per kind (the check below fails if a kind has none)."""


def _docs_table() -> dict[str, str]:
    """The fault table of docs/emulator.md: kind -> class."""
    text = (ROOT / "docs" / "emulator.md").read_text(encoding="utf-8")
    section = text.split("\n## Faults\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \|", section, re.M)
    return dict(rows)


def test_the_docs_fault_table_lists_exactly_the_kinds() -> None:
    assert _docs_table() == {name: kind.cls.__name__ for name, kind in FAULT_KINDS.items()}


def test_the_docs_check_reads_a_table_that_is_there() -> None:
    """The check above would pass vacuously on an empty parse of an empty table."""
    assert len(_docs_table()) == len(FAULT_KINDS) >= 10


def test_each_kind_has_one_name_for_constructor_class_and_yaml_key() -> None:
    for name, kind in FAULT_KINDS.items():
        assert name in FaultDef.model_fields, f"the YAML model has no key {name!r}"
        camel = "".join(part.capitalize() for part in name.split("_"))
        assert kind.cls.__name__.lower() == camel.lower(), (name, kind.cls.__name__)
        assert callable(getattr(Fault, name))
        built = FaultDef.model_validate({name: YAML_EXAMPLES[name]}).build()
        assert type(built) is kind.cls


def test_the_yaml_model_has_no_kind_key_the_table_lacks() -> None:
    options = {o for kind in FAULT_KINDS.values() for o in kind.options}
    keys = set(FaultDef.model_fields) - options - {"interaction"}
    assert keys == set(FAULT_KINDS)


def test_the_yaml_error_names_every_kind_from_the_table() -> None:
    with pytest.raises(ValidationError) as caught:
        FaultDef.model_validate({"interaction": 0})
    message = str(caught.value)
    assert f"a fault has exactly one of {', '.join(FAULT_KINDS)}" in message
    with pytest.raises(ValidationError, match=r"\(got truncate_after, malformed_frame\)"):
        FaultDef.model_validate({"truncate_after": 1, "malformed_frame": 1})


@pytest.mark.parametrize(
    ("entry", "belongs"),
    [
        ({"malformed_frame": 1, "headers": {"a": "b"}}, "http_error"),
        ({"http_error": 500, "after_frame": 1}, "stall"),
        ({"stall": 1.0, "disconnect": True}, "truncate_after"),
    ],
)
def test_an_option_beside_another_kind_is_refused_naming_its_kind(
    entry: dict[str, object], belongs: str
) -> None:
    with pytest.raises(ValidationError, match=rf"belongs to '{belongs}'"):
        FaultDef.model_validate(entry)


def test_drop_terminal_false_is_refused_not_read_as_another_fault() -> None:
    with pytest.raises(ValidationError, match="drop_terminal"):
        FaultDef.model_validate({"drop_terminal": False})


def test_the_replay_builds_what_the_constructors_build() -> None:
    same = {
        "truncate_after": Fault.truncate_after(2, disconnect=True),
        "http_error": Fault.http_error(503, headers={"retry-after": "1"}),
        "stall": Fault.stall(0.5, after_frame=2),
        "rechunk": Fault.rechunk(seed=7),
    }
    entries = {
        "truncate_after": {"truncate_after": 2, "disconnect": True},
        "http_error": {"http_error": 503, "headers": {"retry-after": "1"}},
        "stall": {"stall": 0.5, "after_frame": 2},
        "rechunk": {"rechunk": 7},
    }
    for name, entry in entries.items():
        assert build_mutation(FaultDef.model_validate(entry)) == same[name]


def test_the_checks_bound_every_frame_addressed_kind() -> None:
    fields = dict(_frame_fields())
    for name, kind in FAULT_KINDS.items():
        if kind.frames is None:
            assert name not in fields
        else:
            assert fields[name] is (kind.frames == "count"), name
    assert fields["after_frame"] is True
