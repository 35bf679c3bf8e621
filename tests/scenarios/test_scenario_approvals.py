"""``approvals:`` in YAML scenarios: a scripted reviewer that denies, modifies and approves, by
tool name, argument matcher or ``when:``; strict both ways (a request nobody scripted and an
entry never asked each fail the scenario, naming the call or the entry); ``expect.approvals``
failing on a wrong outcome; positioned load errors."""

from __future__ import annotations

import textwrap

import pytest

from openprogram_testing.scenarios import ScenarioError, parse_scenario, run_scenario

TIDY = """
prompt: Tidy up.
tools:
  - name: delete
    requires_approval: true
    parameters: {type: object, properties: {path: {type: string}}, required: [path]}
    echo: true
  - name: read
    parameters: {type: object, properties: {path: {type: string}}, required: [path]}
    returns: contents
script:
  - calls:
      - {name: delete, args: {path: /etc/passwd}, id: c1}
      - {name: read, args: {path: /tmp/a}, id: c2}
      - {name: delete, args: {path: /tmp/x}, id: c3}
  - done
"""


def _run(text: str) -> list[str]:
    scenario = parse_scenario(textwrap.dedent(text).lstrip("\n"), "s.yaml")
    return run_scenario(scenario).failures


def _error(text: str) -> str:
    with pytest.raises(ScenarioError) as info:
        parse_scenario(textwrap.dedent(text).lstrip("\n"), "s.yaml")
    return str(info.value)


def test_deny_modify_approve_pass() -> None:
    failures = _run(
        TIDY
        + """
approvals:
  - tool: delete
    args: {path: {$regex: "^/etc/"}}
    deny: never /etc
  - when: {tool: delete}
    modify: {path: /tmp/y}
expect:
  approvals: [{tool: delete, outcome: denied}, {tool: delete, outcome: modified}]
  tool_results:
    - {name: delete, is_error: true, text: "Tool delete was not run: the call was denied: never /etc"}
    - {name: read, text: contents}
    - {name: delete, text: '{"path": "/tmp/y"}'}
"""
    )
    assert failures == []


def test_expect_approvals_fails_on_a_wrong_outcome() -> None:
    failures = _run(
        TIDY
        + """
approvals:
  - {tool: delete, deny: nope, times: 2}
expect:
  approvals: [{tool: delete, outcome: denied}, {tool: delete, outcome: approved}]
"""
    )
    assert len(failures) == 1 and failures[0].startswith("expect.approvals:"), failures
    assert "approved" in failures[0] and "denied" in failures[0]


def test_a_request_nobody_scripted_fails_naming_the_call() -> None:
    failures = _run(
        TIDY + "\napprovals:\n  - {tool: delete, args: {path: /tmp/x}, approve: true}\n"
    )
    assert len(failures) == 1, failures
    assert (
        'an approval request nobody scripted: delete {"path": "/etc/passwd"} (call c1'
        in (failures[0])
    )


def test_gated_tools_without_approvals_fail_too() -> None:
    failures = _run(TIDY)
    assert len(failures) == 2 and all("nobody scripted" in f for f in failures), failures


def test_an_entry_never_asked_fails_naming_it_unless_optional() -> None:
    failures = _run(
        TIDY
        + """
approvals:
  - {tool: delete, approve: true, times: 2}
  - {tool: read, deny: never asked}
  - {tool: delete, deny: spare, optional: true}
"""
    )
    assert failures == [
        "approvals: a scripted approval decision was never asked for: "
        "approvals[1] deny(read, 'never asked')"
    ]


def test_load_errors_are_positioned() -> None:
    text = _error(TIDY + "\napprovals:\n  - {tool: delete, approve: true, deny: nope}\n")
    assert "approvals[0]" in text and "exactly one of approve, deny, modify" in text
    text = _error(TIDY + "\napprovals:\n  - {tool: delete, modify: 3}\n")
    assert "approvals[0].modify" in text
    text = _error(TIDY + "\napprovals:\n  - {args: {path: x}, approve: true}\n")
    assert "approvals[0]" in text and "args" in text and "tool" in text
    text = _error(TIDY + "\nexpect:\n  approvals: [{tool: delete, outcome: refused}]\n")
    assert "refused" in text
