"""The ``ignore_paths`` hint of a body mismatch, followed, makes progress: each hint names a path
not ignored yet, and following them ends in a replay (no loop of hints). A list that grew or
shrank (a system prompt put first on OpenAI Chat) is said to have grown, with where, and the
hint is the list itself: an item's path is blanked, not removed, so ignoring it could never make
the lengths agree (the hints went ``$.messages[0].role``, ``$.messages[0].content``,
``$.messages[1]``, then ``$.messages[1]`` again with "recorded <missing>, got null")."""

from __future__ import annotations

import re

import pytest

from openprogram_testing.cassettes import CassetteError, use_cassette
from openprogram_testing.core.trace import run_loop
from openprogram_testing.transport.cassettes.matching import (
    BodyMatch,
    ListLength,
    first_json_difference,
    resized,
)
from tests.cassettes.test_cassette_body_matching import ADD, CHAT_LOOP, chat

HINT = re.compile(r"ignore_paths=\['([^']+)'\]")


async def _replay(system: str | None, ignore: list[str]) -> object:
    with use_cassette(CHAT_LOOP, ignore_paths=ignore):
        return await run_loop(chat(), "What is 2 + 3?", tools=[ADD], system_prompt=system)


async def test_following_the_hints_converges_when_a_system_prompt_is_added() -> None:
    ignore: list[str] = []
    messages: list[str] = []
    for _ in range(6):
        try:
            trace = await _replay("You are terse.", ignore)
        except CassetteError as exc:
            message = str(exc)
            messages.append(message)
            found = HINT.search(message)
            assert found, message
            assert found[1] not in ignore, f"a hint repeats an ignored path: {messages}"
            ignore.append(found[1])
            continue
        break
    else:
        pytest.fail(f"the hints never converged: {ignore}\n" + "\n".join(messages))
    assert trace.termination == "completed"  # type: ignore[attr-defined]
    assert ignore == ["$.messages"]
    (first,) = messages
    assert "at $.messages: the list grew from 1 to 2 item(s) (added: [0] of this request)" in first
    assert "got null" not in first


async def test_a_shrunk_list_says_so() -> None:
    match = BodyMatch()
    recorded = b'{"model": "m", "messages": [{"role": "system"}, {"role": "user"}]}'
    actual = b'{"model": "m", "messages": [{"role": "user"}]}'
    where, old, new = match.difference("/v1/chat/completions", recorded, actual)  # type: ignore[misc]
    assert where == "$.messages" and (old.length, new.length) == (2, 1)
    assert old.extra == range(0, 1) and new.extra == range(0)


def test_a_length_difference_is_reported_at_the_list() -> None:
    assert first_json_difference([1, 2], [1]) == (
        "$",
        ListLength(2, range(1, 2)),
        ListLength(1, range(0)),
    )
    # items changed as well as added: the list, with no place for the extra items
    path, old, new = first_json_difference({"a": [1, 2]}, {"a": [3, 4, 5]})  # type: ignore[misc]
    assert path == "$.a" and old.extra is None and new.extra is None
    assert resized([0], [9, 0, 8])[1].extra is None  # added in two places
    assert resized([0, 1], [0, 7, 8, 1])[1].extra == range(1, 3)


def test_every_hint_of_a_random_edit_makes_progress() -> None:
    """Random edits of a chat body (items added, removed, changed at any depth): following the
    hints of ``difference`` ends with no difference, never naming an ignored path twice."""
    import random

    rng = random.Random(7)
    base = {
        "model": "m",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": [{"type": "function", "function": {"name": "a"}}],
    }
    import copy
    import json

    for _ in range(200):
        edited = copy.deepcopy(base)
        for _ in range(rng.randint(1, 4)):
            target = rng.choice(["messages", "tools"])
            items = edited[target]
            op = rng.choice(["add", "drop", "change"])
            if op == "add":
                items.insert(rng.randint(0, len(items)), {"role": "system", "content": "x"})
            elif op == "drop" and items:
                items.pop(rng.randrange(len(items)))
            elif items:
                items[rng.randrange(len(items))] = {"changed": rng.random()}
        ignore: list[str] = []
        for _ in range(20):
            found = BodyMatch(ignore).difference(
                "/v1/chat/completions", json.dumps(base), json.dumps(edited)
            )
            if found is None:
                break
            assert found[0] not in ignore, (found, ignore)
            ignore.append(found[0])
        else:
            pytest.fail(f"no convergence: {ignore}")
