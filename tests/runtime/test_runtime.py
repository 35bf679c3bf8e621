"""``Runtime.exec`` / ``aexec``: what reaches the provider, the return value, termination
handling, ``tool_choice`` validation, ``last_run`` — and the README example, run verbatim."""

import re
import threading
import time
from pathlib import Path

import pytest

from openprogram import (
    CancelledRun,
    CancelToken,
    ProviderError,
    Registry,
    Runtime,
    ToolSpec,
    UserMessage,
    agentic_function,
    default_registry,
    function,
)
from openprogram_testing import ScriptedProvider, aborted_turn, call, error_turn, turn
from tests.runtime._agents import register_add, register_answers

README = Path(__file__).resolve().parents[2] / "docs" / "runtime.md"


def _registry():
    registry = Registry()
    add = register_add(registry)

    @function(registry=registry)
    def echo(text: str) -> str:
        """Echo a text."""
        return text

    return registry, add, echo


def test_exec_returns_the_last_assistant_text_blocks_joined():
    registry, add, echo = _registry()
    provider = ScriptedProvider(
        [turn("thinking aloud ", call("add", {"a": 2, "b": 3})), turn("The sum ", "is 5.")]
    )
    runtime = Runtime(provider, "model-x", system_prompt="Be terse.", registry=registry)
    assert runtime.exec("What is 2+3?") == "The sum is 5."
    provider.assert_complete()
    first, second = provider.requests
    assert first.model == "model-x" and first.system_prompt == "Be terse."
    assert first.tools == [add.spec, echo.spec]
    assert first.tool_choice == "auto" and first.parallel_tool_calls is None
    assert [m.role for m in second.messages] == ["user", "assistant", "toolResult"]
    assert second.messages[-1].text == "5"

    record = runtime.last_run
    assert record is not None
    assert record.termination == "completed" and record.model_calls == 2
    assert record.text == "The sum is 5." and record.tools == ["add", "echo"]
    assert [m.role for m in record.messages] == ["user", "assistant", "toolResult", "assistant"]
    assert record.undelivered == []


async def test_aexec_is_the_async_twin_and_forwards_options_every_round():
    registry, add, echo = _registry()
    provider = ScriptedProvider([turn(call("echo", {"text": "x"})), "done"])
    runtime = Runtime(provider, registry=registry, max_tokens=99, temperature=0.5)
    result = await runtime.aexec(
        [UserMessage(content="one"), "two"],
        tool_choice={"type": "function", "name": "echo"},
        parallel_tool_calls=False,
    )
    assert result == "done"
    for request in provider.requests:
        assert request.tool_choice == {"type": "function", "name": "echo"}
        assert request.parallel_tool_calls is False
        assert request.max_tokens == 99 and request.temperature == 0.5
    assert [m.text for m in provider.requests[0].messages] == ["one", "two"]


@pytest.mark.parametrize(
    ("tool_choice", "kwargs", "message"),
    [
        ("any", {}, "unknown tool_choice 'any'; expected 'auto', 'required', 'none' or"),
        ("AUTO", {}, "unknown tool_choice 'AUTO'"),
        ({"type": "function"}, {}, "malformed tool_choice {'type': 'function'}"),
        ({"type": "tool", "name": "add"}, {}, "malformed tool_choice"),
        ({"type": "function", "name": "add", "x": 1}, {}, "malformed tool_choice"),
        ({"type": "function", "function": {"name": "add"}}, {}, "malformed tool_choice"),
        ({"type": "function", "name": ""}, {}, "malformed tool_choice"),
        (
            {"type": "function", "name": "nope"},
            {},
            "tool_choice names tool 'nope', which is not among this run's tools: add, echo",
        ),
        (
            {"type": "function", "name": "add"},
            {"tools_deny": ["add"]},
            "tool_choice names tool 'add', which is not among this run's tools: echo",
        ),
        (
            {"type": "function", "name": "add"},
            {"toolset": "none"},
            "tool_choice names tool 'add', which is not among this run's tools: \\(no tools\\)",
        ),
        ("required", {"tools": []}, "tool_choice='required' but the run has no tools"),
        (3, {}, "tool_choice must be 'auto', 'required', 'none' or a dict, got int"),
    ],
)
def test_tool_choice_is_validated_before_any_model_call(tool_choice, kwargs, message):
    registry, _, _ = _registry()
    provider = ScriptedProvider()
    with pytest.raises(ValueError, match=message.replace("{", "\\{").replace("}", "\\}")):
        Runtime(provider, registry=registry).exec("hi", tool_choice=tool_choice, **kwargs)
    assert provider.requests == []


@pytest.mark.parametrize("choice", ["auto", "required", "none", None])
def test_valid_string_tool_choices_are_forwarded(choice):
    registry, _, _ = _registry()
    provider = ScriptedProvider(["ok"])
    assert Runtime(provider, registry=registry).exec("hi", tool_choice=choice) == "ok"
    assert provider.requests[0].tool_choice == choice


def test_max_iterations_returns_what_exists():
    registry, add, _ = _registry()
    provider = ScriptedProvider(
        [
            turn("step one", call("add", {"a": 1, "b": 1})),
            turn("step two", call("add", {"a": 2, "b": 2})),
        ]
    )
    runtime = Runtime(provider, registry=registry)
    assert runtime.exec("loop", max_iterations=2) == "step two"
    provider.assert_complete()
    assert runtime.last_run.termination == "max_iterations"
    assert runtime.last_run.model_calls == 2


def test_max_iterations_none_means_fifty():
    registry, add, _ = _registry()
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1}))] * 50)
    runtime = Runtime(provider, registry=registry)
    assert runtime.exec("spin") == ""
    provider.assert_complete()
    assert runtime.last_run.termination == "max_iterations"
    assert runtime.last_run.model_calls == 50


def test_provider_error_raises_provider_error_with_details():
    registry, _, _ = _registry()
    provider = ScriptedProvider(
        [error_turn("rate limited", status=429, retryable=True, retry_after_s=2.5)]
    )
    runtime = Runtime(provider, registry=registry)
    with pytest.raises(ProviderError) as info:
        runtime.exec("hi")
    error = info.value
    assert (error.message, error.status, error.retryable, error.retry_after_s) == (
        "rate limited",
        429,
        True,
        2.5,
    )
    assert str(error) == "provider error (status 429, retryable, retry after 2.5s): rate limited"
    assert error.assistant_message.stop_reason == "error"
    assert runtime.last_run.termination == "error"


def test_aborted_run_raises_cancelled_run():
    registry, _, _ = _registry()
    runtime = Runtime(ScriptedProvider([aborted_turn(message="user hung up")]), registry=registry)
    with pytest.raises(CancelledRun, match="user hung up"):
        runtime.exec("hi")
    assert runtime.last_run.termination == "aborted"


def test_cancel_token_from_another_thread_aborts_the_run():
    registry = Registry()
    token = CancelToken()
    started = threading.Event()

    @function(registry=registry)
    async def wait_forever() -> str:
        started.set()
        import asyncio

        await asyncio.sleep(30)
        return "never"

    def cancel_soon():
        started.wait(5)
        token.cancel("stop")

    threading.Thread(target=cancel_soon).start()
    provider = ScriptedProvider([turn(call("wait_forever"))])
    runtime = Runtime(provider, registry=registry)
    begin = time.monotonic()
    with pytest.raises(CancelledRun):
        runtime.exec("go", cancel=token)
    assert time.monotonic() - begin < 10
    assert runtime.last_run.termination == "aborted"
    assert runtime.last_run.messages[-1].text == "Cancelled"


def test_tool_timeout_is_passed_to_the_loop():
    registry = Registry()

    @function(registry=registry)
    def slow() -> str:
        time.sleep(0.05)
        return "late"

    provider = ScriptedProvider([turn(call("slow")), "recovered"])
    runtime = Runtime(provider, registry=registry, tool_timeout_s=0.01)
    assert runtime.exec("go") == "recovered"
    assert provider.requests[1].messages[-1].text == "Tool slow timed out after 0.01s"


def test_on_event_sees_every_event():
    events = []
    provider = ScriptedProvider(["hello"])
    Runtime(provider, registry=Registry(), on_event=lambda e: events.append(e.type)).exec("hi")
    assert events[0] == "agent_start" and events[-1] == "agent_end"
    assert "message_update" in events


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"max_depth": 0}, ValueError, "max_depth must be an int >= 1"),
        ({"steering_mode": "later"}, ValueError, "steering_mode must be 'skip' or 'after_batch'"),
    ],
)
def test_runtime_constructor_checks(kwargs, error, message):
    with pytest.raises(error, match=message):
        Runtime(ScriptedProvider(), **kwargs)
    with pytest.raises(TypeError, match="has no stream"):
        Runtime(object())


def test_exec_argument_checks_before_any_model_call():
    provider = ScriptedProvider()
    runtime = Runtime(provider, registry=Registry())
    with pytest.raises(TypeError, match="parallel_tool_calls must be True, False or None"):
        runtime.exec("hi", parallel_tool_calls="no")
    with pytest.raises(TypeError, match="max_iterations must be an int or None"):
        runtime.exec("hi", max_iterations="3")
    with pytest.raises(ValueError, match="exec needs content: got an empty list of messages"):
        runtime.exec([])
    with pytest.raises(TypeError, match="exec content must be a string, a UserMessage or a list"):
        runtime.exec(42)
    with pytest.raises(TypeError, match="exec content must be strings or UserMessages, got int"):
        runtime.exec(["a", 1])
    assert provider.requests == []


def _readme_example() -> str:
    text = README.read_text()
    start = text.index("<!-- section: runtime -->")
    section = text[start:]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "the runtime section of README.md has no python example"
    return match.group(1)


@pytest.fixture
def restore_default_registry():
    """The example registers into the shared registry: undo that for the other tests."""
    before = set(default_registry.names())
    yield
    for name in set(default_registry.names()) - before:
        default_registry.unregister(name)


def test_readme_runtime_example_runs_verbatim(capsys, restore_default_registry):
    code = _readme_example()
    namespace: dict = {"__name__": "readme_example"}
    exec(compile(code, "README.md#runtime", "exec"), namespace)
    out = capsys.readouterr().out
    assert out == (
        "Paris has 2102650 people; Lyon has 522250.\n"
        "['summarize_cities', 'population']\n"
        "['population']\n"
    )
    assert namespace["provider"].requests[2].tools == [
        ToolSpec(
            name="population",
            description="Return the population of a city.",
            parameters={
                "additionalProperties": False,
                "properties": {
                    "city": {"description": "The city name, e.g. 'Paris'.", "type": "string"}
                },
                "required": ["city"],
                "type": "object",
            },
        )
    ]


def test_steering_sources_feed_only_the_outermost_run():
    registry = Registry()
    polls = []
    first, second = register_answers(registry, first="1", second="2")

    @agentic_function(registry=registry)
    def nested(runtime) -> str:
        return runtime.exec("inner", tools=[first])

    queue = ["stop and summarize"]

    def steering():
        polls.append(len(queue))
        return [queue.pop()] if queue and len(polls) >= 2 else []

    provider = ScriptedProvider(
        [
            turn(call("nested"), call("second")),
            turn(call("first")),  # nested run: never polls the outer steering queue
            "inner done",
            "summary",
        ]
    )
    runtime = Runtime(provider, registry=registry, get_steering_messages=steering)
    assert runtime.exec("go", tools=[nested, second]) == "summary"
    provider.assert_complete()
    # outer polls only: before round 1, after the `nested` call (delivers), after the last
    # round; the nested run (two rounds of its own) polled nothing.
    assert polls == [1, 1, 0]
    last = provider.requests[3].messages
    assert [m.role for m in last[-4:]] == ["assistant", "toolResult", "toolResult", "user"]
    assert last[-2].text == "Skipped due to queued user message." and last[-2].skipped
    assert last[-1].text == "stop and summarize"
    assert runtime.last_run.undelivered == []
