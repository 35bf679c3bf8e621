"""``openprogram._fastjson`` must be indistinguishable from ``json.loads``/``json.dumps``."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram import _fastjson
from openprogram.providers.base import parse_arguments

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values)
def test_dumps_and_loads_match_the_standard_library(value: Any) -> None:
    text = _fastjson.dumps(value)
    assert text == json.dumps(value)
    assert _fastjson.loads(text) == json.loads(text)


@pytest.mark.parametrize(
    "text",
    ['{"a": 1}', '  {"a": 1}', '{"a": 1}  \n', "[1, 2]", '"s"', "3", "NaN", '{"a": "\\u00e9"}'],
)
def test_loads_accepts_what_json_accepts(text: str) -> None:
    got, want = _fastjson.loads(text), json.loads(text)
    assert got == want or (isinstance(got, float) and math.isnan(got) and math.isnan(want))


@pytest.mark.parametrize("text", ["", "   ", '{"a": 1} x', '{"a": ', "{'a': 1}", '{"a": 1}{}'])
def test_loads_raises_what_json_raises(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as fast:
        _fastjson.loads(text)
    with pytest.raises(json.JSONDecodeError) as slow:
        json.loads(text)
    assert str(fast.value) == str(slow.value)


def test_dumps_reports_what_json_reports() -> None:
    circular: dict[str, Any] = {}
    circular["self"] = circular
    with pytest.raises(ValueError, match="Circular reference"):
        _fastjson.dumps(circular)
    with pytest.raises(TypeError, match="not JSON serializable"):
        _fastjson.dumps({"x": object()})
    assert _fastjson.dumps({"t": (1, 2), "f": 1.5, "n": float("inf")}) == json.dumps(
        {"t": (1, 2), "f": 1.5, "n": float("inf")}
    )


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ('{"a": 1}', ({"a": 1}, True)),
        ("", ({}, True)),
        ("  \n", ({}, True)),
        ("[1]", ({}, False)),
        ('{"a": ', ({}, False)),
        ('  {"a": 2} ', ({"a": 2}, True)),
    ],
)
def test_parse_arguments(raw: str, expected: tuple[dict[str, Any], bool]) -> None:
    assert parse_arguments(raw) == expected
