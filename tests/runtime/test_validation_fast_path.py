"""The JSON Schema fast path in ``openprogram.tools`` (a performance change, see bench/RESULTS.md):
it may only accept what jsonschema accepts, and every result of the validator must equal the
plain-jsonschema result."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from openprogram.tools import _fast_acceptor, json_schema_validator

SCALARS = ["string", "integer", "number", "boolean", "null"]
values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 5),
    st.floats(allow_nan=False, width=32),
    st.sampled_from([1.0, 2.0, -0.0]),
    st.text(max_size=3),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
names = st.sampled_from(["a", "b", "c", "d"])
prop_schemas = st.one_of(
    st.builds(lambda t: {"type": t}, st.sampled_from(SCALARS)),
    st.builds(lambda t: {"type": t, "title": "T", "description": "d"}, st.sampled_from(SCALARS)),
    st.just({}),
    st.just({"description": "anything"}),
)


@st.composite
def schemas(draw: Any) -> dict[str, Any]:
    props = draw(st.dictionaries(names, prop_schemas, max_size=4))
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if draw(st.booleans()):
        schema["required"] = draw(st.lists(names, max_size=3, unique=True))
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        schema["additionalProperties"] = extra
    return schema


def _reference(schema: dict[str, Any], args: Any) -> list[tuple[str, str]]:
    v = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = sorted(v.iter_errors(args), key=lambda e: (list(map(str, e.absolute_path)), e.message))
    return [(".".join(map(str, e.absolute_path)) or "root", e.message) for e in errors]


@settings(max_examples=300, deadline=None)
@given(schemas(), st.dictionaries(names, values, max_size=4))
def test_fast_path_never_accepts_what_jsonschema_rejects(schema: dict[str, Any], args: Any) -> None:
    accepts = _fast_acceptor(schema)
    assert accepts is not None  # every generated schema is in the supported subset
    reference = _reference(schema, args)
    if accepts(args):
        assert reference == []
    assert json_schema_validator(schema)(args) == (args, reference)


def test_integral_float_still_accepted_through_jsonschema() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    accepts = _fast_acceptor(schema)
    assert accepts is not None and not accepts({"a": 1.0}) and accepts({"a": 1})
    assert json_schema_validator(schema)({"a": 1.0}) == ({"a": 1.0}, [])
    assert json_schema_validator(schema)({"a": True})[1] == [("a", "True is not of type 'integer'")]


def test_schemas_outside_the_subset_have_no_fast_path() -> None:
    for schema in (
        {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "integer"}}}},
        {"type": "object", "properties": {"a": {"enum": [1, 2]}}},
        {"type": "object", "additionalProperties": {"type": "integer"}},
        {"type": "object", "$defs": {}},
        {"properties": {"a": {"type": "integer"}}},
        {"type": "object", "properties": {"a": {"type": ["integer", "null"]}}},
    ):
        assert _fast_acceptor(schema) is None, schema
    # ...and they are still fully validated
    v = json_schema_validator(
        {"type": "object", "properties": {"a": {"type": "string", "format": "date"}}}
    )
    assert v({"a": "not-a-date"})[1] == [("a", "'not-a-date' is not a 'date'")]


def test_tool_normalisation_caches_function_facts_but_not_across_functions() -> None:
    from openprogram.tools import normalize_tools

    def sync_tool(arguments: dict[str, Any]) -> str:
        return "x"

    async def async_tool(arguments: dict[str, Any], *, cancel: Any, tool_call_id: str) -> str:
        return "y"

    spec = {"name": "t", "parameters": {"type": "object", "properties": {}}}
    for _ in range(2):  # the second pass is served from the cache
        s = normalize_tools([{"spec": spec, "execute": sync_tool}])[0]
        a = normalize_tools([{"spec": spec, "execute": async_tool}])[0]
        assert (s.is_async, s.accepts) == (False, frozenset())
        assert (a.is_async, a.accepts) == (True, frozenset({"cancel", "tool_call_id"}))


def test_schema_cache_tells_equal_looking_schemas_apart() -> None:
    # json.dumps would map both to the same text; the cache must not mix them up
    by_int = json_schema_validator({"type": "object", "properties": {"a": {"enum": [1]}}})
    by_str = json_schema_validator({"type": "object", "properties": {"a": {"enum": ["1"]}}})
    assert by_int({"a": 1})[1] == [] and by_int({"a": "1"})[1] != []
    assert by_str({"a": "1"})[1] == [] and by_str({"a": 1})[1] != []


def test_bad_tool_entries_still_named_in_errors() -> None:
    import pytest

    from openprogram.tools import normalize_tools

    with pytest.raises(TypeError, match=r"tool spec of tool dict \{'spec': \{'description'"):
        normalize_tools([{"spec": {"description": "x"}, "execute": print}])
    with pytest.raises(TypeError, match=r"'execute' of tool dict .* is not callable"):
        normalize_tools([{"spec": {"name": "a"}, "execute": 3}])
    with pytest.raises(TypeError, match=r"must be a mapping or ToolSpec, got int"):
        normalize_tools([{"spec": 3, "execute": print}])


def test_callable_facts_are_shared_by_closures_but_not_by_wrapped_functions() -> None:
    import functools

    from openprogram.tools import _callable_info

    def make(n: int) -> Any:
        def tool(arguments: dict[str, Any], tool_call_id: str) -> int:
            return n

        return tool

    assert (
        _callable_info(make(1)) == _callable_info(make(2)) == (False, frozenset({"tool_call_id"}))
    )

    def inner(arguments: dict[str, Any], cancel: Any) -> int:
        return 0

    @functools.wraps(inner)
    def wrapper(*args: Any, **kwargs: Any) -> int:  # signature() follows __wrapped__
        return inner(*args, **kwargs)

    assert _callable_info(wrapper) == (False, frozenset({"cancel"}))
    wrapper2 = functools.wraps(make(3))(lambda *a, **k: 0)
    assert _callable_info(wrapper2) == (False, frozenset({"tool_call_id"}))


def test_int_results_read_as_json_text() -> None:
    from openprogram.tools import make_result, to_json_text

    for value in (3, -(10**30), 0, True, 2.5, {"a": 1}, [1], None, "x"):
        expected = "" if value is None else value if isinstance(value, str) else to_json_text(value)
        assert make_result("c", "n", value).text == expected


def test_a_sync_tool_returning_an_awaitable_is_still_awaited() -> None:
    import asyncio

    from openprogram.loop import AgentContext, LoopConfig, agent_loop
    from openprogram_testing import ScriptedProvider, call, turn

    async def later() -> int:
        return 7

    tool = {"spec": {"name": "t"}, "execute": lambda arguments: later()}
    provider = ScriptedProvider([turn(call("t", {})), "done"])

    async def main() -> list[Any]:
        return await agent_loop("go", AgentContext(tools=[tool]), LoopConfig(provider=provider))

    messages = asyncio.run(main())
    assert messages[2].text == "7" and messages[-1].text == "done"


def test_a_sync_tool_whose_awaitable_fails_feeds_the_error_back() -> None:
    import asyncio

    from openprogram.loop import AgentContext, LoopConfig, agent_loop
    from openprogram_testing import ScriptedProvider, call, turn

    async def fails() -> int:
        raise ValueError("no luck")

    async def cancelled() -> int:
        raise asyncio.CancelledError

    tools = [
        {"spec": {"name": "bad"}, "execute": lambda arguments: fails()},
        {"spec": {"name": "stop"}, "execute": lambda arguments: cancelled()},
    ]
    provider = ScriptedProvider(
        [turn(call("bad", {}), call("stop", {}), call("bad", {})), "unreached"], strict=False
    )

    async def main() -> tuple[list[Any], str | None]:
        stream = agent_loop("go", AgentContext(tools=tools), LoopConfig(provider=provider))
        messages = await stream
        return messages, stream.termination

    messages, termination = asyncio.run(main())
    results = [m for m in messages if m.role == "toolResult"]
    assert [(r.text, r.is_error) for r in results] == [
        ("no luck", True),
        ("Cancelled", True),
        ("Cancelled", True),
    ]
    assert termination == "aborted"
