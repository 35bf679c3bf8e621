"""What a run keeps alive per round, and the scripted provider's request snapshots.

With many runs in flight on one event loop, every collector-tracked object a round keeps alive
across a tool's ``await`` is walked by CPython's cyclic collector, once per generation it passes
through (``docs/decisions.md``, "Concurrent runs and the collector").  These are plain counting
tests, not timed ones: each fails if a per-round copy or a stray per-round object comes back.
"""

from __future__ import annotations

import asyncio
import gc
import types
from typing import Any

from openprogram import AgentContext, LoopConfig, agent_loop, agent_loop_continue
from openprogram.types import Message, ToolSpec, UserMessage
from openprogram_testing import ModelRequest, ScriptedProvider, call, turn
from openprogram_testing.transport.scripted import _Playback


def _add_tool(execute: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    return {
        "spec": {"name": "add", "description": "Add one.", "parameters": schema},
        "execute": execute,
    }


async def _drain(stream: Any) -> list[Message]:
    async for _ in stream:
        pass
    return list(await stream)


def _run(provider: ScriptedProvider, tool: Any, complete: bool = True) -> AgentContext:
    context = AgentContext(messages=[], tools=[_add_tool(tool)])
    asyncio.run(_drain(agent_loop("go", context, LoopConfig(provider=provider, model="m"))))
    if complete:
        provider.assert_complete()
    return context


def _script(rounds: int) -> ScriptedProvider:
    return ScriptedProvider([*(turn(call("add", {"a": i})) for i in range(rounds)), "done"])


def test_snapshots_stay_put_after_later_rounds_and_edits_between_runs() -> None:
    provider = _script(3)
    provider.add("again")
    context = _run(provider, lambda args: args["a"] + 1, complete=False)
    first, *_, last = provider.requests
    assert [m.role for m in first.messages] == ["user"]
    assert len(last.messages) == 7 and last.last_message is context.messages[-2]
    before = [list(r.messages) for r in provider.requests]

    # The history edited in place (a message replaced in the middle, then shortened) before the
    # next run: earlier snapshots keep what was sent, the new request sees the edited history.
    context.messages[1] = UserMessage(content="replaced")
    del context.messages[3:]
    stream = agent_loop("more", context, LoopConfig(provider=provider, model="m"))
    asyncio.run(_drain(stream))
    assert [list(r.messages) for r in provider.requests[:-1]] == before
    final = provider.requests[-1].messages
    assert final[1].text == "replaced" and len(final) == 4 and final[-1].text == "more"

    # What a test does to a recorded snapshot does not leak into the others.
    provider.requests[0].messages.append(UserMessage(content="x"))
    provider.requests[0].tools.clear()
    assert len(provider.requests[0].messages) == 1 and provider.requests[0].tool_names == ["add"]


def test_continue_with_an_edited_last_message_is_not_mistaken_for_an_append() -> None:
    provider = _script(1)
    provider.add("second")
    context = _run(provider, lambda args: 1, complete=False)
    sent = list(provider.requests[-1].messages)
    context.messages[-1] = UserMessage(content="edited")  # same length, new last message
    asyncio.run(_drain(agent_loop_continue(context, LoopConfig(provider=provider, model="m"))))
    assert list(provider.requests[-2].messages) == sent
    assert provider.requests[-1].last_message.text == "edited"  # type: ignore[union-attr]


def test_model_request_built_by_hand_keeps_its_fields_and_value_semantics() -> None:
    spec = ToolSpec(name="t", description="d", parameters={"type": "object"})
    history = [UserMessage(content="hi")]
    request = ModelRequest(
        index=0,
        model="m",
        system_prompt=None,
        messages=history,
        tools=[spec],
        tool_choice=None,
        parallel_tool_calls=None,
    )
    history.append(UserMessage(content="later"))
    assert len(request.messages) == 1 and request.tool_names == ["t"] and request.extras == {}
    twin = ModelRequest(0, "m", None, [UserMessage(content="hi")], [spec], None, None)
    assert request == twin and "messages=[UserMessage(" in repr(request)
    request.messages = []
    assert request.last_message is None and request != twin


def _requests_retained(rounds: int) -> int:
    """Collector-tracked objects a finished run of ``rounds`` tool rounds keeps alive through its
    history and its provider's recorded requests."""
    provider = _script(rounds)  # (the script's own turns are not counted)
    gc.collect()
    before = len(gc.get_objects())
    context = _run(provider, lambda args: args["a"])
    gc.collect()
    alive = len(gc.get_objects()) - before
    assert len(provider.requests) == rounds + 1 and len(context.messages) == 2 * rounds + 2
    return alive


def test_a_round_keeps_no_copy_of_the_history_or_the_tool_list() -> None:
    # Per round: the assistant message, its call and its usage, the result and its text block,
    # the recorded request, and two content lists: 8 tracked objects (measured: exactly 8.0).
    # A copy of the history and of the tool list per request made it 10.
    _requests_retained(2)  # warm-up: first-use imports and caches
    per_round = (_requests_retained(30) - _requests_retained(10)) / 20
    assert per_round <= 8.5, per_round


def test_a_suspended_tool_call_holds_no_spent_stream_enumerate_or_helper_coroutine() -> None:
    seen: list[tuple[int, int]] = []
    enumerates_before = sum(1 for o in gc.get_objects() if type(o) is enumerate)

    async def tool(args: dict[str, Any]) -> int:
        await asyncio.sleep(0)
        objects = gc.get_objects()
        streams = sum(1 for o in objects if type(o) is _Playback)
        enumerates = sum(1 for o in objects if type(o) is enumerate) - enumerates_before
        helpers = sum(
            1 for o in objects if type(o) is types.CoroutineType and o.cr_code.co_name == "settle"
        )
        seen.append((streams, enumerates + helpers))
        return int(args["a"])

    _run(_script(3), tool)
    # The provider's stream of the round is over and dropped before the tool runs, and the loop
    # iterates the round's calls without an enumerate (nor a helper coroutine per call) held
    # across the await.
    assert seen == [(0, 0)] * 3


def test_a_history_edited_in_place_during_a_run_is_seen_and_earlier_snapshots_keep_theirs() -> None:
    # A tool rewrites an early message of the run's own history (the last one stays the same
    # object, the list only grows): the provider must see the rewrite in the next request,
    # taking back the tail it had appended to its copy, and the earlier requests keep what was
    # sent to them.
    context_box: list[AgentContext] = []

    def tool(args: dict[str, Any]) -> int:
        if args["a"] == 1:
            context_box[0].messages[0] = UserMessage(content="rewritten")
        return int(args["a"])

    provider = _script(3)
    context = AgentContext(messages=[], tools=[_add_tool(tool)])
    context_box.append(context)
    asyncio.run(_drain(agent_loop("go", context, LoopConfig(provider=provider, model="m"))))
    provider.assert_complete()
    firsts = [r.messages[0].text for r in provider.requests]  # type: ignore[union-attr]
    assert firsts == ["go", "go", "rewritten", "rewritten"]
    assert [len(r.messages) for r in provider.requests] == [1, 3, 5, 7]
    assert provider.requests[-1].messages == context.messages[:7]
