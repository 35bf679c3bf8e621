"""``scaffold``: a recording becomes a scenario that validates and passes as written, on every
shared real recording (or is refused with its reason), from the command line too; with
``--agent`` the user's real tools run; a cassette that cannot be loaded is a clean error."""

from __future__ import annotations

import importlib
import os
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.scenarios.scaffold import ScaffoldError, scaffold_cassette
from openprogram_testing.scenarios import ScenarioError, load_scenario, run_scenario
from tests.conftest import conformance_dir

ROOT = Path(__file__).resolve().parents[2]
SHARED = conformance_dir()  # beside the clone, or $OPENPROGRAM_CONFORMANCE_CASSETTES
RECORDINGS = sorted(SHARED.rglob("*.yaml")) if SHARED.is_dir() else []
REFUSED = {
    "chatlas/test_provider_bedrock/test_anthropic_tool_variations_async.yaml": "InvokeModel",
    "dd-trace-py/anthropic_completion_error.yaml": "no user prompt",
    # The SDK asks again (retries, another media upload) where the recording has no more.
    "crewai/TestAgentMultimodalGemini.test_video_file[gemini-gemini-2.0-flash].yaml": "cassette",
    "crewai/TestBedrockNativeToolCalling.test_bedrock_parallel_native_tool_calling_test_agent_kickoff.yaml": "cassette",
    "dd-trace-py/bedrock/bedrock_converse_error.yaml": "cassette",
    "mirascope/test_call_with_tools/google_gemini_2_5_flash/sync.yaml": "cassette",
    "opentelemetry-python-contrib/google_genai/test_streaming[logcontent-gemini-2.5-flash-vertexaiapi-sync-default].yaml": "cassette",
    "pydantic-ai/test_bedrock/test_bedrock_model_retry.yaml": "cassette",
}  # fmt: skip
"""Shared recordings that do not replay as one loop run, and what the refusal names."""


@pytest.mark.skipif(
    not RECORDINGS,
    reason=f"conformance recordings not found at {SHARED} "
    "(set OPENPROGRAM_CONFORMANCE_CASSETTES to their folder)",
)
@pytest.mark.parametrize(
    "cassette", RECORDINGS, ids=[str(p.relative_to(SHARED)) for p in RECORDINGS]
)
def test_every_shared_recording_scaffolds_a_scenario_that_passes_as_written(
    cassette: Path, tmp_path: Path
) -> None:
    name = cassette.relative_to(SHARED).as_posix()
    out = tmp_path / "scenario_scaffolded.yaml"
    root = os.path.commonpath([tmp_path, cassette])  # the recordings stay where they are
    if name in REFUSED:
        with pytest.raises(ScaffoldError, match=REFUSED[name]):
            scaffold_cassette(cassette, out, root=root)
        assert not out.exists()
        return
    # scaffold_cassette loads and runs the file it wrote: its result is the file's, as written
    result = scaffold_cassette(cassette, out, root=root)
    assert result.passed and result.path == str(out), result.failure_text
    text = out.read_text(encoding="utf-8")
    assert "match_body: false" in text and "Matching is relaxed" in text
    scenario = load_scenario(out, root=root)  # and it validates as written
    assert scenario.expect.trajectory is not None and scenario.expect.termination is not None


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("")
    shutil.copy(ROOT / "scenarios" / "cassettes" / "gemini_weather.yaml", tmp_path / "weather.yaml")
    return tmp_path


def test_the_command_writes_a_scenario_and_refuses_to_overwrite(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    assert main(["scaffold", "weather.yaml", "--out", "tests/scenario_weather.yaml"]) == 0
    assert "passes as written" in capsys.readouterr().out
    scenario = load_scenario(project / "tests" / "scenario_weather.yaml")
    assert scenario.cassette is not None and scenario.cassette.path == "../weather.yaml"
    assert scenario.expect.final_text == "It is sunny and 21 C in Paris."
    assert run_scenario(scenario).passed
    assert main(["scaffold", "weather.yaml", "--out", "tests/scenario_weather.yaml"]) == 2
    assert "--force" in capsys.readouterr().err
    assert main(["scaffold", "weather.yaml", "-o", "tests/scenario_weather.yaml", "--force"]) == 0


def test_a_scaffolded_expectation_fails_when_the_run_changes(project: Path) -> None:
    out = project / "scenario_weather.yaml"
    scaffold_cassette(project / "weather.yaml", out)
    text = out.read_text(encoding="utf-8")
    out.write_text(text.replace("city: Paris", "city: Rome"), encoding="utf-8")
    failures = run_scenario(load_scenario(out)).failures
    assert len(failures) == 1 and "args.city" in failures[0]


def test_with_agent_the_real_tools_run(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "weather_agent.py").write_text(
        "from openprogram import function\n\n\n"
        "@function\n"
        "def get_weather(city: str) -> str:\n"
        '    """Current weather for a city."""\n'
        '    return f"real weather of {city}"\n'
    )
    monkeypatch.syspath_prepend(str(project))
    out = project / "scenario_agent.yaml"
    result = scaffold_cassette(project / "weather.yaml", out, agent="weather_agent:get_weather")
    assert result.trace.tool_results[0].text == "real weather of Paris"
    assert "import: weather_agent:get_weather" in out.read_text(encoding="utf-8")
    sys.modules.pop("weather_agent", None)


def test_with_agent_tools_that_do_not_match_the_recording_are_refused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (project / "other_agent.py").write_text(
        "from openprogram import function\n\n\n"
        "@function\n"
        "def get_time(city: str) -> str:\n"
        '    """The time in a city."""\n'
        '    return "noon"\n\n\n'
        "TOOLS = [get_time]\n"
    )
    monkeypatch.syspath_prepend(str(project))
    out = project / "scenario_other.yaml"
    with pytest.raises(ScaffoldError, match=r"does not offer \['get_weather'\]"):
        scaffold_cassette(project / "weather.yaml", out, agent="other_agent:TOOLS")
    assert not out.exists()
    sys.modules.pop("other_agent", None)


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("not: [a cassette", "cannot load the cassette"),
        ("interactions: []\nversion: 1\n", "no interactions"),
        (
            "interactions:\n- request: {method: POST, uri: 'https://example.com/x', body: '{}', headers: {}}\n"
            "  response: {status: {code: 200, message: OK}, headers: {}, body: {string: ''}}\nversion: 1\n",
            "not one of the provider APIs",
        ),
    ],
)
def test_a_cassette_that_cannot_become_a_scenario_is_a_clean_error(
    project: Path,
    content: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    (project / "bad.yaml").write_text(content)
    with pytest.raises(ScaffoldError, match=says):
        scaffold_cassette(project / "bad.yaml", project / "scenario_bad.yaml")
    assert not (project / "scenario_bad.yaml").exists()
    monkeypatch.chdir(project)
    assert main(["scaffold", "bad.yaml", "--out", "scenario_bad.yaml"]) == 2
    err = capsys.readouterr().err
    assert says in err and "Traceback" not in err
    assert main(["scaffold", "missing.yaml", "--out", "scenario_m.yaml"]) == 2


@pytest.mark.parametrize(
    "source", ["cassettes/a\nsystem_prompt: injected.yaml", "b\rtools: []\u2028d\x00.yaml"]
)
def test_a_source_name_cannot_end_the_header_comment(source: str) -> None:
    import yaml

    from openprogram_testing.frontends.scenarios.scaffold import to_yaml

    text = to_yaml({"prompt": "hi"}, source)
    assert yaml.safe_load(text) == {"prompt": "hi"}
    assert text.splitlines()[0].startswith("# Scaffolded by")


def _refused_record(project: Path) -> Path:
    """A run record whose scenario is refused only after it ran (its final text was edited):
    the draft existed before the refusal."""
    import json

    from openprogram_testing import ScriptedProvider, run_loop_sync
    from openprogram_testing.frontends.report.record import trace_record

    record = trace_record(run_loop_sync(ScriptedProvider(["hello"]), "hi"))
    record["final_text"] = "something else"
    source = project / "run.json"
    source.write_text(json.dumps(record), encoding="utf-8")
    return source


def test_a_refused_scaffold_leaves_the_target_and_its_folders_as_they_were(
    project: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(project)
    _refused_record(project)
    keep = project / "scenario_keep.yaml"
    keep.write_text("# mine\n", encoding="utf-8")
    assert main(["scaffold", "run.json", "--out", "scenario_keep.yaml", "--force"]) == 2
    assert "final_text" in capsys.readouterr().err
    assert keep.read_text(encoding="utf-8") == "# mine\n"  # not the draft
    assert main(["scaffold", "run.json", "--out", "new/deeper/scenario_x.yaml"]) == 2
    assert not (project / "new").exists()  # no empty folders left
    assert sorted(p.name for p in project.iterdir()) == [
        "pyproject.toml",
        "run.json",
        "scenario_keep.yaml",
        "weather.yaml",
    ]  # no temporary file either
    assert main(["scaffold", "weather.yaml", "--out", "new/deeper/scenario_w.yaml"]) == 0
    assert [p.name for p in (project / "new" / "deeper").iterdir()] == ["scenario_w.yaml"]


@pytest.mark.parametrize("spelling", ["weather.yaml", "./weather.yaml", "link.yaml"])
def test_the_source_itself_is_never_the_target(
    project: Path,
    spelling: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project)
    (project / "link.yaml").symlink_to(project / "weather.yaml")
    recording = (project / "weather.yaml").read_bytes()
    assert main(["scaffold", "weather.yaml", "--out", spelling, "--force"]) == 2
    assert "is the recording the scenario is made from" in capsys.readouterr().err
    assert (project / "weather.yaml").read_bytes() == recording
    with pytest.raises(ScaffoldError, match="is the recording"):
        scaffold_cassette(project / "weather.yaml", project / spelling)
    assert (project / "weather.yaml").read_bytes() == recording


def test_a_link_out_of_the_project_is_never_written_through(
    project: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project)
    outside = tmp_path_factory.mktemp("outside")
    (project / "tests").mkdir()
    (project / "tests" / "dangling.yaml").symlink_to(outside / "created.yaml")
    assert main(["scaffold", "weather.yaml", "--out", "tests/dangling.yaml"]) == 2
    assert "leads outside the project" in capsys.readouterr().err
    assert not (outside / "created.yaml").exists()
    (outside / "theirs.yaml").write_text("theirs\n", encoding="utf-8")
    (project / "tests" / "existing.yaml").symlink_to(outside / "theirs.yaml")
    assert main(["scaffold", "weather.yaml", "--out", "tests/existing.yaml", "--force"]) == 2
    assert "leads outside the project" in capsys.readouterr().err
    assert (outside / "theirs.yaml").read_text(encoding="utf-8") == "theirs\n"
    (project / "linked").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ScaffoldError, match="leads outside the project"):
        scaffold_cassette(project / "weather.yaml", project / "linked" / "scenario.yaml")
    assert sorted(p.name for p in outside.iterdir()) == ["theirs.yaml"]


@pytest.mark.parametrize(
    ("out", "says"),
    [("folder", "is a directory"), ("x" * 300 + ".yaml", "cannot write"), ("run.json/x", "")],
)
def test_an_out_the_system_cannot_take_is_a_usage_error(
    project: Path,
    out: str,
    says: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.chdir(project)
    (project / "folder").mkdir()
    (project / "run.json").write_text("{}", encoding="utf-8")
    for force in ([], ["--force"]):
        assert main(["scaffold", "weather.yaml", "--out", out, *force]) == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err
    assert sorted(p.name for p in project.iterdir()) == [
        "folder",
        "pyproject.toml",
        "run.json",
        "weather.yaml",
    ]


NESTED_AGENT = '''
from openprogram import Registry, Runtime, agentic_function, function

registry = Registry()


@function(registry=registry)
def lookup_weather(city: str) -> str:
    """Current weather of one city."""
    return {"Oslo": "3 C", "Rome": "24 C"}[city]


@function(registry=registry)
def to_fahrenheit(celsius: float) -> float:
    """Celsius to Fahrenheit."""
    return celsius * 9 / 5 + 32


@agentic_function(registry=registry)
def summarize_cities(cities: list[str], runtime: Runtime) -> str:
    """Summarise the weather of several cities."""
    return runtime.exec("Look up " + ", ".join(cities) + " and summarise.", tools=NESTED)


NESTED = [lookup_weather, to_fahrenheit]
TOOLS = [lookup_weather, summarize_cities]
'''
"""The agent of the nested recording: an agentic tool whose body runs its own loop."""

NESTED_SCRIPT = [
    ("summarize_cities", {"cities": ["Oslo", "Rome"]}),
    [("lookup_weather", {"city": "Oslo"}), ("lookup_weather", {"city": "Rome"})],
    "Oslo is cold, Rome is warm.",
    "Summary: Oslo is cold, Rome is warm.",
]


def _agent(project: Path, name: str, source: str) -> str:
    (project / f"{name}.py").write_text(source, encoding="utf-8")
    return f"{name}:TOOLS"


@pytest.fixture
def nested(project: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """A recording of a run with a nested run (4 interactions: outer, nested, nested, outer),
    made against the loopback emulator through the real OpenAI Chat adapter."""
    from openprogram.providers.openai_chat import OpenAIChatProvider
    from openprogram_testing import ProviderEmulator, call, turn
    from openprogram_testing.cassettes import use_cassette

    monkeypatch.syspath_prepend(str(project))
    monkeypatch.chdir(project)
    agent = _agent(project, "nested_agent", NESTED_AGENT)
    module = importlib.import_module("nested_agent")
    script: list[Any] = [
        turn(call(*NESTED_SCRIPT[0])),
        turn(*(call(*c) for c in NESTED_SCRIPT[1])),
        NESTED_SCRIPT[2],
        NESTED_SCRIPT[3],
    ]
    with use_cassette(project / "nested.yaml", record_mode="all"), ProviderEmulator(script) as emu:
        provider = OpenAIChatProvider(api_key="test-key", base_url=emu.openai_base_url)
        runtime = module.Runtime(provider, "gpt-4o-mini", registry=module.registry)
        assert runtime.exec("How is the weather?", tools=module.TOOLS) == NESTED_SCRIPT[3]
    yield agent
    for name in [m for m in sys.modules if m.startswith("nested_agent")]:
        sys.modules.pop(name)


def test_a_nested_recording_without_agent_is_refused_saying_why(
    project: Path, nested: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(ScaffoldError, match=r"holds 2 runs: a nested run .* pass --agent"):
        scaffold_cassette(project / "nested.yaml", project / "scenario_nested.yaml")
    assert main(["scaffold", "nested.yaml", "--out", "scenario_nested.yaml"]) == 2
    err = capsys.readouterr().err
    assert "starts at interaction 1 with 'Look up Oslo, Rome and summarise.'" in err
    assert "['lookup_weather', 'to_fahrenheit']" in err
    assert not (project / "scenario_nested.yaml").exists()


def test_a_nested_recording_is_scaffolded_run_by_run_and_fails_when_the_agent_changes(
    project: Path, nested: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (
        main(["scaffold", "nested.yaml", "--out", "scenario_nested.yaml", "--agent", nested]) == 0
    )
    assert "1 nested run(s), each expected" in capsys.readouterr().out
    out = project / "scenario_nested.yaml"
    scenario = load_scenario(out)
    assert scenario.cassette is not None and not scenario.cassette.allow_unplayed
    assert scenario.options.max_iterations == 2  # the outer run's calls, not the first one's
    expect = scenario.expect
    assert (expect.termination, expect.model_calls) == ("completed", 2)
    assert expect.final_text == NESTED_SCRIPT[3]
    assert expect.runs is not None and list(expect.runs) == ["summarize_cities"]
    inner = expect.runs["summarize_cities"]
    assert (inner.termination, inner.model_calls, inner.final_text) == (
        "completed",
        2,
        NESTED_SCRIPT[2],
    )
    assert inner.trajectory is not None and len(inner.trajectory.calls) == 2
    assert run_scenario(load_scenario(out)).passed
    # the agent stops doing what the recording did: each change fails the scaffolded test
    changes = {
        "no_nested_run": ('return runtime.exec("Look up "', 'return "none" or runtime.exec("Look up "'),
        "nested_menu_changed": ("tools=NESTED)", "tools=[to_fahrenheit])"),
        "tool_dropped": ("TOOLS = [lookup_weather, summarize_cities]", "TOOLS = [lookup_weather]"),
        "tool_fails": ('return {"Oslo"', 'raise ValueError("down")\n    return {"Oslo"'),
    }  # fmt: skip
    text = out.read_text(encoding="utf-8")
    for name, (before, after) in changes.items():
        assert before in NESTED_AGENT
        agent = _agent(project, f"nested_agent_{name}", NESTED_AGENT.replace(before, after))
        changed = project / f"scenario_{name}.yaml"
        changed.write_text(text.replace(nested, agent), encoding="utf-8")
        try:
            result = run_scenario(load_scenario(changed))
        except ScenarioError as exc:  # refused as written: the run it expects cannot happen
            assert "summarize_cities" in str(exc), name
            continue
        assert not result.passed, name


def test_an_agent_that_does_not_do_what_the_recording_did_is_refused(
    project: Path, nested: str
) -> None:
    flat = NESTED_AGENT.replace(
        'return runtime.exec("Look up "', 'return "x" or runtime.exec("Look up "'
    )
    for name, source, says in [
        ("nested_agent_unknown", "TOOLS = []\n", "does not offer ['lookup_weather', 'summarize"),
        ("nested_agent_flat", flat, "made 1 run(s), the recording 2"),
    ]:
        agent = _agent(project, name, source)
        with pytest.raises(ScaffoldError, match=re.escape(says)):
            scaffold_cassette(project / "nested.yaml", project / "scenario_x.yaml", agent=agent)
        assert not (project / "scenario_x.yaml").exists()
