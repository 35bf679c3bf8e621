"""A replayed cassette is parsed once: the scenario runner's look at its first request and the
session's load through vcrpy read the same file, and the second read is a copy of the first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.scenarios import run_scenario
from openprogram_testing.transport.cassettes import files

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = ROOT / "scenarios" / "scenario_40_cassette_openai_chat_weather.yaml"


def _count_parses(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    parsed: list[Path] = []
    real = files._parse_cassette

    def counting(text: str, path: Path) -> dict[str, Any]:
        parsed.append(path)
        return real(text, path)

    monkeypatch.setattr(files, "_parse_cassette", counting)
    monkeypatch.setattr(files, "_last_parsed", None)
    return parsed


def test_a_scenario_replay_parses_its_cassette_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _count_parses(monkeypatch)
    result = run_scenario(SCENARIO)
    assert result.passed, result.failure_text
    assert len(parsed) == 1, parsed


def test_each_read_gets_its_own_copy(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _count_parses(monkeypatch)
    cassette = ROOT / "scenarios" / "cassettes"
    path = next(p for p in sorted(cassette.rglob("*.yaml")))
    for _ in range(3):  # the parse, then two copies: no caller's edit reaches the next
        got = files.load_interactions(path)
        assert got and got[0]["request"]["uri"] != "changed by a caller"
        got[0]["request"]["uri"] = "changed by a caller"
    assert len(parsed) == 1


def test_a_changed_file_is_parsed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parsed = _count_parses(monkeypatch)
    source = next(p for p in sorted((ROOT / "scenarios" / "cassettes").rglob("*.yaml")))
    path = tmp_path / "c.yaml"
    path.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    files.load_interactions(path)
    path.write_text(source.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    files.load_interactions(path)
    assert len(parsed) == 2
