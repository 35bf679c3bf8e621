"""The agent under the scripted provider: the whole tree of runs, steering into the nested run,
a snapshot of the trace tree."""

from city_agent import TOOLS, build_runtime

from openprogram_testing import (
    assert_final_text,
    assert_skipped,
    assert_terminated,
    call,
    turn,
)

SCRIPT = [
    turn(call("list_cities")),
    turn(call("summarize_cities", {"cities": ["Oslo", "Rome"]})),
    turn(call("lookup_weather", {"city": "Oslo"}), call("lookup_weather", {"city": "Rome"})),
    "Oslo is cold and Rome is warm.",
    "Oslo is cold, Rome is warm.",
]


def test_the_agent_answers_through_a_nested_run(scripted_provider, exec_runner):
    scripted_provider.add(*SCRIPT)
    tree = exec_runner(build_runtime(scripted_provider), "How is the weather?", tools=TOOLS)
    assert tree.result == "Oslo is cold, Rome is warm."
    inner = tree["summarize_cities"]
    assert inner.depth == 1 and inner.tool_name == "summarize_cities"
    assert [r.text for r in inner.trace.tool_results] == ["Oslo: 3 C", "Rome: 24 C"]
    assert_final_text(tree, "Oslo is cold and Rome is warm.", run="summarize_cities")
    assert_terminated(tree, "completed")


def test_steering_into_the_nested_run(scripted_provider, steering, exec_runner):
    scripted_provider.add(*SCRIPT)
    steering.after_tool(0, "Only Oslo, please.", run="summarize_cities")
    tree = exec_runner(build_runtime(scripted_provider), "How is the weather?", tools=TOOLS)
    assert_skipped(tree, ["lookup_weather"], run="summarize_cities")
    assert_skipped(tree, [])  # the outer run is untouched
    nested_request = scripted_provider.requests[3]
    assert nested_request.messages[-1].text == "Only Oslo, please."


def test_the_trace_tree_snapshot(scripted_provider, exec_runner, trace_snapshot):
    scripted_provider.add(*SCRIPT)
    tree = exec_runner(build_runtime(scripted_provider), "How is the weather?", tools=TOOLS)
    assert trace_snapshot == tree


async def test_async_tests_run_too(scripted_provider, exec_runner):
    scripted_provider.add("Sunny everywhere.")
    tree = await exec_runner.arun(build_runtime(scripted_provider), "Weather?", tools=TOOLS)
    assert tree.result == "Sunny everywhere."
