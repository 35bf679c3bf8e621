"""The benchmark harness (``python -m bench``) in smoke mode: tiny counts, no peer frameworks,
no assertion on absolute time.  It proves that every configuration still runs its loop (the
proof checks inside the benchmark), and that the proof, the growth ratio, the ratios and the
targets are computed correctly."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench import cli, report
from bench.common import FINAL_TEXT, BenchError, Script, growth_ratio, timed_run
from bench.frameworks import load
from tests.bench._bench import smoke_results


def test_smoke_run_writes_checked_results(tmp_path: Path) -> None:
    results = smoke_results(tmp_path, "W1,W2,W3,W4")
    assert results["meta"]["mode"] == "smoke"
    assert results["meta"]["skipped"] == {}
    for key in ("W1", "W2", "W3"):
        rows = results["workloads"][key]["results"]
        assert set(rows) == {"floor", "openprogram"}
        for row in rows.values():
            assert 0 < row["min"] <= row["median"] <= row["max"]
            assert row["n"] == 2
        assert rows["floor"]["x_floor"] == pytest.approx(1.0)
    assert results["workloads"]["W1"]["results"]["openprogram"]["growth"]["median"] > 0
    assert "W4" in results["workloads"] or "W4" in results["pending"]
    statuses = {t["target"]: t["status"] for t in results["targets"]}
    assert statuses["W1 µs/round"] in ("met", "MISSED")
    assert statuses["import openprogram ms"].startswith("pending")  # --no-subprocess


def test_smoke_run_of_the_async_concurrency_and_menu_workloads(tmp_path: Path) -> None:
    wl = smoke_results(tmp_path, "W1,W2,W1-async,W2-async,W7,W8")["workloads"]
    for key in ("W1-async", "W2-async", "W7"):
        assert set(wl[key]["results"]) == {"floor", "openprogram"}
    ours_w2 = wl["W2-async"]["results"]["openprogram"]
    assert ours_w2["x_sync"] == pytest.approx(
        ours_w2["median"] / wl["W2"]["results"]["openprogram"]["median"]
    )
    w7 = wl["W7"]["results"]["openprogram"]
    assert w7["x_one"] == pytest.approx(w7["median"] / w7["alone"]["median"])
    assert set(wl) >= {"W8-1", "W8-10"}
    w8 = wl["W8-10"]["results"]["openprogram"]
    assert w8["per_tool"] == pytest.approx(
        (w8["median"] - wl["W8-1"]["results"]["openprogram"]["median"]) / 9
    )


@pytest.mark.parametrize("tool", ["async", "async_yield"])
def test_async_tools_pass_their_proof_too(tool: str) -> None:
    for name in ("floor", "openprogram"):
        proof = asyncio.run(timed_run(load(name), 3, 2, tool))  # type: ignore[arg-type]
        assert len(proof.stamps) == 4


def test_a_script_refuses_an_unknown_tool_kind() -> None:
    with pytest.raises(ValueError, match="tool must be one of"):
        Script(1, 1, "threaded")  # type: ignore[arg-type]


class _Skipper:
    """A framework that drops the last tool call of every round: must not be counted."""

    name = "skipper"
    label = "broken loop"

    def version(self) -> str:
        return "0"

    async def run(self, script: Script) -> Any:
        while (calls := script.next_turn()) is not None:
            for c in calls[:-1]:
                script.add(c.a, c.b)
        return FINAL_TEXT


class _WrongText(_Skipper):
    async def run(self, script: Script) -> Any:
        while (calls := script.next_turn()) is not None:
            for c in calls:
                script.add(c.a, c.b)
        return "something else"


def test_a_loop_that_skips_calls_or_loses_the_text_fails_its_proof() -> None:
    with pytest.raises(BenchError, match=r"skipper: .*tool called 3 times, expected 6"):
        asyncio.run(timed_run(_Skipper(), 3, 2))
    with pytest.raises(BenchError, match=r"final text 'something else', expected 'done'"):
        asyncio.run(timed_run(_WrongText(), 2, 1))


def test_the_real_configurations_pass_their_proof_with_parallel_calls() -> None:
    from bench import fw_floor, fw_openprogram

    for fw in (fw_floor, fw_openprogram):
        proof = asyncio.run(timed_run(fw, 3, 4))
        assert len(proof.stamps) == 4 and proof.elapsed_ns > 0


def test_growth_ratio_compares_last_and_first_tool_rounds() -> None:
    stamps = [0]
    for k in range(30):  # rounds get linearly slower: 10, 11, ..., 39
        stamps.append(stamps[-1] + 10 + k)
    assert growth_ratio(stamps) == pytest.approx(34.5 / 14.5)
    with pytest.raises(ValueError, match="at least 20 tool rounds"):
        growth_ratio(stamps[:10])


def test_ratios_and_targets() -> None:
    row = lambda m: {"median": m, "min": m, "max": m, "n": 1}  # noqa: E731
    results: dict[str, Any] = {
        "workloads": {
            "W1": {
                "results": {
                    "floor": row(10.0),
                    "openprogram": {**row(40.0), "growth": row(1.1)},
                    "pydantic-ai": row(400.0),
                    "langgraph": row(4000.0),
                }
            },
            "W3": {
                "results": {
                    "floor": row(10000.0),
                    "openprogram": row(2500.0),
                    "openai-agents": row(500.0),
                }
            },
        },
        "pending": {"W6": "strategies missing"},
    }
    report.add_ratios(results)
    w1 = results["workloads"]["W1"]
    assert w1["best_peer"] == "pydantic-ai"
    assert w1["results"]["openprogram"]["x_floor"] == pytest.approx(4.0)
    assert w1["results"]["openprogram"]["x_best_peer"] == pytest.approx(0.1)
    w3 = results["workloads"]["W3"]["results"]  # throughput: cost ratio is inverted
    assert w3["openprogram"]["x_floor"] == pytest.approx(4.0)
    assert w3["openprogram"]["x_best_peer"] == pytest.approx(0.2)
    statuses = {t["target"]: t["status"] for t in report.check_targets(results)}
    assert statuses["W1 µs/round"] == "met"
    assert statuses["W1 history growth (last/first 10 rounds)"] == "met"
    assert statuses["W3 runs/s"] == "met"
    assert statuses["W6 examples/s"] == "pending: strategies missing"
    assert statuses["W2 µs per tool call"] == "pending: not run"
    # 10x cheaper than the best peer is not the 30x the issue asks for
    assert statuses["W1 cost / best peer's (>= 30x faster)"] == "MISSED"
    w1["results"]["pydantic-ai"]["median"] = 1300.0
    report.add_ratios(results)
    statuses = {t["target"]: t["status"] for t in report.check_targets(results)}
    assert statuses["W1 cost / best peer's (>= 30x faster)"] == "met"
    w1["results"]["pydantic-ai"]["median"] = 400.0
    report.add_ratios(results)
    rows = report.table_rows(results)
    assert any(r[2] == "openprogram" and "growth 1.10x" in r[7] for r in rows)
    results["meta"] = {
        "timestamp": "t",
        "mode": "full",
        "clock": "cpu",
        "python": "CPython",
        "machine": {"cpu": "cpu", "cores": 2},
        "versions": {"openprogram": "0"},
        "load_average": [1.0, 2.0, 3.0],
    }
    md = report.markdown(results)
    assert "| **openprogram** | 40.0 | 40.0-40.0 | 4.00 | 0.10 | growth 1.10x |" in md
    assert "| W6 examples/s | 600 | - | pending: strategies missing |" in md


def test_import_of_openprogram_is_timed_and_pulls_in_no_provider_sdk() -> None:
    from bench import fresh

    timing = fresh.import_times(["openprogram"], 1)["openprogram"]
    assert timing["sdks_imported"] == [] and timing["median"] > 0


def test_cli_rejects_unknown_names() -> None:
    with pytest.raises(SystemExit, match="unknown workload: W99"):
        cli.main(["--smoke", "--workloads", "W99"])
    with pytest.raises(SystemExit, match="unknown framework: crewai"):
        cli.main(["--smoke", "--frameworks", "crewai"])


def test_the_peer_ratio_target_waits_for_peers() -> None:
    row = {"median": 40.0, "min": 40.0, "max": 40.0, "n": 1, "growth": {"median": 1.0}}
    results: dict[str, Any] = {"workloads": {"W1": {"results": {"openprogram": row}}}}
    report.add_ratios(results)
    statuses = {t["target"]: t["status"] for t in report.check_targets(results)}
    assert statuses["W1 cost / best peer's (>= 30x faster)"] == "pending: no peer was run"
    assert statuses["W1 µs/round"] == "met"


def test_the_profiling_target_runs_checked_loops(capsys: pytest.CaptureFixture[str]) -> None:
    from bench import hot

    hot.main(["--runs", "2", "--rounds", "3", "--calls", "2"])
    out = capsys.readouterr().out
    assert out.startswith("2 runs, ") and out.rstrip().endswith("µs per model call (wall)")


def test_smoke_w5_replays_every_adapter_through_its_sdk(tmp_path: Path) -> None:
    rows = smoke_results(tmp_path, "W5")["workloads"]["W5"]["results"]
    for name in ("openai-chat", "anthropic", "gemini", "bedrock"):
        for kind in ("openprogram", "vcrpy raw"):
            row = rows[f"{kind} ({name})"]
            assert 0 < row["min"] <= row["median"] <= row["max"]


def test_the_exec_path_comparison_runs_both_paths() -> None:
    from bench.exec_path import exec_path, loop_path

    loop_path()
    exec_path()


def test_w10_suites_and_the_scaling_exponent(tmp_path: Path) -> None:
    from bench import scenario_suite

    suite = scenario_suite.make_suite(tmp_path, 12)
    files = sorted(suite.scenarios.iterdir())
    assert len(files) == 12 and files[0].name == "scenario_00.yaml"
    assert files[0].read_text() == scenario_suite.SCENARIO.read_text()
    assert "range(12)" in suite.tests.read_text()
    assert scenario_suite.slope([(100, 1.0), (1000, 10.0), (5000, 50.0)]) == pytest.approx(1.0)
    assert scenario_suite.slope([(100, 1.0), (1000, 100.0)]) == pytest.approx(2.0)
    assert scenario_suite.slope([(100, 1.0)]) is None


def test_w10_needs_fresh_interpreters(tmp_path: Path) -> None:
    results = smoke_results(tmp_path, "W10")
    assert "fresh interpreter" in results["pending"]["W10"]


def test_a_w10_configuration_that_does_not_pass_every_scenario_fails(tmp_path: Path) -> None:
    from bench import scenario_suite

    suite = scenario_suite.make_suite(tmp_path, 2)
    (suite.scenarios / "scenario_0.yaml").write_text(
        "prompt: hi\nscript: [x]\nexpect: {final_text: y}\n"
    )
    with pytest.raises(BenchError, match="exit code 1"):
        scenario_suite.run_child(
            ["-m", "openprogram_testing.frontends.cli.main", "run", str(suite.scenarios)],
            suite.folder,
            r"2 passed",
            "run",
        )
