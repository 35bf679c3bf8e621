"""The matrix in docs/other-frameworks.md names, per framework, the APIs its module here runs:
a row for an API no test runs, or a tested API without a row, fails."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "other-frameworks.md"
MODULES = {
    "pydantic-ai": "test_pydantic_ai",
    "openai-agents": "test_openai_agents",
    "LangGraph": "test_langgraph",
    "litellm": "test_litellm",
}
NAMES = {
    "OpenAI Chat": "openai_chat",
    "OpenAI Responses": "openai_responses",
    "Anthropic": "anthropic",
    "Gemini": "gemini",
    "Bedrock Converse": "bedrock",
    "Bedrock InvokeModel": "bedrock_invoke",
}


def documented() -> dict[str, list[str]]:
    """framework -> the APIs of its rows in the matrix, in order."""
    rows: dict[str, list[str]] = {}
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        framework = re.match(r"([\w-]+) \(", cells[0]) if len(cells) > 2 else None
        if framework is None or framework.group(1) not in MODULES:
            continue
        api = next((key for name, key in NAMES.items() if cells[1].startswith(name)), None)
        assert api is not None, f"unknown API in the matrix row: {line}"
        rows.setdefault(framework.group(1), []).append(api)
    return rows


@pytest.mark.parametrize("framework", MODULES)
def test_the_docs_matrix_names_the_apis_each_framework_runs(framework: str) -> None:
    module = importlib.import_module(f"tests.frameworks.{MODULES[framework]}")
    assert documented().get(framework) == list(module.APIS), (
        f"docs/other-frameworks.md's matrix rows for {framework} do not match the APIs "
        f"tests/frameworks/{MODULES[framework]}.py runs ({module.APIS})"
    )
