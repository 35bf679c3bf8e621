"""The vcrpy internals the cassette layer relies on are where it expects them.

Fails the day vcrpy moves or reshapes one of them, before any playback test fails obscurely."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from openprogram_testing.cassettes import CassetteError
from openprogram_testing.transport.cassettes import vcr_internals


def test_every_required_internal_exists_with_the_expected_signature() -> None:
    assert vcr_internals.missing_internals() == []


def test_a_cassette_instance_has_the_state_we_read(tmp_path: Path) -> None:
    from vcr.cassette import Cassette

    cassette = Cassette(str(tmp_path / "x.yaml"))
    for name in vcr_internals.REQUIRED_STATE:
        assert hasattr(cassette, name), name
    assert vcr_internals.loaded_count(cassette) == 0
    assert vcr_internals.play_counts(cassette)[0] == 0


def test_replay_paths_still_go_through_the_hooks_we_override() -> None:
    """httpx playback looks ``_play_responses`` up at call time (so our hook is used), and the
    http.client stub (botocore, requests) asks the cassette's ``play_response`` for its body."""
    from vcr import stubs
    from vcr.stubs import httpx_stubs

    assert "_play_responses(cassette, vcr_request, httpx)" in inspect.getsource(
        httpx_stubs._vcr_request
    )
    getresponse = inspect.getsource(stubs.VCRConnection.getresponse)
    assert "self.cassette.play_response(self._vcr_request)" in getresponse
    assert "VCRHTTPResponse(response" in getresponse
    responses = inspect.getsource(vcr_internals.make_cassette_class(_Hooks()).__mro__[1]._responses)
    assert "self._before_record_request(request)" in responses


class _Hooks:
    loading = False

    def explain_mismatch(self, request: object) -> str:
        return "no"

    def note_mismatch(self, message: str) -> None:
        pass

    def serve(self, index: int, response: dict[str, object], uri: str) -> dict[str, object]:
        return response


def test_a_vcrpy_without_them_is_refused_with_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vcr_internals, "_INSTALLED", False)
    monkeypatch.setattr(
        vcr_internals,
        "REQUIRED",
        (*vcr_internals.REQUIRED, ("vcr.cassette", "Cassette._gone_in_a_future_vcrpy", None)),
    )
    with pytest.raises(CassetteError, match=r"lacks .*Cassette\._gone_in_a_future_vcrpy"):
        vcr_internals.install_playback_hook()
