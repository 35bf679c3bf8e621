"""A recorded run becomes a test: a YAML scenario that replays a cassette and expects what the
recorded run did.

``scaffold_cassette`` reads the recording's requests (through the wire formats' request
parsers): the prompt and system prompt of the first request, the tools it offered, and the
tool results the recorded agent sent back, which become the stub tools' answers.  It replays
the recording through the real adapter with those stubs, then writes the expectations from
that replay: the trajectory (strict, exact arguments), termination, model calls, final text
(or error text) and the usage as budgets.  The text is validated and run again, as the file
it will be, before it is written (once, atomically), so what is written validates and passes
as written; the user loosens it from there
(``trajectory.mode``, ``trajectory.args``).

Body matching is relaxed (``match_body: false``): the stubs answer with the recorded results,
but a request the adapter builds need not equal the recorded one byte for byte (another SDK
made the recording), so interactions are matched by method and URL, in order.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..cassettes.files import recorded_body_text
from ..matchers import as_written

HEADER = (
    "# Scaffolded by `openprogram-testing scaffold` from {source}.\n"
    "# The expectations are what the recorded run did: loosen them where variation is harmless\n"
    "# (expect.trajectory.mode: unordered/subset/superset; expect.trajectory.args: subset or\n"
    "# ignore).\n"
    "# Matching is relaxed (cassette.match_body: false): requests are matched by method and URL,\n"
    "# in order, since the stub tools need not rebuild the recorded request bodies exactly.\n"
)


class ScaffoldError(ValueError):
    """The recording cannot become a scenario (unreadable, not a known API, no prompt), or the
    scenario made from it does not pass as written; the message says which."""


@dataclass(slots=True)
class _Recorded:
    api: str
    requests: list[Any]  # ParsedRequest or None, per interaction
    count: int


def _read(cassette: Path) -> _Recorded:
    from ..cassettes import CassetteError, load_interactions
    from ..wire import route
    from ..wire.base import loads_or_none

    try:
        interactions = load_interactions(cassette)
    except (CassetteError, OSError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise ScaffoldError(f"cannot load the cassette: {exc}") from None
    if not interactions:
        raise ScaffoldError(f"the cassette {cassette.name} has no interactions")
    first = interactions[0].get("request") or {}
    found = route(urlsplit(str(first.get("uri", ""))).path)
    if found is None:
        raise ScaffoldError(
            f"the cassette's first request ({first.get('uri')!r}) is not one of the provider "
            "APIs the harness replays"
        )
    from ..wire import BedrockInvoke

    if isinstance(found.wire, BedrockInvoke):
        raise ScaffoldError(
            "the recording is of Anthropic models through Bedrock InvokeModel, which cassette "
            "scenarios do not replay (they replay Bedrock Converse)"
        )
    api = found.api
    parsed: list[Any] = []
    for interaction in interactions:
        body = loads_or_none(recorded_body_text((interaction.get("request") or {}).get("body")))
        try:
            parsed.append(found.wire.parse(body) if isinstance(body, dict) else None)
        except Exception:  # a body the parser cannot read: that interaction tells us nothing
            parsed.append(None)
    return _Recorded(api, parsed, len(interactions))


def _first_loop(requests: list[Any]) -> int:
    """How many interactions the first recorded loop run made: each follow-up request carries
    the history of the one before, and more of it."""
    n = 1
    while n < len(requests):
        before, now = requests[n - 1], requests[n]
        if before is None or now is None or len(now.messages) <= len(before.messages):
            break
        n += 1
    return n


def draft(recorded: _Recorded, cassette: str, agent: str | None) -> dict[str, Any]:
    """The scenario without expectations: prompts, tools with the recorded results, the
    cassette reference and the cap of the recorded run."""
    from openprogram.types import ToolResultMessage, UserMessage

    first = recorded.requests[0]
    if first is None:
        raise ScaffoldError("the cassette's first request body cannot be read")
    prompts = []
    for m in first.messages:
        if not isinstance(m, UserMessage):
            break
        prompts.append(m.text)
    if not prompts or not any(prompts):
        raise ScaffoldError("the cassette's first request has no user prompt to replay")
    n = _first_loop(recorded.requests)
    results: dict[str, list[dict[str, Any]]] = {}
    seen = len(first.messages)
    for request in recorded.requests[1:n]:
        for m in request.messages[seen:]:
            if isinstance(m, ToolResultMessage):
                outcome: dict[str, Any] = {"returns": m.text}
                if m.is_error:
                    outcome["is_error"] = True
                results.setdefault(m.tool_name, []).append(outcome)
        seen = len(request.messages)
    data: dict[str, Any] = {"description": f"Replays the recording {Path(cassette).name}."}
    if first.system:
        data["system_prompt"] = "\n".join(first.system)
    if len(prompts) == 1:
        data["prompt"] = prompts[0]
    else:
        data["prompts"] = prompts
    data["tools"] = [{"import": agent}] if agent else _stubs(first.tools, results)
    data["cassette"] = {
        "path": cassette,
        "api": recorded.api,
        "match_body": False,
        "allow_unplayed": True,  # until the replay says how many interactions a run takes
    }
    data["options"] = {"max_iterations": n}
    return data


def _stubs(specs: Sequence[Any], results: dict[str, list[dict[str, Any]]]) -> list[Any]:
    tools: list[dict[str, Any]] = []
    for spec in specs:
        tool: dict[str, Any] = {"name": spec.name}
        if spec.description:
            tool["description"] = spec.description
        if spec.parameters:
            tool["parameters"] = _json_schema(spec.parameters)
        outcomes = results.get(spec.name, [])
        if len(outcomes) == 1:
            tool.update(outcomes[0])
        elif outcomes:
            tool["sequence"] = outcomes
        tools.append(tool)
    return tools


GEMINI_TYPES = {"STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY", "OBJECT", "NULL"}
"""Gemini's upper-case schema type names (its OpenAPI subset), JSON Schema's in lower case."""


def _json_schema(value: Any) -> Any:
    """A recorded parameter schema as JSON Schema: Gemini spells ``type`` in upper case."""
    if isinstance(value, dict):
        return {
            k: v.lower() if k == "type" and v in GEMINI_TYPES else _json_schema(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_json_schema(v) for v in value]
    return value


def expectations(trace: Any) -> dict[str, Any]:
    """What the run did, as ``expect``: termination, model calls, final or error text, the
    trajectory (strict, exact arguments; a call whose arguments were not JSON by name) and the
    usage as budgets."""
    from ..usage import UsageError, usage_of

    expect: dict[str, Any] = {"termination": trace.termination, "model_calls": trace.model_calls}
    if trace.final_text:
        expect["final_text"] = trace.final_text
    errors = [m.error_message for m in trace.assistant_messages if m.error_message]
    if errors and not trace.final_text:
        expect["error_text"] = errors[-1][:200]
    calls: list[Any] = [
        c.name if c.raw_arguments is not None else {"name": c.name, "args": as_written(c.arguments)}
        for c in trace.tool_calls
    ]
    expect["trajectory"] = {"mode": "strict", "args": "exact", "calls": calls}
    try:
        used = usage_of(trace)
    except UsageError:
        return expect
    budgets = {
        "max_input_tokens": used.input_tokens,
        "max_output_tokens": used.output_tokens,
        "max_model_calls": used.model_calls,
    }
    if used.input_tokens or used.output_tokens:
        expect["usage"] = budgets
    return expect


def to_yaml(data: dict[str, Any], source: str, header: str = HEADER) -> str:
    """The scenario file's text: ``header`` naming the source (its control characters made
    spaces, so a file name cannot end the comment), then the data."""
    import yaml

    body = yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    return header.format(source=re.sub(r"[\x00-\x1f\x7f\u2028\u2029]", " ", source)) + body


def scaffold_cassette(
    cassette: str | Path,
    out: str | Path,
    *,
    agent: str | None = None,
    root: str | Path | None = None,
) -> Any:
    """Write the scenario of ``cassette`` to ``out`` and return its passing ``ScenarioResult``.
    ``agent`` (``module:attr``) offers the user's real tools instead of stubs; ``root``
    confines the cassette path as for ``load_scenario``.  Raises ``ScaffoldError`` when
    ``out`` may not be written (``scaffold_target``) or the recording cannot become a passing
    scenario; the file is written once, atomically, after the scenario passed as written, so a
    refusal leaves ``out`` as it was."""
    cassette = Path(cassette)
    out = scaffold_target(out, cassette)
    recorded = _read(cassette)
    reference = os.path.relpath(cassette.resolve(), out.parent)
    data = draft(recorded, Path(reference).as_posix(), agent)
    first = run_draft(out, to_yaml(data, str(cassette)), root, check=False)
    data["cassette"]["allow_unplayed"] = first.trace.model_calls < recorded.count
    data["expect"] = expectations(first.trace)
    text = to_yaml(data, str(cassette))
    result = run_draft(out, text, root, check=True)
    write_atomically(out, text)
    return result


def scaffold_target(out: str | Path, source: str | Path, *, force: bool = True) -> Path:
    """Where the scenario of ``source`` may be written: ``out`` resolved, checked before
    anything is read or written.  A ``ScaffoldError`` (a usage error on the command line) for
    a name the system cannot take, a directory, an existing file without ``force``, a link
    that leads out of the project (``paths.writable_target``), and ``source`` itself (the
    recording would be lost)."""
    from ..paths import OutsideProject, writable_target

    out, source = Path(out), Path(source)
    try:
        status = os.lstat(out)
    except FileNotFoundError:
        status = None
    except OSError as exc:  # a name too long, a file where a folder should be, ...
        raise ScaffoldError(f"cannot write {out}: {exc.strerror or exc}") from None
    if os.path.isdir(out):
        raise ScaffoldError(f"{out} is a directory: --out names the scenario file to write")
    try:
        target = writable_target(out, "the scenario file")
    except OutsideProject as exc:
        raise ScaffoldError(str(exc)) from None
    except OSError as exc:
        raise ScaffoldError(f"cannot write {out}: {exc.strerror or exc}") from None
    if status is not None and not force:
        raise ScaffoldError(f"{out} exists; pass --force to overwrite it")
    if target == source.resolve() or (status is not None and _same_file(out, source)):
        raise ScaffoldError(
            f"{out} is the recording the scenario is made from: writing it would destroy it"
        )
    return target


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run_draft(out: Path, text: str, root: Any, check: bool) -> Any:
    """Validate the scenario ``text`` as the file ``out`` (relative paths read from its folder;
    nothing is written) and run it; a file that would not validate, or (with ``check``) a run
    that does not pass, is a ``ScaffoldError``.  Shared by the cassette and the run-record
    scaffolds."""
    from . import ScenarioError, parse_scenario, run_scenario

    try:
        scenario = parse_scenario(text, out, root=root)
    except ScenarioError as exc:
        raise ScaffoldError(f"the scaffolded scenario does not validate:\n{exc}") from None
    result = run_scenario(scenario)
    if result.trace is None or (check and not result.passed):
        failures = "\n  - ".join(result.failures)
        raise ScaffoldError(f"the recording does not replay as a scenario:\n  - {failures}")
    return result


def write_atomically(out: Path, text: str) -> None:
    """Write ``text`` to ``out`` all at once: into a temporary file beside it, then renamed over
    it, so a reader (or a crash) sees the old file or the new one, never a part.  Folders made
    for it are removed again when the write fails."""
    import tempfile

    made: list[Path] = []
    folder = out.parent
    while not folder.exists():
        made.append(folder)
        folder = folder.parent
    temporary: str | None = None
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=out.parent, prefix=".scaffold-", suffix=".tmp", delete=False
        ) as handle:
            temporary = handle.name
            handle.write(text)
        os.replace(temporary, out)
    except BaseException as exc:
        if temporary is not None:
            Path(temporary).unlink(missing_ok=True)
        for folder in made:  # deepest first; only what this write made, and only if empty
            try:
                folder.rmdir()
            except OSError:
                break
        if isinstance(exc, OSError):
            raise ScaffoldError(f"cannot write {out}: {exc.strerror or exc}") from None
        raise


__all__ = [
    "HEADER",
    "ScaffoldError",
    "draft",
    "expectations",
    "run_draft",
    "scaffold_cassette",
    "scaffold_target",
    "to_yaml",
    "write_atomically",
]
