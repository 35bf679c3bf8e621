"""``steering[].when``, entries never reached and ``simulated_user`` in YAML scenarios: the
validator's positioned errors, and runs that fail (and pass) for each."""

from __future__ import annotations

import textwrap

import pytest

from openprogram_testing.scenarios import ScenarioError, parse_scenario, run_scenario

BOOKING = """
prompt: Book a flight.
tools:
  - name: search
    returns: ok
  - name: book
    parameters: {type: object, properties: {to: {type: string}, seats: {type: integer}}}
    returns: booked
script:
  - calls:
      - {name: search}
      - {name: book, args: {to: Rome, seats: 2}}
      - {name: search}
  - done
"""


DIALOGUE = """
prompt: Book me a flight.
script:
  - Which city?
  - How many seats?
  - Booked.
"""


def _run(text: str) -> list[str]:
    scenario = parse_scenario(textwrap.dedent(text).lstrip("\n"), "s.yaml")
    result = run_scenario(scenario)
    return result.failures


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(textwrap.dedent(text).lstrip("\n"), "s.yaml")
    return str(info.value)


def test_when_fires_on_the_named_tool_with_fitting_arguments() -> None:
    failures = _run(
        BOOKING
        + """
steering:
  - when: {tool: book, args: {to: {$regex: "^Ro"}}}
    message: wait
expect:
  delivered: 1
  tool_results: [{name: search}, {name: book}, {name: search, skipped: true}]
"""
    )
    assert failures == []


def test_a_when_never_met_fails_naming_the_entry_and_the_calls() -> None:
    failures = _run(
        BOOKING
        + """
steering:
  - when: {tool: book, args: {seats: 3}}
    message: never
  - after_tool: 7
    message: too late
"""
    )
    (failure,) = failures
    assert "2 steering entries never fired" in failure
    assert "steering[0]: when(book {\"seats\": 3}): 'never'" in failure
    assert "steering[1]: after_tool(7): 'too late'" in failure
    assert 'call 1 book {"seats": 2, "to": "Rome"}' in failure


def test_optional_entries_may_never_fire() -> None:
    failures = _run(
        BOOKING
        + """
steering:
  - when: {tool: book, nth: 2}
    message: never
    optional: true
  - before_round: 5
    message: not reached
    optional: true
expect: {termination: completed}
"""
    )
    assert failures == []


def test_follow_ups_never_taken_fail_by_name() -> None:
    one_turn = "prompt: hi\nscript: [Only turn.]\n"
    failures = _run(one_turn + "follow_ups: [more please]\noptions: {max_iterations: 1}\n")
    assert len(failures) == 1 and "follow_ups[0]: follow_up: 'more please'" in failures[0]


def test_a_when_on_a_tool_no_run_offers_is_a_positioned_error() -> None:
    text = _error(
        BOOKING
        + """
steering:
  - when: {tool: cancel}
    message: x
"""
    )
    assert "s.yaml:16:18: steering[0].when.tool: no run offers tool 'cancel'" in text
    assert "the condition could never fire" in text


@pytest.mark.parametrize(
    ("entry", "found"),
    [
        ("{when: {tool: book, nth: 0}, message: x}", "steering[0].when.nth"),
        ('{when: {tool: book, args: {to: {$regex: "("}}}, message: x}', "invalid regular"),
        ("{when: {tool: ''}, message: x}", "steering[0].when.tool"),
        ("{when: {tool: book}, after_tool: 0, message: x}", "(got after_tool, when)"),
        ("{when: {tool: book, args: [1]}, message: x}", "steering[0].when.args"),
        ("{when: book, message: x}", "steering[0].when"),
    ],
)
def test_bad_when_entries_are_positioned_errors(entry: str, found: str) -> None:
    assert found in _error(BOOKING + f"steering: [{entry}]\n")


def test_a_simulated_user_answers_each_reply() -> None:
    failures = _run(
        DIALOGUE
        + """
simulated_user:
  - {say: Oslo., expect: (?i)which city}
  - Two.
expect: {final_text: Booked., delivered: 2}
"""
    )
    assert failures == []


def test_a_reply_that_does_not_fit_fails_naming_line_and_reply() -> None:
    failures = _run(
        DIALOGUE.replace("How many seats?", "Anything else?").replace("  - Booked.\n", "")
        + """
simulated_user:
  - {say: Oslo., expect: (?i)which city}
  - {say: Two., expect: (?i)how many}
  - Thanks.
"""
    )
    (failure,) = failures
    assert "line 1 ('Two.') answers a reply matching /(?i)how many/" in failure
    assert "the agent replied 'Anything else?'" in failure


def test_lines_never_said_fail_unless_optional() -> None:
    script = DIALOGUE.replace("  - How many seats?\n  - Booked.\n", "")
    failures = _run(script + "simulated_user: [Oslo., Two.]\noptions: {max_iterations: 1}\n")
    assert len(failures) == 1 and "simulated_user[0]: simulated user line 0: 'Oslo.'" in failures[0]
    optional = "simulated_user: [{say: Oslo., optional: true}]\noptions: {max_iterations: 1}\n"
    assert _run(script + optional) == []


@pytest.mark.parametrize(
    ("lines", "found"),
    [
        ('[""]', "simulated_user: line 0 is empty"),
        ("[{say: '  '}]", "simulated_user[0].say"),
        ('[{say: x, expect: "("}]', "simulated_user[0].expect: invalid regular expression"),
        ("[{say: x, reply: y}]", "unknown key 'reply'"),
        ("[3]", "simulated_user[0]: expected a string or a mapping {say, expect}"),
        ("hello", "simulated_user"),
    ],
)
def test_bad_dialogue_lines_are_positioned_errors(lines: str, found: str) -> None:
    assert found in _error(DIALOGUE + f"simulated_user: {lines}\n")


NESTED = """
prompt: Plan a trip.
tools:
  - name: plan
    parameters: {type: object, properties: {goal: {type: string}}}
    agentic: {prompt: "Plan: {goal}", tools: [search]}
  - name: search
    parameters: {type: object, properties: {city: {type: string}}}
    echo: true
script:
  - calls: [{name: plan, args: {goal: warm}}]
  - calls: [{name: search, args: {city: Rome}}, {name: search, args: {city: Oslo}}]
  - Rome.
  - Go to Rome.
"""


def test_when_in_a_nested_run_by_its_path() -> None:
    failures = _run(
        NESTED
        + """
steering:
  - when: {tool: search, args: {city: Rome}}
    run: plan
    message: Only Rome.
expect:
  final_text: Go to Rome.
  runs:
    plan: {delivered: 1, tool_results: [{text: '{"city": "Rome"}'}, {skipped: true}]}
"""
    )
    assert failures == []


def test_a_when_on_a_tool_the_named_run_does_not_offer_is_a_positioned_error() -> None:
    text = _error(NESTED + "steering: [{when: {tool: plan}, run: plan, message: x}]\n")
    assert "steering[0].when.tool: run plan offers no tool 'plan' (it offers search)" in text
