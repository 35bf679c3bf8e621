"""Workloads that exercise other parts of the project: W4 (``Runtime.exec`` with an
``@agentic_function`` and a nested exec), W5 (cassette replay through the real adapters), W6
(the hypothesis loop property suite).  Each reports ``pending`` with the reason when the part it
needs is missing, instead of failing the whole benchmark.
"""

from __future__ import annotations

import asyncio
import gc
import importlib.util
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .common import BenchError, now_ns, summarize
from .workloads import Settings

W4_OUTER_ROUNDS = 5
"""Outer rounds, each calling the agentic tool once; its nested exec runs one ``add`` round and
a text round.  Model calls per run: 5 outer + 5 x 2 nested + 1 final = 16."""


def _missing(*modules: str) -> str | None:
    for m in modules:
        try:
            if importlib.util.find_spec(m) is None:
                return f"{m} does not exist yet"
        except ModuleNotFoundError:
            return f"{m} does not exist yet"
    return None


class _W4:
    """The tools are defined once, as a program defines them; each sample runs one exec."""

    def __init__(self) -> None:
        from openprogram import Registry, agentic_function, function

        self.registry = Registry()
        self.counts = {"add": 0, "research": 0}
        counts = self.counts

        @function(registry=self.registry)
        def add(a: int, b: int) -> int:
            """Add two integers."""
            counts["add"] += 1
            return a + b

        @agentic_function(registry=self.registry)
        def research(topic: str, runtime: Any) -> str:
            """Research a topic with the model."""
            counts["research"] += 1
            return "found: " + runtime.exec(f"research {topic}")

        self.tools = [research, add]

    def sample(self, outer_rounds: int) -> float:
        """One checked ``Runtime.exec`` run (sync, as a user calls it); µs per model call."""
        from openprogram import Runtime
        from openprogram_testing import ScriptedProvider, call, turn

        turns: list[Any] = []
        for r in range(outer_rounds):
            turns += [
                turn(call("research", {"topic": f"t{r}"})),
                turn(call("add", {"a": r, "b": 1})),
                f"inner {r}",
            ]
        turns.append("done")
        provider = ScriptedProvider(turns)
        runtime = Runtime(provider, "bench", registry=self.registry)
        self.counts.update(add=0, research=0)
        start = now_ns()
        text = runtime.exec("go", tools=self.tools)
        elapsed = now_ns() - start
        provider.assert_complete()
        expected = {"add": outer_rounds, "research": outer_rounds}
        if text != "done" or self.counts != expected:
            raise BenchError(
                f"W4: exec returned {text!r}, tool calls {self.counts}, expected {expected}"
            )
        return elapsed / len(turns) / 1000


async def w4(cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    reason = _missing("openprogram.runtime", "openprogram.functions")
    if reason:
        return None, reason
    outer = W4_OUTER_ROUNDS

    def samples() -> list[float]:
        # a worker thread with no running event loop: exec runs as in a plain sync program
        bench = _W4()
        for _ in range(cfg.warmup):
            bench.sample(outer)
        out = []
        for _ in range(cfg.samples):
            gc.collect()
            out.append(bench.sample(outer))
        return out

    values = await asyncio.to_thread(samples)
    row = {
        **summarize(values).as_dict(),
        "note": f"{outer * 3 + 1} model calls/run, 1 nesting level",
    }
    return {"openprogram": row}, None


# -- W5: cassette replay -----------------------------------------------------------------------

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True, slots=True)
class _Case:
    name: str
    cassette: str
    endpoint: str  # regex matched against the first request's URI path; group "model" if any
    prompt: str
    tool: str
    parameters: dict[str, Any]
    result: str
    tool_choice: str | None = None  # what the recording was made with (None: not sent)


_ADD = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
}

_DESCRIPTIONS = {"add": "Add two integers.", "get_weather": "Current weather for a city."}
"""The tool descriptions the recordings were made with (replay matches request bodies)."""

W5_CASES = (
    _Case(
        "openai-chat",
        "cassettes/emulator/chat_tool_loop.yaml",
        r"/v1/chat/completions$",
        "What is 2 + 3?",
        "add",
        _ADD,
        "5",
    ),
    _Case(
        "anthropic",
        "scenarios/cassettes/anthropic_weather.yaml",
        r"/v1/messages$",
        "What is the weather in Paris?",
        "get_weather",
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        "sunny, 21 C in Paris",
        tool_choice="auto",  # a scenario cassette: scenarios send Runtime.exec's "auto"
    ),
    _Case(
        "gemini",
        "cassettes/emulator/gemini_tool_loop.yaml",
        r"/v1(?:beta)?/models/(?P<model>[^/:]+):streamGenerateContent$",
        "What is 2 + 3?",
        "add",
        _ADD,
        "5",
    ),
    _Case(
        "bedrock",
        "cassettes/emulator/bedrock_tool_loop.yaml",
        r"/model/(?P<model>[^/]+)/converse-stream$",
        "What is 2 + 3?",
        "add",
        _ADD,
        "5",
    ),
)
"""The project's recordings of a two-request tool loop (a tool call, then the answer), made
against the loopback emulator by the cassette, scenario and provider tests."""


def _adapter(case: _Case, base_url: str) -> Any:
    if case.name == "openai-chat":
        from openprogram.providers.openai_chat import OpenAIChatProvider

        return OpenAIChatProvider(api_key="sk-replay", base_url=base_url + "/v1")
    if case.name == "gemini":
        from openprogram.providers.gemini import GeminiProvider

        return GeminiProvider(api_key="replay-key", base_url=base_url)
    if case.name == "bedrock":
        from openprogram.providers.bedrock import BedrockProvider

        return BedrockProvider(
            base_url=base_url,
            region_name="us-east-1",
            aws_access_key_id="AKIDREPLAY",
            aws_secret_access_key="replay",
        )
    from openprogram.providers.anthropic import AnthropicProvider

    return AnthropicProvider(api_key="sk-ant-replay", base_url=base_url)


def _target(case: _Case, path: Path, first: dict[str, Any]) -> tuple[str, str]:
    """(base URL, model) of the recording's first request."""
    from urllib.parse import unquote, urlsplit

    uri = urlsplit(str(first["uri"]))
    m = re.search(case.endpoint, uri.path)
    if m is None:
        raise BenchError(f"W5: {path} was not recorded against {case.endpoint}")
    base = f"{uri.scheme}://{uri.netloc}{uri.path[: m.start()]}"
    if "model" in m.groupdict():
        return base, unquote(m["model"])
    return base, json.loads(first["body"]).get("model", "test-model")


async def _replay_loop(case: _Case, path: Path, provider: Any, model: str) -> float:
    """One checked loop run over the cassette, through the SDK and our adapter; ms."""
    from openprogram.loop import AgentContext, LoopConfig, agent_loop
    from openprogram_testing.cassettes import use_cassette

    calls: list[dict[str, Any]] = []

    def execute(arguments: dict[str, Any]) -> str:
        calls.append(arguments)
        return case.result

    spec = {
        "name": case.tool,
        "description": _DESCRIPTIONS[case.tool],
        "parameters": case.parameters,
    }
    tool = {"spec": spec, "execute": execute}
    start = now_ns()
    with use_cassette(path):
        stream = agent_loop(
            case.prompt,
            AgentContext(tools=[tool]),
            LoopConfig(provider=provider, model=model, tool_choice=case.tool_choice),
        )
        async for _ in stream:
            pass
        messages = await stream
    elapsed = now_ns() - start
    final = messages[-1]
    if (
        stream.termination != "completed"
        or stream.model_calls != 2
        or len(calls) != 1
        or not getattr(final, "text", "")
    ):
        raise BenchError(
            f"W5 {case.name}: replay ended {stream.termination!r} after {stream.model_calls} "
            f"model calls, {len(calls)} tool calls, final {getattr(final, 'text', final)!r}"
        )
    return elapsed / 1e6


async def _replay_raw(path: Path, interactions: list[dict[str, Any]], client: Any) -> float:
    """The same recorded requests replayed by vcrpy to a bare HTTP client (no SDK, no adapter,
    no loop): the floor of cassette replay; ms."""
    from openprogram_testing.cassettes import use_cassette

    start = now_ns()
    with use_cassette(path):
        for it in interactions:
            req = it["request"]
            body = req["body"]
            response = await client.post(
                req["uri"],
                content=body if isinstance(body, bytes) else str(body).encode(),
                headers={"content-type": "application/json"},
            )
            text = await response.aread()
            if response.status_code != 200 or not text:
                raise BenchError(f"W5 raw replay of {path.name}: status {response.status_code}")
    return (now_ns() - start) / 1e6


async def w5(cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    reason = _missing(
        "openprogram.providers.openai_chat",
        "openprogram.providers.anthropic",
        "openprogram_testing.cassettes",
        "openai",
        "anthropic",
        "httpx2",
        "google.genai",
        "boto3",
    )
    if reason:
        return None, reason
    import httpx2

    from openprogram_testing.cassettes import load_interactions

    missing = [c.cassette for c in W5_CASES if not (ROOT / c.cassette).is_file()]
    if missing:
        return None, f"cassette(s) not found: {', '.join(missing)}"
    rows: dict[str, Any] = {}
    async with httpx2.AsyncClient() as client:
        for case in W5_CASES:
            path = ROOT / case.cassette
            interactions = load_interactions(path)
            base_url, model = _target(case, path, interactions[0]["request"])
            provider = _adapter(case, base_url)
            loop_ms: list[float] = []
            raw_ms: list[float] = []
            for i in range(cfg.warmup + cfg.samples):
                gc.collect()
                a = await _replay_loop(case, path, provider, model)
                gc.collect()
                b = await _replay_raw(path, interactions, client)
                if i >= cfg.warmup:
                    loop_ms.append(a)
                    raw_ms.append(b)
            raw = summarize(raw_ms).as_dict()
            rows[f"openprogram ({case.name})"] = {
                **summarize(loop_ms).as_dict(),
                "note": f"SDK + adapter + loop; raw replay {raw['median']:.2f} ms",
            }
            rows[f"vcrpy raw ({case.name})"] = {**raw, "note": "httpx2 client, no SDK"}
    return rows, None


# -- W6 and W9: property throughput ------------------------------------------------------------

W6_EXAMPLES = 300


def _property_rate(
    workload: str, strategy: Any, check: Callable[[Any, asyncio.Runner], None], examples: int
) -> tuple[float, int]:
    """Time ``check`` over ``examples`` draws of ``strategy`` (derandomized, generate phase
    only, no database, deadline or health checks: a throughput measure, so every sample draws
    the same examples and nothing but the property runs); ``check`` gets the event loop runner
    the examples share.  Returns examples/s and the number run."""
    from hypothesis import HealthCheck, Phase, given, settings

    count = [0]
    runner = asyncio.Runner()

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def prop(value: Any) -> None:
        count[0] += 1
        check(value, runner)

    try:
        start = now_ns()
        prop()
        elapsed = now_ns() - start
    finally:
        runner.close()
    if count[0] == 0:
        raise BenchError(f"{workload}: the property ran no example")
    return count[0] / (elapsed / 1e9), count[0]


async def _property_workload(
    cfg: Settings, sample: Callable[[int], tuple[float, int]], note: str
) -> tuple[dict[str, Any] | None, str | None]:
    """A property workload's row: up to five samples of :data:`W6_EXAMPLES` examples (10 in a
    quick run) after one discarded warm-up sample (the first pays for building and caching the
    strategies, as the other workloads' first runs pay theirs), taken in a thread because each
    sample runs its own event loop, which cannot start inside the benchmark's; ``note`` follows
    the examples count."""
    reason = _missing("hypothesis", "openprogram_testing.strategies")
    if reason:
        return None, reason
    examples = W6_EXAMPLES if cfg.samples > 3 else 10
    repeats = max(1, min(cfg.samples, 5))

    def samples() -> list[tuple[float, int]]:
        sample(examples)  # the warm-up
        return [sample(examples) for _ in range(repeats)]

    values = await asyncio.to_thread(samples)
    row = {
        **summarize([v[0] for v in values]).as_dict(),
        "note": f"{values[0][1]} examples/sample, {note}",
    }
    return {"openprogram": row}, None


def _w6_sample(examples: int) -> tuple[float, int]:
    """Run the loop property (generate a scenario, run it through the real loop, check the
    invariants, the spec's rules and the reference model's prediction) for ``examples``
    examples; returns examples/s and the number run."""
    from openprogram_testing.strategies import check_run, scenarios

    def check(generated: Any, runner: asyncio.Runner) -> None:
        check_run(generated, generated.run_sync(runner=runner))

    return _property_rate("W6", scenarios(), check, examples)


async def w6(cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    return await _property_workload(cfg, _w6_sample, "derandomized")


# -- W9: schema-derived property examples ---------------------------------------------------------

W9_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string", "maxLength": 40},
        "nights": {"type": "integer", "minimum": 1, "maximum": 30},
        "budget": {"type": "number", "minimum": 0},
        "smoking": {"type": "boolean"},
        "tier": {"type": "string", "enum": ["basic", "suite"]},
    },
    "required": ["city", "nights", "tier"],
    "additionalProperties": False,
}
"""A tool with five typed fields, as a model would see it."""


def _w9_sample(examples: int) -> tuple[float, int]:
    """The schema-derived property: draw a labelled call of the five-field tool (valid or a
    near miss), run it through the real loop and check the loop answered exactly as labelled;
    returns examples/s and the number run."""
    from openprogram_testing.core.trace import run_loop
    from openprogram_testing.strategies import SchemaCall, schema_calls
    from openprogram_testing.transport.scripted import ScriptedProvider, turn

    tool = {"spec": {"name": "book", "parameters": W9_SCHEMA}, "execute": lambda args: "booked"}

    def check(call: SchemaCall, runner: asyncio.Runner) -> None:
        provider = ScriptedProvider([turn(call.scripted()), "done"])
        trace = runner.get_loop().run_until_complete(run_loop(provider, ["go"], tools=[tool]))
        (result,) = trace.tool_results
        if result.is_error != (not call.valid) or (
            call.expected_error is not None and result.text != call.expected_error
        ):
            raise BenchError(f"W9: {call.label} call answered {result.text!r}")

    return _property_rate("W9", schema_calls(tool), check, examples)


async def w9(cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    return await _property_workload(cfg, _w9_sample, "derandomized, five typed fields")


async def run(key: str, cfg: Settings) -> tuple[dict[str, Any] | None, str | None]:
    if key == "W4":
        return await w4(cfg)
    if key == "W5":
        return await w5(cfg)
    if key == "W6":
        return await w6(cfg)
    if key == "W9":
        return await w9(cfg)
    raise ValueError(f"unknown workload {key!r}")
