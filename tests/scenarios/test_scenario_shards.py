"""One suite as shards on several CI jobs: ``run --shard I/N`` deals every scenario file to
exactly one shard, each shard writes its run records (``--records``), and ``report merge``
combines them into the report the unsharded run writes: the same tests, runs and coverage
counts, nothing lost and nothing counted twice, with the coverage gate applied to the merged
result.  A missing or repeated shard, a test in two inputs and a damaged records file are
refused by name."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from openprogram_testing.frontends.cli.commands import UsageProblem
from openprogram_testing.frontends.cli.main import main
from openprogram_testing.frontends.cli.shards import parse_shard, select
from openprogram_testing.frontends.report.merge import (
    Records,
    RecordsError,
    coverage_of,
    merge,
    read_records,
    records_from,
)

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = [
    "scenario_01_text_only.yaml",
    "scenario_03_steering_skips_rest_of_batch.yaml",
    "scenario_04_provider_error.yaml",
    "scenario_06_follow_up.yaml",
    "scenario_16_unknown_tool.yaml",
    "scenario_19_raising_tool.yaml",
    "scenario_26_length_stop.yaml",
]
"""Scenarios exercising different loop behaviours, so each shard covers only some."""


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err
    return code, out, err


@pytest.fixture
def suite(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The bundled scenarios above in a project of their own (the working directory), one of
    them in a sub-folder, so shards hold different folders."""
    (tmp_path / "pyproject.toml").write_text("")
    folder = tmp_path / "flows"
    (folder / "deep").mkdir(parents=True)
    for i, name in enumerate(BUNDLED):
        target = folder / "deep" / name if i == 2 else folder / name
        shutil.copy(ROOT / "scenarios" / name, target)
    monkeypatch.chdir(tmp_path)
    return folder


def _by_test(records: Records) -> dict[str, tuple[str, list[dict[str, int]]]]:
    """What must agree between the unsharded run and the merge: per test id, its outcome and
    each run's behaviour counts."""
    return {
        t["nodeid"]: (t["outcome"], [dict(r["behaviours"]) for r in t["runs"]])
        for t in records.tests
    }


def test_shards_partition_the_files(tmp_path: Path) -> None:
    files = [tmp_path / f"d{i % 3}" / f"scenario_{i}.yaml" for i in range(11)]
    for count in range(1, 6):
        shards = [select(files, f"{i}/{count}") for i in range(1, count + 1)]
        dealt = [f for s in shards for f in s.files]
        assert sorted(dealt) == sorted(files)  # each file in exactly one shard
        sizes = [len(s.files) for s in shards]
        assert max(sizes) - min(sizes) <= 1
        assert len({s.suite for s in shards}) == 1
    # the same shard whatever order the files were found in; another suite, another print
    assert select(files, "2/3") == select(list(reversed(files)), "2/3")
    assert select(files[:-1], "2/3").suite != select(files, "2/3").suite


@pytest.mark.parametrize(
    "spec",
    ["0/2", "3/2", "1/0", "a/b", "1", "", "1/2/3", "-1/2", "1/1001", "1/" + "1" * 5000,
     "1/100000000000000000000", f"1/{2**63}"],
)  # fmt: skip
def test_a_shard_that_is_not_i_of_n_is_a_usage_error(spec: str) -> None:
    with pytest.raises(UsageProblem, match="--shard takes I/N"):
        parse_shard(spec)


def test_two_shards_merge_into_the_unsharded_report(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(capsys, "run", "flows", "--records", "full.json", "--html", "full.html")
    assert code == 0, out
    for i in (1, 2):
        code, out, _ = cli(capsys, "run", "flows", "--shard", f"{i}/2", "--records", f"s{i}.json")
        assert code == 0, out
    code, out, _ = cli(
        capsys, "report", "merge", "s1.json", "s2.json", "--html", "merged.html",
        "--records", "merged.json", "--coverage",
    )  # fmt: skip
    assert code == 0, out
    assert f"from shards 1/2, 2/2: {len(BUNDLED)} tests ({len(BUNDLED)} passed)" in out
    full, merged = read_records("full.json"), read_records("merged.json")
    shard1, shard2 = read_records("s1.json"), read_records("s2.json")
    assert 0 < len(shard1.tests) < len(BUNDLED) and 0 < len(shard2.tests) < len(BUNDLED)
    assert _by_test(merged) == _by_test(full)
    assert len(merged.tests) == len(BUNDLED) and merged.shard is None
    assert merged.coverage() == full.coverage()
    assert merged.coverage().runs == len(BUNDLED)
    assert full.coverage().summary_line() in out
    page = Path("merged.html").read_text(encoding="utf-8")
    assert all(t["nodeid"] in page for t in full.tests)
    assert full.coverage().summary_line() in page
    # what the comparison above catches: one shard's test lost, or one counted twice
    lost = Records(tests=shard2.tests[1:], shard=shard2.shard, source="s2.json")
    assert _by_test(merge([shard1, lost]).records) != _by_test(full)
    twice = Records(tests=[*shard2.tests, shard1.tests[0]], shard=shard2.shard, source="s2")
    with pytest.raises(RecordsError, match="counted twice"):
        merge([shard1, twice])


def test_the_coverage_gate_judges_the_merged_suite(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in (1, 2):
        cli(capsys, "run", "flows", "--shard", f"{i}/2", "--records", f"s{i}.json")
    shards = [read_records(f"s{i}.json") for i in (1, 2)]
    merged = merge(shards).coverage.percent
    alone = max(coverage_of(s.tests).percent for s in shards)
    assert alone < merged  # each shard alone misses behaviours the other one covers
    threshold = f"{(alone + merged) / 2:.2f}"
    code, out, _ = cli(capsys, "report", "merge", "s1.json", "s2.json",
                       "--coverage-fail-under", threshold)  # fmt: skip
    assert code == 0 and "FAIL" not in out
    code, out, _ = cli(capsys, "report", "merge", "s1.json", "s2.json",
                       "--coverage-fail-under", f"{merged + 1:.2f}")  # fmt: skip
    assert code == 1 and "FAIL: loop-behaviour coverage" in out and "never exercised" in out


def test_a_missing_or_repeated_shard_is_refused(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for i in (1, 2, 3):
        cli(capsys, "run", "flows", "--shard", f"{i}/3", "--records", f"s{i}.json")
    code, _, err = cli(capsys, "report", "merge", "s1.json", "s3.json")
    assert code == 2 and "shard 2/3 missing" in err
    code, _, err = cli(capsys, "report", "merge", "s1.json", "s2.json", "s2.json", "s3.json")
    assert code == 2 and "shard 2/3 is also s2.json: given twice" in err
    cli(capsys, "run", "flows", "--shard", "1/2", "--records", "other.json")
    code, _, err = cli(capsys, "report", "merge", "s1.json", "s2.json", "s3.json", "other.json")
    assert code == 2 and "other.json: is shard 1/2 of another run" in err
    cli(capsys, "run", "flows", "--records", "whole.json")
    code, _, err = cli(capsys, "report", "merge", "s1.json", "s2.json", "s3.json", "whole.json")
    assert code == 2 and "whole.json: holds no shard" in err


def test_sessions_without_shards_merge_unless_a_test_repeats(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cli(capsys, "run", "flows", "-k", "text_only", "--records", "a.json")
    cli(capsys, "run", "flows", "-k", "not text_only", "--records", "b.json")
    code, out, _ = cli(capsys, "report", "merge", "a.json", "b.json", "--records", "m.json")
    assert code == 0 and f"{len(BUNDLED)} tests" in out
    code, _, err = cli(capsys, "report", "merge", "a.json", "b.json", "a.json")
    assert code == 2 and "would be counted twice" in err


def test_a_failing_test_fails_the_merge(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (suite / "scenario_zz_fails.yaml").write_text(
        "prompt: hi\nscript: [x]\nexpect: {final_text: y}\n"
    )
    for i in (1, 2):
        cli(capsys, "run", "flows", "--shard", f"{i}/2", "--records", f"s{i}.json")
    code, out, _ = cli(capsys, "report", "merge", "s1.json", "s2.json", "--records", "m.json")
    assert code == 1 and "1 failed" in out
    failed = [t for t in read_records("m.json").tests if t["outcome"] == "failed"]
    assert len(failed) == 1 and "expect.final_text" in failed[0]["failure"]


def test_more_shards_than_files_leaves_empty_shards_that_still_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    shutil.copy(ROOT / "scenarios" / BUNDLED[0], tmp_path / BUNDLED[0])
    outputs = []
    for i in (1, 2, 3):
        code, out, _ = cli(capsys, "run", ".", "--shard", f"{i}/3", "--records", f"s{i}.json")
        assert code == 0, out
        outputs.append(out)
    assert sum("none of the 1 scenario files" in o for o in outputs) == 2
    code, out, _ = cli(capsys, "report", "merge", "s1.json", "s2.json", "s3.json")
    assert code == 0 and "1 tests (1 passed)" in out


def _records(**changes: Any) -> dict[str, Any]:
    test = {"name": "t", "nodeid": "t.yaml::t", "outcome": "passed", "ms": 1.0,
            "failure": None, "runs": [{"behaviours": {"text_finish": 1}}]}  # fmt: skip
    data: dict[str, Any] = {"kind": "openprogram-run-records", "version": 1, "shard": None,
                            "tests": [test]}  # fmt: skip
    for key, value in changes.items():
        if key in test:
            test[key] = value
        else:
            data[key] = value
    return data


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"kind": "openprogram-scenario-result"}, "not a run records file"),
        ({"version": 2}, "records version 2"),
        ({"tests": {"a": 1}}, "'tests' is not a list"),
        ({"nodeid": 3}, "tests[0].nodeid is not a test id"),
        ({"outcome": "won"}, "tests[0].outcome 'won'"),
        ({"runs": "many"}, "tests[0].runs is not a list"),
        ({"runs": [{"behaviours": {"text_finish": "1"}}]}, "behaviours is not a map"),
        ({"runs": [{"behaviours": {"text_finish": True}}]}, "behaviours is not a map"),
        ({"runs": [{"behaviours": {"text_finish": -1}}]}, "behaviours is not a map"),
        ({"shard": {"index": 3, "count": 2, "suite": "x", "files": 1}}, "is not i/n"),
        ({"shard": {"index": 1, "count": 2}}, "fingerprint"),
        ({"shard": {"index": 1.0, "count": 2, "suite": "x", "files": 1}}, "is not i/n"),
        ({"shard": {"index": 1, "count": 2, "suite": 5, "files": 1}}, "fingerprint"),
        ({"shard": "1/2"}, "'shard' is not an object"),
        ({"shard": {"index": 1, "count": 10**18, "suite": "x", "files": 1}}, "more than 1000"),
        ({"shard": {"index": 1, "count": 2**63, "suite": "x", "files": 1}}, "more than 1000"),
    ],
)
def test_damaged_records_are_refused_by_name(changes: dict[str, Any], reason: str) -> None:
    with pytest.raises(RecordsError, match="r.json: .*" + reason.replace("[", r"\[")):
        records_from(_records(**changes), "r.json")


def test_unreadable_records_files_are_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Path("bad.json").write_text("{not json")
    Path("list.json").write_text("[1, 2]")
    Path("deep.json").write_text("[" * 100_000 + "]" * 100_000)
    Path("bytes.json").write_bytes(b"\xff\xfe\x00")
    for name, reason in (
        ("missing.json", "no such file"),
        ("bad.json", "not JSON"),
        ("list.json", "not a run records file"),
        ("deep.json", "not JSON"),
        ("bytes.json", "cannot read the file"),
    ):
        code, _, err = cli(capsys, "report", "merge", name)
        assert code == 2 and f"{name}: {reason}" in err
    Path("ok.json").write_text(json.dumps(_records()))
    code, out, _ = cli(capsys, "report", "merge", "ok.json")
    assert code == 0 and "1 tests (1 passed), 1 loop runs" in out


@pytest.mark.parametrize(
    "command",
    [
        ["run", "project/scenario_a.yaml", "--records", "project/build/r.json"],
        ["run", "project", "--shard", "2/2", "--records", "project/build/r.json"],  # empty shard
        ["report", "merge", "ok.json", "--records", "project/build/r.json"],
        ["report", "merge", "ok.json", "--html", "project/build/r.html"],
    ],
)
def test_records_and_pages_are_never_written_through_a_link_out_of_the_project(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    monkeypatch.chdir(tmp_path)
    project, elsewhere = tmp_path / "project", tmp_path / "elsewhere"
    project.mkdir()
    elsewhere.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    shutil.copy(ROOT / "scenarios" / BUNDLED[0], project / "scenario_a.yaml")
    (project / "build").symlink_to(elsewhere, target_is_directory=True)
    Path("ok.json").write_text(json.dumps(_records()))
    code, out, err = cli(capsys, *command)
    assert code == 2, out + err
    assert "leads outside the project" in err
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize(
    "run",
    [
        {"behaviours": {}, "children": ["not a run"]},
        {"behaviours": {}, "children": "lanes"},
        {"behaviours": {}, "usage": "lots"},
        {"behaviours": {}, "usage": {"by_model": "m"}},
    ],
)
def test_a_hand_made_run_the_page_cannot_count_still_draws_the_merged_page(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    run: dict[str, Any],
) -> None:
    """Records pass the merge's checks but a run's lanes or usage are not objects: the page
    says the usage is unknown for that test instead of the merge ending in a traceback."""
    monkeypatch.chdir(tmp_path)
    Path("odd.json").write_text(json.dumps(_records(runs=[run])))
    code, out, err = cli(capsys, "report", "merge", "odd.json", "--html", "m.html")
    assert (code, err) == (0, "") and "1 tests (1 passed)" in out
    assert "usage unknown" in Path("m.html").read_text()


def test_a_huge_shard_count_is_refused_before_anything_is_sized_by_it(
    suite: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for count in ("100000000000000000000", str(2**63), "1001"):
        code, _, err = cli(capsys, "run", "flows", "--shard", f"1/{count}", "--records", "r.json")
        assert code == 2 and "1 <= I <= N <= 1000" in err
        assert not Path("r.json").exists()
    cli(capsys, "run", "flows", "--shard", "1/2", "--records", "s1.json")
    data = json.loads(Path("s1.json").read_text(encoding="utf-8"))
    for count in (10**18, 2**63):
        data["shard"]["count"] = count
        Path("huge.json").write_text(json.dumps(data), encoding="utf-8")
        code, _, err = cli(capsys, "report", "merge", "huge.json")
        assert code == 2 and f"{count} shards is more than 1000" in err
    # the most shards allowed, all but one missing: the error names a few and counts the rest
    data["shard"]["count"] = 1000
    Path("most.json").write_text(json.dumps(data), encoding="utf-8")
    code, _, err = cli(capsys, "report", "merge", "most.json")
    assert code == 2 and "shard 2/1000, 3/1000" in err and "11/1000 and 989 more missing" in err
    with pytest.raises(pytest.UsageError, match="more than 1000"):
        _plugin_shard(f"1/{2**63}/abc/1")


def _plugin_shard(raw: str) -> Any:
    from openprogram_testing.frontends.report.pytest_plugin import _shard

    return _shard(raw)
