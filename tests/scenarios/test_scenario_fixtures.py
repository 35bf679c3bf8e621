"""Scenario items have fixtures as test functions do: the autouse fixtures in scope and the
scenario's ``usefixtures:`` are set up before the run and torn down after it, so tool state no
longer leaks from one scenario into the next."""

from __future__ import annotations

import pytest

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\npythonpath = .\n"

BOOKINGS = '''
from openprogram import function

KNOWN = []


@function
def book(ref: str) -> list:
    """Book a reference; returns every booking so far."""
    KNOWN.append(ref)
    return list(KNOWN)
'''


def scenario(ref: str, extra: str = "") -> str:
    return (
        "prompt: book it\ntools: [{import: 'bookings:book'}]\n"
        f"script:\n  - calls: [{{name: book, args: {{ref: {ref}}}}}]\n  - booked\n"
        f"expect:\n  tool_results: [{{name: book, text: '[\"{ref}\"]'}}]\n" + extra
    )


def make(pytester: pytest.Pytester, conftest: str) -> None:
    pytester.makeini(INI)
    pytester.makepyfile(bookings=BOOKINGS)
    pytester.makeconftest(conftest)
    pytester.makefile(".yaml", scenario_a=scenario("BK-0999"))
    pytester.makefile(".yaml", scenario_b=scenario("BK-1001"))


def test_without_a_reset_the_second_scenario_sees_the_first_ones_booking(
    pytester: pytest.Pytester,
) -> None:
    make(pytester, "")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    assert """got '["BK-0999", "BK-1001"]'""" in result.stdout.str()


def test_an_autouse_conftest_fixture_runs_around_each_scenario(pytester: pytest.Pytester) -> None:
    make(
        pytester,
        "import pytest\nimport bookings\nEVENTS = []\n\n"
        "@pytest.fixture(autouse=True)\ndef clean_bookings():\n"
        "    bookings.KNOWN.clear()\n    EVENTS.append('setup')\n    yield\n"
        "    EVENTS.append('teardown')\n\n"
        "def pytest_sessionfinish(session):\n    print('events:', EVENTS)\n",
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-s")
    result.assert_outcomes(passed=2)
    assert "events: ['setup', 'teardown', 'setup', 'teardown']" in result.stdout.str()


def test_usefixtures_names_fixtures_for_one_scenario(pytester: pytest.Pytester) -> None:
    make(
        pytester,
        "import pytest\nimport bookings\n\n"
        "@pytest.fixture\ndef clean_bookings():\n    bookings.KNOWN.clear()\n",
    )
    (pytester.path / "scenario_b.yaml").write_text(
        scenario("BK-1001", "usefixtures: [clean_bookings]\n")
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


def test_an_unknown_fixture_is_a_clear_error(pytester: pytest.Pytester) -> None:
    make(pytester, "")
    (pytester.path / "scenario_a.yaml").write_text(
        scenario("BK-0999", "usefixtures: [no_such_fixture]\n")
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*fixture 'no_such_fixture' not found*"])


def test_usefixtures_takes_fixture_names_only() -> None:
    from openprogram_testing.scenarios import ScenarioError, parse_scenario

    with pytest.raises(ScenarioError) as info:
        parse_scenario("prompt: hi\nscript: [x]\nusefixtures: ['a b']\n", "s.yaml")
    assert "usefixtures[0]" in str(info.value)
