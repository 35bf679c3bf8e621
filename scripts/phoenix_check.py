"""A real Phoenix receives a nested, steered scenario's runs: the check behind
``python3 scripts/dev.py phoenix`` (which runs it in a throwaway virtualenv holding
``arize-phoenix``, ``arize-phoenix-client`` and this project with its ``otlp`` and ``testing``
extras; too heavy for CI's lock, so not part of ``.ci/run``).

It starts ``phoenix serve`` on loopback ports in a temporary working directory, runs the bundled
scenario ``scenario_82_nested_steered_usage.yaml`` with its runs exported over OTLP/HTTP to
Phoenix's receiver (the official exporter) under a root span named after the scenario carrying
its verdict, reads the trace back through Phoenix's own client and checks what Phoenix made of
it: the agent → chat → tool tree with the nested runs under the tool calls that started them,
the skipped call, and the token counts of every model call as Phoenix reports them.  With
``--screenshot PATH`` it also takes a picture of the trace in Phoenix's UI with headless
Chromium.  Exit status 0 when every check holds; each failed check is printed.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SCENARIO = ROOT / "scenarios" / "scenario_82_nested_steered_usage.yaml"
START_TIMEOUT_S = 180.0
READ_TIMEOUT_S = 60.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def phoenix_server(work: Path) -> Iterator[str]:
    """``phoenix serve`` on loopback, its database in ``work``; yields its base URL."""
    port, grpc = free_port(), free_port()
    env = {
        **os.environ,
        "PHOENIX_WORKING_DIR": str(work),
        "PHOENIX_HOST": "127.0.0.1",
        "PHOENIX_PORT": str(port),
        "PHOENIX_GRPC_PORT": str(grpc),
        "PHOENIX_TELEMETRY_ENABLED": "false",
    }
    phoenix = Path(sys.executable).parent / "phoenix"
    log = (work / "phoenix.log").open("w")
    proc = subprocess.Popen([str(phoenix), "serve"], env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            if proc.poll() is not None:
                raise SystemExit(f"phoenix exited ({proc.returncode}); see {work / 'phoenix.log'}")
            try:
                with urllib.request.urlopen(url, timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise SystemExit(
                        f"phoenix did not answer on {url} in {START_TIMEOUT_S} s"
                    ) from None
                time.sleep(1)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def export_scenario(url: str) -> tuple[str, Any]:
    """Run the scenario with its runs exported to Phoenix; returns (trace id, what it ran)."""
    sys.path.insert(0, str(ROOT))  # the scenario imports scenarios.trip_agent
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.trace import Status, StatusCode, set_span_in_context

    from openprogram.telemetry import use_tracer_provider
    from openprogram_testing import run_scenario

    provider = TracerProvider(resource=Resource.create({"service.name": "openprogram-testing"}))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=f"{url}/v1/traces")))
    tracer = provider.get_tracer("openprogram_testing")
    root = tracer.start_span(SCENARIO.stem)
    with use_tracer_provider(provider):
        from opentelemetry import context

        token = context.attach(set_span_in_context(root))
        try:
            result = run_scenario(SCENARIO)
        finally:
            context.detach(token)
    root.set_attribute("openprogram.test.outcome", "passed" if result.passed else "failed")
    if not result.passed:
        root.set_status(Status(StatusCode.ERROR, result.failure_text[:500]))
    root.end()
    provider.shutdown()
    if not result.passed:
        raise SystemExit(f"the scenario failed:\n{result.failure_text}")
    return format(root.get_span_context().trace_id, "032x"), result.tree


def read_back(url: str, trace_id: str, expected: int) -> list[dict[str, Any]]:
    """The trace's spans as Phoenix's client returns them (waits for ingestion)."""
    from phoenix.client import Client

    client = Client(base_url=url)
    deadline = time.monotonic() + READ_TIMEOUT_S
    while True:
        spans = client.spans.get_spans(
            project_identifier="default", trace_ids=[trace_id], limit=500
        )
        if len(spans) >= expected or time.monotonic() > deadline:
            return list(spans)
        time.sleep(1)


def check(spans: list[dict[str, Any]], tree: Any) -> list[str]:
    """What Phoenix shows that differs from the runs (empty: everything holds)."""
    problems: list[str] = []
    by_id = {s["context"]["span_id"]: s for s in spans}

    def parent(span: dict[str, Any]) -> dict[str, Any] | None:
        return by_id.get(span.get("parent_id") or "")

    def kind(span: dict[str, Any] | None) -> str | None:
        return None if span is None else span.get("span_kind")

    agents = [s for s in spans if kind(s) == "AGENT"]
    llms = [s for s in spans if kind(s) == "LLM"]
    tools = [s for s in spans if kind(s) == "TOOL"]
    runs = list(tree.walk())
    if len(agents) != len(runs):
        problems.append(f"{len(agents)} AGENT spans for {len(runs)} runs")
    if len(llms) != sum(r.trace.model_calls for r in runs):
        problems.append(f"{len(llms)} LLM spans for {sum(r.trace.model_calls for r in runs)} calls")
    if len(tools) != sum(len(r.trace.tool_results) for r in runs):
        problems.append(f"{len(tools)} TOOL spans")
    roots = [s for s in spans if parent(s) is None]
    if [s["name"] for s in roots] != [SCENARIO.stem]:
        problems.append(f"the trace's root is {[s['name'] for s in roots]}, not the scenario")
    elif roots[0]["attributes"].get("openprogram.test.outcome") != "passed":
        problems.append("the root span does not carry the verdict")
    for span in llms + tools:
        if kind(parent(span)) != "AGENT":
            problems.append(f"{span['name']} is not under an agent span")
    nested = [s for s in agents if kind(parent(s)) == "TOOL"]
    if len(nested) != len(runs) - 1:
        problems.append(f"{len(nested)} agent spans under a tool span, {len(runs) - 1} nested runs")
    for agent in nested:
        call = parent(agent)
        assert call is not None
        if agent["name"] != f"invoke_agent {call['attributes'].get('gen_ai.tool.name')}":
            problems.append(f"{agent['name']} under {call['name']}")
    skipped = [s for s in tools if s["attributes"].get("openprogram.tool_call.skipped")]
    if len(skipped) != sum(len(r.trace.skipped) for r in runs):
        problems.append(f"{len(skipped)} skipped tool spans")
    # token counts as Phoenix reports them, call by call (in start order) and in total
    used = sorted(
        (
            m.usage.input_tokens + m.usage.cache_read_tokens + m.usage.cache_write_tokens,
            m.usage.output_tokens,
        )
        for r in runs
        for m in r.trace.assistant_messages
    )
    shown = sorted(
        (
            s["attributes"].get("llm.token_count.prompt"),
            s["attributes"].get("llm.token_count.completion"),
        )
        for s in llms
    )
    if used != shown:
        problems.append(f"token counts: runs {used}, Phoenix {shown}")
    total = sum(a + b for a, b in used)
    phoenix_total = sum(s["attributes"].get("llm.token_count.total") or 0 for s in llms)
    if total != phoenix_total:
        problems.append(f"total tokens: runs {total}, Phoenix {phoenix_total}")
    return problems


def screenshot(url: str, trace_id: str, path: Path) -> None:
    """A picture of the trace in Phoenix's UI (headless Chromium), written to ``path``."""
    from phoenix.client import Client

    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise SystemExit("no chromium on PATH for --screenshot")
    project = next(p for p in Client(base_url=url).projects.list() if p["name"] == "default")
    page = f"{url}/projects/{project['id']}/traces/{trace_id}"
    path.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            "--window-size=1600,1000", "--virtual-time-budget=15000",
            f"--screenshot={path}", page,
        ],
        check=True,
        capture_output=True,
        timeout=120,
    )  # fmt: skip
    print(f"screenshot of {page} written to {path}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--screenshot", type=Path, help="also take a picture of the trace")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="phoenix-") as work, phoenix_server(Path(work)) as url:
        print(f"phoenix is up on {url}", flush=True)
        trace_id, tree = export_scenario(url)
        expected = 1 + sum(1 + r.trace.model_calls + len(r.trace.tool_results) for r in tree.walk())
        spans = read_back(url, trace_id, expected)
        problems = [f"Phoenix holds {len(spans)} spans of the trace, {expected} were sent"]
        problems = problems if len(spans) != expected else []
        problems += check(spans, tree)
        if args.screenshot is not None:
            screenshot(url, trace_id, args.screenshot)
    for problem in problems:
        print(f"FAILED: {problem}")
    if not problems:
        from importlib.metadata import version

        print(
            f"arize-phoenix {version('arize-phoenix')}: trace {trace_id}: {len(spans)} spans, "
            "tree, skip and token counts as run"
        )
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
