"""The harness's spans: the ``otel_spans`` fixture (spans as plain dicts, ids and timestamps
numbered) and the export of a session's runs over OTLP, one trace per test named after it with
its verdict on the root, through the official exporter to a fake receiver on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("opentelemetry.exporter.otlp.proto.http")

from openprogram import Registry, Runtime, agentic_function, function
from openprogram_testing import ScriptedProvider, SpanCapture, call, turn
from tests.harness._otlp_receiver import otlp_receiver

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[2]
BASE = ("-p", "no:cacheprovider", "-o", "asyncio_default_fixture_loop_scope=function")

NESTED = '''
from openprogram import Registry, Runtime, agentic_function, function
from openprogram_testing import ScriptedProvider, call, turn

registry = Registry()

@function(registry=registry)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b

@agentic_function(registry=registry)
def research(topic: str, runtime: Runtime) -> str:
    """Research a topic with the model."""
    return runtime.exec("research " + topic, tools=[add])

def run(final="done"):
    provider = ScriptedProvider(
        [turn(call("research", {"topic": "cats"})), turn(call("add", {"a": 1, "b": 2})), "3", final]
    )
    return Runtime(provider, "m", registry=registry).exec("go", tools=[research])
'''


def nested_run() -> str:
    registry = Registry()

    @function(registry=registry)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    @agentic_function(registry=registry)
    def research(topic: str, runtime: Runtime) -> str:
        """Research a topic with the model."""
        return str(runtime.exec("research " + topic, tools=[add]))

    provider = ScriptedProvider(
        [
            turn(call("research", {"topic": "cats"})),
            turn(call("add", {"a": 1, "b": 2})),
            "3",
            "done",
        ]
    )
    return str(Runtime(provider, "m", registry=registry).exec("go", tools=[research]))


TREE = [
    (
        "invoke_agent",
        [
            ("chat m", []),
            (
                "execute_tool research",
                [
                    (
                        "invoke_agent research",
                        [("chat m", []), ("execute_tool add", []), ("chat m", [])],
                    )
                ],
            ),
            ("chat m", []),
        ],
    )
]


def test_a_capture_gives_the_spans_as_plain_data_the_same_on_every_run() -> None:
    captured = []
    for _ in range(2):
        with SpanCapture() as spans:
            assert nested_run() == "done"
        captured.append(spans.spans())
    for spans_of_run in captured:  # (a measured duration: the only value that varies)
        for span in spans_of_run:
            span["attributes"].pop("gen_ai.response.time_to_first_chunk", None)
    assert captured[0] == captured[1]  # ids, run ids and timestamps numbered
    first = captured[0]
    assert [s["span_id"] for s in first] == list(range(1, 9))
    assert {s["trace_id"] for s in first} == {1}
    assert first[0]["name"] == "invoke_agent" and first[0]["parent_id"] is None
    assert first[0]["start_time"] == 1 and first[0]["end_time"] == max(
        t for s in first for t in (s["start_time"], s["end_time"])
    )
    assert spans.tree() == TREE
    assert first[0]["status"] == {"code": "UNSET", "description": None}


def test_runs_outside_the_capture_are_not_in_it() -> None:
    with SpanCapture() as spans:
        pass
    nested_run()
    assert spans.spans() == []


def test_the_otel_spans_fixture(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        NESTED
        + f"""
TREE = {TREE!r}

def test_spans(otel_spans):
    assert run() == "done"
    assert otel_spans.tree() == TREE
    assert otel_spans.spans()[1]["attributes"]["gen_ai.operation.name"] == "chat"

async def test_spans_async(otel_spans):
    assert await __import__("asyncio").to_thread(run) == "done"
    assert otel_spans.tree() == TREE
"""
    )
    result = pytester.runpytest_inprocess(*BASE)
    result.assert_outcomes(passed=2)


def test_each_test_is_a_trace_named_after_it_with_its_verdict(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        NESTED
        + """
def test_passes():
    assert run() == "done"

def test_fails():
    assert run("wrong") == "done"
"""
    )
    with otlp_receiver() as (url, got):
        result = pytester.runpytest_inprocess(*BASE, f"--openprogram-otlp={url}")
    result.assert_outcomes(passed=1, failed=1)  # the export changed no verdict
    assert set(got.paths) == {"/v1/traces"}
    roots = {s["name"]: s for s in got.spans if s["parent_id"] is None}
    assert set(roots) == {"test_each_test_is_a_trace_named_after_it_with_its_verdict.py::test_passes",
                          "test_each_test_is_a_trace_named_after_it_with_its_verdict.py::test_fails"}  # fmt: skip
    passed, failed = (roots[n] for n in sorted(roots, key=lambda n: n.endswith("fails")))
    assert passed["attributes"]["openprogram.test.outcome"] == "passed"
    assert failed["attributes"]["openprogram.test.outcome"] == "failed"
    assert failed["status"] == 2 and passed["status"] == 0  # ERROR / UNSET
    for root in (passed, failed):
        trace = [s for s in got.spans if s["trace_id"] == root["trace_id"]]
        assert len(trace) == 9  # the root and the eight spans of the two runs
        run = next(s for s in trace if s["name"] == "invoke_agent")
        assert run["parent_id"] == root["span_id"]
        assert all(s["service"] == "openprogram-testing" for s in trace)


def test_an_otlp_url_that_is_not_one_is_refused_before_anything_runs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile("def test_x():\n    assert True\n")
    result = pytester.runpytest_inprocess(*BASE, "--openprogram-otlp=localhost:4318")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--otlp takes an http(s) URL*"])


def test_the_run_command_exports_each_scenario_as_a_trace(tmp_path: Path) -> None:
    """``openprogram-testing run --otlp URL``: the nested, steered scenario is one trace, named
    after the scenario, its verdict on the root, the runs nested under the tool calls that
    started them."""
    from tests.scenarios._scenarios import run_command

    scenario = ROOT / "scenarios" / "scenario_82_nested_steered_usage.yaml"
    with otlp_receiver() as (url, got):
        done = run_command("run", str(scenario), "--otlp", url, cwd=ROOT)
        assert done.returncode == 0, done.stdout + done.stderr
    roots = [s for s in got.spans if s["parent_id"] is None]
    assert len(roots) == 1 and "scenario_82_nested_steered_usage" in roots[0]["name"]
    assert roots[0]["attributes"]["openprogram.test.outcome"] == "passed"
    by_id = {s["span_id"]: s for s in got.spans}
    nested = [s for s in got.spans if s["name"].startswith("invoke_agent ")]
    assert sorted(s["name"] for s in nested) == [
        "invoke_agent compare_options",
        "invoke_agent plan_trip",
    ]
    for run in nested:
        call = by_id[run["parent_id"]]
        assert call["name"] == run["name"].replace("invoke_agent", "execute_tool")
    assert len(got.spans) == 14  # the root and the 13 spans of the three runs


def test_a_capture_inside_a_capture_sends_its_spans_to_both() -> None:
    """A scenario's own ``expect.spans`` capture opened inside ``otel_spans`` (or the OTLP
    export): both see the same spans, so no view of the run loses it."""
    from openprogram_testing.scenarios import load_scenario, run_scenario

    path = Path(__file__).resolve().parents[2] / "scenarios" / "scenario_93_spans.yaml"
    with SpanCapture() as outer:
        with SpanCapture() as inner:
            ScriptedProvider()  # nothing runs here: only the scenario below
        result = run_scenario(load_scenario(path))  # opens its own capture inside `outer`
    assert result.passed, result.failure_text
    assert inner.spans() == []
    assert outer.tree() == [
        (
            "invoke_agent",
            [
                ("chat test-model", []),
                ("execute_tool add", []),
                ("execute_tool add", []),
                ("chat test-model", []),
            ],
        )
    ]
