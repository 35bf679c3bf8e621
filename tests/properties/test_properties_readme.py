"""The README's property-testing example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_properties_example_runs() -> None:
    readme = (ROOT / "docs" / "properties.md").read_text(encoding="utf-8")
    match = re.search(r"<!-- section: properties -->\n.*?```python\n(.*?)```", readme, re.S)
    assert match, "the properties section's example is missing"
    namespace: dict[str, object] = {}
    exec(compile(match.group(1), "README.md", "exec"), namespace)
    try:
        namespace["test_my_loop"]()  # type: ignore[operator]  # under the example's own profile
    finally:
        namespace["RUNNER"].close()  # type: ignore[attr-defined]
