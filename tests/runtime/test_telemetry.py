"""Runs as OpenTelemetry GenAI spans (``openprogram.telemetry``): the tree, the attributes the
convention names, content off by default, and nothing at all without a tracer provider."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes
from opentelemetry.trace import StatusCode

from openprogram import (
    AgentContext,
    LoopConfig,
    Registry,
    Runtime,
    Usage,
    agent_loop,
    agentic_function,
    function,
)
from openprogram.telemetry import (
    CAPTURE_CONTENT_ENV,
    FOLLOW_UP_EVENT,
    RUN_TERMINATION,
    STEERING_EVENT,
    TOOL_CALL_SKIPPED,
    run_spans,
    use_tracer_provider,
)
from openprogram_testing import ScriptedProvider, call, error_turn, turn
from tests.runtime._agents import register_add, research_agent

DEFINED = {
    value
    for name, value in vars(gen_ai_attributes).items()
    if name.startswith("GEN_AI_") and isinstance(value, str)
}


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with use_tracer_provider(provider):
        yield exporter


def tree(spans: tuple[ReadableSpan, ...]) -> list[Any]:
    """The spans as nested ``[name, [children...]]`` in start order."""
    by_parent: dict[int | None, list[ReadableSpan]] = {}
    for span in sorted(spans, key=lambda s: s.start_time or 0):
        parent = span.parent.span_id if span.parent is not None else None
        by_parent.setdefault(parent, []).append(span)

    def build(parent: int | None) -> list[Any]:
        return [[s.name, build(s.context.span_id)] for s in by_parent.get(parent, [])]

    return build(None)


def steered_research(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:
    """The outer run calls ``research`` (a nested run calling ``add``) and ``add`` in one batch;
    ``research`` queues steering for the outer run, which skips the outer ``add``."""
    registry = Registry()
    add = register_add(registry)

    @agentic_function(registry=registry)
    def research(topic: str, runtime: Runtime) -> str:
        """Research a topic with the model."""
        runtime.steer("stop adding")
        return "research: " + runtime.exec(f"research {topic}")

    provider = ScriptedProvider(
        [
            turn(
                call("research", {"topic": "cats"}),
                call("add", {"a": 5, "b": 6}),
                usage=Usage(input_tokens=10, output_tokens=3, cache_read_tokens=4),
            ),
            turn(call("add", {"a": 1, "b": 2}), usage=Usage(input_tokens=7, output_tokens=2)),
            "inner answer",
            turn("outer answer", usage=Usage(input_tokens=20, output_tokens=5)),
        ]
    )
    runtime = Runtime(provider, "m-1", registry=registry)
    assert runtime.exec("go", tools=[research, add]) == "outer answer"
    return exporter.get_finished_spans()


def test_a_nested_steered_run_is_one_tree_with_the_conventions_names(
    exporter: InMemorySpanExporter,
) -> None:
    spans = steered_research(exporter)
    assert tree(spans) == [
        [
            "invoke_agent",
            [
                ["chat m-1", []],
                [
                    "execute_tool research",
                    [
                        [
                            "invoke_agent research",
                            [["chat m-1", []], ["execute_tool add", []], ["chat m-1", []]],
                        ]
                    ],
                ],
                ["execute_tool add", []],
                ["chat m-1", []],
            ],
        ]
    ]
    assert len({s.context.trace_id for s in spans}) == 1
    by_name = {s.name: s for s in spans}
    outer = next(s for s in spans if s.name == "invoke_agent")
    assert outer.attributes is not None
    assert outer.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert outer.attributes["gen_ai.provider.name"] == "scripted"
    assert outer.attributes[RUN_TERMINATION] == "completed"
    # the steering, delivered to the outer run after its batch, is an event of its span
    assert [e.name for e in outer.events] == [STEERING_EVENT]
    skipped = [s for s in spans if s.name == "execute_tool add" and s.parent == outer.context]
    assert skipped[0].attributes is not None and skipped[0].attributes[TOOL_CALL_SKIPPED] is True
    assert skipped[0].status.status_code is StatusCode.UNSET
    chats = [s for s in spans if s.name == "chat m-1"]
    usage = [
        (s.attributes["gen_ai.usage.input_tokens"], s.attributes["gen_ai.usage.output_tokens"])
        for s in sorted(chats, key=lambda s: s.start_time or 0)
        if s.attributes is not None
    ]
    assert usage == [(14, 3), (7, 2), (0, 0), (20, 5)]  # input counts cached tokens too
    first = min(chats, key=lambda s: s.start_time or 0)
    assert first.attributes is not None
    assert first.attributes["gen_ai.usage.cache_read.input_tokens"] == 4
    assert first.attributes["gen_ai.response.finish_reasons"] == ("tool_call",)
    tool = by_name["execute_tool research"]
    assert tool.attributes is not None and tool.attributes["gen_ai.tool.name"] == "research"
    assert tool.attributes["gen_ai.tool.call.id"]
    # every gen_ai.* name written is one the convention defines (usage too), and the run
    # spans carry no usage (the chat spans do: a backend summing both would count twice)
    for span in spans:
        for key in span.attributes or {}:
            assert not key.startswith("gen_ai.") or key in DEFINED, key
    assert not any(k.startswith("gen_ai.usage.") for k in outer.attributes)


def test_content_is_off_by_default_and_on_with_the_conventions_switch(
    exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch
) -> None:
    content = {
        "gen_ai.input.messages",
        "gen_ai.output.messages",
        "gen_ai.system_instructions",
        "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result",
    }

    def run() -> set[str]:
        exporter.clear()
        registry, tools = research_agent()
        provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 2})), "three"])
        Runtime(provider, "m", registry=registry, system_prompt="be brief").exec(
            "add", tools=tools[1:]
        )
        return {k for s in exporter.get_finished_spans() for k in s.attributes or {}}

    assert not run() & content
    monkeypatch.setenv(CAPTURE_CONTENT_ENV, "true")
    assert run() >= content
    spans = exporter.get_finished_spans()
    chat = next(s for s in spans if s.name == "chat m")
    assert chat.attributes is not None
    assert json.loads(str(chat.attributes["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "add"}]}
    ]
    tool = next(s for s in spans if s.name == "execute_tool add")
    assert tool.attributes is not None
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"a": 1, "b": 2}
    assert tool.attributes["gen_ai.tool.call.result"] == '"3"'


def test_errors_set_the_status_and_the_exception_event(exporter: InMemorySpanExporter) -> None:
    @function(registry=Registry())
    def boom() -> str:
        """Fail."""
        raise ValueError("no such thing")

    provider = ScriptedProvider([turn(call("boom")), error_turn("overloaded", status=529)])
    stream = agent_loop("go", AgentContext(tools=[boom]), LoopConfig(provider, model="m"))

    async def drain() -> None:
        async for _ in stream:
            pass

    import asyncio

    asyncio.run(drain())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    tool = spans["execute_tool boom"]
    assert tool.status.status_code is StatusCode.ERROR
    assert [e.name for e in tool.events] == ["exception"]
    assert tool.events[0].attributes == {"exception.message": "no such thing"}
    run = spans["invoke_agent"]
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes[RUN_TERMINATION] == "error"
    failed = [s for s in exporter.get_finished_spans() if s.status.status_code is StatusCode.ERROR]
    chat_error = next(s for s in failed if s.name == "chat m")
    assert chat_error.attributes is not None and chat_error.attributes["error.type"] == "529"


def test_follow_ups_are_events_of_the_run_span(exporter: InMemorySpanExporter) -> None:
    provider = ScriptedProvider(["first", "second"])
    runtime = Runtime(provider, "m")
    runtime.follow_up("and then?")
    runtime.exec("hi", tools=[])
    run = next(s for s in exporter.get_finished_spans() if s.name == "invoke_agent")
    assert [e.name for e in run.events] == [FOLLOW_UP_EVENT]


def test_a_span_made_by_a_tool_body_nests_under_its_execute_tool_span() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    app = tracer_provider.get_tracer("app")

    @function(registry=Registry())
    def lookup() -> str:
        """Look it up."""
        with app.start_as_current_span("db query"):
            return "found"

    provider = ScriptedProvider([turn(call("lookup")), "done"])
    with use_tracer_provider(tracer_provider):
        Runtime(provider, "m").exec("go", tools=[lookup])
    assert tree(exporter.get_finished_spans()) == [
        [
            "invoke_agent",
            [["chat m", []], ["execute_tool lookup", [["db query", []]]], ["chat m", []]],
        ]
    ]


def test_without_a_tracer_provider_no_recorder_is_made() -> None:
    config = LoopConfig(ScriptedProvider(["x"]), model="m")
    stream: Any = object()
    assert run_spans(stream, AgentContext(), config) is None  # no provider set anywhere
    with use_tracer_provider(trace.NoOpTracerProvider()):
        assert run_spans(stream, AgentContext(), config) is None  # spans would not record


def test_the_provider_is_named_as_the_convention_names_it() -> None:
    from types import SimpleNamespace

    from openprogram.telemetry import provider_name

    assert provider_name(SimpleNamespace(api="bedrock-converse")) == "aws.bedrock"
    assert provider_name(SimpleNamespace(api="openai-responses")) == "openai"
    assert provider_name(SimpleNamespace(api="google-gemini")) == "gcp.gen_ai"
    assert provider_name(ScriptedProvider([])) == "scripted"  # a custom value, as it names itself


def test_an_approval_decision_is_an_event_of_the_calls_span(
    exporter: InMemorySpanExporter,
) -> None:
    from openprogram import Deny

    registry = Registry()

    @function(registry=registry, requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    provider = ScriptedProvider([turn(call("delete", {"path": "/tmp/a"})), "done"])
    runtime = Runtime(provider, "m", registry=registry, approval_gate=lambda r: Deny("no"))
    assert runtime.exec("clean up", tools=[delete]) == "done"
    tool = next(s for s in exporter.get_finished_spans() if s.name == "execute_tool delete")
    assert [(e.name, dict(e.attributes or {})) for e in tool.events] == [
        ("openprogram.approval", {"openprogram.approval.outcome": "denied"}),
        ("exception", {"exception.message": tool.events[1].attributes["exception.message"]}),  # type: ignore[index]
    ]
    assert tool.status.status_code is StatusCode.ERROR  # the call did not run: an error result


def test_a_run_closed_mid_tool_ends_its_spans_and_leaves_no_span_current(
    exporter: InMemorySpanExporter,
) -> None:
    """A consumer that stops in the middle of a tool call (an observer raised, say) closes the
    stream: every open span ends and the tool span, current during the call, is current no
    more."""
    import asyncio

    from openprogram.events import ToolExecutionStart

    @function(registry=Registry())
    def slow() -> str:
        """Take a while."""
        return "late"

    async def consume() -> None:
        stream = agent_loop(
            "go",
            AgentContext(tools=[slow]),
            LoopConfig(ScriptedProvider([turn(call("slow")), "done"]), model="m"),
        )
        async for event in stream:
            if isinstance(event, ToolExecutionStart):
                assert trace.get_current_span().is_recording()  # the execute_tool span
                await stream.aclose()
                break
        assert not trace.get_current_span().is_recording()

    asyncio.run(consume())
    spans = {s.name: s for s in exporter.get_finished_spans()}
    assert set(spans) == {"invoke_agent", "chat m", "execute_tool slow"}
    assert all(s.end_time is not None for s in spans.values())


def test_an_exception_the_run_re_raises_is_recorded_on_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    @function(registry=Registry())
    def interrupt() -> str:
        """Stop everything."""
        raise KeyboardInterrupt

    provider = ScriptedProvider([turn(call("interrupt")), "never"])
    with pytest.raises(KeyboardInterrupt):
        Runtime(provider, "m").exec("go", tools=[interrupt])
    run = next(s for s in exporter.get_finished_spans() if s.name == "invoke_agent")
    assert run.status.status_code is StatusCode.ERROR
    assert run.attributes is not None and run.attributes[RUN_TERMINATION] == "aborted"
    assert [e.attributes["exception.type"] for e in run.events if e.name == "exception"] == [  # type: ignore[index]
        "KeyboardInterrupt"
    ]
    assert not trace.get_current_span().is_recording()


def test_a_steering_source_that_raises_fails_the_run_and_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    def source() -> list[str]:
        raise RuntimeError("steering store down")

    config = LoopConfig(ScriptedProvider(["never"]), model="m", get_steering_messages=source)

    async def drain() -> None:
        async for _ in agent_loop("go", AgentContext(), config):
            pass

    import asyncio

    with pytest.raises(RuntimeError, match="steering store down"):
        asyncio.run(drain())
    spans = exporter.get_finished_spans()
    assert [s.name for s in spans] == ["invoke_agent"]  # the stand-in message made no chat span
    assert spans[0].status.status_code is StatusCode.ERROR
    assert spans[0].attributes is not None and spans[0].attributes[RUN_TERMINATION] == "error"
