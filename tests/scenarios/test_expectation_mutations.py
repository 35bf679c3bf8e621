"""Every expectation can fail: a mutation test over the bundled scenarios.

Each bundled scenario runs once (in process); then every ``expect:`` value it sets is perturbed
in turn (a wrong count, a changed text, a flipped flag, a dropped event...) and judged on that
run the way the runner judges it.  Every perturbation must fail, with a failure line naming the
key.  An expectation that no perturbation can fail checks nothing: a silent pass.

The keys come from the scenario model itself (``Expectations`` and ``ToolResultExpect``), so a
key added later fails this module until it has a row in ``PERTURBATIONS`` (a function
``(expected value, trace) -> wrong values``) and a bundled scenario that sets it.  The
``assert_*`` helpers of the front door get the same treatment (``HELPERS``).
"""

from __future__ import annotations

import inspect
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import openprogram_testing
from openprogram_testing.frontends.scenarios.expectations import check_expectations
from openprogram_testing.frontends.scenarios.model import Expectations, ToolResultExpect
from openprogram_testing.frontends.scenarios.snapshots import check_snapshot, snapshot_path
from openprogram_testing.scenarios import Scenario, load_scenario, run_scenario

BUNDLED = Path(__file__).resolve().parents[2] / "scenarios"
TERMINATIONS = ("completed", "max_iterations", "error", "aborted")
NEVER = "(?!)"
"""A regular expression that matches nothing."""
EDIT_STORED = object()
"""The perturbation of ``snapshot: true``: the stored snapshot is edited (in a copy)."""

Perturbation = Callable[[Any, Any], list[Any]]
"""``(expected value, trace) -> wrong values`` for one key; each must fail the scenario."""


def _changed_text(value: str, _trace: Any = None) -> list[Any]:
    return [value + " (changed)", value[:-1]] if value else ["(changed)"]


def _not_contained(value: str, _trace: Any) -> list[Any]:
    """``error_text`` is a substring of the error: wrong values are texts the error lacks."""
    return [value + " (changed)", "(changed) " + value]


def _count(value: int, _trace: Any) -> list[Any]:
    return [value + 1, value - 1] if value > 0 else [value + 1]


def _flip(value: bool, _trace: Any) -> list[Any]:
    return [not value]


def _other_termination(value: str, _trace: Any) -> list[Any]:
    return [t for t in TERMINATIONS if t != value]


def _never_matches(_value: str, _trace: Any) -> list[Any]:
    return [NEVER]


def _sequence(value: list[Any], _trace: Any) -> list[Any]:
    """One element dropped, one repeated, and two neighbours that differ swapped."""
    if not value:
        return [["agent_start"]]
    out = [value[:-1], [*value, value[-1]]]
    for i in range(len(value) - 1):
        if value[i] != value[i + 1]:
            out.append([*value[:i], value[i + 1], value[i], *value[i + 2 :]])
            break
    return out


def _request_roles(value: list[list[str]], trace: Any) -> list[Any]:
    out = _sequence(value, trace)
    if value:
        out.append([*value[:-1], [*value[-1], "user"]])
    return out


TOOL_RESULT_PERTURBATIONS: dict[str, Perturbation] = {
    "name": _changed_text,
    "is_error": _flip,
    "skipped": _flip,
    "text": _changed_text,
    "text_matches": _never_matches,
}
"""Wrong values for each field of one ``expect.tool_results`` entry."""


def _tool_results(value: list[dict[str, Any]], trace: Any) -> list[Any]:
    out: list[Any] = [value[:-1], [*value, {"name": "one_more"}]] if value else [[{}]]
    for i, entry in enumerate(value):
        for field, given in entry.items():
            for wrong in TOOL_RESULT_PERTURBATIONS[field](given, trace):
                out.append([*value[:i], {**entry, field: wrong}, *value[i + 1 :]])
    return out


def _wrong_argument(value: Any) -> Any:
    if isinstance(value, dict) and "$regex" in value:
        return {**value, "$regex": NEVER}
    if isinstance(value, dict) and "$approx" in value:
        return {**value, "$approx": value["$approx"] + 1000}
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    return f"{value} (changed)"


def _trajectory(value: dict[str, Any], _trace: Any) -> list[Any]:
    """Each expected call renamed, and each of its listed arguments made wrong."""
    out = []
    calls = value["calls"]
    for i, c in enumerate(calls):
        named = c if isinstance(c, dict) else {"name": c}
        wrong = [{**named, "name": named["name"] + "_changed"}]
        for key, arg in (named.get("args") or {}).items():
            wrong.append({**named, "args": {**named["args"], key: _wrong_argument(arg)}})
        out += [{**value, "calls": [*calls[:i], w, *calls[i + 1 :]]} for w in wrong]
    return out


def _usage(value: dict[str, Any], trace: Any) -> list[Any]:
    """Each budget set just below what the run used, and the prices made dear."""
    from openprogram_testing.judges.usage import usage_of

    used = usage_of(trace)
    actual = {
        "max_input_tokens": used.input_tokens,
        "max_output_tokens": used.output_tokens,
        "max_cache_read_tokens": used.cache_read_tokens,
        "max_cache_write_tokens": used.cache_write_tokens,
        "max_total_tokens": used.total_tokens,
        "max_model_calls": used.model_calls,
    }
    out = []
    for key in value:
        if key in actual:
            assert actual[key] > 0, f"expect.usage.{key}: the run used none, so no budget fails"
            out.append({**value, key: actual[key] - 1})
    if "max_cost" in value:
        dear = {m: {k: p * 1e6 for k, p in row.items()} for m, row in value["prices"].items()}
        out.append({**value, "prices": dear})
    return out


def _snapshot(value: bool, _trace: Any) -> list[Any]:
    return [EDIT_STORED] if value else []


def _runs(value: dict[str, dict[str, Any]], ran: Any) -> list[Any]:
    """Each nested run's own expectations perturbed in turn (with that run's trace), and each
    path made one no run has."""
    out: list[Any] = []
    for path, expect in value.items():
        out.append({**{p: e for p, e in value.items() if p != path}, path + "_changed": expect})
        nested = ran.find(path).trace
        for key, given in expect.items():
            for wrong in PERTURBATIONS[key](given, nested):
                out.append({**value, path: {**expect, key: wrong}})
    return out


def _approvals(value: list[dict[str, Any]], _trace: Any) -> list[Any]:
    """A decision left out, one too many, and each entry with another outcome or tool."""
    out: list[Any] = (
        [value[:-1], [*value, {"outcome": "approved"}]] if value else [[{"outcome": "approved"}]]
    )
    for i, entry in enumerate(value):
        other = "approved" if entry["outcome"] != "approved" else "denied"
        out.append([*value[:i], {**entry, "outcome": other}, *value[i + 1 :]])
        if "tool" in entry:
            renamed = {**entry, "tool": entry["tool"] + "_changed"}
            out.append([*value[:i], renamed, *value[i + 1 :]])
    return out


def _spans(value: list[Any], _trace: Any) -> list[Any]:
    """A span tree with a child left out, one child renamed, and one run too many."""
    out: list[Any] = [[*value, "invoke_agent"]]
    for i, entry in enumerate(value):
        if isinstance(entry, dict):
            ((name, children),) = entry.items()
            if children:
                out.append([*value[:i], {name: children[:-1]}, *value[i + 1 :]])
                renamed = [*children[:-1], f"{children[-1]} changed"]
                out.append([*value[:i], {name: renamed}, *value[i + 1 :]])
    return out


PERTURBATIONS: dict[str, Perturbation] = {
    "termination": _other_termination,
    "model_calls": _count,
    "tool_results": _tool_results,
    "final_text": _changed_text,
    "final_text_matches": _never_matches,
    "error_text": _not_contained,
    "undelivered": _count,
    "delivered": _count,
    "events": _sequence,
    "request_roles": _request_roles,
    "snapshot": _snapshot,
    "trajectory": _trajectory,
    "usage": _usage,
    "runs": _runs,
    "approvals": _approvals,
    "spans": _spans,
}
"""Wrong values for each ``expect`` key: a new key needs a row here."""


# -- the bundled runs ------------------------------------------------------------------------


def _bundled() -> list[Path]:
    """The bundled scenarios that run on a script.  Those replaying a cassette are judged by
    the same checks over the same kind of trace, but load the provider SDKs and vcrpy (seconds
    of imports): their replay is the cassette tests' subject."""
    return [p for p in sorted(BUNDLED.glob("*.yaml")) if load_scenario(p).cassette is None]


@pytest.fixture(scope="module")
def ran() -> dict[str, tuple[Scenario, Any]]:
    """Every bundled scenario and what its one run gave the runner's checks: the trace, or the
    tree of a run through ``Runtime.exec`` (each scenario must pass as it stands)."""
    out = {}
    for path in _bundled():
        scenario = load_scenario(path)
        result = run_scenario(scenario)
        assert result.passed, result.failure_text
        out[path.name] = (scenario, result.tree if result.tree is not None else result.trace)
    return out


@pytest.fixture(scope="module")
def runs(ran: dict[str, tuple[Scenario, Any]]) -> dict[str, tuple[Scenario, Any]]:
    """The bundled scenarios with the trace of their outermost run (what a helper judges)."""
    return {name: (s, getattr(r, "trace", r)) for name, (s, r) in ran.items()}


def _judge(scenario: Scenario, trace: Any, expect: dict[str, Any], tmp: Path) -> list[str]:
    """The failure lines of ``trace`` under ``expect``, as the runner finds them
    (``check_expectations``, then the snapshot check)."""
    edited = expect.get("snapshot") is EDIT_STORED
    data = {**expect, "snapshot": True} if edited else expect
    judged = scenario.model_copy(update={"expect": Expectations.model_validate(data)})
    if judged.expect.spans != scenario.expect.spans:
        # the span tree is captured while the scenario runs: judged by running it again
        return run_scenario(judged).failures
    failures = check_expectations(judged, trace)
    if judged.expect.snapshot:
        if edited:
            judged = _with_edited_snapshot(scenario, tmp)
        problem, _ = check_snapshot(judged, trace)
        failures += [problem] if problem else []
    return failures


def _with_edited_snapshot(scenario: Scenario, tmp: Path) -> Scenario:
    """A copy of ``scenario``'s file and stored snapshot in ``tmp``, one stored line changed."""
    source, stored = scenario.path, snapshot_path(scenario)
    assert source is not None and stored is not None and stored.is_file()
    copy = tmp / source.name
    shutil.copy(source, copy)
    copied = load_scenario(copy)
    target = snapshot_path(copied)
    assert target is not None
    target.parent.mkdir(parents=True, exist_ok=True)
    lines = stored.read_text(encoding="utf-8").splitlines()
    target.write_text("\n".join([*lines[:-1], lines[-1] + " (changed)"]) + "\n", encoding="utf-8")
    return copied


def _mutations(scenario: Scenario, trace: Any) -> Iterator[tuple[str, Any, dict[str, Any]]]:
    """``(key, wrong value, whole perturbed expect)`` for every key the scenario sets."""
    expect = scenario.expect.model_dump(mode="json", exclude_unset=True, by_alias=True)
    for key, value in expect.items():
        for wrong in PERTURBATIONS[key](value, trace):
            yield key, wrong, {**expect, key: wrong}


# -- the tests ---------------------------------------------------------------------------------


def test_every_expectation_key_has_a_perturbation() -> None:
    missing = sorted(set(Expectations.model_fields) - set(PERTURBATIONS))
    assert not missing, (
        f"expect key(s) {missing} have no perturbation: add a row to PERTURBATIONS in "
        f"{Path(__file__).name} (wrong values that must fail a scenario setting the key)"
    )
    fields = sorted(set(ToolResultExpect.model_fields) - set(TOOL_RESULT_PERTURBATIONS))
    assert not fields, (
        f"expect.tool_results field(s) {fields} have no perturbation: add a row to "
        "TOOL_RESULT_PERTURBATIONS"
    )
    stale = sorted(set(PERTURBATIONS) - set(Expectations.model_fields))
    assert not stale, f"PERTURBATIONS names key(s) {stale} the scenario model no longer has"


def test_every_expectation_key_is_set_by_a_bundled_scenario(
    runs: dict[str, tuple[Scenario, Any]],
) -> None:
    used: set[str] = set()
    fields: set[str] = set()
    for scenario, _ in runs.values():
        used |= scenario.expect.model_fields_set
        for entry in scenario.expect.tool_results or []:
            fields |= entry.model_fields_set
    unused = sorted(set(Expectations.model_fields) - used)
    assert not unused, f"no bundled scenario sets expect key(s) {unused}: add one to scenarios/"
    unused = sorted(set(ToolResultExpect.model_fields) - fields)
    assert not unused, f"no bundled scenario sets expect.tool_results field(s) {unused}"


def test_every_perturbation_fails_naming_its_key(
    ran: dict[str, tuple[Scenario, Any]], tmp_path: Path
) -> None:
    silent: list[str] = []
    judged = 0
    for name, (scenario, trace) in ran.items():
        untouched = scenario.expect.model_dump(mode="json", exclude_unset=True, by_alias=True)
        assert _judge(scenario, trace, untouched, tmp_path) == [], name
        for key, wrong, expect in _mutations(scenario, trace):
            judged += 1
            failures = _judge(scenario, trace, expect, tmp_path)
            if not any(f.startswith(f"expect.{key}") for f in failures):
                shown = "the stored snapshot edited" if wrong is EDIT_STORED else repr(wrong)
                silent.append(f"{name}: expect.{key} = {shown} -> {failures or 'passed'}")
    assert not silent, "perturbations that did not fail naming their key:\n" + "\n".join(silent)
    assert judged > 300


def test_a_perturbed_scenario_fails_through_the_runner(
    ran: dict[str, tuple[Scenario, Any]],
) -> None:
    """One perturbation per key, run end to end: the runner reports the same key."""
    seen: set[str] = set()
    for scenario, trace in ran.values():
        for key, wrong, expect in _mutations(scenario, trace):
            if key in seen or wrong is EDIT_STORED or scenario.cassette is not None:
                continue
            seen.add(key)
            perturbed = scenario.model_copy(update={"expect": Expectations.model_validate(expect)})
            result = run_scenario(perturbed)
            assert not result.passed, (scenario.display_name, key, wrong)
            assert any(f.startswith(f"expect.{key}") for f in result.failures), result.failures
    assert seen == set(PERTURBATIONS) - {"snapshot"}


# -- the assert_* helpers ----------------------------------------------------------------------

HelperCase = tuple[str, dict[str, Any], dict[str, Any], str]
"""``(argument, right arguments, wrong arguments, what the failure must name)``."""


def _terminated(trace: Any) -> list[HelperCase]:
    right = {"termination": trace.termination}
    return [
        ("termination", right, {"termination": t}, "termination")
        for t in TERMINATIONS
        if t != trace.termination
    ]


def _model_calls(trace: Any) -> list[HelperCase]:
    n = trace.model_calls
    return [("n", {"n": n}, {"n": n + 1}, "model call")]


def _skipped(trace: Any) -> list[HelperCase]:
    got = [r.tool_call_id for r in trace.skipped]
    wrong = [got[:-1]] if got else [["call_never_made"]]
    return [("ids_or_names", {"ids_or_names": got}, {"ids_or_names": w}, "skipped") for w in wrong]


def _tool_results_helper(trace: Any) -> list[HelperCase]:
    results = trace.tool_results
    full = [
        {"name": r.tool_name, "id": r.tool_call_id, "is_error": r.is_error}
        | {"skipped": r.skipped, "text": r.text, "contains": r.text[:3]}
        | {"match": "^" + __import__("re").escape(r.text[:3])}
        for r in results
    ]
    wrong_values: dict[str, Callable[[Any], Any]] = {
        "name": lambda v: v + "_changed",
        "id": lambda v: v + "_changed",
        "is_error": lambda v: not v,
        "skipped": lambda v: not v,
        "text": lambda v: v + " (changed)",
        "contains": lambda v: v + "\u2063 not there",
        "match": lambda _v: NEVER,
    }
    cases: list[HelperCase] = []
    if full:
        cases.append(("expected", {"expected": full}, {"expected": full[:-1]}, "tool result"))
    for i, entry in enumerate(full):
        for key, make in wrong_values.items():
            wrong = [*full[:i], {**entry, key: make(entry[key])}, *full[i + 1 :]]
            cases.append((f"expected[].{key}", {"expected": full}, {"expected": wrong}, key))
    return cases


def _final_text(trace: Any) -> list[HelperCase]:
    text = trace.final_text
    import re

    return [
        ("text", {"text": text}, {"text": text + " (changed)"}, "final text"),
        ("match", {"match": "^" + re.escape(text) + "$"}, {"match": NEVER}, "does not match"),
    ]


def _recovered(_trace: Any) -> list[HelperCase]:
    return []  # no expected argument: it judges the run itself


def _trajectory_helper(trace: Any) -> list[HelperCase]:
    made = [  # a call whose arguments were not JSON is expected by its name alone
        {"name": c.name} if c.raw_arguments is not None else {"name": c.name, "args": c.arguments}
        for c in trace.tool_calls
    ]
    if not made:
        return []
    renamed = [{**made[0], "name": made[0]["name"] + "_changed"}, *made[1:]]
    out: list[HelperCase] = [("expected", {"expected": made}, {"expected": renamed}, "")]
    if made[0].get("args"):
        key = next(iter(made[0]["args"]))
        wrong = {**made[0]["args"], key: _wrong_argument(made[0]["args"][key])}
        out.append(
            ("expected[].args", {"expected": made}, {"expected": [{**made[0], "args": wrong}]}, key)
        )
    out.append(("mode", {"expected": made[1:], "mode": "subset"}, {"expected": made[1:]}, ""))
    out.append(("args", {"expected": made, "args": "exact"}, {"expected": made[:0]}, ""))
    return out


def _usage_helper(trace: Any) -> list[HelperCase]:
    from openprogram_testing.judges.usage import usage_of

    used = usage_of(trace)
    budgets = {
        "max_input_tokens": used.input_tokens,
        "max_output_tokens": used.output_tokens,
        "max_cache_read_tokens": used.cache_read_tokens,
        "max_cache_write_tokens": used.cache_write_tokens,
        "max_total_tokens": used.total_tokens,
        "max_model_calls": used.model_calls,
    }
    cases = [
        (key, {key: value}, {key: value - 1}, "") for key, value in budgets.items() if value > 0
    ]
    if used.total_tokens:
        prices = {"*": {"input": 1.0, "output": 1.0, "cache_read": 1.0, "cache_write": 1.0}}
        cases.append(
            (
                "max_cost",
                {"max_cost": 1.0, "prices": prices},
                {"max_cost": 0.0, "prices": prices},
                "",
            )
        )
        dear = {"*": {k: v * 1e6 for k, v in prices["*"].items()}}
        cases.append(
            ("prices", {"max_cost": 1.0, "prices": prices}, {"max_cost": 1.0, "prices": dear}, "")
        )
    return cases


def _approvals_helper(trace: Any) -> list[HelperCase]:
    from openprogram_testing.judges.approvals import approval_decisions

    made = [(d.tool_name, d.outcome) for d in approval_decisions(trace)]
    if not made:
        return [("expected", {"expected": []}, {"expected": ["approved"]}, "expected approvals")]
    other = "approved" if made[0][1] != "approved" else "denied"
    return [
        ("expected", {"expected": made}, {"expected": [(made[0][0], other), *made[1:]]}, ""),
        ("expected", {"expected": made}, {"expected": made[:-1]}, "expected approvals"),
    ]


HELPERS: dict[str, Callable[[Any], list[HelperCase]]] = {
    "assert_terminated": _terminated,
    "assert_model_calls": _model_calls,
    "assert_skipped": _skipped,
    "assert_tool_results": _tool_results_helper,
    "assert_final_text": _final_text,
    "assert_recovered": _recovered,
    "assert_trajectory": _trajectory_helper,
    "assert_usage": _usage_helper,
    "assert_approvals": _approvals_helper,
}
"""Right and wrong expected arguments for each ``assert_*`` helper judging a run."""

NOT_ON_A_RUN = {
    "assert_retries": "judges an emulator's requests (tests/emulator), not a run",
    "assert_cache_prefix_kept": (
        "takes no expected value to perturb; it fails on a moved prefix in "
        "tests/harness/test_cache_prefix.py"
    ),
}

UNJUDGED_PARAMETERS = {"subject", "run", "nested"}
"""Parameters that pick what is judged rather than say what is expected."""


def _helper(name: str) -> Any:
    return getattr(openprogram_testing, name)


def test_every_assert_helper_has_perturbations_for_its_arguments(
    runs: dict[str, tuple[Scenario, Any]],
) -> None:
    helpers = {n for n in openprogram_testing.__all__ if n.startswith("assert_")}
    missing = sorted(helpers - set(HELPERS) - set(NOT_ON_A_RUN))
    assert not missing, f"assert helper(s) {missing} have no row in HELPERS"
    covered: dict[str, set[str]] = {name: set() for name in HELPERS}
    for _, trace in runs.values():
        for name, cases in HELPERS.items():
            covered[name] |= {case[0].split("[")[0] for case in cases(trace)}
    for name in HELPERS:
        expected = set(inspect.signature(_helper(name)).parameters) - UNJUDGED_PARAMETERS
        left = sorted(expected - covered[name])
        assert not left, f"{name}: argument(s) {left} are never perturbed by HELPERS[{name!r}]"


def test_every_wrong_helper_argument_fails(runs: dict[str, tuple[Scenario, Any]]) -> None:
    silent: list[str] = []
    for scenario_name, (_, trace) in runs.items():
        for name, cases in HELPERS.items():
            helper = _helper(name)
            for argument, right, wrong, named in cases(trace):
                helper(trace, **right)  # the right value holds
                try:
                    helper(trace, **wrong)
                except AssertionError as exc:
                    if named not in str(exc):
                        silent.append(f"{scenario_name}: {name} {argument}: no {named!r} in {exc}")
                else:
                    silent.append(f"{scenario_name}: {name}({argument}={wrong}) passed")
    assert not silent, "wrong helper arguments that did not fail:\n" + "\n".join(silent[:20])


def test_a_helper_given_nothing_to_check_refuses() -> None:
    from openprogram_testing import ScriptedProvider, assert_final_text, run_loop_sync

    run = run_loop_sync(ScriptedProvider(["hi"]), "hello")
    with pytest.raises(ValueError, match="text= or match="):
        assert_final_text(run)
