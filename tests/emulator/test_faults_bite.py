"""The fault meta-test: every fault kind bites, or is refused, on every wire API, served by the
emulator and by a cassette.

The kinds are read from ``openprogram_testing.transport.faults`` itself (every ``Mutation`` subclass), so
a new kind fails here until it has an example below and bites.  For each kind × API × side, the
same tool-call run is made unfaulted and faulted through the real adapter; the faulted run's
observable outcome (termination, error, calls, results, text; for the faults that shape serving
only: the time taken and the pieces the body arrived in) must differ, or the fault must be
refused with an error naming what it did not fit.  A fault that silently stops biting fails
this test."""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

from openprogram_testing.cassettes import CassetteError, use_cassette
from openprogram_testing.core.trace import run_loop_sync
from openprogram_testing.emulator import ProviderEmulator
from openprogram_testing.frontends.scenarios.replay import cassette_adapter, replay_provider
from openprogram_testing.transport import faults
from openprogram_testing.transport.cassettes.files import headers_as_lists
from openprogram_testing.transport.faults import (
    FAULT_KINDS,
    CrcMismatch,
    DropTerminal,
    Fault,
    GarbleToolArguments,
    HttpError,
    InjectError,
    Latency,
    MalformedFrame,
    Mutation,
    Rechunk,
    Stall,
    TruncateAfter,
)
from openprogram_testing.transport.scripted import call, turn

ROOT = Path(__file__).resolve().parents[2]
PROMPT = "What is the weather in Paris?"
WEATHER = {
    "spec": {
        "name": "get_weather",
        "description": "Current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
    "execute": lambda args: f"sunny in {args.get('city')}",
}

KINDS = [kind.cls for kind in FAULT_KINDS.values()]
"""Every fault kind the vocabulary has, from its one table."""

EXAMPLES: dict[type[Mutation], list[Mutation]] = {
    TruncateAfter: [Fault.truncate_after(2), Fault.truncate_after(2, disconnect=True)],
    DropTerminal: [Fault.drop_terminal()],
    MalformedFrame: [Fault.malformed_frame(1)],
    CrcMismatch: [Fault.crc_mismatch(1)],
    GarbleToolArguments: [Fault.garble_tool_arguments(0)],
    InjectError: [Fault.inject_error(2)],
    HttpError: [Fault.http_error(400)],  # not retried by any SDK: one request, fast
    Stall: [Fault.stall(0.2, after_frame=1)],
    Latency: [Fault.latency(0.03)],
    Rechunk: [Fault.rechunk([1])],
}
SHAPING = (Stall, Latency, Rechunk)
"""Kinds that change how a body is served, never what it says (by design): they bite in time
or in the pieces the client reads."""

# API -> (emulator side: how the adapter is built; cassette side: the project's recording)
APIS = ("openai_chat", "openai_responses", "anthropic", "gemini", "bedrock", "bedrock_invoke")
CASSETTES = {
    api: ROOT / "scenarios" / "cassettes" / f"{api}_weather.yaml"
    for api in ("openai_chat", "openai_responses", "anthropic", "gemini", "bedrock")
}
"""``bedrock_invoke`` (Anthropic through InvokeModel's stream) is served by the emulator only:
the project has no recording of it."""


@dataclass(frozen=True)
class Outcome:
    termination: str
    error: str | None
    calls: tuple[tuple[str, str], ...]
    results: tuple[tuple[bool, str], ...]
    text: str
    elapsed: float
    pieces: tuple[int, ...] = ()

    def differs_from(self, other: Outcome, fault: Mutation) -> bool:
        if isinstance(fault, Stall):
            return self.elapsed >= fault.seconds > other.elapsed
        if isinstance(fault, Latency):  # before each of at least three frames
            return self.elapsed >= 3 * fault.seconds and self.elapsed > other.elapsed
        if isinstance(fault, Rechunk):
            return self.pieces != other.pieces
        mine = (self.termination, self.error, self.calls, self.results, self.text)
        theirs = (other.termination, other.error, other.calls, other.results, other.text)
        return mine != theirs


def _outcome(trace: Any, started: float, pieces: tuple[int, ...] = ()) -> Outcome:
    return Outcome(
        trace.termination,
        trace.error,
        tuple((c.name, repr(c.arguments)) for c in trace.tool_calls),
        tuple((r.is_error, r.text) for r in trace.tool_results),
        trace.final_text or "",
        time.perf_counter() - started,
        pieces,
    )


class Refused(Exception):
    """The fault was refused with this message."""


# -- the emulator side --------------------------------------------------------------------------


def _emulator_adapter(api: str, emulator: ProviderEmulator) -> Any:
    if api == "bedrock_invoke":
        from openprogram.providers.anthropic import AnthropicProvider

        return AnthropicProvider(
            platform="bedrock",
            aws_access_key="test",
            aws_secret_key="test",
            aws_region="us-east-1",
            base_url=emulator.base_url,
            max_retries=0,
        )
    base = emulator.openai_base_url if api.startswith("openai") else emulator.base_url
    return replay_provider(api, base)  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def emulators() -> Any:
    started: dict[str, tuple[ProviderEmulator, Any]] = {}
    for api in APIS:
        emulator = ProviderEmulator(strict=False, fallback="It is sunny.").start()
        started[api] = (emulator, _emulator_adapter(api, emulator))
    yield started
    for emulator, _ in started.values():
        emulator.stop()


def _emulated(emulators: Any, api: str, fault: Mutation | None) -> Outcome:
    emulator, adapter = emulators[api]
    if fault is None:  # the unfaulted run: remember how many frames its first answer had
        _count_frames(emulator, ("emulator", api))
    script = turn(call("get_weather", {"city": "Paris"}), "Let me look.", chunk_size=4)
    try:
        emulator.add(script, faults=[fault] if fault is not None else [])
    except (TypeError, ValueError) as exc:
        raise Refused(str(exc)) from None
    seen = len(emulator.violations)
    started = time.perf_counter()
    trace = run_loop_sync(adapter, PROMPT, tools=[WEATHER], model="us.anthropic.claude-x")
    if len(emulator.violations) > seen:
        raise Refused(str(emulator.violations[seen]))
    return _outcome(trace, started)


@dataclass(frozen=True)
class Shape:
    """The unfaulted first answer's frames: how many, and where its terminal frames are."""

    count: int
    read_end: int
    """The last terminal frame a client reads (not Chat's ``[DONE]``, which the SDKs swallow)."""
    last_end: int


FRAMES: dict[tuple[str, str], Shape] = {}
"""The shape of the unfaulted first answer per (side, API): where the positional edge cases
put their cut or error."""


def _shape(body: str | bytes, content_type: str, path: str) -> Shape:
    if isinstance(body, bytes) and "event-stream" in content_type:
        body = body.decode()
    response = faults.MutableResponse(200, "OK", {"content-type": [content_type]}, body, path)
    frames = response.frames("shape")
    wire = response.wire(frames)
    ends = [i for i, frame in enumerate(frames) if response.is_terminal(wire, frame)]
    read = [i for i in ends if not (isinstance(frames[i], str) and "[DONE]" in frames[i])]
    return Shape(len(frames), read[-1], ends[-1])


def _count_frames(emulator: ProviderEmulator, key: tuple[str, str]) -> None:
    plan = emulator.plan

    def counting(method: str, target: str, *args: Any) -> Any:
        planned = plan(method, target, *args)
        body = b"".join(planned.frames)
        FRAMES.setdefault(key, _shape(body, planned.content_type, target))
        emulator.plan = plan  # type: ignore[method-assign]
        return planned

    emulator.plan = counting  # type: ignore[method-assign]


# -- the cassette side ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def adapters() -> dict[str, tuple[Any, str]]:
    return {api: cassette_adapter(api, path, "m")[:2] for api, path in CASSETTES.items()}  # type: ignore[arg-type]


def _replayed(adapters: Any, api: str, fault: Mutation | None) -> Outcome:
    adapter, model = adapters[api]
    mutations = {0: [fault]} if fault is not None else {}
    pieces: list[int] = []
    # the faulted first answer changes what the loop sends next: this test is about faults,
    # so bodies are not matched
    session = use_cassette(
        CASSETTES[api], mutations=mutations, match_body=False, allow_unplayed=True
    )
    serve = session.serve

    def counting(index: int, recorded: dict[str, Any], uri: str) -> dict[str, Any]:
        if index == 0 and fault is None:
            headers = headers_as_lists(recorded["headers"])
            ctype = next((v[0] for k, v in headers.items() if k.lower() == "content-type"), "")
            shape = _shape(recorded["body"]["string"], ctype, urlsplit(uri).path)
            FRAMES.setdefault(("cassette", api), shape)
        served = serve(index, recorded, uri)
        pieces.append(len(served["_pieces"]))
        return served

    session.serve = counting  # type: ignore[method-assign]
    started = time.perf_counter()
    try:
        with session:
            trace = run_loop_sync(adapter, PROMPT, tools=[WEATHER], model=model)
    except CassetteError as exc:
        if fault is not None and f"interaction 0: {fault!r}" in str(exc):
            raise Refused(str(exc)) from None
        raise
    return _outcome(trace, started, tuple(pieces))


# -- the meta-test ------------------------------------------------------------------------------


def test_every_fault_kind_has_an_example() -> None:
    missing = [cls.__name__ for cls in KINDS if cls not in EXAMPLES]
    assert not missing, (
        f"fault kinds without an example in this meta-test: {missing}; add one so the test "
        "checks that they bite"
    )
    assert len(KINDS) >= 10


def test_the_table_of_kinds_holds_every_fault_class() -> None:
    """A fault class left out of ``FAULT_KINDS`` would escape this meta-test (and the YAML
    model, the replay, the checks and the docs): every ``Mutation`` subclass is in the table."""
    classes = {
        cls
        for cls in vars(faults).values()
        if inspect.isclass(cls) and issubclass(cls, Mutation) and cls is not Mutation
    }
    assert classes == set(KINDS)
    for name, kind in FAULT_KINDS.items():  # one name: the constructor builds the class
        assert callable(getattr(Fault, name)), name
        assert kind.cls in EXAMPLES and all(type(e) is kind.cls for e in EXAMPLES[kind.cls])


CASES = [
    pytest.param(side, api, fault, id=f"{side}-{api}-{fault!r}")
    for kind in KINDS
    for fault in EXAMPLES.get(kind, [])
    for api in APIS
    for side in ("emulator", "cassette")
    if side == "emulator" or api in CASSETTES
]


_BASELINES: dict[tuple[str, str], Outcome] = {}


def _baseline(side: str, api: str, run: Any) -> Outcome:
    """The unfaulted run, made twice the first time (the first pays the SDK's imports, which
    must not count as time a fault added) and then remembered."""
    if (side, api) not in _BASELINES:
        run(None)
        _BASELINES[side, api] = run(None)
    baseline = _BASELINES[side, api]
    assert baseline.termination == "completed" and baseline.calls, baseline
    return baseline


POSITIONAL: dict[str, Any] = {
    "TruncateAfter(frame count)": lambda shape: TruncateAfter(shape.count),
    "TruncateAfter(frame count, disconnect)": lambda s: TruncateAfter(s.count, disconnect=True),
    "TruncateAfter(past the end)": lambda shape: TruncateAfter(shape.count + 1),
    "TruncateAfter(keeps the terminal frame)": lambda shape: TruncateAfter(shape.read_end + 1),
    "TruncateAfter(after the terminal frame, disconnect)": lambda s: TruncateAfter(
        s.last_end + 1, disconnect=True
    ),
    "InjectError(after the terminal frame)": lambda shape: InjectError(shape.last_end + 1),
    "InjectError(past the end)": lambda shape: InjectError(shape.count + 1),
    "Stall(after the terminal frame)": lambda shape: Stall(0.2, after_frame=shape.last_end + 1),
}
"""The positional edge cases: a cut that keeps every frame (or the terminal one the client
reads), a dropped connection, an error or a pause after the stream's last terminal frame.  Served, each
would leave the client a whole answer (a test that believes it tested a cut stream while the
client saw none): they must be refused."""

BOUNDARY: dict[str, Any] = {
    "TruncateAfter(before the terminal frame)": lambda shape: TruncateAfter(shape.read_end),
    "TruncateAfter(before the last terminal frame, disconnect)": lambda s: TruncateAfter(
        s.last_end, disconnect=True
    ),
    "InjectError(instead of the last terminal frame)": lambda shape: InjectError(shape.last_end),
    "Stall(before the last terminal frame)": lambda s: Stall(0.2, after_frame=s.last_end),
}
"""The latest positions that are served: each must still bite (the refusal is not too eager)."""


def _side(emulators: Any, adapters: Any, side: str, api: str) -> Any:
    if side == "emulator":
        return lambda f: _emulated(emulators, api, f)
    return lambda f: _replayed(adapters, api, f)


@pytest.mark.parametrize(
    ("side", "api", "name"),
    [
        pytest.param(side, api, name, id=f"{side}-{api}-{name}")
        for name in POSITIONAL
        for api in APIS
        for side in ("emulator", "cassette")
        if side == "emulator" or api in CASSETTES
    ],
)
def test_a_cut_or_error_past_the_end_is_refused(
    emulators: Any, adapters: Any, side: str, api: str, name: str
) -> None:
    run = _side(emulators, adapters, side, api)
    baseline = _baseline(side, api, run)
    fault = POSITIONAL[name](FRAMES[side, api])
    try:
        faulted = run(fault)
    except Refused as refusal:
        assert repr(fault) in str(refusal), refusal
        return
    raise AssertionError(
        f"{fault!r} on {api} ({side}, {FRAMES[side, api]}) was served, not refused; "
        f"the client saw {'the same run' if not faulted.differs_from(baseline, fault) else faulted}"
    )


@pytest.mark.parametrize(
    ("side", "api", "name"),
    [
        pytest.param(side, api, name, id=f"{side}-{api}-{name}")
        for name in BOUNDARY
        for api in APIS
        for side in ("emulator", "cassette")
        if side == "emulator" or api in CASSETTES
    ],
)
def test_a_cut_or_error_at_the_last_place_served_still_bites(
    emulators: Any, adapters: Any, side: str, api: str, name: str
) -> None:
    run = _side(emulators, adapters, side, api)
    baseline = _baseline(side, api, run)
    fault = BOUNDARY[name](FRAMES[side, api])
    faulted = run(fault)
    assert faulted.differs_from(baseline, fault), (
        f"{fault!r} on {api} ({side}, {FRAMES[side, api]}) changed nothing the adapter saw"
    )


@pytest.mark.parametrize(("side", "api", "fault"), CASES)
def test_every_fault_bites_or_is_refused(
    emulators: Any, adapters: Any, side: str, api: str, fault: Mutation
) -> None:
    run = (lambda f: _emulated(emulators, api, f)) if side == "emulator" else (
        lambda f: _replayed(adapters, api, f)
    )  # fmt: skip
    baseline = _baseline(side, api, run)
    try:
        faulted = run(fault)
    except Refused as refusal:
        assert repr(fault) in str(refusal) or type(fault).__name__ in str(refusal), refusal
        return
    assert faulted.differs_from(baseline, fault), (
        f"{fault!r} on {api} ({side}) changed nothing the adapter saw: {faulted}"
    )


def test_garbled_arguments_reach_the_tool_through_invoke_with_response_stream(
    emulators: Any,
) -> None:
    emulator, adapter = emulators["bedrock_invoke"]
    emulator.add(
        turn(call("get_weather", {"city": "Paris"}), chunk_size=4),
        faults=[GarbleToolArguments(0)],
    )
    seen = len(emulator.violations)
    trace = run_loop_sync(adapter, PROMPT, tools=[WEATHER], model="us.anthropic.claude-x")
    assert len(emulator.violations) == seen  # served, not refused
    (result,) = trace.tool_results
    assert result.is_error and "arguments are not valid JSON" in result.text
    assert emulator.requests[-2].path.endswith("/invoke-with-response-stream")


@pytest.mark.parametrize(
    "fault", [DropTerminal(), GarbleToolArguments(0), InjectError(0), MalformedFrame(1)]
)
def test_a_fault_a_json_response_cannot_show_is_refused_naming_the_endpoint(
    fault: Mutation,
) -> None:
    import httpx

    with ProviderEmulator() as emulator:
        emulator.add(turn(call("get_weather", {"city": "Paris"})), faults=[fault])
        body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
        reply = httpx.post(emulator.openai_base_url + "/chat/completions", json=body)
    assert reply.status_code == 500 and reply.headers["x-should-retry"] == "false"
    (violation,) = emulator.violations
    assert f"POST /v1/chat/completions: {fault!r} does not fit a non-streamed JSON" in str(
        violation
    )
