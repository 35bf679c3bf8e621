"""Export of a generated example to a YAML scenario file, with the reference model's predictions
as its expectations: a failure hypothesis found (and shrank) becomes a committed regression test
that fails while the bug is in and passes once it is fixed.

``report_failure`` wraps a property body and writes the file on hypothesis's final (shrunk)
replay only, not for every shrink step.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .universe import X_SCHEMA

if TYPE_CHECKING:
    from .model import GeneratedScenario


def to_scenario(
    generated: GeneratedScenario, *, name: str | None = None, description: str = ""
) -> Any:
    """The example as a ``openprogram_testing.scenarios.Scenario`` whose expectations are the
    reference model's predictions: it passes on a correct loop and fails where the run did."""
    from ..scenarios import model as sc  # pydantic: paid only when an example is exported

    exp = generated.expected_outcome()
    tools = []
    for t in generated.tools:
        common: dict[str, Any] = {
            "name": t.name,
            "description": f"test tool {t.name}",
            "parameters": X_SCHEMA,
        }
        if t.behaviour == "sequence":
            tools.append(sc.ToolDef(**common, sequence=[_outcome(sc.Outcome, *o) for o in t.value]))
        else:
            tools.append(_outcome(sc.ToolDef, t.behaviour, t.value, **common))
    script: list[Any] = []
    for turn in generated.script:
        if (
            turn.text is not None
            and turn.thinking is None
            and not turn.calls
            and (turn.ending == "stop" and turn.chunk_size is None)
        ):
            script.append(turn.text)
            continue
        fields: dict[str, Any] = {}
        if turn.thinking is not None:
            fields["thinking"] = turn.thinking
        if turn.text is not None:
            fields["text"] = turn.text
        if turn.calls:
            fields["calls"] = [
                sc.CallDef(
                    name=c.name,
                    args=dict(c.args or {}),
                    raw_args=c.raw,
                    unknown_tool=c.kind == "unknown",
                )
                for c in turn.calls
            ]
        if turn.ending == "length":
            fields["stop"] = "length"
        elif turn.ending == "error":
            fields.update(error=turn.error, status=turn.status, retryable=turn.retryable)
        elif turn.ending == "aborted":
            fields["aborted"] = True
        elif turn.ending == "cut":
            fields["cut"] = True
        if turn.chunk_size is not None:
            fields["chunk_size"] = turn.chunk_size
        script.append(sc.TurnDef(**fields))
    steering = []
    # An entry the reference model says the schedule never hands over is written optional: the
    # example predicts it does not fire (``expect.delivered`` still counts what does).
    fired = Counter([*exp.delivered, *exp.undelivered])
    for s in generated.steering:
        optional = fired[s.message] <= 0
        fired[s.message] -= 1
        if s.follow_up:
            entry = sc.SteeringDef(message=s.message, follow_up=True, optional=optional)
        elif s.after_tool is not None:
            entry = sc.SteeringDef(message=s.message, after_tool=s.after_tool, optional=optional)
        elif s.after_call is not None:
            position = sc.CallPosition(round=s.after_call[0], index=s.after_call[1])
            entry = sc.SteeringDef(message=s.message, after_call=position, optional=optional)
        else:
            entry = sc.SteeringDef(
                message=s.message, before_round=s.before_round, optional=optional
            )
        steering.append(entry)
    results = [
        sc.ToolResultExpect(
            name=r.name,
            is_error=r.is_error,
            skipped=r.skipped,
            text=r.text,
            text_matches=r.text_matches,
        )
        for r in exp.tool_results
    ]
    expect = sc.Expectations(
        termination=exp.termination,  # type: ignore[arg-type]
        model_calls=exp.model_calls,
        tool_results=results,
        final_text=exp.final_text,
        error_text=exp.error_text,
        delivered=len(exp.delivered),
        undelivered=len(exp.undelivered),
    )
    return sc.Scenario(
        name=name,
        description=description,
        prompt=generated.prompt,
        tools=tools,
        script=script,
        steering=steering,
        options=sc.LoopOptions(
            max_iterations=generated.max_iterations, steering_mode=generated.steering_mode
        ),
        expect=expect,
    )


def _outcome(model: Any, behaviour: str, value: Any, **fields: Any) -> Any:
    """A scenario ``Outcome``/``ToolDef`` playing one ``(behaviour, value)``."""
    if behaviour == "echo":
        return model(**fields, echo=True)
    if behaviour == "raises":
        return model(**fields, raises=str(value))
    return model(**fields, returns=value)


def scenario_to_yaml(
    generated: GeneratedScenario, *, name: str | None = None, description: str = ""
) -> str:
    """The example as YAML scenario text (the ``openprogram_testing.scenarios`` format), with the
    spec's predictions as expectations.  ``load_scenario`` + ``run_scenario`` replay it."""
    scenario = to_scenario(generated, name=name, description=description)
    data = scenario.model_dump(mode="json", exclude_defaults=True)
    tools = []
    for tool_data, tool in zip(data.get("tools", []), scenario.tools, strict=True):
        # "returns: null" is a behaviour (an empty result): keep it although it is the default.
        if "returns" in tool.model_fields_set and "returns" not in tool_data:
            tool_data["returns"] = None
        for item_data, item in zip(tool_data.get("sequence", []), tool.sequence or [], strict=True):
            if "returns" in item.model_fields_set and "returns" not in item_data:
                item_data["returns"] = None
        first = {
            k: tool_data.pop(k) for k in ("name", "description", "parameters") if k in tool_data
        }
        tools.append({**first, **tool_data})
    if tools:
        data["tools"] = tools
    data["options"] = {
        "max_iterations": generated.max_iterations,
        "steering_mode": generated.steering_mode,
    }
    return scenario_yaml(_HEADER, {k: data[k] for k in _KEY_ORDER if k in data})


def scenario_yaml(header: str, data: Mapping[str, Any]) -> str:
    """``data`` as scenario YAML after the comment lines ``header``: keys in their given order
    (the format's), text left readable, short lists inline — the layout of every scenario file a
    falsifying example is written to."""
    import yaml

    body = yaml.safe_dump(
        dict(data), sort_keys=False, allow_unicode=True, width=100, default_flow_style=None
    )
    return header + body


_HEADER = (
    "# Generated by openprogram_testing.strategies from a hypothesis example; the expectations\n"
    "# are the reference model's predictions.  Run: openprogram-testing run <this file>\n"
)
_KEY_ORDER = (
    "name",
    "description",
    "prompt",
    "tools",
    "script",
    "steering",
    "options",
    "expect",
    "check_invariants",
)


def failure_dir() -> Path:
    """Where falsifying examples are written: ``$OPENPROGRAM_FAILURE_DIR`` or
    ``.hypothesis/openprogram-failures/`` (relative to the working directory)."""
    return Path(os.environ.get("OPENPROGRAM_FAILURE_DIR") or ".hypothesis/openprogram-failures")


def save_failure(generated: GeneratedScenario, error: BaseException | str | None = None) -> Path:
    """Write the example as a YAML scenario file into ``failure_dir()`` and return its path.
    The file name is derived from the content, so the same example is written once."""
    reason = "" if error is None else (error if isinstance(error, str) else _first_line(error))
    text = scenario_to_yaml(
        generated,
        name="property failure",
        description=(
            "Falsifying example found by a hypothesis property"
            + (f": {reason}" if reason else "")
            + "."
        ),
    )
    return write_failure_file("property", text)


def write_failure_file(kind: str, text: str) -> Path:
    """Write a falsifying example's scenario ``text`` into ``failure_dir()`` as
    ``<kind>_failure_<digest>.scenario.yaml`` and return its path: named by content, so the
    same example found again is written once."""
    import hashlib

    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()[:10]
    folder = failure_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{kind}_failure_{digest}.scenario.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def _first_line(error: BaseException) -> str:
    text = [line.strip(" -") for line in str(error).strip().splitlines() if line.strip()]
    if len(text) > 1 and text[0].endswith(":"):
        text = [f"{text[0]} {text[1]}"]
    first = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    return first if len(first) <= 200 else first[:197] + "..."


class report_failure:
    """Context manager for a property body: when it raises, write the example as a YAML scenario
    (on hypothesis's final, shrunk run only — not for every shrink step), print the YAML and its
    path through ``hypothesis.note`` and attach the path to the exception."""

    def __init__(self, generated: GeneratedScenario) -> None:
        self.generated = generated

    def __enter__(self) -> GeneratedScenario:
        return self.generated

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        if exc is None or not isinstance(exc, Exception) or not is_final_run():
            return
        path = save_failure(self.generated, exc)
        message = (
            f"falsifying example written to {path}\n"
            f"reproduce: openprogram-testing run {path}  (commit it under scenarios/ as a "
            "regression test)\n" + path.read_text(encoding="utf-8")
        )
        show_with_failure(exc, message)


def show_with_failure(exc: BaseException, message: str) -> None:
    """Show ``message`` (where a falsifying example was written) with the failure ``exc``:
    through ``hypothesis.note`` inside a hypothesis test, which attaches it to the failure it
    reports; else as a note on ``exc`` itself."""
    from hypothesis import currently_in_test_context, note

    if currently_in_test_context():
        note(message)
    else:
        exc.add_note(message)


def is_final_run() -> bool:
    """True on hypothesis's final replay of the shrunk example, and outside hypothesis."""
    from hypothesis import currently_in_test_context
    from hypothesis.control import current_build_context

    return not currently_in_test_context() or bool(current_build_context().is_final)
