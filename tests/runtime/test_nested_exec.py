"""Nested ``exec``: inheritance of the outer tools, explicit override, the depth limit, sync exec
on the loop thread, and isolation between concurrent runs (asyncio tasks and threads)."""

import asyncio
import threading

import pytest

from openprogram import Registry, Runtime, agentic_function, function
from openprogram.runtime import _current_depth, _current_tools
from openprogram_testing import ScriptedProvider, call, error_turn, turn
from openprogram_testing.transport.scripted import ModelRequest
from tests.runtime._agents import register_add, register_research, research_script
from tests.runtime._loop import fed_back_error


def _tools():
    registry = Registry()
    add = register_add(registry)

    @function(registry=registry)
    def shout(text: str) -> str:
        """Upper-case a text."""
        return text.upper()

    return registry, add, shout


def test_two_levels_inherit_the_outer_tools():
    registry, add, shout = _tools()
    research = register_research(registry)
    provider = ScriptedProvider(research_script((1, 2)))
    runtime = Runtime(provider, "m", registry=registry)
    assert runtime.exec("go", tools=[research, add]) == "outer answer"
    provider.assert_complete()
    assert [r.tool_names for r in provider.requests] == [
        ["research", "add"],
        ["research", "add"],  # inherited, not the registry's full set (which has shout)
        ["research", "add"],
        ["research", "add"],
    ]
    assert provider.requests[1].messages[0].text == "research cats"
    assert provider.requests[2].messages[-1].text == "3"
    assert provider.requests[3].messages[-1].text == "research: inner answer"
    assert runtime.last_run is not None and runtime.last_run.text == "outer answer"
    assert _current_tools.get() is None and _current_depth.get() == 0


@pytest.mark.parametrize(
    ("inner_kwargs", "inner_tools"),
    [
        ({"tools": ["ADD"]}, ["add"]),
        ({"toolset": "none"}, []),
        ({"tools": []}, []),
        ({"toolset": "full"}, ["add", "shout", "research"]),
        ({"tools_deny": ["add"]}, ["research"]),  # inherited, then trimmed
    ],
)
def test_explicit_inner_tools_win_over_inheritance(inner_kwargs, inner_tools):
    registry, add, shout = _tools()
    kwargs = {k: ([add] if v == ["ADD"] else v) for k, v in inner_kwargs.items()}

    @agentic_function(registry=registry)
    def research(runtime) -> str:
        return runtime.exec("inner", **kwargs)

    provider = ScriptedProvider([turn(call("research")), "inner", "outer"])
    assert Runtime(provider, registry=registry).exec("go", tools=[research, add]) == "outer"
    assert provider.requests[1].tool_names == inner_tools


def test_three_levels_deep_async_and_sync_bodies():
    registry, add, shout = _tools()

    @agentic_function(registry=registry)
    async def level2(runtime) -> str:
        """Second layer (async body, aexec)."""
        return "L2[" + await runtime.aexec("enter level 3") + "]"

    @agentic_function(registry=registry)
    def level1(runtime) -> str:
        """First layer (sync body, exec on the loop thread)."""
        return "L1[" + runtime.exec("enter level 2", tools=[level2, shout]) + "]"

    provider = ScriptedProvider(
        [
            turn(call("level1")),
            turn(call("level2")),
            turn(call("shout", {"text": "deep"})),
            "level 3 done",
            "level 2 done",
            "level 1 done",
        ]
    )
    runtime = Runtime(provider, registry=registry)
    assert runtime.exec("go", tools=[level1]) == "level 1 done"
    provider.assert_complete()
    assert [r.tool_names for r in provider.requests] == [
        ["level1"],
        ["level2", "shout"],
        ["level2", "shout"],  # level 3 inherits level 2's explicit list
        ["level2", "shout"],
        ["level2", "shout"],
        ["level1"],
    ]
    assert provider.requests[3].messages[-1].text == "DEEP"
    assert provider.requests[4].messages[-1].text == "L2[level 3 done]"
    assert provider.requests[5].messages[-1].text == "L1[level 2 done]"


def _recursing_agent(*, answer_refusal: bool):
    """A registry holding ``recurse``, an agentic function whose body runs ``runtime.exec`` again
    (each model call that picks it nests one level deeper), and the list of depths its bodies ran
    at. When the depth limit refuses the exec, the body answers ``"refused"`` with
    ``answer_refusal``, else the ``RecursionError`` fails the tool call."""
    registry = Registry()
    depths = []

    @agentic_function(registry=registry)
    def recurse(runtime) -> str:
        """Call the model again, one layer deeper."""
        depths.append(_current_depth.get())
        try:
            return runtime.exec("deeper")
        except RecursionError:
            if answer_refusal:
                return "refused"
            raise

    return registry, recurse, depths


def test_depth_limit_is_a_clear_recursion_error_that_leaks_nothing():
    registry, recurse, depths = _recursing_agent(answer_refusal=False)
    # max_depth=2: the outer exec and one nested exec; the third raises inside the tool body.
    provider = ScriptedProvider(
        [turn(call("recurse")), turn(call("recurse")), "level 2 saw the error", "top done"]
    )
    runtime = Runtime(provider, registry=registry, max_depth=2)
    assert runtime.exec("go", tools=[recurse]) == "top done"
    provider.assert_complete()
    assert depths == [1, 2]
    assert fed_back_error(provider.requests[2]) == (
        "Runtime.exec nesting is limited to 2 levels and 2 are already running: an "
        "@agentic_function probably calls runtime.exec without end (raise max_depth= on the "
        "Runtime if the nesting is intended)"
    )
    assert len(provider.requests) == 4  # no model call for the refused layer
    assert _current_tools.get() is None and _current_depth.get() == 0


def test_default_depth_limit_is_five():
    registry, recurse, seen = _recursing_agent(answer_refusal=True)
    provider = ScriptedProvider([*[turn(call("recurse"))] * 5, *["up"] * 5])
    assert Runtime(provider, registry=registry).exec("go", tools=[recurse]) == "up"
    assert seen == [1, 2, 3, 4, 5]
    assert provider.requests[5].messages[-1].text == "refused"


async def test_sync_exec_inside_a_running_event_loop():
    """A plain sync call of ``exec`` from async code (the loop is running in this thread)."""
    provider = ScriptedProvider(["fine"])
    runtime = Runtime(provider, registry=Registry())
    assert runtime.exec("hi", tools=[]) == "fine"


def test_sync_tool_on_the_loop_thread_calls_sync_exec():
    registry = Registry()
    threads = {}

    @function(registry=registry)
    def summarize(runtime_holder: str) -> str:
        """A sync tool body, run directly on the loop thread."""
        threads["tool"] = threading.get_ident()
        asyncio.get_running_loop()  # proves the loop is running in this thread
        return RUNTIME.exec("summarize " + runtime_holder, tools=[])

    def responder(request: ModelRequest) -> str:
        threads.setdefault("inner_model", threading.get_ident())
        return "summary"

    provider = ScriptedProvider(
        [turn(call("summarize", {"runtime_holder": "doc"})), responder, "ok"]
    )
    RUNTIME = Runtime(provider, registry=registry)
    assert RUNTIME.exec("go", tools=[summarize]) == "ok"
    assert provider.requests[1].messages[0].text == "summarize doc"
    assert provider.requests[2].messages[-1].text == "summary"
    assert threads["tool"] != threads["inner_model"]  # the nested loop ran on a helper thread


def _worker_tools(n: int):
    registry = Registry()
    workers, leaves = [], []
    for i in range(n):

        def make(i: int):
            @agentic_function(name=f"worker_{i}", registry=registry)
            async def worker(runtime) -> str:
                await asyncio.sleep(0)
                return await runtime.aexec(f"inner {i}")

            @function(name=f"leaf_{i}", registry=registry)
            def leaf() -> str:
                return str(i)

            return worker, leaf

        worker, leaf = make(i)
        workers.append(worker)
        leaves.append(leaf)
    return registry, workers, leaves


def _concurrent_responder(seen: dict[int, list[str]]):
    def respond(request: ModelRequest):
        last = request.messages[-1]
        if last.role == "user" and last.text.startswith("outer "):
            i = int(last.text.split()[1])
            return turn(call(f"worker_{i}"), delay_s=0.001)
        if last.role == "user" and last.text.startswith("inner "):
            i = int(last.text.split()[1])
            seen[i] = request.tool_names
            return turn(f"inner {i} done", delay_s=0.001)
        return "final " + last.text

    return respond


async def test_twenty_concurrent_asyncio_runs_never_cross():
    registry, workers, leaves = _worker_tools(20)
    seen: dict[int, list[str]] = {}
    provider = ScriptedProvider([_concurrent_responder(seen)] * 60)
    runtime = Runtime(provider, registry=registry)
    results = await asyncio.gather(
        *(runtime.aexec(f"outer {i}", tools=[workers[i], leaves[i]]) for i in range(20))
    )
    assert results == [f"final inner {i} done" for i in range(20)]
    assert seen == {i: [f"worker_{i}", f"leaf_{i}"] for i in range(20)}
    provider.assert_complete()
    assert _current_tools.get() is None


def test_twenty_concurrent_threads_never_cross():
    registry, workers, leaves = _worker_tools(20)
    seen: dict[int, list[str]] = {}
    results: dict[int, str] = {}
    errors: list[BaseException] = []
    barrier = threading.Barrier(20)

    def run(i: int) -> None:
        try:
            provider = ScriptedProvider([_concurrent_responder(seen)] * 3)
            runtime = Runtime(provider, registry=registry)
            barrier.wait()
            results[i] = runtime.exec(f"outer {i}", tools=[workers[i], leaves[i]])
            provider.assert_complete()
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    assert errors == []
    assert results == {i: f"final inner {i} done" for i in range(20)}
    assert seen == {i: [f"worker_{i}", f"leaf_{i}"] for i in range(20)}


def test_helper_thread_is_reused_and_errors_cross_back():
    registry = Registry()
    inner_threads = []

    @agentic_function(registry=registry)
    def ask(runtime, q: str) -> str:
        """Ask the model a sub-question (sync body, sync exec)."""
        return runtime.exec(q, tools=[])

    def inner(request: ModelRequest) -> str:
        inner_threads.append(threading.get_ident())
        return "answer " + request.messages[0].text

    provider = ScriptedProvider(
        [
            turn(call("ask", {"q": "one"}), call("ask", {"q": "two"}), call("ask", {"q": "three"})),
            inner,
            inner,
            error_turn("boom", status=500),
            "done",
        ]
    )
    runtime = Runtime(provider, registry=registry)
    assert runtime.exec("go", tools=[ask]) == "done"
    provider.assert_complete()
    assert len(inner_threads) == 2 and inner_threads[0] == inner_threads[1]
    assert inner_threads[0] != threading.get_ident()
    results = provider.requests[4].messages[-3:]
    assert [(r.text, r.is_error) for r in results] == [
        ("answer one", False),
        ("answer two", False),
        ("provider error (status 500): boom", True),
    ]
