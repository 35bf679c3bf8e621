"""The cassette loader has the scenario loader's limits: a small hostile file (an alias bomb
under ``parsed_body``, nesting past the limit, a file past the size limit) is a
``CassetteError`` quickly, not a gigabyte of memory or a ``RecursionError``; and it constructs
only safe tags."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from openprogram_testing.cassettes import CassetteError, load_interactions

ROOT = Path(__file__).resolve().parents[2]

BOMB = (
    "a: &a [x, x, x, x, x, x, x, x, x]\n"
    + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 9)}]\n" for i in range(8)
    )
    + "interactions:\n"
    "- request: {method: POST, uri: 'http://x/v1/chat/completions', parsed_body: *i}\n"
    "  response: {status: 200, parsed_body: *i}\n"
)


def test_an_alias_bomb_cassette_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    assert len(BOMB) < 1000
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    code = textwrap.dedent(f"""
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (600 * 2**20, 600 * 2**20))
        from openprogram_testing.cassettes import CassetteError, load_interactions
        try:
            load_interactions({str(path)!r})
        except CassetteError as exc:
            print(exc)
    """)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "aliases expand this document by more than 100,000 nodes" in done.stdout


def test_nesting_past_the_limit_is_a_cassette_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("interactions: " + "[" * 500 + "]" * 500 + "\n")
    with pytest.raises(CassetteError, match="nesting deeper than 100 levels"):
        load_interactions(path)


def test_a_file_past_the_size_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from openprogram_testing.transport.cassettes import files

    monkeypatch.setattr(files, "MAX_FILE_BYTES", 100)  # read there, imported by name
    path = tmp_path / "big.yaml"
    path.write_text("interactions: []\n" + "#" * 200 + "\n")
    with pytest.raises(CassetteError, match="larger than 100 bytes"):
        load_interactions(path)


def test_an_object_tag_is_not_constructed(tmp_path: Path) -> None:
    path = tmp_path / "evil.yaml"
    path.write_text("interactions: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(CassetteError, match="not valid YAML"):
        load_interactions(path)


def test_the_plain_python_tags_vcrpy_writes_still_load(tmp_path: Path) -> None:
    path = tmp_path / "old.yaml"
    path.write_text(
        "interactions:\n"
        "- request: {method: !!python/unicode POST, uri: 'http://x/', body: !!python/str hi}\n"
        "  response: {status: {code: 200, message: OK}, body: {string: !!binary aGk=}}\n"
    )
    (interaction,) = load_interactions(path)
    assert interaction["request"]["method"] == "POST"
    assert interaction["response"]["body"]["string"] == b"hi"


def test_an_escaped_lone_surrogate_in_a_cassette_becomes_the_replacement_character(
    tmp_path: Path,
) -> None:
    path = tmp_path / "lone.yaml"
    path.write_text(
        "interactions:\n"
        "- request: {method: POST, uri: 'http://x/'}\n"
        '  response: {status: 200, body: {string: "a \\ud83d\\ude00 b \\ud83d"}}\n'
    )
    (interaction,) = load_interactions(path)
    assert interaction["response"]["body"]["string"] == "a \U0001f600 b \ufffd"
