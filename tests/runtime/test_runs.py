"""``run_sync``, ``RunInfo`` and run observation, ``PollPoint`` handed to steering sources, and the
``Runtime.steer``/``follow_up`` queues."""

from __future__ import annotations

import asyncio
import threading
import warnings
from typing import Any

import pytest

from openprogram import (
    AgentContext,
    AgentEvent,
    Handover,
    LoopConfig,
    PollPoint,
    ProviderError,
    Registry,
    RunInfo,
    Runtime,
    agent_loop,
    agentic_function,
    run_sync,
)
from openprogram.runs import MessageQueue, wants_poll_point
from openprogram_testing import ScriptedProvider, call, error_turn, turn
from tests.runtime._agents import register_add
from tests.runtime._loop import add_tool

# -- run_sync ---------------------------------------------------------------------------------


async def _boom() -> None:
    raise ValueError("boom")


def test_run_sync_returns_the_result_and_accepts_a_factory() -> None:
    async def seven() -> int:
        return 7

    assert run_sync(seven()) == 7
    assert run_sync(seven) == 7
    assert run_sync(lambda: seven()) == 7


def test_run_sync_exceptions_are_not_chained_to_the_loop_probe() -> None:
    with pytest.raises(ValueError, match="boom") as caught:
        run_sync(_boom())
    assert caught.value.__context__ is None and caught.value.__cause__ is None


def test_run_sync_inside_a_running_loop_uses_a_helper_and_keeps_context() -> None:
    import contextvars

    var: contextvars.ContextVar[str] = contextvars.ContextVar("v", default="outer-default")

    async def read() -> tuple[str, str]:
        return var.get(), threading.current_thread().name

    async def main() -> tuple[tuple[str, str], BaseException]:
        var.set("set-in-loop")
        got = run_sync(read())  # a sync call made while this loop runs
        try:
            run_sync(_boom())
        except ValueError as exc:
            return got, exc
        raise AssertionError("no exception")

    (value, thread), exc = asyncio.run(main())
    assert value == "set-in-loop" and thread != threading.current_thread().name
    assert exc.__context__ is None and exc.__cause__ is None


def test_sync_exec_errors_are_not_chained_to_no_running_event_loop() -> None:
    runtime = Runtime(ScriptedProvider([error_turn("server down", status=500)]), "m")
    with pytest.raises(ProviderError) as caught:
        runtime.exec("hi", tools=[])
    assert caught.value.__context__ is None and caught.value.__cause__ is None


# -- RunInfo: a tree of runs from one exec ------------------------------------------------------


def _nested_runtime() -> tuple[Runtime, list[tuple[RunInfo, AgentEvent]]]:
    registry = Registry()
    add = register_add(registry)

    @agentic_function(registry=registry)
    def leaf(topic: str, runtime: Any) -> str:
        """Third level."""
        return str(runtime.exec(f"leaf {topic}", tools=[add]))

    @agentic_function(registry=registry)
    async def middle(topic: str, runtime: Any) -> str:
        """Second level (async body, awaited exec)."""
        return str(await runtime.aexec(f"middle {topic}", tools=[leaf]))

    provider = ScriptedProvider(
        [
            turn(call("middle", {"topic": "x"}, id="c-outer")),
            turn(call("leaf", {"topic": "y"}, id="c-middle")),
            turn(call("add", {"a": 1, "b": 2}, id="c-leaf")),
            "leaf done",
            "middle done",
            "outer done",
        ]
    )
    seen: list[tuple[RunInfo, AgentEvent]] = []
    runtime = Runtime(
        provider, "m", registry=registry, on_run_event=lambda info, e: seen.append((info, e))
    )
    runtime._test_tools = [middle]  # type: ignore[attr-defined]
    return runtime, seen


def test_nested_runs_three_deep_are_tagged_and_linked_to_their_tool_calls() -> None:
    runtime, seen = _nested_runtime()
    assert runtime.exec("go", tools=runtime._test_tools) == "outer done"  # type: ignore[attr-defined]
    runs: dict[str, RunInfo] = {}
    for info, _ in seen:
        runs.setdefault(info.run_id, info)
    outer, middle, leaf = sorted(runs.values(), key=lambda i: i.depth)
    assert (outer.parent_id, outer.depth, outer.tool_call_id, outer.kind) == (None, 0, None, "exec")
    assert (middle.parent_id, middle.depth) == (outer.run_id, 1)
    assert (middle.tool_call_id, middle.tool_name) == ("c-outer", "middle")
    assert (leaf.parent_id, leaf.depth) == (middle.run_id, 2)
    assert (leaf.tool_call_id, leaf.tool_name) == ("c-middle", "leaf")
    # Each run's own events form a complete run: one agent_start first, one agent_end last.
    for run_id in runs:
        types = [e.type for i, e in seen if i.run_id == run_id]
        assert types[0] == "agent_start" and types[-1] == "agent_end"
        assert types.count("agent_start") == 1 and types.count("agent_end") == 1
    assert runtime.last_run is not None and runtime.last_run.run == outer


def test_observe_context_manager_sees_runs_only_while_open() -> None:
    runtime, _ = _nested_runtime()
    got: list[str] = []

    async def observer(info: RunInfo, event: AgentEvent) -> None:  # async observers are awaited
        got.append(f"{info.depth}:{event.type}")

    with runtime.observe(observer):
        runtime.exec("go", tools=runtime._test_tools)  # type: ignore[attr-defined]
    assert "0:agent_start" in got and "2:agent_end" in got
    count = len(got)
    runtime.provider = ScriptedProvider(["again"])
    runtime.exec("go", tools=[])
    assert len(got) == count


def test_choices_runs_are_tagged_as_choices_children_of_the_work_run() -> None:
    provider = ScriptedProvider(
        [
            "thinking done",
            turn(call("choose", {"choice": "nope"})),
            turn(call("choose", {"choice": "yes"})),
        ]
    )
    seen: list[tuple[RunInfo, str]] = []
    runtime = Runtime(provider, "m", on_run_event=lambda i, e: seen.append((i, e.type)))
    assert runtime.exec("decide", tools=[], choices=["yes", "no"]) == "yes"
    runs: dict[str, RunInfo] = {}
    for info, _ in seen:
        runs.setdefault(info.run_id, info)
    work, *asks = runs.values()
    assert work.kind == "exec" and len(asks) == 2
    assert all(a.kind == "choices" and a.parent_id == work.run_id for a in asks)
    assert all(a.depth == 0 and a.tool_call_id is None for a in asks)


# -- PollPoint ---------------------------------------------------------------------------------


def test_wants_poll_point_is_decided_from_the_signature() -> None:
    class Source:
        def bare(self) -> list[str]:
            return []

        def with_point(self, point: PollPoint) -> list[str]:
            return []

        def __call__(self, point: PollPoint) -> list[str]:
            return []

    s = Source()
    assert not wants_poll_point(lambda: [])
    assert wants_poll_point(lambda point: [])
    assert wants_poll_point(lambda *args: [])
    assert not wants_poll_point(s.bare)
    assert wants_poll_point(s.with_point)
    assert wants_poll_point(s)
    assert not wants_poll_point(None)


def _run(provider: Any, config_kwargs: dict[str, Any], tools: list[Any]) -> Any:
    async def main() -> Any:
        context = AgentContext(tools=tools)
        stream = agent_loop("go", context, LoopConfig(provider=provider, **config_kwargs))
        await stream
        return stream

    return asyncio.run(main())


def test_sources_that_declare_a_parameter_receive_the_poll_point() -> None:
    points: list[PollPoint] = []
    follow: list[PollPoint] = []

    def steering(point: PollPoint) -> list[str]:
        points.append(point)
        return []

    def follow_up(point: PollPoint) -> list[str]:
        follow.append(point)
        return []

    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})),
            turn(call("add", {"a": 5, "b": 6})),
            "done",
        ]
    )
    _run(
        provider,
        {"get_steering_messages": steering, "get_follow_up_messages": follow_up},
        [add_tool()],
    )
    got = [(p.round, p.call_index, p.calls_in_round, p.calls_in_run, p.batch_done) for p in points]
    assert got == [
        (0, None, 0, 0, False),  # right after the prompt
        (0, 0, 1, 1, False),
        (0, 1, 2, 2, True),
        (0, None, 2, 2, True),  # end of round 0
        (1, 0, 1, 3, True),
        (1, None, 1, 3, True),
        (2, None, 0, 3, True),  # end of the text-only round
    ]
    assert all(p.hook == "steering" and p.depth == 0 and p.run is None for p in points)
    assert [(p.hook, p.round, p.calls_in_run, p.batch_done) for p in follow] == [
        ("follow_up", 2, 3, True)
    ]


def test_runtime_sources_with_a_point_are_polled_in_nested_runs_too() -> None:
    runtime, _ = _nested_runtime()
    depths: list[tuple[int, str | None]] = []

    def steering(point: PollPoint) -> list[str]:
        assert point.run is not None
        depths.append((point.depth, point.run.tool_name))
        return []

    runtime.get_steering_messages = steering
    runtime.exec("go", tools=runtime._test_tools)  # type: ignore[attr-defined]
    assert {(0, None), (1, "middle"), (2, "leaf")} <= set(depths)


def test_runtime_sources_without_a_point_feed_the_outermost_run_only() -> None:
    runtime, _ = _nested_runtime()
    polls: list[int] = []
    runtime.get_steering_messages = lambda: polls.append(1) or []
    runtime.exec("go", tools=runtime._test_tools)  # type: ignore[attr-defined]
    # outer run only: after the prompt, after its one call, after round 0, after round 1
    assert len(polls) == 4


# -- queues -------------------------------------------------------------------------------------


def test_message_queue_drain_modes() -> None:
    from openprogram import UserMessage

    one = MessageQueue("one_at_a_time")
    one.put([UserMessage(content="a"), UserMessage(content="b")])
    assert [m.text for m in one.take()] == ["a"]
    assert [m.text for m in one.take()] == ["b"]
    assert one.take() == []
    every = MessageQueue("all")
    every.put([UserMessage(content="a"), UserMessage(content="b")])
    assert [m.text for m in every.take()] == ["a", "b"] and every.take() == []
    with pytest.raises(ValueError, match="drain mode"):
        MessageQueue("some")  # type: ignore[arg-type]


def _steered_runtime(**kwargs: Any) -> tuple[Runtime, ScriptedProvider, dict[str, Any]]:
    provider = ScriptedProvider(
        [
            turn(call("add", {"a": 1, "b": 2}, id="t1"), call("add", {"a": 3, "b": 4}, id="t2")),
            "after steering",
            "after second steering",
        ]
    )
    runtime = Runtime(provider, "m", **kwargs)
    tool = add_tool()
    original = tool["execute"]

    def execute(args: dict[str, Any]) -> int:
        if args["a"] == 1:
            runtime.steer(["first", "second"])
        result: int = original(args)
        return result

    tool["execute"] = execute
    return runtime, provider, tool


def test_steer_one_at_a_time_skips_the_batch_and_delivers_one_message_per_poll() -> None:
    runtime, provider, tool = _steered_runtime()
    assert runtime.exec("go", tools=[tool]) == "after second steering"
    record = runtime.last_run
    assert record is not None
    texts = [(m.role, m.text) for m in record.messages]
    assert ("toolResult", "Skipped due to queued user message.") in texts
    assert [t for r, t in texts if r == "user"] == ["go", "first", "second"]
    assert runtime.queued_steering == [] and record.undelivered == []
    provider.assert_complete()


def test_steer_all_at_once_delivers_everything_at_one_poll() -> None:
    runtime, provider, tool = _steered_runtime(steering_drain="all")
    provider.turns.pop()  # one steering round only
    assert runtime.exec("go", tools=[tool]) == "after steering"
    assert runtime.last_run is not None
    users = [m.text for m in runtime.last_run.messages if m.role == "user"]
    assert users == ["go", "first", "second"]


def test_follow_up_is_delivered_when_the_run_would_end_and_queues_survive_runs() -> None:
    provider = ScriptedProvider(["first answer", "second answer", "next run"])
    runtime = Runtime(provider, "m", follow_up_drain="all")
    runtime.follow_up("and then?")
    assert runtime.exec("go", tools=[]) == "second answer"
    assert runtime.last_run is not None and runtime.last_run.model_calls == 2
    runtime.steer("queued between runs")
    assert runtime.queued_steering[0].text == "queued between runs"
    assert runtime.exec("again", tools=[]) == "next run"  # delivered with the prompt
    assert runtime.last_run is not None
    assert [m.text for m in runtime.last_run.messages if m.role == "user"] == [
        "again",
        "queued between runs",
    ]


def test_queue_messages_taken_in_the_final_round_are_reported_undelivered() -> None:
    runtime, provider, tool = _steered_runtime(steering_drain="all")
    assert runtime.exec("go", tools=[tool], max_iterations=1) == ""
    record = runtime.last_run
    assert record is not None and record.termination == "max_iterations"
    assert [m.text for m in record.undelivered] == ["first", "second"]
    assert runtime.queued_steering == []


def test_steer_rejects_what_is_not_a_message_and_clear_queues_returns_everything() -> None:
    runtime = Runtime(ScriptedProvider([]), "m")
    with pytest.raises(TypeError, match="steer"):
        runtime.steer(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="follow_up"):
        runtime.follow_up([b"x"])  # type: ignore[list-item]
    runtime.steer("a")
    runtime.follow_up(["b", "c"])
    steering, follow_ups = runtime.clear_queues()
    assert [m.text for m in steering] == ["a"] and [m.text for m in follow_ups] == ["b", "c"]
    assert runtime.queued_follow_ups == []


def test_whether_a_source_takes_the_point_is_decided_once_per_run() -> None:
    class Counting:
        """A callable object: its signature is read through ``__signature__`` (counted)."""

        def __init__(self, point_param: bool) -> None:
            self.reads = 0
            self.calls = 0
            self.point_param = point_param

        @property
        def __signature__(self) -> Any:
            import inspect

            self.reads += 1
            params = (
                [inspect.Parameter("point", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
                if self.point_param
                else []
            )
            return inspect.Signature(params)

        def __call__(self, *args: Any) -> list[str]:
            self.calls += 1
            assert len(args) == (1 if self.point_param else 0)
            return []

    for point_param in (True, False):
        source = Counting(point_param)
        provider = ScriptedProvider(
            [turn(call("add", {"a": 1, "b": 2}), call("add", {"a": 3, "b": 4})), "done"]
        )
        _run(provider, {"get_steering_messages": source}, [add_tool()])
        assert source.calls == 5 and source.reads == 1


def test_steer_from_another_thread_reaches_the_running_batch() -> None:
    provider = ScriptedProvider(
        [
            turn(call("wait", {}, id="w"), call("wait", {}, id="never")),
            "steered",
        ]
    )
    runtime = Runtime(provider, "m")
    arrived = threading.Event()

    def wait(args: dict[str, Any]) -> str:
        threading.Thread(target=lambda: (runtime.steer("from a thread"), arrived.set())).start()
        assert arrived.wait(10)
        return "waited"

    tool = {"spec": {"name": "wait", "parameters": {"type": "object"}}, "execute": wait}
    assert runtime.exec("go", tools=[tool]) == "steered"
    record = runtime.last_run
    assert record is not None
    assert [m.text for m in record.messages if m.role == "toolResult"] == [
        "waited",
        "Skipped due to queued user message.",
    ]
    assert [m.text for m in record.messages if m.role == "user"] == ["go", "from a thread"]


def test_a_polled_string_is_one_steering_message() -> None:
    from openprogram import AgentContext, LoopConfig, agent_loop

    polls: list[int] = []

    def steering() -> str | list[str]:
        polls.append(1)
        return "change course" if len(polls) == 2 else []

    tool = {
        "spec": {"name": "noop", "parameters": {"type": "object", "properties": {}}},
        "execute": lambda args: "done",
    }
    provider = ScriptedProvider([turn(call("noop", {})), "ok"])
    config = LoopConfig(provider=provider, get_steering_messages=steering)
    messages = asyncio.run(agent_loop("go", AgentContext(tools=[tool]), config).result())
    steered = [m for m in messages if m.role == "user" and m.text == "change course"]
    assert len(steered) == 1
    assert provider.requests[1].messages[-1].text == "change course"


def test_an_observer_is_told_what_each_run_takes_from_the_queues_when_it_takes_it() -> None:
    """``handed_over`` hears each take from ``steer()``/``follow_up()`` at the poll that took
    it (run, poll point, kind, the very message objects); a plain observer hears nothing."""
    runtime, provider, tool = _steered_runtime()
    provider.turns.insert(-1, "after the follow-up")  # room for one follow-up round
    runtime.follow_up("and then?")
    seen: list[tuple[str, int, int | None, list[str]]] = []
    delivered: list[int] = []

    class Observer:
        def __call__(self, info: RunInfo, event: AgentEvent) -> None:
            if event.type == "message_end" and event.message.role == "user":  # type: ignore[union-attr]
                delivered.append(id(event.message))  # type: ignore[union-attr]

        def handed_over(self, handover: Handover) -> None:
            assert handover.run is not None and handover.run.outermost
            assert handover.point.run is handover.run
            p = handover.point
            seen.append((handover.kind, p.round, p.call_index, [m.text for m in handover.messages]))
            # told when it happens: the loop has not delivered the messages yet
            assert not {id(m) for m in handover.messages} & set(delivered)

    with runtime.observe(Observer()):
        runtime.exec("go", tools=[tool])
    assert seen == [
        ("steering", 0, 0, ["first"]),
        ("steering", 1, None, ["second"]),
        ("follow_up", 2, None, ["and then?"]),
    ]
    record = runtime.last_run
    assert record is not None
    delivered = [m for m in record.messages if m.role == "user"][1:]
    assert [m.text for m in delivered] == ["first", "second", "and then?"]


class _Refusing:
    """An observer that raises: on a chosen event type, or when told of a hand-over."""

    def __init__(self, on: str | None = None) -> None:
        self.on = on

    def __call__(self, info: RunInfo, event: AgentEvent) -> None:
        if event.type == self.on:
            raise LookupError(f"observer refused {event.type}")

    def handed_over(self, handover: Handover) -> None:
        if self.on is None:
            raise LookupError("observer refused the hand-over")


@pytest.mark.parametrize("where", ["observe", "observe_all"])
@pytest.mark.parametrize("on", ["turn_end", None])
def test_a_raising_observer_fails_the_run_whether_it_observes_events_or_hand_overs(
    where: str, on: str | None
) -> None:
    """One rule (docs/decisions.md): an observer's exception is the run's, under ``observe`` and
    ``observe_all``, for an event and for a hand-over (which only warned), and what the
    failing poll took from the queue is not lost: it is queued again, in order."""
    runtime, _provider, tool = _steered_runtime()
    observer = _Refusing(on)
    scope = runtime.observe(observer) if where == "observe" else Runtime.observe_all(observer)
    ends: list[AgentEvent] = []
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a warning instead of the failure fails this test
        with runtime.observe(lambda info, e: ends.append(e) if e.type == "agent_end" else None):
            with scope, pytest.raises(LookupError, match="observer refused"):
                runtime.exec("go", tools=[tool])
    if on is None:  # the poll that took "first" failed: both messages are still queued
        assert [m.text for m in runtime.queued_steering] == ["first", "second"]
        (end,) = ends  # the run ended as a raising source ends it
        assert end.termination == "error"  # type: ignore[union-attr]
        assert end.undelivered == []  # type: ignore[union-attr]


def test_what_a_source_returned_at_a_failing_hand_over_is_queued_again_too() -> None:
    runtime, _provider, tool = _steered_runtime()
    polls: list[int] = []

    def source() -> list[str]:
        polls.append(1)
        return ["from the source"] if len(polls) == 2 else []

    runtime.get_steering_messages = source
    with runtime.observe(_Refusing()), pytest.raises(LookupError):
        runtime.exec("go", tools=[tool])
    assert [m.text for m in runtime.queued_steering] == ["from the source", "first", "second"]


def test_a_raising_observer_closes_the_providers_stream_at_once() -> None:
    """The run stops where the observer raised and its provider stream is closed then (it was
    left to a garbage-collector finalizer, which could run in the middle of anything)."""
    closed: list[str] = []
    scripted = ScriptedProvider(["a long answer"])

    class Holding:
        def stream(self, model: str, context: Any, options: Any) -> Any:
            async def events() -> Any:
                try:
                    async for event in scripted.stream(model, context, options):
                        yield event
                finally:
                    closed.append("closed")

            return events()

    runtime = Runtime(Holding(), "m")  # type: ignore[arg-type]
    with runtime.observe(_Refusing("message_update")), pytest.raises(LookupError):
        runtime.exec("go")
    assert closed == ["closed"]
