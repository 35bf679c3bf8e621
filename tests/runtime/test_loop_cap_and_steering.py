"""The iteration cap, steering in both modes, follow-ups, and the no-lost-message rule."""

from __future__ import annotations

import pytest

from openprogram import MAX_INNER_ITERATIONS, ToolResultMessage, effective_cap
from openprogram_testing import ScriptedProvider, call, turn
from tests.runtime._loop import add_tool, run, tokens

SKIP = "Skipped due to queued user message."


def always_calls_a_tool(n: int) -> ScriptedProvider:
    return ScriptedProvider([turn(call("add", {"a": 1, "b": 1})) for _ in range(n)])


@pytest.mark.parametrize(
    ("max_iterations", "expected"),
    [(1, 1), (2, 2), (50, 50), (0, 1), (-3, 1), (1000, 50), (None, 50)],
)
def test_cap(max_iterations: int | None, expected: int) -> None:
    assert effective_cap(max_iterations) == expected
    provider = always_calls_a_tool(expected)
    events, stream = run(provider, tools=[add_tool()], max_iterations=max_iterations)
    assert len(provider.requests) == expected
    assert stream.model_calls == expected == events[-1].model_calls
    assert stream.termination == "max_iterations" == events[-1].termination
    assert tokens(events).count("turn_start") == expected
    provider.assert_complete()


def test_cap_constant() -> None:
    assert MAX_INNER_ITERATIONS == 50


def test_rounds_started_by_follow_ups_count_toward_the_cap() -> None:
    asked = []

    def follow_ups() -> list[str]:
        asked.append(1)
        return ["more"]

    provider = ScriptedProvider(["a", "b", "c"])
    events, stream = run(provider, get_follow_up_messages=follow_ups, max_iterations=3)
    assert stream.model_calls == 3
    # At the cap the loop does not dequeue a follow-up it could not deliver.
    assert len(asked) == 2
    assert stream.termination == "completed"
    assert stream.undelivered == []


def test_text_finish_at_the_cap_is_completed() -> None:
    provider = ScriptedProvider([turn(call("add", {"a": 1, "b": 1})), "done"])
    _, stream = run(provider, tools=[add_tool()], max_iterations=2)
    assert stream.termination == "completed" and stream.model_calls == 2


class Queue:
    """A steering source that hands out what was queued, and records every poll."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.polls = 0

    def __call__(self) -> list[str]:
        self.polls += 1
        out, self.items = self.items, []
        return out


def batch_with_steering_after(k: int) -> tuple[Queue, dict, list[int], ScriptedProvider]:
    """A model that calls the ``step`` tool four times in one batch (ids ``c0``..``c3``) and then
    answers ``"ok"``; the ``k``-th step queues a steering message. Returns the steering queue,
    the tool, the step numbers that ran, and the provider."""
    queue = Queue()
    ran: list[int] = []

    def execute(args: dict) -> str:
        ran.append(args["i"])
        if args["i"] == k:
            queue.items.append(f"steer after {k}")
        return f"ran {args['i']}"

    tool = {"spec": {"name": "step", "parameters": {"type": "object"}}, "execute": execute}
    provider = ScriptedProvider(
        [turn(*[call("step", {"i": i}, id=f"c{i}") for i in range(4)]), "ok"]
    )
    return queue, tool, ran, provider


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_steering_after_tool_k_of_four_skip_mode(k: int) -> None:
    queue, tool, ran, provider = batch_with_steering_after(k)
    events, stream = run(provider, tools=[tool], get_steering_messages=queue)
    assert ran == list(range(k + 1))
    results = [m for m in events[-1].messages if isinstance(m, ToolResultMessage)]
    assert [r.tool_call_id for r in results] == ["c0", "c1", "c2", "c3"]
    for r in results[: k + 1]:
        assert not r.is_error and not r.skipped
    for r in results[k + 1 :]:
        assert (r.text, r.is_error, r.skipped) == (SKIP, True, True)
    second = provider.requests[1].messages
    assert second[-1].role == "user" and second[-1].text == f"steer after {k}"
    assert [m.role for m in second] == ["user", "assistant", *["toolResult"] * 4, "user"]
    assert stream.termination == "completed"


@pytest.mark.parametrize("k", [0, 1, 2, 3])
def test_steering_after_tool_k_of_four_after_batch_mode(k: int) -> None:
    queue, tool, ran, provider = batch_with_steering_after(k)
    events, stream = run(
        provider, tools=[tool], get_steering_messages=queue, steering_mode="after_batch"
    )
    assert ran == [0, 1, 2, 3]
    results = [m for m in events[-1].messages if isinstance(m, ToolResultMessage)]
    assert all(not r.is_error and not r.skipped for r in results)
    assert provider.requests[1].messages[-1].text == f"steer after {k}"
    toks = tokens(events)
    assert toks.index("turn_end(4)") < toks.index("ms(user)", 4)


def test_steering_after_a_text_only_reply_keeps_the_loop_alive() -> None:
    queue = Queue()
    provider = ScriptedProvider(
        [lambda req: (queue.items.append("wait, one more thing"), "first")[1], "second"]
    )
    events, stream = run(provider, get_steering_messages=queue)
    assert stream.model_calls == 2
    assert provider.requests[1].messages[-1].text == "wait, one more thing"
    assert [m.role for m in events[-1].messages] == ["user", "assistant", "user", "assistant"]


def test_steering_handed_back_in_the_final_round_is_reported_undelivered() -> None:
    queue = Queue()

    def execute(args: dict) -> str:
        queue.items.append("too late")
        return "ok"

    tool = {"spec": {"name": "work", "parameters": {"type": "object"}}, "execute": execute}
    provider = ScriptedProvider([turn(call("work", id="a"), call("work", id="b"))])
    events, stream = run(provider, tools=[tool], get_steering_messages=queue, max_iterations=1)
    assert stream.termination == "max_iterations"
    assert [m.text for m in stream.undelivered] == ["too late"]
    assert [m.text for m in events[-1].undelivered] == ["too late"]
    # the second call was skipped: steering arrived, even though it cannot be delivered now
    assert events[-1].messages[-1].skipped is True


def test_the_loop_never_polls_steering_when_no_round_can_follow() -> None:
    queue = Queue()
    queue.items.append("later")
    provider = ScriptedProvider(["only"])
    # steering is polled once up front (delivered in round 1 with the prompt) ...
    events, stream = run(provider, get_steering_messages=queue, max_iterations=1)
    assert [m.text for m in provider.requests[0].messages] == ["hi", "later"]
    queue.items.append("queued during the last round")
    # ... and not again after the final round: the message stays in the caller's queue.
    assert queue.items == ["queued during the last round"]
    assert stream.undelivered == []


def test_async_steering_and_follow_up_sources() -> None:
    follow = [["again"]]

    async def follow_ups() -> list[str]:
        return follow.pop() if follow else []

    async def steering() -> list[str]:
        return []

    provider = ScriptedProvider(["1", "2"])
    _, stream = run(provider, get_steering_messages=steering, get_follow_up_messages=follow_ups)
    assert stream.model_calls == 2
