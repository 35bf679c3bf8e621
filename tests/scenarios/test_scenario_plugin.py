"""pytest collects scenario files as test items (via the installed pytest11 plugin)."""

from __future__ import annotations

import pytest

from tests.scenarios._scenarios import ONE_TOOL_CALL

pytest_plugins = ["pytester"]

INI = "[pytest]\nasyncio_default_fixture_loop_scope = function\n"

PASSING = ONE_TOOL_CALL + "expect: {termination: completed, tool_results: [{name: t, text: ok}]}\n"


def test_scenario_files_become_items_with_readable_failures(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makefile(".yaml", scenario_pass=PASSING)
    pytester.makefile(".scenario.yaml", other=PASSING)
    pytester.makefile(".yaml", plain="just: data\n")  # not a scenario name: ignored
    pytester.makefile(
        ".yaml", scenario_bad="prompt: hi\nscript: [hello]\nexpect: {final_text: bye}\n"
    )
    pytester.makefile(
        ".yaml", scenario_broken="prompt: hi\nscript: [x]\nexpect: {model_calls: lots}\n"
    )
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*scenario_pass.yaml::pass PASSED*"])
    result.stdout.fnmatch_lines(["*other.scenario.yaml::other PASSED*"])
    # a failed expectation: which one, then the timeline (not the plugin's source)
    result.stdout.fnmatch_lines(
        [
            "*scenario: bad*",
            "scenario 'bad' failed (*scenario_bad.yaml)",
            "  - expect.final_text: expected 'bye', got 'hello'",
            "timeline:",
            "*agent_start",
        ]
    )
    # an invalid file fails its item with the positioned message
    result.stdout.fnmatch_lines(
        [
            "invalid scenario file:",
            "*scenario_broken.yaml:3:23: expect.model_calls: expected an integer, got 'lots'",
        ]
    )
    out = result.stdout.str()
    assert "Traceback" not in out and "def runtest" not in out


def test_ini_option_adds_glob_patterns(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI + "openprogram_scenarios =\n    flows/*.yaml\n")
    flows = pytester.mkdir("flows")
    (flows / "checkout.yaml").write_text(PASSING)
    pytester.makefile(".yaml", elsewhere=PASSING)  # not matched by the glob
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*flows/checkout.yaml::checkout PASSED*"])


def test_snapshot_update_flag_writes_scenario_snapshots(pytester: pytest.Pytester) -> None:
    pytester.makeini(INI)
    pytester.makefile(".yaml", scenario_snap="prompt: hi\nscript: [x]\nexpect: {snapshot: true}\n")
    result = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*expect.snapshot: no snapshot stored at *scenario_snap/snap.trace.txt; run with "
            "--snapshot-update to write it*"
        ]
    )
    pytester.runpytest_inprocess("-p", "no:cacheprovider", "--snapshot-update").assert_outcomes(
        passed=1
    )
    stored = pytester.path / "__snapshots__" / "scenario_snap" / "snap.trace.txt"
    assert stored.is_file()
    # syrupy's store: the snapshot is used (not reported or deleted as unused), and compared
    again = pytester.runpytest_inprocess("-p", "no:cacheprovider", "--snapshot-update")
    again.assert_outcomes(passed=1)
    assert stored.is_file()
    pytester.makefile(".yaml", scenario_snap="prompt: hi\nscript: [y]\nexpect: {snapshot: true}\n")
    changed = pytester.runpytest_inprocess("-p", "no:cacheprovider")
    changed.assert_outcomes(failed=1)
    changed.stdout.fnmatch_lines(
        ["*expect.snapshot: the trace differs from *(run with --snapshot-update to accept)*"]
    )
