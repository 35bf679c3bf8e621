"""A cassette scenario's ``options.model`` is compared with the recording's: a scenario that names
another model fails, as any other change of the request does, on every bundled cassette
scenario and every API (the body's ``model``, or the request path for Gemini and Bedrock);
``ignore_paths: [$.model]`` and ``match_body: false`` are the usual opt-outs where the model is
in the body; unset, the replay sends the recording's model."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from yaml import safe_load

from openprogram_testing.frontends.scenarios.replay import cassette_adapter
from openprogram_testing.scenarios import load_scenario, run_scenario

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = sorted(
    p
    for p in (ROOT / "scenarios").glob("scenario_*.yaml")
    if "cassette" in (safe_load(p.read_text(encoding="utf-8")) or {})
)


def _copy(tmp_path: Path, source: Path, options: dict[str, object], **cassette: object) -> Path:
    """The bundled scenario beside a copy of its cassette, with ``options`` and ``cassette``
    keys merged in (written back as YAML)."""
    import yaml

    data = safe_load(source.read_text(encoding="utf-8"))
    recording = (source.parent / data["cassette"]["path"]).resolve()
    (tmp_path / "cassettes").mkdir(exist_ok=True)
    shutil.copy(recording, tmp_path / "cassettes" / recording.name)
    data["cassette"]["path"] = f"cassettes/{recording.name}"
    data.setdefault("options", {}).update(options)
    data["cassette"].update(cassette)
    data.get("expect", {}).pop("snapshot", None)
    path = tmp_path / source.name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def test_every_bundled_cassette_scenario_is_found() -> None:
    assert len(BUNDLED) >= 17


@pytest.mark.parametrize("source", BUNDLED, ids=lambda p: p.stem)
def test_another_model_fails_every_cassette_scenario(tmp_path: Path, source: Path) -> None:
    path = _copy(tmp_path, source, {"model": "zz-other-model"})
    result = run_scenario(load_scenario(path))
    assert not result.passed
    assert "zz-other-model" in result.failure_text, result.failure_text


@pytest.mark.parametrize(
    "source", [p for p in BUNDLED if "scenario_40_" in p.name or "scenario_52_" in p.name]
)
def test_the_recorded_model_named_passes(tmp_path: Path, source: Path) -> None:
    scenario = load_scenario(source)
    assert scenario.cassette is not None
    _, recorded, _ = cassette_adapter(
        scenario.cassette.api, source.parent / scenario.cassette.path, "unused"
    )
    path = _copy(tmp_path, source, {"model": recorded})
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text


@pytest.mark.parametrize(
    "opt_out", [{"ignore_paths": ["$.model"]}, {"match_body": False}], ids=["ignore", "no_body"]
)
def test_the_usual_opt_outs_accept_another_model_in_the_body(
    tmp_path: Path, opt_out: dict[str, object]
) -> None:
    source = ROOT / "scenarios" / "scenario_40_cassette_openai_chat_weather.yaml"
    path = _copy(tmp_path, source, {"model": "zz-other-model"}, **opt_out)
    result = run_scenario(load_scenario(path))
    assert result.passed, result.failure_text
