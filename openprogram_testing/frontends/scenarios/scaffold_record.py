"""A run of the HTML report becomes a test: a YAML scenario that replays the run's model turns as
a script and expects what the run did.

The source is a run record (``report.record.trace_record``): picked from an HTML report written
by ``--openprogram-html`` / ``run --html`` (by test id and run number), or read from a JSON file
holding one record, a list of them, or a test's detail block (``{"runs": [...]}``).  The record
has what the model said (text, thinking, calls, stop reason, errors, usage), what each tool
returned, and where every user message arrived; it has no tool schemas, so the tools become
stubs that answer with the recorded results, in order.  A call the run answered ``Tool X not
found`` stays an unknown tool.  Steering and follow-ups are replayed where they arrived.

The expectations are the record's own (termination, model calls, final text, the trajectory,
strict with exact arguments); the file is loaded and run before it is kept, so what is written
validates and passes as written, or nothing is written.  Texts the report clipped (past
``report.record.TEXT_LIMIT`` characters) are replayed clipped.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from openprogram.texts import clip, tool_not_found_text
from openprogram_testing.base.safeyaml import MAX_DEPTH
from openprogram_testing.core.matchers import as_written

from .scaffold import ScaffoldError, run_draft, scaffold_target, to_yaml, write_atomically

HEADER = (
    "# Scaffolded by `openprogram-testing scaffold` from {source}.\n"
    "# The script replays the model's turns; the tools are stubs answering with the recorded\n"
    "# results, in order.  The expectations are what the recorded run did: loosen them where\n"
    "# variation is harmless (expect.trajectory.mode: unordered/subset/superset;\n"
    "# expect.trajectory.args: subset or ignore).\n"
)

_BLOCK = re.compile(r'<script type="application/json" id="([^"]+)">(.*?)</script>', re.S)


def load_record(source: str | Path, *, test: str | None = None, run: int | None = None) -> Any:
    """The run record at ``source`` and a label for it: an HTML report (``test`` picks the test:
    its exact id, else a unique part of it; ``run`` is 1-based, default the only run) or a JSON
    file of a record, a list of records or a detail block.  Anything else is a
    ``ScaffoldError`` saying what was found."""
    path = Path(source)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ScaffoldError(f"cannot read {path}: {exc}") from None
    if path.suffix.lower() in (".html", ".htm"):
        runs, label = _report_runs(text, test)
    else:
        if test is not None:
            raise ScaffoldError("--test picks a test of an HTML report; a JSON file has none")
        data = _json(text, path.name)
        runs, label = _json_runs(data), path.name
    return _pick(runs, run, label)


def _report_runs(page: str, test: str | None) -> tuple[list[Any], str]:
    blocks = {}
    for m in _BLOCK.finditer(page):
        what = f"the report's block {m.group(1)!r}"
        deep = json_too_deep(m.group(2), MAX_RECORD_DEPTH)
        if deep is not None:  # damage, not another page's script: say where
            raise ScaffoldError(
                f"{what}: line {deep[0]} column {deep[1]}: nested deeper than "
                f"{MAX_RECORD_DEPTH} levels"
            )
        try:
            blocks[m.group(1)] = json.loads(m.group(2))
        except (ValueError, RecursionError):
            continue
    summary = blocks.get("summary")
    if not isinstance(summary, list):
        raise ScaffoldError("not an OpenProgram HTML report (no test summary found in it)")
    rows = [r for r in summary if isinstance(r, Mapping)]
    ids = [str(r.get("nodeid") or r.get("name") or "") for r in rows]
    if test is None:
        raise ScaffoldError("pass --test to pick a test of the report; it has " + _listing(ids))
    exact = [k for k, i in enumerate(ids) if i == test]
    found = exact or [k for k, i in enumerate(ids) if test in i]
    if not found:
        raise ScaffoldError(f"no test of the report matches {test!r}; it has " + _listing(ids))
    if len(found) > 1:
        raise ScaffoldError(
            f"{test!r} matches {len(found)} tests: "
            + _listing([ids[k] for k in found])
            + "; give more of the id"
        )
    row = rows[found[0]]
    detail = blocks.get(f"d-{row.get('i')}")
    runs = detail.get("runs") if isinstance(detail, Mapping) else None
    if not isinstance(runs, list):
        raise ScaffoldError(f"the report has no run data for {ids[found[0]]}")
    return runs, ids[found[0]]


MAX_RECORD_DEPTH = 200
"""Deepest nesting a run record's JSON may use: a record is a few levels deep (its nested runs
are refused anyway), so anything near the parser's own limit is damage, refused with its
position instead of a ``RecursionError``."""

_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def json_too_deep(text: str, limit: int) -> tuple[int, int] | None:
    """Where (line, column, 1-based) ``text`` first opens its ``limit + 1``-th level of
    nesting, else ``None``: strings are skipped, so a bracket inside one does not count.  One
    pass, no recursion."""
    depth = 0
    for m in _JSON_TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                start = m.start()
                line = text.count("\n", 0, start) + 1
                return line, start - (text.rfind("\n", 0, start) + 1) + 1
        elif token in "]}":
            depth -= 1
    return None


def _json(text: str, what: str, limit: int = MAX_RECORD_DEPTH) -> Any:
    """``text`` parsed as JSON; not JSON, or nested deeper than ``limit``, is a
    ``ScaffoldError`` naming ``what`` and where."""
    deep = json_too_deep(text, limit)
    if deep is not None:
        raise ScaffoldError(
            f"{what}: line {deep[0]} column {deep[1]}: nested deeper than {limit} levels"
        )
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ScaffoldError(f"{what} is not JSON: {exc}") from None
    except RecursionError:  # the parser's limit, below ours on a small stack
        raise ScaffoldError(f"{what}: nested too deeply to read") from None


def _listing(ids: list[str], limit: int = 10) -> str:
    if not ids:
        return "no tests"
    shown = ", ".join(ids[:limit])
    more = f" and {len(ids) - limit} more" if len(ids) > limit else ""
    return f"{len(ids)} test(s): {shown}{more}"


def _json_runs(data: Any) -> list[Any]:
    if isinstance(data, Mapping) and "rounds" in data:
        return [data]
    if isinstance(data, Mapping) and isinstance(data.get("runs"), list):
        return list(data["runs"])
    if isinstance(data, list):
        return data
    raise ScaffoldError(
        "the JSON holds no run record (a record has 'rounds'; a detail block has 'runs')"
    )


def _pick(runs: list[Any], run: int | None, label: str) -> tuple[Mapping[str, Any], str]:
    if not runs:
        raise ScaffoldError(f"{label} ran no loop: there is no run to scaffold")
    if run is None:
        if len(runs) > 1:
            raise ScaffoldError(f"{label} has {len(runs)} runs: pass --run 1..{len(runs)}")
        run = 1
    if isinstance(run, bool) or not isinstance(run, int) or not 1 <= run <= len(runs):
        raise ScaffoldError(f"--run must be 1..{len(runs)} for {label}, got {run!r}")
    record = runs[run - 1]
    if not isinstance(record, Mapping) or not isinstance(record.get("rounds"), list):
        raise ScaffoldError(f"run {run} of {label} is not a run record (no 'rounds' list)")
    return record, f"run {run} of {label}"


# -- the scenario ---------------------------------------------------------------------------------


def scenario_from_record(record: Mapping[str, Any]) -> dict[str, Any]:
    """The scenario (as YAML-ready data) replaying ``record`` and expecting what it did.  A
    record of the wrong shape (hand-made or damaged) is a ``ScaffoldError`` naming the first
    value that is wrong by its path (``rounds[0].tools[1].id``), see ``check_record``."""
    check_record(record)
    if record.get("children"):
        raise ScaffoldError(
            "the run started nested runs (Runtime.exec inside a tool), whose agentic tools are "
            "code a record cannot show: scaffold a cassette of it with --agent module:TOOLS "
            "instead, or write the agentic tools by hand"
        )
    rounds = [r for r in record["rounds"] if isinstance(r, Mapping)]
    if not rounds:
        raise ScaffoldError("the run record has no rounds")
    prompts = [a.get("text", "") for a in _arrivals(rounds[0]) if a.get("kind") == "prompt"]
    if not any(isinstance(p, str) and p for p in prompts):
        raise ScaffoldError("the run record has no prompt to replay")
    script: list[Any] = []
    results: dict[str, list[dict[str, Any]]] = {}
    unknown: set[str] = set()
    calls_made: list[Any] = []
    steering: list[dict[str, Any]] = []
    for k, r in enumerate(rounds):
        steering.extend(_steering(k, r, first_round=k == 0))
        reply = r.get("reply")
        if not isinstance(reply, Mapping):
            continue
        tools = {t.get("id"): t for t in r.get("tools") or [] if isinstance(t, Mapping)}
        turn, made = _turn(reply, tools, results, unknown, f"rounds[{k}].reply")
        script.append(turn)
        calls_made.extend(made)
    data: dict[str, Any] = {"description": "Replays a run recorded in an OpenProgram report."}
    if isinstance(record.get("system_prompt"), str) and record["system_prompt"]:
        data["system_prompt"] = record["system_prompt"]
    if len(prompts) == 1:
        data["prompt"] = prompts[0]
    else:
        data["prompts"] = prompts
    data["tools"] = [_stub(name, outcomes) for name, outcomes in results.items()]
    data["script"] = script
    if steering:
        data["steering"] = steering
    options: dict[str, Any] = {}
    if isinstance(record.get("cap"), int) and record["cap"] >= 0:
        options["max_iterations"] = record["cap"]
    if record.get("steering_mode") == "after_batch":
        options["steering_mode"] = "after_batch"
    if options:
        data["options"] = options
    data["expect"] = _expect(record, calls_made)
    return data


_TEXT = (str,)
_INT = (int,)


def check_record(record: Any) -> None:
    """Raise ``ScaffoldError`` at the first value of ``record`` that is not what
    ``report.record.trace_record`` writes there, named by its path (``rounds[2].arrivals``) and
    shown clipped: what the scaffold reads is then of the types it expects, so a hand-made
    record ends in that error rather than a ``TypeError`` deep inside."""
    _expect_type(record, "the run record", (Mapping,))
    _optional(record, "the run record", "rounds", (list,), required=True)
    for key in ("children", "undelivered"):
        _optional(record, "the run record", key, (list,))
    for key in ("system_prompt", "final_text", "termination", "steering_mode", "label"):
        _optional(record, "the run record", key, _TEXT)
    for key in ("model_calls", "cap"):
        _optional(record, "the run record", key, _INT)
    for k, r in enumerate(record["rounds"]):
        where = f"rounds[{k}]"
        _expect_type(r, where, (Mapping,))
        for key in ("arrivals", "tools"):
            _optional(r, where, key, (list,))
        _optional(r, where, "reply", (Mapping,))
        for j, a in enumerate(r.get("arrivals") or []):
            at = f"{where}.arrivals[{j}]"
            _expect_type(a, at, (Mapping,))
            _optional(a, at, "kind", _TEXT, required=True)
            _optional(a, at, "text", _TEXT)
            _optional(a, at, "after_tool", _INT)
        for j, t in enumerate(r.get("tools") or []):
            at = f"{where}.tools[{j}]"
            _expect_type(t, at, (Mapping,))
            for key in ("id", "name", "status", "result"):
                _optional(t, at, key, _TEXT)
        reply = r.get("reply")
        if reply is None:
            continue
        at = f"{where}.reply"
        _optional(reply, at, "calls", (list,))
        for key in ("stop", "text", "thinking", "error"):
            _optional(reply, at, key, _TEXT)
        for j, c in enumerate(reply.get("calls") or []):
            call_at = f"{at}.calls[{j}]"
            _expect_type(c, call_at, (Mapping,))
            for key in ("id", "name", "args", "raw"):
                _optional(c, call_at, key, _TEXT)


def _optional(
    parent: Mapping[str, Any],
    where: str,
    key: str,
    types: tuple[type, ...],
    *,
    required: bool = False,
) -> None:
    """``parent[key]`` is absent or null (unless ``required``), or one of ``types``."""
    value = parent.get(key)
    path = f"{where}.{key}" if where != "the run record" else key
    if value is None:
        if required:
            raise ScaffoldError(f"{path} is missing")
        return
    _expect_type(value, path, types)


_TYPE_NAMES = {Mapping: "an object", list: "a list", str: "text", int: "an integer"}


def _expect_type(value: Any, where: str, types: tuple[type, ...]) -> None:
    if isinstance(value, types) and not (isinstance(value, bool) and bool not in types):
        return
    wanted = " or ".join(_TYPE_NAMES.get(t, t.__name__) for t in types)
    try:
        shown = json.dumps(value)
    except (TypeError, ValueError, RecursionError):
        shown = repr(value)
    raise ScaffoldError(f"{where} is not {wanted}: {clip(shown, 120)}")


def _arrivals(r: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [a for a in r.get("arrivals") or [] if isinstance(a, Mapping)]


def _steering(k: int, r: Mapping[str, Any], *, first_round: bool) -> list[dict[str, Any]]:
    """Where each user message of round ``k`` (but the prompts) arrived, as a steering entry."""
    out: list[dict[str, Any]] = []
    for a in _arrivals(r):
        kind, text = a.get("kind"), a.get("text")
        if kind == "prompt" or not isinstance(text, str):
            continue
        if kind == "follow_up":
            out.append({"follow_up": True, "message": text})
        elif kind == "steering" and not first_round and isinstance(a.get("after_tool"), int):
            out.append({"after_call": {"round": k - 1, "index": a["after_tool"]}, "message": text})
        elif kind == "steering":
            out.append({"before_round": k, "message": text})
        else:
            raise ScaffoldError(
                f"round {k}: a user message of unknown origin ({kind!r}) cannot be replayed"
            )
    return out


def _turn(
    reply: Mapping[str, Any],
    tools: Mapping[Any, Mapping[str, Any]],
    results: dict[str, list[dict[str, Any]]],
    unknown: set[str],
    where: str,
) -> tuple[dict[str, Any], list[Any]]:
    turn: dict[str, Any] = {}
    if reply.get("thinking"):
        turn["thinking"] = str(reply["thinking"])
    if reply.get("text"):
        turn["text"] = str(reply["text"])
    calls: list[dict[str, Any]] = []
    made: list[Any] = []
    for j, c in enumerate(reply.get("calls") or []):
        if not isinstance(c, Mapping) or not isinstance(c.get("name"), str) or not c["name"]:
            raise ScaffoldError(f"a recorded call has no tool name: {str(c)[:200]!r}")
        name = c["name"]
        entry: dict[str, Any] = {"name": name}
        if isinstance(c.get("id"), str) and c["id"]:
            entry["id"] = c["id"]
        raw = isinstance(c.get("raw"), str)
        if raw:
            entry["raw_args"] = c["raw"]
            made.append(name)
        else:
            args = _arguments(c.get("args"), name, f"{where}.calls[{j}].args")
            entry["args"] = args
            made.append({"name": name, "args": as_written(json.loads(json.dumps(args)))})
        tool = tools.get(c.get("id"))
        if tool is not None and tool.get("result") == tool_not_found_text(name):
            entry["unknown_tool"] = True
            unknown.add(name)
        elif name not in unknown:
            outcomes = results.setdefault(name, [])
            # non-JSON arguments never reach the tool (the loop answers them itself)
            if tool is not None and tool.get("status") != "skipped" and not raw:
                outcome: dict[str, Any] = {"returns": str(tool.get("result", ""))}
                if tool.get("status") == "error":
                    outcome["is_error"] = True
                outcomes.append(outcome)
        calls.append(entry)
    if calls:
        turn["calls"] = calls
    stop = reply.get("stop")
    if stop == "length":
        turn["stop"] = "length"
    elif stop == "aborted":
        turn["aborted"] = True
    elif stop == "error":
        turn["error"] = str(reply.get("error") or "error")
        if isinstance(reply.get("status"), int) and 100 <= reply["status"] <= 599:
            turn["status"] = reply["status"]
        if isinstance(reply.get("retryable"), bool):
            turn["retryable"] = reply["retryable"]
    usage = reply.get("usage")
    if isinstance(usage, list) and len(usage) == 2 and all(isinstance(n, int) for n in usage):
        turn["usage"] = {"input_tokens": max(usage[0], 0), "output_tokens": max(usage[1], 0)}
    return turn, made


ARGUMENTS_DEPTH = MAX_DEPTH - 10
"""Deepest arguments a scaffolded scenario can hold: they sit a few levels down in a scenario
file (``script[k].calls[j].args``, ``expect.trajectory.calls[j].args``), which nests at most
``safeyaml.MAX_DEPTH`` levels."""


def _arguments(shown: Any, name: str, where: str) -> Any:
    """A call's arguments from the report's pretty JSON text (``where``: its path)."""
    if not isinstance(shown, str):
        raise ScaffoldError(f"the recorded arguments of {name} are not JSON text: {shown!r}")
    deep = json_too_deep(shown, ARGUMENTS_DEPTH)
    if deep is not None:
        raise ScaffoldError(
            f"{where}: line {deep[0]} column {deep[1]}: the arguments of {name} nest deeper "
            f"than {ARGUMENTS_DEPTH} levels, more than a scenario file holds"
        )
    try:
        args = json.loads(shown)
    except ValueError:
        raise ScaffoldError(
            f"the recorded arguments of {name} cannot be read back as JSON (clipped by the "
            f"report?): {shown[:200]!r}"
        ) from None
    if not isinstance(args, dict):
        raise ScaffoldError(f"the recorded arguments of {name} are not an object: {shown[:200]!r}")
    return args


def _stub(name: str, outcomes: list[dict[str, Any]]) -> dict[str, Any]:
    tool: dict[str, Any] = {"name": name}
    if len(outcomes) == 1:
        tool.update(outcomes[0])
    elif outcomes:
        tool["sequence"] = outcomes
    return tool


def _expect(record: Mapping[str, Any], calls: list[Any]) -> dict[str, Any]:
    expect: dict[str, Any] = {}
    if record.get("termination") in ("completed", "max_iterations", "error", "aborted"):
        expect["termination"] = record["termination"]
    if isinstance(record.get("model_calls"), int):
        expect["model_calls"] = record["model_calls"]
    if isinstance(record.get("final_text"), str) and record["final_text"]:
        expect["final_text"] = record["final_text"]
    expect["trajectory"] = {"mode": "strict", "args": "exact", "calls": calls}
    expect["tool_results"] = [
        {
            "name": str(t.get("name", "")),
            "is_error": t.get("status") in ("error", "skipped"),
            "skipped": t.get("status") == "skipped",
            "text": str(t.get("result", "")),
        }
        for r in record["rounds"]
        if isinstance(r, Mapping)
        for t in r.get("tools") or []
        if isinstance(t, Mapping)
    ]
    return expect


def scaffold_record(
    source: str | Path,
    out: str | Path,
    *,
    test: str | None = None,
    run: int | None = None,
    root: str | Path | None = None,
) -> Any:
    """Write the scenario of a recorded run (see the module docstring) to ``out`` and return its
    passing ``ScenarioResult``.  Raises ``ScaffoldError`` (``out`` left as it was) when ``out``
    may not be written (``scaffold.scaffold_target``) or the record cannot be read, picked or
    replayed as a passing scenario."""
    out = scaffold_target(out, source)
    record, label = load_record(source, test=test, run=run)
    label = f"{label} ({Path(source).name})" if not label.endswith(Path(source).name) else label
    data = scenario_from_record(record)
    text = to_yaml(data, label, HEADER)
    result = run_draft(out, text, root, check=True)
    write_atomically(out, text)
    return result


__all__ = ["load_record", "scaffold_record", "scenario_from_record"]
