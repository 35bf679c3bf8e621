"""Replaying a cassette scenario: the real adapter for a wire API, and the faults as mutations.

``replay_provider`` is the one place that turns a ``WireAPI`` name into a provider aimed at a
recorded host; an API whose adapter this ``openprogram`` does not ship yet is reported by
``adapter_problem`` when the scenario is validated, not when it runs.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from openprogram.providers.apis import PROVIDER_APIS
from openprogram.providers.wire import WireAPI
from openprogram_testing.transport.cassettes.files import load_interactions

from .fault_defs import FaultDef

ADAPTERS: dict[str, tuple[str, str]] = {a.name: (a.module_path, a.adapter) for a in PROVIDER_APIS}
"""Where each API's adapter lives (module, class), read from the table of provider APIs."""

ENDPOINTS: dict[str, str] = {a.name: a.endpoint for a in PROVIDER_APIS if a.endpoint is not None}
"""The request path each API appends to its base URL (APIs with per-model paths are absent)."""


def adapter_class(api: WireAPI) -> Any:
    """The adapter class for ``api``, or ``None`` when this ``openprogram`` has none."""
    module_name, class_name = ADAPTERS[api]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name:
            return None
        raise
    return getattr(module, class_name, None)


def adapter_problem(api: WireAPI) -> str | None:
    """Why cassettes of ``api`` cannot be replayed yet (``None``: they can)."""
    if adapter_class(api) is None:
        return f"this openprogram has no {api} adapter yet: its cassettes cannot be replayed"
    return None


def _base_url(api: WireAPI, uri: str, path: Path) -> str:
    base = uri.split("?", 1)[0]
    endpoint = ENDPOINTS.get(api)
    if endpoint is None:  # per-model request paths: the adapter is given the origin
        scheme, _, rest = base.partition("://")
        return f"{scheme}://{rest.split('/', 1)[0]}"
    if not base.endswith(endpoint):
        raise ValueError(
            f"cassette {path} was recorded against {uri}, not the {api} endpoint ({endpoint})"
        )
    return base[: -len(endpoint)]


def replay_provider(api: WireAPI, base_url: str, uri: str = "") -> Any:
    """The real ``api`` adapter pointed at ``base_url`` with placeholder credentials (replay
    only: nothing leaves the process)."""
    cls = adapter_class(api)
    if cls is None:
        raise ValueError(adapter_problem(api))
    if api == "bedrock":
        region = re.search(r"bedrock-runtime[.-]([a-z0-9-]+)\.", base_url)
        return cls(
            region_name=region.group(1) if region else "us-east-1",
            base_url=base_url,
            aws_access_key_id="AKIAREPLAY",
            aws_secret_access_key="replay",
        )
    if api == "gemini":
        version = re.search(r"/(v[0-9][a-z0-9]*)/models/", uri)
        options = {"api_version": version.group(1)} if version else {}
        return cls(api_key="replay", base_url=base_url, http_options=options)
    key = "sk-ant-replay" if api == "anthropic" else "sk-replay"
    return cls(api_key=key, base_url=base_url)


_MODEL_IN_PATH = {
    "gemini": re.compile(r"/models/([^/:?]+)"),
    "bedrock": re.compile(r"/model/([^/?]+)/"),
}
"""APIs that name the model in the request path rather than the body."""


def cassette_adapter(api: WireAPI, path: Path, default_model: str) -> tuple[Any, str, int]:
    """The adapter aimed at the host the cassette was recorded against (so replay matches), the
    model named in the first recorded request, and the number of interactions."""

    interactions = load_interactions(path)
    if not interactions:
        raise ValueError(f"cassette {path} has no interactions")
    request = interactions[0]["request"]
    uri = str(request["uri"])
    base_url = _base_url(api, uri, path)
    model = default_model
    body = request.get("body")
    if isinstance(body, dict):
        body = body.get("string")
    if isinstance(body, bytes):
        body = body.decode("utf-8", "replace")
    in_path = _MODEL_IN_PATH.get(api)
    found = in_path.search(uri) if in_path is not None else None
    if found is not None:
        model = unquote(found.group(1))
    else:
        try:
            model = json.loads(body).get("model") or default_model
        except (TypeError, ValueError, AttributeError):
            pass
    return replay_provider(api, base_url, uri), model, len(interactions)


def build_mutation(m: FaultDef) -> Any:
    """The ``faults`` mutation one ``cassette.faults`` entry describes."""
    return m.build()


def mutations_for(faults: list[FaultDef], count: int) -> Any:
    """Global mutations as a list; with any interaction-addressed one, a dict per interaction
    (every interaction gets the global ones, then its own)."""
    shared = [build_mutation(m) for m in faults if m.interaction is None]
    if all(m.interaction is None for m in faults):
        return shared
    per: dict[int, list[Any]] = {i: list(shared) for i in range(count)}
    for m in faults:
        if m.interaction is not None:
            if m.interaction >= count:
                raise ValueError(
                    f"a fault addresses interaction {m.interaction}, but the cassette has "
                    f"{count} (0-based)"
                )
            per[m.interaction].append(build_mutation(m))
    return per


__all__ = [
    "ADAPTERS",
    "ENDPOINTS",
    "adapter_class",
    "adapter_problem",
    "build_mutation",
    "cassette_adapter",
    "mutations_for",
    "replay_provider",
]
