"""What drifted between two recordings: interaction by interaction, what the model did
differently (tools chosen, arguments, stop reasons, text, usage), not a raw YAML diff.

Each recorded response is read by the real adapter of its API, as a replay would read it: the
recorded request is sent again (parsed back into a history through the wire formats) inside a
cassette session that answers it with the recorded response, and the adapter's final message is
what the model did.  ``diff_recordings`` compares the two lists of messages position by
position; a change of tools, arguments or stop reason is a *behaviour* change (what CI should
fail on), a change of text or usage is *drift* (reported; fatal only when asked).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from openprogram import run_sync
from openprogram.providers.base import Context, StreamOptions
from openprogram.texts import clip
from openprogram_testing.frontends.scenarios.replay import cassette_adapter
from openprogram_testing.transport.cassettes.errors import CassetteError
from openprogram_testing.transport.cassettes.files import load_interactions, recorded_body_text
from openprogram_testing.transport.cassettes.session import use_cassette
from openprogram_testing.transport.wire import BedrockInvoke, route
from openprogram_testing.transport.wire.base import loads_or_none


class RecordingUnreadable(ValueError):
    """A recording cannot be compared: it does not load, or is not of a replayable API."""


@dataclass(slots=True)
class Answer:
    """What the model answered in one interaction."""

    stop: str
    text: str
    calls: list[tuple[str, Any]]  # (name, arguments; the raw text when not JSON)
    usage: dict[str, int]
    error: str | None = None


@dataclass(slots=True)
class Change:
    """One difference at ``interaction``: ``kind`` (tools, arguments, stop, text, usage,
    missing), whether it is a ``behaviour`` change, and the line that says it."""

    interaction: int
    kind: str
    behaviour: bool
    text: str


@dataclass(slots=True)
class Drift:
    old: list[Answer]
    new: list[Answer]
    changes: list[Change] = field(default_factory=list)

    @property
    def behaviour_changed(self) -> bool:
        return any(c.behaviour for c in self.changes)

    def report(self) -> str:
        if not self.changes:
            return f"no change in {len(self.old)} interaction(s)"
        lines = [f"interaction {c.interaction}: {c.kind}: {c.text}" for c in self.changes]
        counts = sum(c.behaviour for c in self.changes)
        lines.append(
            f"{len(self.changes)} change(s), {counts} in behaviour (tools, arguments, stop "
            f"reasons), over {max(len(self.old), len(self.new))} interaction(s)"
        )
        return "\n".join(lines)


def answers(path: str | Path) -> list[Answer]:
    """What the model answered in each interaction of the cassette at ``path``."""

    path = Path(path)
    try:
        interactions = load_interactions(path)
    except (CassetteError, OSError, ValueError, TypeError, UnicodeDecodeError) as exc:
        raise RecordingUnreadable(f"cannot load {path}: {exc}") from None
    if not interactions:
        return []
    uri = str((interactions[0].get("request") or {}).get("uri", ""))
    found = route(urlsplit(uri).path)
    if found is None or isinstance(found.wire, BedrockInvoke):
        raise RecordingUnreadable(f"{path}: {uri!r} is not an API the harness replays")
    try:
        adapter, model, _count = cassette_adapter(found.api, path, "test-model")
    except (ValueError, ImportError) as exc:
        raise RecordingUnreadable(f"{path}: {exc}") from None
    requests = []
    for interaction in interactions:
        body = loads_or_none(recorded_body_text((interaction.get("request") or {}).get("body")))
        try:
            requests.append(found.wire.parse(body) if isinstance(body, dict) else None)
        except Exception:
            requests.append(None)

    return run_sync(lambda: _replay(path, adapter, model, requests))


async def _replay(path: Path, adapter: Any, model: str, requests: list[Any]) -> list[Answer]:

    out: list[Answer] = []
    try:
        with use_cassette(path, match_body=False, allow_unplayed=True):
            await _each(adapter, model, requests, out)
    except CassetteError:  # a request the recording could not answer: already an error answer
        pass
    return out


async def _each(adapter: Any, model: str, requests: list[Any], out: list[Answer]) -> None:

    for parsed in requests:
        if parsed is None:
            out.append(Answer("unreadable", "", [], {}, "the recorded request is unreadable"))
            continue
        context = Context(
            system_prompt="\n".join(parsed.system) or None,
            messages=list(parsed.messages),
            tools=list(parsed.tools),
        )
        message = None
        try:
            async for event in adapter.stream(model, context, StreamOptions()):
                if event.type in ("done", "error"):
                    message = event.message
        except Exception as exc:  # the adapter could not read the response
            out.append(Answer("error", "", [], {}, f"{type(exc).__name__}: {exc}"))
            continue
        out.append(_answer(message))


def _answer(message: Any) -> Answer:
    if message is None:
        return Answer("none", "", [], {}, "the response ended without a final message")
    calls = [
        (c.name, c.raw_arguments if c.raw_arguments is not None else c.arguments)
        for c in message.tool_calls
    ]
    u = message.usage
    usage = {
        "input": u.input_tokens,
        "output": u.output_tokens,
        "cache_read": u.cache_read_tokens,
        "cache_write": u.cache_write_tokens,
    }
    return Answer(message.stop_reason, message.text, calls, usage, message.error_message)


def compare(old: list[Answer], new: list[Answer]) -> list[Change]:
    """Every difference, interaction by interaction (every differing argument of a call, not
    only the first)."""
    changes: list[Change] = []
    for i in range(max(len(old), len(new))):
        if i >= len(old) or i >= len(new):
            side = "NEW" if i >= len(old) else "OLD"
            changes.append(Change(i, "missing", True, f"only in {side}"))
            continue
        a, b = old[i], new[i]
        names_a, names_b = [n for n, _ in a.calls], [n for n, _ in b.calls]
        if names_a != names_b:
            changes.append(Change(i, "tools", True, f"{names_a} -> {names_b}"))
        else:
            for k, ((name, args_a), (_, args_b)) in enumerate(zip(a.calls, b.calls, strict=True)):
                for found in argument_differences(args_a, args_b):
                    changes.append(Change(i, "arguments", True, f"call {k} {name}: {found}"))
        if a.stop != b.stop:
            changes.append(Change(i, "stop", True, f"{a.stop} -> {b.stop}"))
        if (a.error or "") != (b.error or ""):
            changes.append(
                Change(
                    i, "error", True, f"{clip(repr(a.error), 200)} -> {clip(repr(b.error), 200)}"
                )
            )
        if a.text != b.text:
            changes.append(
                Change(i, "text", False, f"{clip(a.text, 200)!r} -> {clip(b.text, 200)!r}")
            )
        moved = [
            f"{k} {a.usage.get(k, 0)} -> {b.usage.get(k, 0)}"
            for k in b.usage
            if a.usage.get(k, 0) != b.usage.get(k, 0)
        ]
        if moved:
            changes.append(Change(i, "usage", False, ", ".join(moved)))
    return changes


def argument_differences(old: Any, new: Any, path: str = "args") -> list[str]:
    """Every place two recorded argument values differ (``path: expected ..., got ...``), in
    document order.  Both sides are recorded data, never matchers: a ``$regex`` key is a key,
    and a NaN equals a NaN (the same recording twice is no change).  Walked with a stack, so
    a value nested thousands deep is compared, not a ``RecursionError``."""
    out: list[str] = []
    stack: list[tuple[Any, Any, str]] = [(old, new, path)]
    while stack:
        a, b, where = stack.pop()
        if isinstance(a, dict) and isinstance(b, dict):
            pending: list[tuple[Any, Any, str]] = []
            for key in a:
                if key in b:
                    pending.append((a[key], b[key], f"{where}.{key}"))
                else:
                    pending.append((a[key], _MISSING, f"{where}.{key}"))
            pending.extend((_MISSING, b[key], f"{where}.{key}") for key in b if key not in a)
            stack.extend(reversed(pending))
        elif isinstance(a, list) and isinstance(b, list):
            pending = [(x, y, f"{where}[{i}]") for i, (x, y) in enumerate(zip(a, b, strict=False))]
            if len(a) != len(b):
                pending.append((_COUNT, (len(a), len(b)), where))
            stack.extend(reversed(pending))
        elif a is _COUNT:
            out.append(f"{where}: expected {b[0]} item(s), got {b[1]}")
        elif a is _MISSING:
            out.append(f"{where}: only in NEW ({_shown(b)})")
        elif b is _MISSING:
            out.append(f"{where}: only in OLD ({_shown(a)})")
        elif not _same(a, b):
            out.append(f"{where}: expected {_shown(a)}, got {_shown(b)}")
    return out


_MISSING = object()
"""A key one side of ``argument_differences`` lacks."""
_COUNT = object()
"""Marks the entry reporting two lists' lengths, after their items' differences."""


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool) or type(a) in (dict, list):
        return False
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True  # NaN: the same recorded value
    return bool(a == b)


def _shown(value: Any) -> str:
    import json

    try:
        text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return clip(text, 120)


def diff_recordings(old: str | Path, new: str | Path) -> Drift:
    """What the model did differently in ``new`` than in ``old``."""
    before, after = answers(old), answers(new)
    return Drift(before, after, compare(before, after))


__all__ = [
    "Answer",
    "Change",
    "Drift",
    "RecordingUnreadable",
    "answers",
    "argument_differences",
    "compare",
    "diff_recordings",
]
