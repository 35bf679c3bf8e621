"""The ``openprogram-testing`` command: run (on pytest: report, JUnit XML, -k, xdist workers,
HTML report, coverage, exit codes), validate, schema, show (scenario, result JSON, trace JSON,
cassette), record and emulator guards, and the install line without the testing extra.  Errors
are clean messages with exit codes, never tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.commands import pytest_args
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.scenarios import run_scenario, scenario_json_schema
from tests.scenarios._scenarios import ONE_TOOL_CALL

ROOT = Path(__file__).resolve().parents[2]

PASSING = ONE_TOOL_CALL + "expect: {termination: completed, model_calls: 2, final_text: done}\n"
FAILING = """
prompt: hi
script: [hello]
expect: {final_text: goodbye}
"""
INVALID = """
prompt: hi
script: [hello]
expect: {termination: finished}
"""


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    (tmp_path / "scenario_alpha.yaml").write_text(PASSING)
    (tmp_path / "nested").mkdir()
    (tmp_path / "nested" / "beta.scenario.yaml").write_text(PASSING.replace("hi", "beta"))
    (tmp_path / "scenario_gamma.yaml").write_text(FAILING)
    (tmp_path / "not_a_scenario.yaml").write_text("just: data\n")  # not collected
    return tmp_path


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


def test_run_reports_each_scenario_and_fails_when_one_fails(suite: Path, capsys) -> None:
    code, out, _ = cli(capsys, "run", str(suite))
    assert code == 1
    assert "alpha" in out and "beta" in out and "gamma" in out
    assert "not_a_scenario" not in out
    assert f"FAILED {suite / 'scenario_gamma.yaml'}" in out
    assert "expect.final_text: expected 'goodbye', got 'hello'" in out
    assert "2 passed, 1 failed in" in out


def test_run_exit_zero_when_all_pass(suite: Path, capsys) -> None:
    code, out, _ = cli(capsys, "run", str(suite), "-k", "not gamma", "-v")
    assert code == 0
    assert "2 passed in" in out and "gamma" not in out
    assert "PASSED alpha" in out and "agent_end termination=completed" in out  # -v timelines


def test_keyword_filter_is_pytests(suite: Path, capsys) -> None:
    code, out, _ = cli(capsys, "run", str(suite), "-k", "alpha or beta")
    assert code == 0 and "2 passed in" in out
    code, out, _ = cli(capsys, "run", str(suite), "-k", "scenario_gamma")  # by file name too
    assert code == 1 and "0 passed, 1 failed in" in out


def test_pytest_command_line() -> None:
    files = [Path("s/scenario_a.yaml"), Path("s/other.yaml")]
    args = pytest_args(
        files,
        keyword="a",
        workers=2,
        junit_xml=Path("j.xml"),
        html=Path("r.html"),
        coverage=True,
        fail_under=80,
        update_snapshots=True,
    )
    assert args[:2] == ["s/scenario_a.yaml", "s/other.yaml"]
    assert args[args.index("-o") + 1] == "openprogram_scenarios=other.yaml"
    for expected in (["-k", "a"], ["-n", "2"], ["-p", "no:terminal"]):
        i = args.index(expected[0], args.index(expected[0]))
        assert expected[1] in args[i:]
    assert "--junitxml=j.xml" in args and "--openprogram-html=r.html" in args
    assert "--openprogram-coverage" in args and "--openprogram-coverage-fail-under=80" in args
    assert "--snapshot-update" in args
    assert "-n" not in pytest_args(files)


def test_run_with_nothing_to_run_is_a_usage_error(suite: Path, capsys) -> None:
    code, _, err = cli(capsys, "run", str(suite), "-k", "zzz")
    assert code == 2
    assert "error: no scenario files matching -k 'zzz' found in" in err
    code, _, err = cli(capsys, "run", str(suite / "missing"))
    assert code == 2
    assert f"error: no such file or directory: {suite / 'missing'}" in err
    empty = suite / "empty"
    empty.mkdir()
    code, _, err = cli(capsys, "run", str(empty))
    assert code == 2 and f"error: no scenario files found in {empty}" in err


def test_run_invalid_file_is_reported_with_its_position(suite: Path, capsys) -> None:
    (suite / "scenario_delta.yaml").write_text(INVALID)
    code, out, _ = cli(capsys, "run", str(suite), "-k", "delta")
    assert code == 1
    assert "invalid scenario file" in out
    assert f"{suite / 'scenario_delta.yaml'}:4:23: expect.termination: expected " in out
    assert "1 invalid" in out


def test_junit_xml_report(suite: Path, capsys, tmp_path: Path) -> None:
    """pytest's own JUnit writer: one testcase per scenario, failures with their report."""
    (suite / "scenario_delta.yaml").write_text(INVALID)
    report = tmp_path / "out" / "junit.xml"
    code, out, _ = cli(capsys, "run", str(suite), "--junit-xml", str(report))
    assert code == 1
    assert f"JUnit XML written to {report}" in out
    root = ET.parse(report).getroot()
    (testsuite,) = root.findall("testsuite")
    assert testsuite.attrib["tests"] == "4"
    assert testsuite.attrib["failures"] == "2"
    cases = {c.attrib["name"]: c for c in testsuite.findall("testcase")}
    assert set(cases) == {"alpha", "beta", "gamma", "delta"}
    assert cases["alpha"].find("failure") is None and cases["alpha"].find("error") is None
    failure = cases["gamma"].find("failure")
    assert failure is not None
    assert "expect.final_text: expected 'goodbye', got 'hello'" in (failure.text or "")
    assert "timeline:" in (failure.text or "")
    invalid = cases["delta"].find("failure")
    assert invalid is not None and "4:23: expect.termination" in (invalid.text or "")
    assert cases["gamma"].attrib["classname"].endswith("scenario_gamma.yaml")


def test_parallel_workers_give_the_same_report(suite: Path, tmp_path: Path) -> None:
    """-n is pytest-xdist: the same table, failures and results from worker processes (run as
    the console script, since xdist workers are subprocesses)."""
    exe = Path(sys.executable).with_name("openprogram-testing")
    results = tmp_path / "results"
    done = subprocess.run(
        [str(exe), "run", str(suite), "-n", "2", "--results-dir", str(results), "-v"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "2 passed, 1 failed in" in done.stdout
    assert "expect.final_text: expected 'goodbye', got 'hello'" in done.stdout
    assert "PASSED alpha" in done.stdout and "agent_end termination=completed" in done.stdout
    assert json.loads((results / "scenario_gamma.result.json").read_text())["passed"] is False
    assert "Traceback" not in done.stdout + done.stderr


def test_html_report_and_coverage(suite: Path, capsys, tmp_path: Path) -> None:
    html = tmp_path / "report.html"
    code, out, _ = cli(capsys, "run", str(suite), "--html", str(html), "--coverage")
    assert code == 1
    assert f"HTML report written to {html}" in out
    assert "loop-behaviour coverage: " in out and "never exercised:" in out
    page = html.read_text()
    assert "scenario_gamma.yaml::gamma" in page and "expected 'goodbye'" in page
    code, out, _ = cli(capsys, "run", str(suite), "-k", "not gamma", "--coverage-fail-under", "99")
    assert code == 1
    assert "FAIL: loop-behaviour coverage" in out and "is below the required 99 %" in out
    assert "2 passed in" in out


def test_without_the_testing_extra_the_install_line_is_printed() -> None:
    """With only openprogram installed, the command says what to install (no traceback)."""
    code = (
        "import sys\n"
        "for name in ('typer', 'yaml', 'rich'):\n"
        "    sys.modules[name] = None\n"
        "from openprogram_testing.frontends.cli.main import main\n"
        "sys.exit(main(['run', 'scenarios/']))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == (
        "error: openprogram-testing needs the testing extra (typer, rich, PyYAML not "
        'installed); install it with: pip install "openprogram-loop[testing]"\n'
    )


def test_update_snapshots_writes_then_passes(tmp_path: Path, capsys) -> None:
    (tmp_path / "scenario_s.yaml").write_text("prompt: hi\nscript: [x]\nexpect: {snapshot: true}\n")
    assert cli(capsys, "run", str(tmp_path))[0] == 1
    code, out, _ = cli(capsys, "run", str(tmp_path), "--update-snapshots")
    assert code == 0 and "snapshot written" in out
    assert (tmp_path / "__snapshots__" / "scenario_s" / "s.trace.txt").is_file()
    assert cli(capsys, "run", str(tmp_path))[0] == 0


def test_results_dir_and_show_result_json(suite: Path, capsys, tmp_path: Path) -> None:
    results = tmp_path / "results"
    cli(capsys, "run", str(suite), "--results-dir", str(results))
    gamma = results / "scenario_gamma.result.json"
    data = json.loads(gamma.read_text())
    assert data["kind"] == "openprogram-scenario-result" and data["passed"] is False
    code, out, _ = cli(capsys, "show", str(gamma))
    assert code == 0
    assert "scenario 'gamma': FAILED" in out
    assert "expect.final_text: expected 'goodbye', got 'hello'" in out
    assert "agent_end termination=completed" in out


def test_show_trace_json(tmp_path: Path, capsys) -> None:
    result = run_scenario(tmp_scenario(tmp_path, PASSING))
    trace_file = tmp_path / "trace.json"
    trace_file.write_text(
        json.dumps({"events": [e.model_dump(mode="json") for e in result.trace.events]})
    )
    code, out, _ = cli(capsys, "show", str(trace_file))
    assert code == 0
    assert "tool_execution_start" in out and "agent_end termination=completed" in out
    trace_file.write_text('{"events": [{"type": "nope"}]}')
    code, _, err = cli(capsys, "show", str(trace_file))
    assert code == 2 and "the events do not validate" in err
    trace_file.write_text("{not json")
    code, _, err = cli(capsys, "show", str(trace_file))
    assert code == 2 and "not valid JSON" in err


def tmp_scenario(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "scenario_tmp.yaml"
    path.write_text(text)
    return path


def test_show_scenario_runs_it(tmp_path: Path, capsys) -> None:
    code, out, _ = cli(capsys, "show", str(tmp_scenario(tmp_path, PASSING)))
    assert code == 0 and "PASSED tmp" in out and "turn_start round 1" in out
    code, out, _ = cli(capsys, "show", str(tmp_scenario(tmp_path, FAILING)))
    assert code == 1 and "FAILED" in out and "expect.final_text" in out


def test_show_cassette(capsys) -> None:
    cassette = ROOT / "scenarios" / "cassettes" / "openai_chat_weather.yaml"
    code, out, _ = cli(capsys, "show", str(cassette))
    assert code == 0
    assert "2 interaction(s)" in out
    assert "#0 POST http://127.0.0.1:" in out and "/v1/chat/completions" in out
    assert "tools: get_weather" in out
    assert """streamed text/arguments: 'Let me check.[call get_weather]{"city": "Paris"}'""" in out
    assert "history (3): user, assistant, tool" in out


def test_show_missing_file(tmp_path: Path, capsys) -> None:
    code, _, err = cli(capsys, "show", str(tmp_path / "x.json"))
    assert code == 2 and "no such file" in err


def test_validate(suite: Path, capsys) -> None:
    code, out, _ = cli(capsys, "validate", str(suite))
    assert code == 0 and "3 scenario file(s) valid" in out
    (suite / "scenario_delta.yaml").write_text(INVALID)
    code, out, _ = cli(capsys, "validate", str(suite))
    assert code == 1
    assert f"{suite / 'scenario_delta.yaml'}:4:23: expect.termination" in out
    assert "1 of 4 scenario file(s) invalid" in out


def test_schema_prints_the_json_schema(capsys) -> None:
    code, out, _ = cli(capsys, "schema")
    assert code == 0
    assert json.loads(out) == scenario_json_schema()


def test_record_refuses_without_api_keys(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    path = tmp_scenario(tmp_path, PASSING)
    code, _, err = cli(capsys, "record", str(path), "--out", str(tmp_path / "c.yaml"))
    assert code == 2
    assert "needs a real API key: set OPENAI_API_KEY in the environment" in err
    code, _, err = cli(capsys, "record", str(path), "--out", "c.yaml", "--api", "anthropic")
    assert code == 2 and "ANTHROPIC_API_KEY" in err
    code, _, err = cli(capsys, "record", str(path), "--out", "c.yaml", "--api", "openai")
    assert code == 2 and "unknown API 'openai'; use one of openai_chat, " in err
    assert not (tmp_path / "c.yaml").exists()


def test_record_offers_every_recordable_api(tmp_path: Path, capsys, monkeypatch) -> None:
    code, out, _ = cli(capsys, "record", "--help")
    assert code == 0 and "gemini" in out and "bedrock" in out
    for var in ("GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    path = tmp_scenario(tmp_path, PASSING)
    code, _, err = cli(capsys, "record", str(path), "--out", "c.yaml", "--api", "gemini")
    assert code == 2 and "set GEMINI_API_KEY in the environment" in err


@pytest.mark.parametrize("api", ["gemini", "bedrock"])
def test_record_gemini_and_bedrock_against_the_emulator(
    api: str, tmp_path: Path, capsys, monkeypatch
) -> None:
    from openprogram_testing.emulator import ProviderEmulator
    from openprogram_testing.transport.scripted import call, turn

    source = tmp_path / "scenario_src.yaml"
    source.write_text(PASSING)
    out = tmp_path / "recorded.yaml"
    with ProviderEmulator([turn(call("t", {})), turn("done")]) as emulator:
        if api == "gemini":
            monkeypatch.setenv("GEMINI_API_KEY", "AIzaSyLiveTest0123456789abcdefghijklm")
            monkeypatch.setenv("GEMINI_BASE_URL", emulator.base_url)
        else:
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIALIVETEST01234567")
            monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "live-secret-0123456789abcdef")
            monkeypatch.setenv("AWS_REGION", "us-east-1")
            monkeypatch.setenv("BEDROCK_BASE_URL", emulator.base_url)
        code, stdout, err = cli(capsys, "record", str(source), "--out", str(out), "--api", api)
        emulator.assert_complete()
    assert code == 0, stdout + err
    assert "(2 model call(s), termination completed)" in stdout
    text = out.read_text()
    assert "AIzaSyLiveTest" not in text and "live-secret" not in text


def _cassette_scenario(tmp_path: Path, faults: str) -> Path:
    """A cassette scenario beside a two-interaction chat recording made against the emulator."""
    import httpx

    from openprogram_testing.cassettes import use_cassette
    from openprogram_testing.emulator import ProviderEmulator

    with ProviderEmulator(["first", "second"]) as emu:
        with use_cassette(tmp_path / "chat.yaml", record_mode="once"):
            for _ in range(2):
                httpx.post(
                    emu.openai_base_url + "/chat/completions",
                    json={"model": "m", "messages": [{"role": "user", "content": "hi"}]},
                )
    source = tmp_path / "scenario_faulty.yaml"
    source.write_text(
        "prompt: hi\ncassette:\n  path: chat.yaml\n  api: openai_chat\n  faults:\n" + faults
    )
    return source


def test_emulator_serves_a_cassette_scenario_with_its_faults(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """`emulator --scenario` on a cassette scenario serves the recording with the scenario's
    faults: interaction 0 replaced by a 429 with retry-after, interaction 1 as recorded."""
    import threading

    import openai

    from openprogram_testing.frontends.cli import emulator as emulator_module

    source = _cassette_scenario(
        tmp_path, '    - {http_error: 429, headers: {retry-after: "7"}, interaction: 0}\n'
    )
    real_serve = emulator_module.serve
    seen: list[Any] = []

    def serve_then_stop(*args: Any, **kwargs: Any) -> Any:
        stop = threading.Event()

        def ready(emu: Any) -> None:
            client = openai.OpenAI(base_url=emu.openai_base_url, api_key="t", max_retries=0)
            messages = [{"role": "user", "content": "hi"}]
            with pytest.raises(openai.RateLimitError) as err:
                client.chat.completions.create(model="m", messages=messages)
            seen.append(err.value.response.headers["retry-after"])
            seen.append(client.chat.completions.create(model="m", messages=messages))
            stop.set()

        return real_serve(*args, **{**kwargs, "on_ready": ready, "stop_event": stop})

    monkeypatch.setattr(emulator_module, "serve", serve_then_stop)
    code, out, err = cli(capsys, "emulator", "--scenario", str(source))
    assert code == 0, err
    assert seen[0] == "7" and seen[1].choices[0].message.content == "second"
    assert "served 2 request(s)" in out


def test_emulator_refuses_faults_it_cannot_serve(tmp_path: Path, capsys) -> None:
    source = _cassette_scenario(tmp_path, "    - {rechunk: [1]}\n")
    code, _, err = cli(capsys, "emulator", "--scenario", str(source))
    assert code == 2 and "Rechunk shapes recorded bodies" in err
    (tmp_path / "beyond").mkdir()
    beyond = _cassette_scenario(tmp_path / "beyond", "    - {truncate_after: 1, interaction: 5}\n")
    code, _, err = cli(capsys, "emulator", "--scenario", str(beyond))
    assert code == 1 and "interaction 5 does not exist" in err  # refused when loading


def test_usage_errors(capsys) -> None:
    assert main(["run", "--bogus"]) == 2
    assert main([]) == 2
    capsys.readouterr()


def test_console_script_exit_codes_without_traceback(suite: Path) -> None:
    exe = Path(sys.executable).with_name("openprogram-testing")
    done = subprocess.run(
        [str(exe), "run", str(suite / "scenario_gamma.yaml")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    assert "0 passed, 1 failed" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_record_then_replay_round_trip_against_the_emulator(
    tmp_path: Path, capsys, monkeypatch
) -> None:
    """`record` with keys from the environment (the base URL pointed at the loopback emulator),
    then a scenario replaying the new cassette through the real adapter."""
    from openprogram_testing.emulator import ProviderEmulator
    from openprogram_testing.transport.scripted import call, turn

    source = tmp_path / "scenario_src.yaml"
    source.write_text(PASSING)
    out = tmp_path / "recorded.yaml"
    with ProviderEmulator([turn(call("t", {})), turn("done")]) as emulator:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-live-test-0123456789abcdef")
        monkeypatch.setenv("OPENAI_BASE_URL", emulator.openai_base_url)
        code, stdout, _ = cli(capsys, "record", str(source), "--out", str(out), "--model", "m")
        emulator.assert_complete()
    assert code == 0
    assert f"cassette written to {out} (2 model call(s), termination completed)" in stdout
    assert "sk-live-test-0123456789abcdef" not in out.read_text()
    replay = tmp_path / "scenario_replay.yaml"
    replay.write_text(
        PASSING.replace("script:\n  - calls: [{name: t}]\n  - done\n", "")
        + f"cassette: {{path: {out.name}, api: openai_chat}}\n"
    )
    monkeypatch.delenv("OPENAI_BASE_URL")
    code, stdout, _ = cli(capsys, "run", str(replay))
    assert code == 0, stdout
    assert "1 passed" in stdout


def test_emulator_command_serves_until_interrupted(tmp_path: Path) -> None:
    """`openprogram-testing emulator --scenario FILE` serves the scenario's script on loopback
    and stops cleanly on Ctrl-C."""
    import re
    import signal
    import urllib.request

    source = tmp_path / "scenario_emu.yaml"
    source.write_text("prompt: hi\nscript: [served from the scenario]\n")
    exe = Path(sys.executable).with_name("openprogram-testing")
    proc = subprocess.Popen(
        [str(exe), "emulator", "--scenario", str(source), "--no-echo"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert match, line + proc.stderr.read() if proc.stderr else line
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
        request = urllib.request.Request(
            match.group(1) + "/v1/chat/completions",
            data=body.encode(),
            headers={"content-type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
        assert reply["choices"][0]["message"]["content"] == "served from the scenario"
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "served 1 request(s)" in out
    assert "Traceback" not in out + err


def test_show_and_validate_bad_inputs(tmp_path: Path, capsys) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text("a: [1,\n")
    code, _, err = cli(capsys, "show", str(broken))
    assert code == 2 and f"{broken}: not valid YAML" in err
    bad_cassette = tmp_path / "bad_cassette.yaml"
    bad_cassette.write_text("interactions:\n  - {request: {}}\n")
    code, _, err = cli(capsys, "show", str(bad_cassette))
    assert code == 2 and "interaction 0 lacks request/response" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = cli(capsys, "validate", str(empty))
    assert code == 2 and f"no scenario files found in {empty}" in err


def test_show_renders_every_real_world_cassette(conformance_cassettes: Path, capsys) -> None:
    """Recordings made by other projects (gzip, !!binary, JSON errors on streams) render too."""
    files = sorted(conformance_cassettes.rglob("*.yaml"))
    assert files
    for f in files:
        code, out, err = cli(capsys, "show", str(f))
        assert code == 0, f"{f}: {err}"
        assert "interaction(s)" in out and "← " in out
