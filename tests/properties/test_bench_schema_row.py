"""The benchmark row for schema-derived property examples (W9) runs in smoke mode and is
checked against its target (no assertion on absolute speed: benchmarks are not timed tests)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # bench/ is a top-level script package, not installed
    sys.path.insert(0, str(ROOT))

from bench import cli  # noqa: E402


def test_the_schema_derived_row_runs_and_has_a_target(tmp_path: Path) -> None:
    out = tmp_path / "results.json"
    code = cli.main(
        ["--smoke", "--no-subprocess", "--workloads", "W9", "--output", str(out), "--quiet"]
    )
    assert code == 0
    results = json.loads(out.read_text())
    row = results["workloads"]["W9"]["results"]["openprogram"]
    assert row["median"] > 0 and "five typed fields" in row["note"]
    (target,) = [t for t in results["targets"] if t["target"] == "W9 schema-derived examples/s"]
    assert target["status"] in ("met", "MISSED")
