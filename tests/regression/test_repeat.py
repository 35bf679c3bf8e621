"""``op_repeat``: a test run n times passes at its threshold and fails under it, with its pass
rate, pass@k and pass^k in the terminal, also under pytest-xdist; tested against the emulator
with a responder that answers differently each time."""

from __future__ import annotations

import pytest

from openprogram_testing.frontends.pytest.repeat import pass_at_k, pass_hat_k

pytest_plugins = ["pytester"]

SUITE = """
import itertools

import pytest

from openprogram.providers.openai_chat import OpenAIChatProvider
from openprogram_testing import run_loop_sync

ANSWERS = itertools.count()


def flaky(request):
    # deliberately nondeterministic from the test's point of view: the same prompt, a
    # different answer every other time
    return "yes" if next(ANSWERS) % 2 == 0 else "no"


@pytest.mark.op_repeat(4, min_pass={min_pass})
def test_live_agent(provider_emulator):
    provider_emulator.add(flaky)
    provider = OpenAIChatProvider(api_key="test", base_url=provider_emulator.openai_base_url)
    trace = run_loop_sync(provider, "Is it?")
    assert trace.final_text == "yes"


@pytest.mark.op_repeat(3)
def test_steady():
    assert True
"""


@pytest.fixture(autouse=True)
def _ini(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")


def test_it_passes_at_its_threshold(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.format(min_pass=2))
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "*openprogram pass rates (op_repeat)*",
        "test_suite.py::test_live_agent: 2/4 runs passed (50 %, min_pass 2), pass@4 1.00, pass^4 0.00",
        "test_suite.py::test_steady: 3/3 runs passed (100 %, min_pass 3), pass@3 1.00, pass^3 1.00",
    ])  # fmt: skip


def test_it_fails_under_its_threshold_and_shows_a_failing_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE.format(min_pass=3))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([
        "*op_repeat: 2/4 runs passed (50 %, min_pass 3)*: fewer than min_pass=3*",
        "*last failing run:*",
        "*assert 'no' == 'yes'*",
    ])  # fmt: skip


def test_it_works_under_xdist_and_the_html_report_shows_it(pytester: pytest.Pytester) -> None:
    import json
    import re

    pytester.makepyfile(test_suite=SUITE.format(min_pass=2))
    out = pytester.path / "r.html"
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist", "--openprogram-html", str(out))
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_live_agent: 2/4 runs passed (50 %, min_pass 2)*"])
    found = re.search(
        r'<script type="application/json" id="summary">(.*?)</script>', out.read_text()
    )
    assert found is not None
    rows = {r["name"].split("::")[-1]: r for r in json.loads(found.group(1))}
    assert rows["test_live_agent"]["repeat"].startswith("2/4 runs passed (50 %")


def test_a_bad_marker_fails_its_test_with_the_reason(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="import pytest\n\n@pytest.mark.op_repeat(2, min_pass=3)\ndef test_x():\n    pass\n"
        "\n@pytest.mark.op_repeat(0)\ndef test_y():\n    pass\n"
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*min_pass and k must be at most n=2*", "*n must be a whole number*"]
    )


def test_the_estimates() -> None:
    assert pass_at_k(4, 2, 1) == pytest.approx(0.5) and pass_hat_k(4, 2, 1) == pytest.approx(0.5)
    assert pass_at_k(4, 2, 3) == 1.0 and pass_hat_k(4, 2, 3) == 0.0
    assert pass_at_k(5, 0, 2) == 0.0 and pass_hat_k(5, 5, 5) == 1.0
    assert pass_at_k(10, 3, 2) == pytest.approx(1 - 21 / 45)


LATE_SKIPS = """
import itertools

import pytest

COUNTERS = {name: itertools.count() for name in ("skip", "xfail", "setup", "ok")}


@pytest.fixture
def late_skip():
    if next(COUNTERS["setup"]) > 0:
        pytest.skip("no quota left")


@pytest.mark.op_repeat(3)
def test_fails_then_skips():
    if next(COUNTERS["skip"]) == 0:
        assert False, "the first run failed"
    pytest.skip("rate limited")


@pytest.mark.op_repeat(3)
def test_fails_then_xfails():
    if next(COUNTERS["xfail"]) == 0:
        assert False, "the first run failed"
    pytest.xfail("known flake")


@pytest.mark.op_repeat(2)
def test_fails_then_skips_in_setup(late_skip):
    assert False, "the first run failed"


@pytest.mark.op_repeat(3, min_pass=1)
def test_passes_then_skips():
    if next(COUNTERS["ok"]) > 0:
        pytest.skip("rate limited")


@pytest.mark.op_repeat(3)
def test_skipped_at_once():
    pytest.skip("not today")
"""


def test_a_skip_or_xfail_after_a_failed_run_leaves_a_failure(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_late=LATE_SKIPS)
    result = pytester.runpytest("-rA")
    result.assert_outcomes(passed=1, failed=3, skipped=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines_random([
        "*test_late.py::test_fails_then_skips: 0/3 runs passed*",
        "*test_late.py::test_fails_then_xfails: 0/3 runs passed*",
        "*test_late.py::test_fails_then_skips_in_setup: 0/2 runs passed*",
        "*test_late.py::test_passes_then_skips: 1/3 runs passed (33 %, min_pass 1)*",
        "FAILED test_late.py::test_fails_then_skips*",
        "FAILED test_late.py::test_fails_then_xfails*",
        "FAILED test_late.py::test_fails_then_skips_in_setup*",
        "SKIPPED*not today*",
    ])  # fmt: skip
    assert "XFAIL" not in result.stdout.str()
    assert result.stdout.str().count("the first run failed") >= 3
