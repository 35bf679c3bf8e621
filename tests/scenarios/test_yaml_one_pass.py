"""The safe YAML reader builds a document's data in the pass that composes its node tree, and
the data is exactly what PyYAML's safe constructor builds from that tree: for plain documents,
aliases, every scalar type, and (by handing the tree to the constructor) merge keys, explicit
tags, collections used as keys and a loader's own tags.  The constructor's second walk is
skipped only where the one pass built everything."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from openprogram_testing.base import safeyaml
from openprogram_testing.transport.cassettes.files import _loaders

DOCUMENTS = [
    "a: 1\nb: [x, 2.5, true, null, ~, '3']\nc: {d: e}\n",
    "- 1\n- -2\n- 0x1f\n- 0o17\n- 1_000\n- .inf\n- -.inf\n- yes\n- No\n- ''\n",
    "when: 2001-12-14t21:59:43.10-05:00\nday: 2002-12-14\nraw: !!binary aGVsbG8=\n",
    "a: &x {k: v, n: [1, 2]}\nb: *x\nc: [*x, *x]\n",
    "name: &n weather\nagain: *n\n*n : as a key\n",
    "1: int key\n'1': str key\n~: null key\ntrue: bool key\n1.5: float key\n",
    "a: 1\na: 2\n",  # the last value wins, as in PyYAML (the scenario loader reports the repeat)
    "base: &b {x: 1, y: 2}\nmerged:\n  <<: *b\n  y: 3\n",
    "=: value key\n",
    "s: !!set {a, b}\no: !!omap [{x: 1}, {y: 2}]\np: !!pairs [{x: 1}, {x: 2}]\n",
    "a: !!str 12\nb: !!int '12'\nc: !!float 1\nd: !!null ''\ne: !!bool 'true'\n",
    "- !!map {a: 1}\n- !!seq [1, 2]\n",
    "? [a, b]\n: 1\n",
    "? &k {x: 1}\n: 1\n",
    "a: !custom 1\n",
    "a: !!int abc\n",
    "e: '\\ud83d\\ude00'\nf: \"\\ud83d\\ude00\"\n",
    "plain scalar at the top\n",
    "[]\n",
    "{}\n",
]


def outcome(read: Any) -> tuple[str, Any]:
    try:
        return "data", read()
    except Exception as exc:  # the same failure, whatever its type
        return type(exc).__name__, str(exc)


def constructed_by_pyyaml(text: str, loader_class: Any, loaders: Any = None) -> Any:
    """The data PyYAML's own constructor builds from the reader's node tree."""
    node = safeyaml.read(text, loaders=loaders)[0] if loaders else _tree(text)
    loader = loader_class("")
    try:
        return loader.construct_document(node)
    finally:
        loader.dispose()


class _Tree(yaml.CSafeLoader):  # type: ignore[misc]
    """Reads the node tree and builds nothing (so a document whose data cannot be built still
    has its tree)."""

    yaml_constructors: dict[Any, Any] = {}

    def construct_document(self, node: Any) -> Any:
        return None


class _PureTree(yaml.SafeLoader):
    yaml_constructors: dict[Any, Any] = {}

    def construct_document(self, node: Any) -> Any:
        return None


def _tree(text: str) -> Any:
    return safeyaml.read(text, loaders=(_Tree, _PureTree))[0]


def expected_outcome(text: str, loader_class: Any) -> tuple[str, Any]:
    """What the reader must give: PyYAML's constructor's data, or its failure as a
    ``YamlProblem`` carrying the constructor's words."""
    try:
        return "data", constructed_by_pyyaml(text, loader_class)
    except yaml.MarkedYAMLError as exc:
        return "YamlProblem", exc.problem
    except Exception as exc:
        return type(exc).__name__, str(exc)


def read_outcome(text: str, **options: Any) -> tuple[str, Any]:
    try:
        return "data", safeyaml.read(text, **options)[1]
    except safeyaml.YamlProblem as exc:
        return "YamlProblem", exc.message
    except Exception as exc:
        return type(exc).__name__, str(exc)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_data_is_what_the_safe_constructor_builds(text: str) -> None:
    kind, expected = expected_outcome(text, yaml.CSafeLoader)
    for options in ({}, {"loaders": (None, yaml.SafeLoader)}):
        got_kind, got = read_outcome(text, **options)
        assert got_kind == kind
        if kind == "YamlProblem":
            assert expected in got
        else:
            assert repr(got) == repr(expected)


@pytest.mark.parametrize("text", ["x: !!python/tuple [1, 2]\n", "x: !!python/str abc\n"])
def test_a_loader_s_own_tags_are_built_by_its_constructor(text: str) -> None:
    fast, _ = _loaders()
    expected = outcome(lambda: constructed_by_pyyaml(text, fast, _loaders()))
    assert expected[0] == "data"
    assert safeyaml.read(text, loaders=_loaders())[1] == expected[1]


def test_an_alias_shares_its_anchor_s_value_as_pyyaml_does() -> None:
    data = safeyaml.read("a: &x {k: [1]}\nb: *x\nc: [*x]\n")[1]
    assert data["a"] is data["b"] is data["c"][0]


def test_a_collection_as_a_key_is_refused_with_its_position() -> None:
    with pytest.raises(safeyaml.YamlProblem) as info:
        safeyaml.read("top: 1\n? [a, b]\n: 1\n")
    assert (info.value.line, "unhashable key" in info.value.message) == (2, True)


class CountConstructions:
    """Counts the loader's walks over the node tree (``construct_document``)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls = 0
        for cls in (yaml.CSafeLoader, yaml.SafeLoader):
            original = cls.construct_document

            def counted(loader: Any, node: Any, original: Any = original) -> Any:
                self.calls += 1
                return original(loader, node)

            monkeypatch.setattr(cls, "construct_document", counted)


@pytest.mark.parametrize(
    ("text", "walks"),
    [
        ("prompt: hi\nscript: [{calls: [{name: t, args: {x: 1}}]}, done]\nexpect: {}\n", 0),
        ("a: &x [1]\nb: *x\n", 0),
        ("base: &b {x: 1}\nmerged: {<<: *b}\n", 1),
        ("s: !!set {a}\n", 1),
    ],
)
def test_the_second_walk_happens_only_where_the_one_pass_did_not_build(
    monkeypatch: pytest.MonkeyPatch, text: str, walks: int
) -> None:
    counter = CountConstructions(monkeypatch)
    safeyaml.read(text)
    assert counter.calls == walks


def test_an_adjusted_tree_is_built_again() -> None:
    def adjust(node: Any) -> bool:
        node.value[0][1].value = "changed"
        return True

    assert safeyaml.read("a: b\n", adjust=adjust)[1] == {"a": "changed"}
    assert safeyaml.read("a: b\n", adjust=lambda node: False)[1] == {"a": "b"}


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=False),
    st.text(),
    st.dates(),
    st.datetimes(timezones=st.just(dt.UTC)),
)
keys = st.one_of(st.text(), st.integers(), st.booleans(), st.none())
documents = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=4),
    max_leaves=20,
)


@settings(max_examples=150, deadline=None)
@given(documents, st.booleans())
def test_any_dumped_data_reads_back_as_pyyaml_reads_it(data: Any, flow: bool) -> None:
    text = yaml.safe_dump(data, default_flow_style=flow, allow_unicode=True)
    expected = yaml.load(text, Loader=yaml.CSafeLoader)
    assert repr(safeyaml.read(text, lone_surrogates="replace")[1]) == repr(expected)
