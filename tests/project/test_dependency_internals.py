"""Every private part of a dependency the project still uses (docs/decisions.md, "Dependencies'
private parts") is where the code expects it.  Each check fails loudly, naming the package, its
installed version and the part, the day a release moves it: a protection must never stop
working without a sound."""

from __future__ import annotations

import inspect
import socket
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pytest

DECISIONS = Path(__file__).resolve().parents[2] / "docs" / "decisions.md"


def moved(package: str, part: str) -> str:
    return (
        f"{package} {version(package)}: {part} is not where openprogram expects it; see "
        'docs/decisions.md, "Dependencies\' private parts", for what relies on it and the '
        "public alternative"
    )


def test_the_decisions_list_every_part_checked_here() -> None:
    section = DECISIONS.read_text(encoding="utf-8").split("## Dependencies' private parts", 1)
    assert len(section) == 2, 'docs/decisions.md has no "Dependencies\' private parts" section'
    listed = section[1].split("\n## ", 1)[0]
    for part in PARTS:
        assert f"`{part}`" in listed, f"{part} is checked here but not listed in decisions.md"


PARTS = [
    "_pytest.runner.runtestprotocol",
    "Function._initrequest",
    "Function._fixtureinfo",
    "Session._fixturemanager",
    "_pytest.fixtures.TopRequest",
    "TopRequest._fillfixtures",
    "Config._syrupy",
    "syrupy.location.PyTestLocation",
    "Client._api_client._http_options.base_url",
    "EventStream._raw_stream",
    "vcr_internals.REQUIRED",
    "mcp.client._memory.InMemoryTransport",
]


# -- pytest -------------------------------------------------------------------------------


def test_pytest_runs_a_test_again_as_op_repeat_does(request: pytest.FixtureRequest) -> None:
    """``@op_repeat``: pytest's own run protocol per repetition, fresh fixtures between runs."""
    try:
        from _pytest.runner import runtestprotocol
    except ImportError:
        pytest.fail(moved("pytest", "_pytest.runner.runtestprotocol"))
    params = tuple(inspect.signature(runtestprotocol).parameters)
    assert params == ("item", "log", "nextitem"), moved("pytest", "runtestprotocol's parameters")
    assert callable(getattr(request.node, "_initrequest", None)), moved(
        "pytest", "Function._initrequest"
    )


def test_pytest_fixture_plumbing_scenario_items_use(request: pytest.FixtureRequest) -> None:
    """Scenario items get fixtures as test functions do; async tests read their arguments."""
    node: Any = request.node
    assert "request" in getattr(getattr(node, "_fixtureinfo", None), "argnames", ()), moved(
        "pytest", "Function._fixtureinfo.argnames"
    )
    manager = getattr(node.session, "_fixturemanager", None)
    assert manager is not None, moved("pytest", "Session._fixturemanager")
    params = tuple(inspect.signature(manager.getfixtureinfo).parameters)
    assert params[:3] == ("node", "func", "cls"), moved("pytest", "getfixtureinfo's parameters")
    try:
        from _pytest.fixtures import TopRequest
    except ImportError:
        pytest.fail(moved("pytest", "_pytest.fixtures.TopRequest"))
    assert "_ispytest" in inspect.signature(TopRequest).parameters, moved(
        "pytest", "TopRequest(node, _ispytest=True)"
    )
    assert callable(getattr(TopRequest, "_fillfixtures", None)), moved(
        "pytest", "TopRequest._fillfixtures"
    )


def test_syrupy_session_and_location(request: pytest.FixtureRequest, tmp_path: Path) -> None:
    """Scenario snapshots: syrupy's session on the config, and its location built from an item
    that stands for the scenario file."""
    assert getattr(request.config, "_syrupy", None) is not None, moved("syrupy", "Config._syrupy")
    from syrupy.location import PyTestLocation

    from openprogram_testing.frontends.scenarios.snapshots import _Site

    path = tmp_path / "refund.yaml"
    try:
        site = PyTestLocation(_Site(path, "refund"))  # type: ignore[arg-type]
        read = (site.filepath, site.basename, site.snapshot_name)
    except (AttributeError, TypeError):
        pytest.fail(moved("syrupy", "syrupy.location.PyTestLocation"))
    assert read == (str(path), "refund", "refund"), moved(
        "syrupy", "syrupy.location.PyTestLocation"
    )


# -- SDKs -----------------------------------------------------------------------------------


def test_google_genai_client_base_url() -> None:
    """The guard needs a given Gemini client's base URL before a request is made."""
    pytest.importorskip("google.genai")
    from google import genai

    from openprogram.providers import GeminiProvider

    client = genai.Client(api_key="k", http_options={"base_url": "http://127.0.0.1:9/"}).aio
    try:
        found = client._api_client._http_options.base_url
    except AttributeError:
        pytest.fail(moved("google-genai", "Client._api_client._http_options.base_url"))
    assert found == "http://127.0.0.1:9/"
    assert GeminiProvider(client).base_url == "http://127.0.0.1:9/"


def test_mcp_in_memory_transport() -> None:
    """MCP cassettes and faults reach an in-process server's JSON-RPC messages through it."""
    pytest.importorskip("mcp")
    try:
        from mcp.client._memory import InMemoryTransport
    except ImportError:
        pytest.fail(moved("mcp", "mcp.client._memory.InMemoryTransport"))
    parameters = list(inspect.signature(InMemoryTransport).parameters)
    assert parameters[:1] == ["server"], moved("mcp", "InMemoryTransport(server)")
    assert hasattr(InMemoryTransport, "__aenter__"), moved(
        "mcp", "InMemoryTransport as a transport"
    )


@pytest.fixture
def bedrock_stream() -> Iterator[Any]:
    """A converse-stream response from botocore over a real loopback socket."""
    pytest.importorskip("boto3")
    import boto3

    from tests.providers._loopback import LoopbackServer, http_head

    head = http_head(200, {"Content-Type": "application/vnd.amazon.eventstream"})
    with LoopbackServer(lambda _r: [head]) as server:
        client = boto3.client(
            "bedrock-runtime",
            region_name="us-east-1",
            endpoint_url=server.url,
            aws_access_key_id="a",
            aws_secret_access_key="b",
        )
        response = client.converse_stream(modelId="m", messages=[])["stream"]
        yield response
        response.close()


def test_botocore_stream_socket(bedrock_stream: Any) -> None:
    """A stalled Bedrock stream is ended by shutting its socket down (closing it would block on
    the reader's lock)."""
    from openprogram.providers.bedrock import _socket_of

    assert isinstance(_socket_of(bedrock_stream), socket.socket), (
        moved("botocore", "EventStream._raw_stream (urllib3 connection or socket file)")
        + f"; urllib3 {version('urllib3')}"
    )


# -- vcrpy -----------------------------------------------------------------------------------


def test_vcrpy_parts() -> None:
    from openprogram_testing.transport.cassettes import vcr_internals

    missing = vcr_internals.missing_internals()
    assert missing == [], moved("vcrpy", f"vcr_internals.REQUIRED ({', '.join(missing)})")
