"""The public types are slotted dataclasses with pydantic's model API (``openprogram._model``):
they must still validate, serialise and round-trip exactly as the pydantic models they replaced."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from openprogram import (
    AgentEvent,
    AssistantMessage,
    ImageContent,
    Message,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    ToolSpec,
    Usage,
    UserMessage,
)
from openprogram_testing import ScriptedProvider, call, run_loop_sync, turn


def _messages() -> list[Message]:
    return [
        UserMessage(content="hi"),
        UserMessage(
            content=[TextContent(text="look"), ImageContent(data_b64="AA==", mime_type="image/png")]
        ),
        AssistantMessage(
            content=[
                ThinkingContent(thinking="hm", signature="sig"),
                TextContent(text="calling"),
                ToolCall(id="c1", name="add", arguments={"a": 1, "b": [2, {"c": None}]}),
            ],
            stop_reason="toolUse",
            usage=Usage(input_tokens=3, output_tokens=4),
            model="m",
            provider="p",
            api="a",
        ),
        ToolResultMessage(
            tool_call_id="c1", tool_name="add", content=[TextContent(text="3")], details={"raw": 3}
        ),
        AssistantMessage(
            stop_reason="error",
            error_message="boom",
            error_status=529,
            error_retryable=True,
            error_retry_after_s=1.5,
        ),
    ]


@pytest.mark.parametrize("message", _messages(), ids=lambda m: type(m).__name__)
def test_every_message_round_trips_through_json(message: Any) -> None:
    cls = type(message)
    assert cls.model_validate_json(message.model_dump_json()) == message
    assert cls.model_validate(message.model_dump(mode="json")) == message
    assert TypeAdapter(Message).validate_json(message.model_dump_json()) == message


def test_a_whole_trace_of_events_round_trips() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2})), turn("3")])
    add = {"spec": {"name": "add"}, "execute": lambda a: a["a"] + a["b"]}
    trace = run_loop_sync(provider, "go", tools=[add])
    adapter = TypeAdapter(list[AgentEvent])
    text = adapter.dump_json(trace.events)
    assert adapter.validate_json(text) == trace.events
    assert [e.model_dump(mode="json")["type"] for e in trace.events][:2] == [
        "agent_start",
        "turn_start",
    ]


def test_validation_rejects_bad_data_naming_the_field() -> None:
    with pytest.raises(ValidationError, match="zz"):
        TextContent.model_validate({"text": "a", "zz": 1})
    with pytest.raises(ValidationError, match="text"):
        TextContent.model_validate({"type": "text"})
    with pytest.raises(ValidationError, match="stop_reason"):
        AssistantMessage.model_validate({"stop_reason": "nope"})
    with pytest.raises(ValidationError):
        UserMessage.model_validate({"content": 5})


def test_unions_are_told_apart_by_their_tag() -> None:
    message = AssistantMessage.model_validate(
        {"content": [{"type": "toolCall", "id": "1", "name": "f"}, {"type": "text", "text": "t"}]}
    )
    assert [type(b) for b in message.content] == [ToolCall, TextContent]
    parsed = TypeAdapter(Message).validate_python(
        {"role": "toolResult", "tool_call_id": "1", "tool_name": "f"}
    )
    assert isinstance(parsed, ToolResultMessage)


def test_constructors_take_fields_in_order_tags_by_keyword_and_share_no_defaults() -> None:
    assert TextContent("hi") == TextContent(text="hi")
    assert ToolResultMessage("c1", "add", [TextContent("3")]) == ToolResultMessage(
        tool_call_id="c1", tool_name="add", content=[TextContent(text="3")]
    )
    with pytest.raises(TypeError):
        TextContent("text", "hi")  # type: ignore[call-arg]  # the tag is keyword-only
    with pytest.raises(TypeError):
        TextContent(text="a", zz=1)  # type: ignore[call-arg]
    assert list(TextContent("x").model_dump()) == ["type", "text"]  # the tag still comes first
    a, b = AssistantMessage(), AssistantMessage()
    a.content.append(TextContent(text="x"))
    assert b.content == [] and a.usage is not b.usage


def test_model_copy_and_schema() -> None:
    original = ToolCall(id="1", name="f", arguments={"x": [1]})
    shallow = original.model_copy(update={"name": "g"})
    deep = original.model_copy(deep=True)
    assert (shallow.name, shallow.arguments is original.arguments) == ("g", True)
    assert deep == original and deep.arguments["x"] is not original.arguments["x"]
    schema = ToolSpec.model_json_schema()
    assert schema["required"] == ["name"] and "parameters" in schema["properties"]
    assert json.loads(Usage(input_tokens=1).model_dump_json(exclude_defaults=True)) == {
        "input_tokens": 1
    }


def test_user_messages_is_the_one_conversion_of_message_forms() -> None:
    from openprogram.types import user_messages

    given = UserMessage(content="kept")
    assert user_messages(given, "a prompt")[0] is given
    assert [m.text for m in user_messages("hi", "a prompt")] == ["hi"]  # one message, not letters
    mixed = user_messages(("a", given), "a prompt")
    assert [m.text for m in mixed] == ["a", "kept"] and mixed[1] is given
    assert user_messages([], "a prompt") == []
    for bad, said in (
        (3, "got int"),
        (b"x", "got bytes"),
        ({"a"}, "got set"),
        (["a", 3], "got int"),
    ):
        with pytest.raises(TypeError, match=f"a prompt must be a str or UserMessage, {said}"):
            user_messages(bad, "a prompt")
