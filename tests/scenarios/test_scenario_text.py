"""Text in scenario files: what ``json.dumps`` writes loads as the text it wrote (an emoji's
escaped surrogate pair is one character), and a lone surrogate is still a positioned error."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from openprogram_testing.scenarios import ScenarioError, parse_scenario


@given(st.text(min_size=1, max_size=20))
def test_a_file_written_by_json_dumps_loads_as_the_text_it_holds(text: str) -> None:
    source = json.dumps({"prompt": text, "script": [text], "name": "t"})  # ensure_ascii escapes
    scenario = parse_scenario(source)
    assert scenario.prompt == text
    assert scenario.script == [text]


def test_an_emoji_escaped_as_a_surrogate_pair_is_one_character() -> None:
    scenario = parse_scenario('{"prompt": "smile \\ud83d\\ude00", "script": ["ok"]}')
    assert scenario.prompt == "smile \U0001f600"


@pytest.mark.parametrize("escape", ["\\ud83d", "\\ude00", "\\ude00\\ud83d", "\\ud83d x \\ude00"])
def test_a_lone_surrogate_is_still_a_positioned_error(escape: str) -> None:
    with pytest.raises(ScenarioError, match=r"1:12: a lone surrogate \(\\u"):
        parse_scenario(f'{{"prompt": "{escape}", "script": ["ok"]}}')
