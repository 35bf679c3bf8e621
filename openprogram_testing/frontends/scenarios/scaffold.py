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

from openprogram.texts import clip
from openprogram.types import ToolResultMessage, UserMessage
from openprogram_testing.base.paths import OutsideProject, writable_target
from openprogram_testing.core.matchers import as_written
from openprogram_testing.judges.usage import UsageError, usage_of
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.files import load_interactions, recorded_body_text
from openprogram_testing.transport.wire import BedrockInvoke, route
from openprogram_testing.transport.wire.base import loads_or_none

from .loader import parse_scenario
from .problems import ScenarioError
from .runner import run_scenario

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


@dataclass(slots=True)
class RecordedRun:
    """One loop run of a recording, read from its requests: the interactions it made (by
    index; a retry of the same request is not another model call), the tools its first request
    offered, and the runs started while it waited for its tools (``children``, nested
    ``Runtime.exec`` runs), in start order."""

    interactions: list[int]
    tools: list[str]
    prompt: str
    children: list[RecordedRun]
    calls: int = 1

    def walk(self, depth: int = 0) -> Any:
        """``(depth, run)`` for this run and every run below it, depth first in start order
        (the order ``TraceTree.walk`` visits a replay)."""
        yield depth, self
        for child in self.children:
            yield from child.walk(depth + 1)


def _history(request: Any) -> list[tuple[str, str, tuple[str, ...]]]:
    """What a request's history says, message by message: role, text and the names of the
    calls an assistant message made (what a continuation of a run must repeat)."""
    out = []
    for m in request.messages:
        calls = tuple(c.name for c in getattr(m, "tool_calls", ()) or ())
        out.append((str(getattr(m, "role", "")), str(getattr(m, "text", "")), calls))
    return out


def recorded_runs(requests: list[Any]) -> RecordedRun | None:
    """The recording's runs as a tree (``None``: a request body cannot be read, so the shape is
    unknown).  A request continues the innermost open run whose history it repeats and extends;
    the same history again is a retry of that run's model call; anything else is a new run,
    nested in the innermost open run (it was started while that run's tools ran), or, when
    none is open, a second outermost run, which ends the reading (it is not part of the first
    run's test)."""
    if not requests or any(r is None for r in requests):
        return None
    histories = [_history(r) for r in requests]

    def start(n: int) -> RecordedRun:
        first = histories[n][0][1] if histories[n] else ""
        return RecordedRun([n], [t.name for t in requests[n].tools], first, [])

    root = start(0)
    stack = [root]
    last = {id(root): histories[0]}
    for n in range(1, len(requests)):
        now = histories[n]
        while stack:
            run = stack[-1]
            before = last[id(run)]
            if now == before:  # the same request again: a retry, not another model call
                run.interactions.append(n)
                break
            if len(now) > len(before) and now[: len(before)] == before:
                run.interactions.append(n)
                run.calls += 1
                last[id(run)] = now
                break
            if _resumes(histories, n, run, last):
                child = start(n)
                run.children.append(child)
                stack.append(child)
                last[id(child)] = now
                break
            stack.pop()
        else:
            return root  # a second outermost run: the recording's first run is complete
    return root


def _resumes(histories: list[Any], n: int, run: RecordedRun, last: dict[int, Any]) -> bool:
    """Whether ``run`` goes on after interaction ``n`` (a later request extends its history):
    then the run starting at ``n`` was nested in it."""
    before = last[id(run)]
    return any(
        len(later) > len(before) and later[: len(before)] == before for later in histories[n + 1 :]
    )


def draft(recorded: _Recorded, cassette: str, agent: str | None) -> dict[str, Any]:
    """The scenario without expectations: prompts, tools with the recorded results, the
    cassette reference and the cap of the recorded run."""

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
    trajectory (strict, exact arguments; a call whose arguments were not JSON by name), which
    tool answered each call and whether it failed (not the text: real tools may word it
    differently each run), and the usage as budgets."""

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
    # which tool answered each call, and whether it failed: a tool the agent stops offering
    # ("Tool X not found") or one that starts failing is a changed run, though the model's
    # replayed calls are the same
    results: list[dict[str, Any]] = []
    for r in trace.tool_results:
        result: dict[str, Any] = {"name": r.tool_name, "is_error": bool(r.is_error)}
        if getattr(r, "skipped", False):
            result["skipped"] = True
        results.append(result)
    expect["tool_results"] = results
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
    tree = recorded_runs(recorded.requests)
    nested = tree is not None and bool(tree.children)
    if nested and agent is None:
        assert tree is not None
        raise ScaffoldError(_nested_without_agent(tree))
    reference = os.path.relpath(cassette.resolve(), out.parent)
    data = draft(recorded, Path(reference).as_posix(), agent)
    if nested:
        assert tree is not None
        data["options"]["max_iterations"] = tree.calls
    first = run_draft(out, to_yaml(data, str(cassette)), root, check=False)
    if agent is not None and tree is not None:  # the user's tools must do what the recording did
        _same_shape(tree, first)
    data["cassette"]["allow_unplayed"] = _played(first) < recorded.count
    data["expect"] = expectations(first.trace)
    runs = _nested_expectations(first)
    if runs:
        data["expect"]["runs"] = runs
    text = to_yaml(data, str(cassette))
    result = run_draft(out, text, root, check=True)
    write_atomically(out, text)
    return result


def _nested_without_agent(tree: RecordedRun) -> str:
    runs = list(tree.walk())
    first = tree.children[0]
    return (
        f"the recording holds {len(runs)} runs: a nested run (Runtime.exec inside a tool) starts "
        f"at interaction {first.interactions[0]} with {clip(first.prompt, 80)!r} and offers "
        f"{first.tools or 'no tools'}; what starts it is your agentic function's code, which a "
        "recording cannot show and a stub would only pretend: pass --agent module:TOOLS so "
        "your real tools run (the scenario then expects every run's calls)"
    )


def _played(result: Any) -> int:
    """The model calls of the whole replay: every run of its tree."""
    tree = getattr(result, "tree", None)
    if tree is None:
        return int(result.trace.model_calls)
    return sum(int(node.trace.model_calls) for node in tree.walk())


def _same_shape(recorded: RecordedRun, result: Any) -> None:
    """Refuse a replay whose runs differ from the recording's: another number of runs, a run
    at another depth, with other model calls or another menu.  The agent then does not do what
    the recording did, and a scenario written from the replay would expect the wrong thing."""
    tree = getattr(result, "tree", None)
    played = (
        [(0, result.trace)]
        if tree is None
        else [
            (len(node.trace.path.split("/")) if node.trace.path else 0, node.trace)
            for node in tree.walk()
        ]
    )
    wanted = list(recorded.walk())
    for k, ((depth, run), (got_depth, trace)) in enumerate(zip(wanted, played, strict=False)):
        where = "the outermost run" if k == 0 else f"run {k + 1} ({trace.path or 'outermost'})"
        if depth != got_depth:
            raise ScaffoldError(
                f"the replay with your tools does not follow the recording: {where} is nested "
                f"{got_depth} deep, the recording's run {k + 1} {depth} deep"
            )
        if run.calls != trace.model_calls:
            raise ScaffoldError(
                f"the replay with your tools does not follow the recording: {where} made "
                f"{trace.model_calls} model call(s), the recording {run.calls}"
            )
        missing = [
            t for t in run.tools if trace.tool_names is not None and t not in trace.tool_names
        ]
        if missing:
            raise ScaffoldError(
                f"the replay with your tools does not follow the recording: {where} does not "
                f"offer {missing}, which the recording offered"
            )
    if len(played) != len(wanted):
        raise ScaffoldError(
            f"the replay with your tools does not follow the recording: it made {len(played)} "
            f"run(s), the recording {len(wanted)}"
        )


def _nested_expectations(result: Any) -> dict[str, Any]:
    """``expect.runs``: what each nested run of the replay did, by its path (the first run at
    a path, as ``expect.runs`` addresses it)."""
    tree = getattr(result, "tree", None)
    if tree is None:
        return {}
    runs: dict[str, Any] = {}
    for node in tree.walk():
        path = str(node.trace.path)
        if path and path not in runs:
            expect = expectations(node.trace)
            expect.pop("usage", None)  # budgets count the whole tree, at the top
            runs[path] = expect
    return runs


def scaffold_target(out: str | Path, source: str | Path, *, force: bool = True) -> Path:
    """Where the scenario of ``source`` may be written: ``out`` resolved, checked before
    anything is read or written.  A ``ScaffoldError`` (a usage error on the command line) for
    a name the system cannot take, a directory, an existing file without ``force``, a link
    that leads out of the project (``paths.writable_target``), and ``source`` itself (the
    recording would be lost)."""

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
