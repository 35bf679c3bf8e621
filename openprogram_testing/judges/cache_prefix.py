"""The prompt-cache check and the rules of a run's tool array, read from what each model call
of a run was sent (``LoopTrace.requests``).

A provider caches a request's prefix (the system prompt, the tool array, the earlier messages)
and charges the cached part far less; a run whose requests change that prefix between model
calls pays for the whole prompt again on every call after the change.  Upstream froze its tool
array per turn because one ``tool_search`` per turn had cost it about half its cache hits.
``cache_prefix_moves`` finds every such change; the rule ``cache_prefix_kept`` (checked with
the loop invariants, so every fixture run is judged) and ``assert_cache_prefix_kept`` fail on
one, unless the test says why its runs move the prefix
(``@pytest.mark.moves_cache_prefix(reason=...)``).

Two narrower rules about deferred tools (``openprogram.tool_search``) read the same requests:
the array never changes within a run (``tool_array_frozen``) and a deferred tool is never in
it before it was loaded (``deferred_tools_hidden_until_loaded``: never in the array of the run
whose ``RunInfo.deferred`` names it).

Cost: requests recorded by the scripted provider share one history list while a run only
appends to it, so a kept prefix is seen in constant time per model call; other requests (parsed
from the wire by the emulator) are compared message by message, the previous call's messages
against the same number of the next call's.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from openprogram.texts import clipped_repr
from openprogram_testing.base.failures import TraceFailure
from openprogram_testing.core.trace import LoopTrace


@dataclass(frozen=True, slots=True)
class PrefixMove:
    """One change of the cached prefix between model call ``call - 1`` and model call ``call``
    of a run: ``part`` is ``"system prompt"``, ``"tool array"`` or ``"messages"``, ``detail``
    says what changed (the tools added and removed, the first message that differs)."""

    call: int
    part: str
    detail: str

    def __str__(self) -> str:
        return (
            f"model call #{self.call}: the {self.part} changed since model call "
            f"#{self.call - 1}: {self.detail}"
        )


def _spec_key(spec: Any) -> tuple[Any, ...]:
    return (
        getattr(spec, "name", None),
        getattr(spec, "description", None),
        repr(getattr(spec, "parameters", None)),
    )


def _tools_detail(before: Sequence[Any], after: Sequence[Any]) -> str:
    old = [getattr(s, "name", "?") for s in before]
    new = [getattr(s, "name", "?") for s in after]
    added = [n for n in new if n not in old]
    removed = [n for n in old if n not in new]
    parts = []
    if added:
        parts.append(f"added {', '.join(added)}")
    if removed:
        parts.append(f"removed {', '.join(removed)}")
    if not parts:
        changed = [
            getattr(b, "name", "?")
            for b, a in zip(before, after, strict=False)
            if _spec_key(b) != _spec_key(a)
        ]
        parts.append(
            f"schema or description of {', '.join(changed)} changed"
            if changed
            else f"order {old} -> {new}"
        )
    return "; ".join(parts)


def _messages_moved(before: Any, after: Any) -> str | None:
    """Why ``after``'s messages do not start with ``before``'s (``None``: they do)."""
    shared = getattr(before, "_history", None)
    if shared is not None and shared is getattr(after, "_history", None):
        if after._length >= before._length:
            return None
    old = before.messages
    new = after.messages
    if len(new) < len(old):
        return f"the conversation shrank from {len(old)} to {len(new)} messages"
    for index, (a, b) in enumerate(zip(old, new, strict=False)):
        if a is not b and a != b:
            return (
                f"message {index} ({getattr(a, 'role', '?')}) was {clipped_repr(a, 80)}, "
                f"is {clipped_repr(b, 80)}"
            )
    return None


def cache_prefix_moves(requests: Sequence[Any] | None) -> list[PrefixMove]:
    """Every change of the cached prefix between consecutive model calls of one run."""
    out: list[PrefixMove] = []
    if not requests:
        return out
    for call in range(1, len(requests)):
        before, after = requests[call - 1], requests[call]
        if before.system_prompt != after.system_prompt:
            out.append(
                PrefixMove(
                    call,
                    "system prompt",
                    f"{clipped_repr(before.system_prompt, 60)} -> "
                    f"{clipped_repr(after.system_prompt, 60)}",
                )
            )
        old_tools, new_tools = before._tools, after._tools
        if old_tools is not new_tools and [_spec_key(s) for s in old_tools] != [
            _spec_key(s) for s in new_tools
        ]:
            out.append(PrefixMove(call, "tool array", _tools_detail(old_tools, new_tools)))
        why = _messages_moved(before, after)
        if why is not None:
            out.append(PrefixMove(call, "messages", why))
    return out


def array_changes(requests: Sequence[Any] | None) -> Iterator[PrefixMove]:
    """The tool-array changes among ``cache_prefix_moves``."""
    return (m for m in cache_prefix_moves(requests) if m.part == "tool array")


def deferred_in_array(
    requests: Sequence[Any] | None, deferred: Sequence[str]
) -> list[tuple[int, list[str]]]:
    """``(model call, deferred names in its array)`` for every model call that offers a tool
    the run's ``RunInfo.deferred`` says was not loaded when the run started."""
    hidden = set(deferred)
    out: list[tuple[int, list[str]]] = []
    if not hidden or not requests:
        return out
    for call, request in enumerate(requests):
        shown = [s.name for s in request._tools if s.name in hidden]
        if shown:
            out.append((call, shown))
    return out


class CachePrefixMoved(TraceFailure):
    """A run's requests changed the cached prefix between model calls: ``moves`` lists each
    change (``PrefixMove``), ``run`` names the run (a trace tree's path)."""

    def __init__(self, moves: Sequence[PrefixMove], run: str = "", timeline: str = "") -> None:
        self.moves = list(moves)
        where = f" in run {run!r}" if run else ""
        lines = "\n".join(f"  - {m}" for m in self.moves)
        super().__init__(
            f"the cached prefix moved{where} ({len(self.moves)} change(s)); a test whose runs "
            "move it on purpose says why with @pytest.mark.moves_cache_prefix(reason=...):\n"
            + lines,
            timeline,
            self.moves,
            run,
        )


def assert_cache_prefix_kept(subject: Any) -> None:
    """Fail (``CachePrefixMoved``) unless every run of ``subject`` (a ``LoopTrace`` or a trace
    tree) sent each model call the previous call's system prompt, tool array and messages, the
    new messages only appended.  A trace without recorded requests (built from events) has
    nothing to judge and passes; use a recording provider (``ScriptedProvider``, the emulator)."""
    __tracebackhide__ = True
    if isinstance(subject, LoopTrace):
        runs = [("", subject)]
    else:
        runs = [(str(node.path), node.trace) for node in subject.walk()]
    for path, trace in runs:
        moves = cache_prefix_moves(trace.requests)
        if moves:
            raise CachePrefixMoved(moves, path)
