"""A framework's agent against the ``openprogram-testing emulator`` command, as a user runs it
outside pytest: ``--reply TEXT --no-echo`` answers its script and nothing past it, and
``--scenario FILE`` serves a recording with the scenario's faults (a 429 the client retries)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing import ProviderEmulator, use_cassette
from tests.frameworks._frameworks import need, tool_round

pydantic_ai = need("pydantic_ai")
openai = need("openai")
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402


def _agent(openai_base_url: str, max_retries: int = 0) -> tuple[Any, list[tuple[int, int]]]:
    client = openai.AsyncOpenAI(base_url=openai_base_url, api_key="t", max_retries=max_retries)
    agent = pydantic_ai.Agent(OpenAIChatModel("m", provider=OpenAIProvider(openai_client=client)))
    ran: list[tuple[int, int]] = []

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    return agent, ran


@contextmanager
def _cli_emulator(*args: str) -> Iterator[str]:
    """The console script serving on a free port; yields its base URL, stops it with Ctrl-C
    and checks it exits cleanly."""
    exe = Path(sys.executable).with_name("openprogram-testing")
    proc = subprocess.Popen(
        [str(exe), "emulator", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        found = re.search(r"listening on (http://127\.0\.0\.1:\d+)", line)
        assert found, line + (proc.stderr.read() if proc.stderr else "")
        yield found.group(1)
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()  # never leave an emulator serving after the test
            out, err = proc.communicate()
            pytest.fail(f"the emulator did not stop within 60 s of Ctrl-C; stderr: {err[-2000:]}")
    assert proc.returncode == 0 and "Traceback" not in out + err, err


def test_reply_without_echo_answers_nothing_past_the_script() -> None:
    with _cli_emulator("--reply", "one", "--no-echo") as base:
        agent, _ = _agent(base + "/v1")
        assert agent.run_sync("hi").output == "one"
        with pytest.raises(pydantic_ai.exceptions.ModelHTTPError, match="unexpected model call"):
            agent.run_sync("more?")


def test_scenario_faults_reach_the_framework(tmp_path: Path) -> None:
    """The scenario turns the recording's first answer into a 429 with ``retry-after``: the
    OpenAI client waits it and gets the next recorded answer (the emulator serves a recording
    in order, whatever is asked); past the recording, nothing."""
    with ProviderEmulator(tool_round()) as emu:
        with use_cassette(tmp_path / "round.yaml", record_mode="once"):
            agent, _ = _agent(emu.openai_base_url)
            assert agent.run_sync("add 2+3").output == "The sum is 5."
    scenario = tmp_path / "scenario_retry.yaml"
    scenario.write_text(
        "prompt: add 2+3\ncassette:\n  path: round.yaml\n  api: openai_chat\n  faults:\n"
        '    - {http_error: 429, headers: {retry-after: "0.3"}, interaction: 0}\n'
    )
    with _cli_emulator("--scenario", str(scenario), "--no-echo") as base:
        agent, ran = _agent(base + "/v1", max_retries=1)
        started = time.monotonic()
        assert agent.run_sync("add 2+3").output == "The sum is 5." and ran == []
        assert time.monotonic() - started >= 0.3  # the retry-after was waited
        with pytest.raises(pydantic_ai.exceptions.ModelHTTPError, match="unexpected model call"):
            agent.run_sync("again")
