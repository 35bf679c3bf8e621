"""The benchmark row for schema-derived property examples (W9) runs in smoke mode and is
checked against its target (no assertion on absolute speed: benchmarks are not timed tests)."""

from __future__ import annotations

from pathlib import Path

from tests.bench._bench import smoke_results


def test_the_schema_derived_row_runs_and_has_a_target(tmp_path: Path) -> None:
    results = smoke_results(tmp_path, "W9")
    row = results["workloads"]["W9"]["results"]["openprogram"]
    assert row["median"] > 0 and "five typed fields" in row["note"]
    (target,) = [t for t in results["targets"] if t["target"] == "W9 schema-derived examples/s"]
    assert target["status"] in ("met", "MISSED")
