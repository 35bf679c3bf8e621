"""Each fault has one name since 0.2.0 (constructor, class and YAML key): every 0.1 spelling still
builds the same fault until 0.3 and warns naming the new one, and the new spellings never warn
(CHANGELOG.md, Deprecated)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

import openprogram_testing
import openprogram_testing.scenarios
from openprogram.providers.wire import WireAPI
from openprogram_testing import Fault, ProviderEmulator
from openprogram_testing.frontends.scenarios.fault_defs import FaultDef
from openprogram_testing.transport import faults
from openprogram_testing.transport.faults import (
    FAULT_KINDS,
    CrcMismatch,
    DropTerminal,
    HttpError,
    MalformedFrame,
    TruncateAfter,
)

ROOT = Path(__file__).resolve().parents[2]


# -- Fault.* constructors -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new", "built"),
    [
        (lambda: Fault.status(429, headers={"retry-after": "1"}), r"Fault\.http_error",
         HttpError(429, {"retry-after": "1"})),
        (lambda: Fault.disconnect_after(3), r"Fault\.truncate_after\(n, disconnect=True\)",
         TruncateAfter(3, disconnect=True)),
        (lambda: Fault.no_terminal(), r"Fault\.drop_terminal\(\)", DropTerminal()),
    ],
    ids=["status", "disconnect_after", "no_terminal"],
)  # fmt: skip
def test_an_old_constructor_builds_the_same_fault_and_warns_naming_the_new(
    old: object, new: str, built: object
) -> None:
    with pytest.warns(DeprecationWarning, match=rf"write {new}.*goes in 0\.3") as record:
        assert old() == built  # type: ignore[operator]
    assert record[0].filename == __file__  # it points at the caller's line


def test_the_old_status_constructor_still_checks_its_code() -> None:
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="400-599"):
        Fault.status(200)


def test_an_old_constructor_still_drives_the_emulator() -> None:
    import httpx

    with pytest.warns(DeprecationWarning, match="http_error"):
        fault = Fault.status(503)
    with ProviderEmulator() as emulator:
        emulator.add(fault, "ok")
        answer = httpx.post(f"{emulator.openai_base_url}/chat/completions", json={"model": "m"})
    assert answer.status_code == 503


# -- class names ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("old", "new"),
    [("CorruptFrame", MalformedFrame), ("CorruptCrc", CrcMismatch)],
)
def test_an_old_class_name_is_the_new_class_and_warns(old: str, new: type) -> None:
    with pytest.warns(DeprecationWarning, match=rf"{old} is {new.__name__}") as record:
        assert getattr(faults, old) is new
    assert record[0].filename == __file__
    with pytest.warns(DeprecationWarning, match=rf"write {new.__name__}") as record:
        assert getattr(openprogram_testing, old) is new  # through the front door
    assert record[0].filename == __file__  # past the front door's lazy loader
    with pytest.warns(DeprecationWarning):  # every read warns: the front door does not cache it
        assert getattr(openprogram_testing, old) is new
    assert old not in openprogram_testing.__all__


def test_an_old_class_name_imports_and_still_bites() -> None:
    from openprogram_testing.transport.faults import MutableResponse, apply_mutations

    with pytest.warns(DeprecationWarning, match="MalformedFrame"):
        from openprogram_testing.transport.faults import CorruptFrame  # type: ignore[attr-defined]
    body = 'data: {"a": 1}\n\ndata: {"b": 2}\n\n'
    response = MutableResponse(200, "OK", {"content-type": ["text/event-stream"]}, body)
    assert apply_mutations(response, [CorruptFrame(1)]).text != body
    assert type(CorruptFrame(1)) is MalformedFrame


def test_api_is_wire_api_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"Api is WireAPI"):
        assert faults.Api is WireAPI  # type: ignore[attr-defined]
    assert "Api" not in faults.__all__


def test_an_unknown_name_is_still_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchFault"):
        _ = faults.NoSuchFault  # type: ignore[attr-defined]
    with pytest.raises(AttributeError):
        _ = openprogram_testing.NoSuchFault  # type: ignore[attr-defined]


def test_the_yaml_model_class_mutation_is_fault_def_and_warns() -> None:
    with pytest.warns(DeprecationWarning, match=r"scenarios\.Mutation is scenarios\.FaultDef"):
        assert openprogram_testing.scenarios.Mutation is FaultDef  # type: ignore[attr-defined]
    assert "Mutation" not in openprogram_testing.scenarios.__all__


# -- YAML keys ------------------------------------------------------------------------------

_SCENARIO = ROOT / "scenarios" / "scenario_48_fault_corrupt_frame.yaml"


def _scenario(tmp_path: Path, fault: str) -> Path:
    """The bundled malformed-frame scenario with its fault spelled ``fault``, beside a copy of
    its cassette."""
    (tmp_path / "cassettes").mkdir(parents=True)
    cassette = ROOT / "scenarios" / "cassettes" / "openai_chat_text.yaml"
    (tmp_path / "cassettes" / cassette.name).write_bytes(cassette.read_bytes())
    (tmp_path / "pyproject.toml").write_text("")
    path = tmp_path / "scenario_old_key.yaml"
    text = _SCENARIO.read_text()
    assert "    - malformed_frame: 1\n" in text
    path.write_text(text.replace("    - malformed_frame: 1\n", f"    - {fault}: 1\n"))
    return path


def test_an_old_yaml_key_loads_as_the_new_and_warns_naming_file_and_line(
    tmp_path: Path,
) -> None:
    from openprogram_testing.scenarios import load_scenario

    path = _scenario(tmp_path, "corrupt_frame")
    with pytest.warns(DeprecationWarning) as record:
        scenario = load_scenario(path)
    [warning] = [w for w in record if "corrupt_frame" in str(w.message)]
    assert f"{path}:12: the fault key corrupt_frame: is malformed_frame:" in str(warning.message)
    assert scenario.cassette is not None
    [fault] = scenario.cassette.faults
    assert fault.malformed_frame == 1 and fault.build() == MalformedFrame(1)


def test_an_old_yaml_key_runs_as_the_new_one(tmp_path: Path) -> None:
    from openprogram_testing.scenarios import load_scenario, run_scenario

    with pytest.warns(DeprecationWarning):
        old = run_scenario(load_scenario(_scenario(tmp_path / "old", "corrupt_frame")))
    new = run_scenario(load_scenario(_scenario(tmp_path / "new", "malformed_frame")))
    assert old.passed and new.passed
    assert old.trace.termination == new.trace.termination == "error"
    assert old.trace.error == new.trace.error


def test_an_old_yaml_key_validated_in_code_warns(tmp_path: Path) -> None:
    with pytest.warns(DeprecationWarning, match="corrupt_frame: is malformed_frame:"):
        assert FaultDef.model_validate({"corrupt_frame": 2}).malformed_frame == 2


def test_old_and_new_key_together_are_refused_saying_which_to_keep() -> None:
    with pytest.raises(ValueError, match=r"'corrupt_frame' is the 0\.1 name of 'malformed_frame'"):
        FaultDef.model_validate({"corrupt_frame": 2, "malformed_frame": 2})


# -- the new spellings never warn --------------------------------------------------------------


def test_the_new_spellings_never_warn(tmp_path: Path) -> None:
    from openprogram_testing.scenarios import load_scenario

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in FAULT_KINDS:
            assert callable(getattr(Fault, name))
        Fault.http_error(429)
        Fault.truncate_after(3, disconnect=True)
        Fault.drop_terminal()
        assert openprogram_testing.MalformedFrame is MalformedFrame
        assert openprogram_testing.CrcMismatch is CrcMismatch
        assert openprogram_testing.scenarios.FaultDef is FaultDef
        load_scenario(_scenario(tmp_path, "malformed_frame"))
        for name in openprogram_testing.__all__:
            getattr(openprogram_testing, name)
