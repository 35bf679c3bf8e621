"""Loading a scenario file: bytes → YAML nodes → the ``Scenario`` model → the checks.

Every problem comes back as ``ScenarioError`` listing ``file:line:column: field.path: message``
lines, never a traceback, whatever the file holds (see ``yamlread`` for the limits on hostile
YAML, ``checks`` for what is checked beyond the field types).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from openprogram_testing.base import deprecated
from openprogram_testing.base.paths import project_root
from openprogram_testing.base.safeyaml import MAX_FILE_BYTES
from openprogram_testing.transport.faults import FAULT_KINDS

from .checks import check
from .model import Scenario
from .problems import Problem, ScenarioError, dotted, pos, positioned, validation_problems
from .yamlread import YamlProblem, decode, duplicate_keys, read


def load_scenario(
    path: str | Path,
    *,
    root: str | Path | None = None,
    import_roots: Sequence[str | Path] = (),
) -> Scenario:
    """Read and validate one scenario file; raise ``ScenarioError`` with positions.

    ``root`` confines cassette paths (default: the project holding the file, see
    ``checks.scenario_root``); ``import_roots`` are searched first for ``import:`` paths.
    """
    return ScenarioReader(import_roots, root=root).load(path)


def parse_scenario(
    text: str,
    path: str | Path = "<scenario>",
    *,
    root: str | Path | None = None,
    import_roots: Sequence[str | Path] = (),
) -> Scenario:
    """Validate scenario YAML ``text``; ``path`` names it in messages and anchors relative
    cassette paths (``root`` and ``import_roots`` as for ``load_scenario``)."""
    return ScenarioReader(import_roots, root=root).parse(text, path)


class ScenarioReader:
    """Loads many scenario files with the same settings (``root`` and ``import_roots`` as for
    ``load_scenario``), resolving the import roots once and each folder's project root once.

    Why: finding a file's project walks its folders up to a marker, and resolving a path asks
    the file system for every part of it; a suite of n files in a few folders pays that for
    each folder, not for each file (it was a fifth of the time a small file took to load).
    A reader answers for the file system as it was when it first looked at a folder: keep
    one for a pass over a suite (a collection, a ``validate`` run), not for a long life."""

    def __init__(
        self, import_roots: Sequence[str | Path] = (), *, root: str | Path | None = None
    ) -> None:
        self._import_roots = [Path(r).resolve() for r in import_roots]
        self._root = None if root is None else Path(root).resolve()
        self._project_roots: dict[Path, Path] = {}

    def load(self, path: str | Path) -> Scenario:
        """The scenario in file ``path`` (see ``load_scenario``)."""
        path = Path(path)
        file = str(path)
        try:
            if not path.is_file():
                message = "file not found" if not path.exists() else "not a regular file"
                raise ScenarioError([Problem(file, 1, 1, "", message)])
            with path.open("rb") as handle:
                data = handle.read(MAX_FILE_BYTES + 1)
        except OSError as exc:
            problem = Problem(file, 1, 1, "", f"cannot read the file: {exc.strerror or exc}")
            raise ScenarioError([problem]) from None
        if len(data) > MAX_FILE_BYTES:
            problem = Problem(file, 1, 1, "", f"the file is larger than {MAX_FILE_BYTES:,} bytes")
            raise ScenarioError([problem])
        try:
            text = decode(data)
        except YamlProblem as exc:
            raise ScenarioError([Problem(file, exc.line, exc.column, "", exc.message)]) from None
        return self.parse(text, path)

    def parse(self, text: str, path: str | Path = "<scenario>") -> Scenario:
        """The scenario in YAML ``text`` (see ``parse_scenario``)."""
        path = Path(path)
        scenario, root_node = _validated(text, str(path))
        in_code = path.name == "<scenario>"
        scenario._path = None if in_code else path.resolve()
        if self._root is not None:
            scenario._root = self._root
        elif scenario._path is not None:  # the project holding the file: checks.scenario_root
            scenario._root = self._project_root(scenario._path.parent)
        roots = list(self._import_roots)
        if scenario._root is not None and scenario._root not in roots:
            roots.append(scenario._root)
        found = check(scenario, roots)
        if found:
            raise ScenarioError(positioned(str(path), root_node, found))
        return scenario

    def _project_root(self, folder: Path) -> Path:
        known = self._project_roots.get(folder)
        if known is None:
            known = self._project_roots[folder] = project_root(folder)
        return known


def _validated(text: str, file: str) -> tuple[Scenario, Any]:
    """The ``Scenario`` model of ``text`` and its YAML node tree (for positions)."""
    import yaml

    try:
        root_node, data = read(text)
    except YamlProblem as exc:
        raise ScenarioError([Problem(file, exc.line, exc.column, "", exc.message)]) from None
    if root_node is None or (
        isinstance(root_node, yaml.ScalarNode)
        and root_node.tag == "tag:yaml.org,2002:null"
        and not root_node.value
    ):
        raise ScenarioError(
            [
                Problem(
                    file,
                    1,
                    1,
                    "",
                    "the file is empty: expected a mapping with 'prompt', 'script' or "
                    "'cassette', 'expect', …",
                )
            ]
        )
    if not isinstance(root_node, yaml.MappingNode):
        line, col = pos(root_node)
        raise ScenarioError(
            [
                Problem(
                    file,
                    line,
                    col,
                    "",
                    "expected a mapping of scenario fields at the top level, got "
                    + _kind(root_node),
                )
            ]
        )
    duplicates = duplicate_keys(root_node)
    if duplicates:
        raise ScenarioError(
            [
                Problem(file, *pos(node), dotted(loc), f"duplicate key {loc[-1]!r}")
                for loc, node in duplicates
            ]
        )
    _warn_old_fault_keys(file, root_node, data)
    try:
        return Scenario.model_validate(data), root_node
    except ValidationError as exc:
        raise ScenarioError(validation_problems(file, root_node, exc)) from None
    except RecursionError:
        raise ScenarioError([Problem(file, 1, 1, "", "the values are nested too deeply")]) from None


def _warn_old_fault_keys(file: str, root_node: Any, data: Any) -> None:
    """A 0.1 fault key (``corrupt_frame``) warns naming its place and its new name, then reads
    as the new name (renamed in ``data``, so the model does not warn again without a place)."""

    cassette = data.get("cassette") if isinstance(data, dict) else None
    faults = cassette.get("faults") if isinstance(cassette, dict) else None
    if not isinstance(faults, list):
        return
    for k, entry in enumerate(faults):
        for kind in FAULT_KINDS.values():
            if not isinstance(entry, dict) or kind.old_key not in entry or kind.name in entry:
                continue
            [problem] = positioned(file, root_node, [(("cassette", "faults", k, kind.old_key), "")])
            where = f"{file}:{problem.line}"
            deprecated.warn(f"the fault key {kind.old_key}:", f"{kind.name}:", 2, where=where)
            faults[k] = {kind.name if key == kind.old_key else key: v for key, v in entry.items()}


def _kind(node: Any) -> str:
    import yaml

    if isinstance(node, yaml.SequenceNode):
        return "a list"
    return f"the scalar {node.value!r}"


def scenario_json_schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format (published as ``scenario.schema.json``)."""
    schema = Scenario.model_json_schema(by_alias=True)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://openprogram.dev/schemas/scenario.schema.json",
        "title": "OpenProgram loop scenario",
        **{k: v for k, v in schema.items() if k != "title"},
    }


__all__ = [
    "MAX_FILE_BYTES",
    "ScenarioReader",
    "load_scenario",
    "parse_scenario",
    "scenario_json_schema",
]
