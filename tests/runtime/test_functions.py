"""``@function`` / ``@agentic_function``: specs from signatures and docstrings, validation and
coercion through pydantic, execution through the loop."""

import asyncio
import inspect
from typing import Literal, Optional

import pytest
from pydantic import BaseModel

from openprogram import (
    AgentTool,
    Function,
    Registry,
    Runtime,
    ToolSpec,
    agentic_function,
    as_agent_tool,
    function,
)
from openprogram.functions import parse_docstring
from openprogram_testing import ScriptedProvider, call, turn
from tests.runtime._loop import fed_back_error


class Point(BaseModel):
    x: int
    y: int = 0


POINT_DEF = {
    "properties": {"x": {"type": "integer"}, "y": {"default": 0, "type": "integer"}},
    "required": ["x"],
    "title": "Point",
    "type": "object",
}


def _schema(properties, required=(), **extra):
    return {
        "additionalProperties": False,
        "properties": properties,
        "required": list(required),
        "type": "object",
        **extra,
    }


# -- a table of signatures and the exact schema each must produce --------------------------------


def f_plain(a: int, b: str) -> None: ...


def f_defaults(n: int = 3, name: str = "x", flag: bool = False) -> None: ...


def f_optional(limit: Optional[int] = None, tag: str | None = None) -> None: ...  # noqa: UP045


def f_union(value: int | str) -> None: ...


def f_literal(mode: Literal["fast", "slow"] = "fast") -> None: ...


def f_list(items: list[str], scores: list[float] | None = None) -> None: ...


def f_nested(point: Point, path: list[Point] = []) -> None: ...  # noqa: B006


def f_injected(q: str, runtime=None, on_update=None, cancel=None, tool_call_id=None) -> None: ...


def f_unannotated(anything, count: int = 1) -> None: ...


def f_none() -> None: ...


def f_clash(schema: str, model_dump: int = 0) -> None: ...


SCHEMA_TABLE = [
    (
        f_plain,
        _schema({"a": {"type": "integer"}, "b": {"type": "string"}}, ["a", "b"]),
    ),
    (
        f_defaults,
        _schema(
            {
                "n": {"default": 3, "type": "integer"},
                "name": {"default": "x", "type": "string"},
                "flag": {"default": False, "type": "boolean"},
            }
        ),
    ),
    (
        f_optional,
        _schema(
            {
                "limit": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None},
                "tag": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            }
        ),
    ),
    (
        f_union,
        _schema({"value": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}, ["value"]),
    ),
    (
        f_literal,
        _schema({"mode": {"default": "fast", "enum": ["fast", "slow"], "type": "string"}}),
    ),
    (
        f_list,
        _schema(
            {
                "items": {"items": {"type": "string"}, "type": "array"},
                "scores": {
                    "anyOf": [{"items": {"type": "number"}, "type": "array"}, {"type": "null"}],
                    "default": None,
                },
            },
            ["items"],
        ),
    ),
    (
        f_nested,
        _schema(
            {
                "point": {"$ref": "#/$defs/Point"},
                "path": {"default": [], "items": {"$ref": "#/$defs/Point"}, "type": "array"},
            },
            ["point"],
            **{"$defs": {"Point": POINT_DEF}},
        ),
    ),
    (f_injected, _schema({"q": {"type": "string"}}, ["q"])),
    (
        f_unannotated,
        _schema({"anything": {}, "count": {"default": 1, "type": "integer"}}, ["anything"]),
    ),
    (f_none, _schema({})),
    (
        f_clash,
        _schema(
            {"schema": {"type": "string"}, "model_dump": {"default": 0, "type": "integer"}},
            ["schema"],
        ),
    ),
]


@pytest.mark.parametrize(
    ("fn", "expected"), SCHEMA_TABLE, ids=[f.__name__ for f, _ in SCHEMA_TABLE]
)
def test_schema_from_signature(fn, expected):
    wrapped = function(registry=Registry())(fn)
    schema = wrapped.spec.parameters
    if not expected["required"]:
        expected = {k: v for k, v in expected.items() if k != "required"}
    assert schema == expected


def test_docstring_first_paragraph_and_args_descriptions():
    @function(registry=Registry())
    def search(query: str, limit: int = 10, runtime=None) -> list[str]:
        """Search the index
        for documents.

        Longer explanation that is not part of the description.

        Args:
            query: What to look
                for, in plain words.
            limit (int): How many hits to return.
            runtime: Injected; never shown.

        Returns:
            The hits.
        """
        return []

    assert search.spec == ToolSpec(
        name="search",
        description="Search the index for documents.",
        parameters={
            "additionalProperties": False,
            "properties": {
                "query": {"description": "What to look for, in plain words.", "type": "string"},
                "limit": {
                    "default": 10,
                    "description": "How many hits to return.",
                    "type": "integer",
                },
            },
            "required": ["query"],
            "type": "object",
        },
    )


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        (None, ("", {})),
        ("One line.", ("One line.", {})),
        ("Args:\n    a: only args.", ("", {"a": "only args."})),
        (
            "Title.\n\nArgs:\n    a (int): first\n    b: second",
            ("Title.", {"a": "first", "b": "second"}),
        ),
        ("Title on\ntwo lines.\nArgs:\n    a: first", ("Title on two lines.", {"a": "first"})),
        ("Summary.\n\nReturns:\n    x", ("Summary.", {})),
    ],
)
def test_parse_docstring(doc, expected):
    assert parse_docstring(doc) == expected


def test_decorator_arguments_override_everything():
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string", "minLength": 2}},
        "required": ["city"],
    }

    @function(
        name="get_weather", description="Weather now.", parameters=schema, registry=Registry()
    )
    def weather(city):
        """Ignored docstring."""
        return f"sunny in {city}"

    assert weather.spec == ToolSpec(
        name="get_weather", description="Weather now.", parameters=schema
    )
    assert weather.name == "get_weather"


def test_registry_spec_equals_tools_list_spec():
    registry = Registry()

    @agentic_function(name="renamed", description="Custom text.", registry=registry)
    def original(a: int) -> int:
        """Docstring text."""
        return a

    tool = as_agent_tool(original)
    assert registry.get("renamed") is original
    assert tool.spec == registry.get("renamed").spec == original.spec
    assert tool.spec.name == "renamed" and tool.spec.description == "Custom text."

    provider = ScriptedProvider(["ok"])
    Runtime(provider, registry=Registry()).exec("hi", tools=[original])
    assert provider.requests[0].tools == [original.spec]


def test_decorated_function_stays_plain_python():
    registry = Registry()

    @function(registry=registry)
    def mul(a: int, b: int = 2) -> int:
        """Multiply."""
        return a * b

    @agentic_function(registry=registry)
    async def amul(a: int, b: int = 2) -> int:
        return a * b

    assert isinstance(mul, Function)
    assert mul(3) == 6 and mul(3, b=5) == 15 and mul(a=2, b=2) == 4
    assert mul("ab", 2) == "abab"  # a plain call does not validate
    assert inspect.signature(mul) == inspect.signature(mul.fn)
    assert mul.__name__ == "mul" and mul.__doc__ == "Multiply."
    assert asyncio.run(amul(4)) == 8
    assert amul.is_async and not mul.is_async


def test_agent_tool_is_compiled_once():
    @function(registry=Registry())
    def f(a: int) -> int:
        return a

    tool = f.to_agent_tool()
    assert isinstance(tool, AgentTool)
    assert f.to_agent_tool() is tool
    assert as_agent_tool(f) is tool
    assert tool.accepts == frozenset() and tool.is_async is False


def test_pydantic_validation_coerces_and_reports_paths():
    @function(registry=Registry())
    def f(n: int, point: Point, tags: list[str] = [], opt: Optional[int] = None):  # noqa: B006, UP045
        return n

    validate = f.to_agent_tool().validate
    args, problems = validate({"n": "3", "point": {"x": "1"}})
    assert problems == []
    assert args == {"n": 3, "point": Point(x=1, y=0)}
    assert isinstance(args["point"], Point)

    _, problems = validate({"n": "three", "point": {"y": 1}, "tags": ["a", 5], "extra": 1})
    assert problems == [
        ("n", "Input should be a valid integer, unable to parse string as an integer"),
        ("point.x", "Field required"),
        ("tags.1", "Input should be a valid string"),
        ("extra", "Extra inputs are not permitted"),
    ]


def test_explicit_parameters_validate_with_json_schema():
    @function(
        parameters={
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
        },
        registry=Registry(),
    )
    def f(n):
        return n

    validate = f.to_agent_tool().validate
    assert validate({"n": 3}) == ({"n": 3}, [])
    # JSON Schema does not coerce: "3" is not an integer.
    assert validate({"n": "3"})[1] == [("n", "'3' is not of type 'integer'")]


def test_coercion_and_validation_text_through_the_loop():
    seen = []

    @function(registry=Registry())
    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append((a, b))
        return a + b

    provider = ScriptedProvider(
        [
            turn(call("add", {"a": "3", "b": 4})),
            turn(call("add", {"a": "x"})),
            "done",
        ]
    )
    assert Runtime(provider, "m", registry=Registry()).exec("add", tools=[add]) == "done"
    assert seen == [(3, 4)]
    first_result = provider.requests[1].messages[-1]
    assert first_result.text == "7" and not first_result.is_error
    assert fed_back_error(provider.requests[2]) == (
        'Validation failed for tool "add":\n'
        "  - a: Input should be a valid integer, unable to parse string as an integer\n"
        "  - b: Field required\n"
        "\n"
        "Received arguments:\n"
        '{\n  "a": "x"\n}'
    )
    provider.assert_complete()


def test_injected_parameters_are_passed_when_declared():
    got = {}

    @function(registry=Registry())
    def probe(x: int, tool_call_id=None, cancel=None, on_update=None):
        got.update(x=x, id=tool_call_id, cancel=cancel is not None)
        on_update("half")
        return "ok"

    @agentic_function(registry=Registry())
    async def aprobe(runtime, y: int = 0):
        got["runtime"] = runtime
        return y + 1

    provider = ScriptedProvider(
        [turn(call("probe", {"x": "2"}, id="c1"), call("aprobe", {"y": 1}, id="c2")), "end"]
    )
    events = []
    rt = Runtime(provider, registry=Registry(), on_event=events.append)
    assert rt.exec("go", tools=[probe, aprobe]) == "end"
    assert got == {"x": 2, "id": "c1", "cancel": True, "runtime": rt}
    assert [e.partial for e in events if e.type == "tool_execution_update"] == ["half"]
    assert [m.text for m in provider.requests[1].messages[-2:]] == ["ok", "2"]


def test_agentic_function_without_runtime_outside_exec_is_a_clear_error():
    from openprogram import AgentContext, LoopConfig, agent_loop

    @agentic_function(registry=Registry())
    def needs(runtime, q: str) -> str:
        return q

    provider = ScriptedProvider([turn(call("needs", {"q": "a"})), "end"])

    async def main():
        return await agent_loop("x", AgentContext(tools=[needs]), LoopConfig(provider=provider))

    messages = asyncio.run(main())
    assert messages[2].is_error
    assert messages[2].text == (
        "needs needs a runtime: run it through Runtime.exec (or call it directly with runtime=...)"
    )


@pytest.mark.parametrize(
    ("make", "error", "text"),
    [
        (lambda: function(registry=Registry(), bogus=1), TypeError, "unknown decorator option"),
        (lambda: function(registry=Registry(), unsafe_for="sms"), TypeError, "tuple of names"),
        (lambda: Function(42), TypeError, "needs a callable"),
        (
            lambda: function(registry=Registry(), parameters={"type": "nope"})(lambda: None),
            ValueError,
            "invalid JSON Schema",
        ),
    ],
)
def test_bad_decorator_use_is_a_clear_error(make, error, text):
    with pytest.raises(error, match=text):
        maker = make()
        if callable(maker) and not isinstance(maker, Function):
            maker(lambda: None)


def test_positional_only_parameter_is_rejected():
    def f(a: int, /) -> int:
        return a

    with pytest.raises(TypeError, match="positional-only parameter 'a'"):
        function(registry=Registry())(f)


def test_unresolvable_or_unsupported_annotations_are_clear_errors():
    def undefined(x: "NoSuchType") -> None:  # noqa: F821
        return None

    with pytest.raises(TypeError, match="annotation 'NoSuchType' is not defined at module level"):
        function(registry=Registry())(undefined)

    class Opaque:
        pass

    def opaque(x: Opaque) -> None:
        return None

    with pytest.raises(TypeError, match="cannot build the tool schema of 'opaque'"):
        function(registry=Registry())(opaque)


def test_kwargs_functions_accept_extra_arguments():
    got = {}

    @function(registry=Registry())
    def flexible(a: int, **rest):
        got.update(a=a, **rest)
        return "ok"

    assert flexible.spec.parameters["additionalProperties"] is True
    tool = flexible.to_agent_tool()
    assert tool.accepts == frozenset({"tool_call_id", "cancel", "on_update"})
    args, problems = tool.validate({"a": "1", "z": 2})
    assert problems == [] and args == {"a": 1, "z": 2}
