"""The ``choices=`` protocol of ``Runtime.exec``: a forced, structured decision after the work.

Each choice is an ``@function``/callable (label: its tool name or ``__name__``), a string (label =
value), an ``Enum`` member (label = its name) or a ``(label, value)`` pair.  After the work run
(any termination but ``error``/``aborted``) the same conversation continues with:

1. a user message ``Pick exactly one of these choices by calling the `choose` tool:`` followed by
   one line per choice ``- label`` or ``- label: description``;
2. one model call offering only the tool ``choose`` with parameters
   ``{"choice": {"type": "string", "enum": [labels]}}`` (required, nothing else), and
   ``tool_choice={"type": "function", "name": "choose"}``, ``parallel_tool_calls=False``;
3. a valid pick is exactly one ``choose`` call whose arguments validate; its tool result is
   ``Picked {label}.``.  Otherwise the model is re-asked once: after an invalid call the error
   tool result is fed back (validation text, ``Tool X not found``, or
   ``Pick exactly one choice: call choose once.`` for extra calls); after a text-only reply the
   user message ``You must call the `choose` tool with exactly one of: a, b.`` is added.  A second
   invalid attempt raises ``DecisionError``;
4. the result: a function choice is called (no model arguments; ``runtime`` injected if declared;
   awaited if async) and its return value returned; a value choice returns the value.

Each ask is its own run of the loop (``RunInfo.kind == "choices"``).
"""

from __future__ import annotations

import enum
import inspect
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .functions import Function, parse_docstring
from .loop import AgentContext, AgentStream, LoopConfig, agent_loop, agent_loop_continue
from .outcome import RunRecord, last_assistant, raise_for_termination
from .tools import ToolError, as_agent_tool
from .types import AssistantMessage, Message, ToolResultMessage

CHOOSE_TOOL = "choose"
"""Name of the synthetic tool the model must call to pick a choice."""
CHOICE_ATTEMPTS = 2
"""One ask plus one re-ask."""


class DecisionError(Exception):
    """``choices=``: the model did not pick exactly one valid choice, even after a re-ask."""

    def __init__(self, message: str, *, choices: Sequence[str], attempts: Sequence[str]) -> None:
        super().__init__(message)
        self.choices = list(choices)
        self.attempts = list(attempts)


@dataclass(slots=True)
class Choice:
    """One normalised choice: its label, the value returned, the function called (if any)."""

    label: str
    value: Any
    function: Callable[..., Any] | None
    description: str


def build_choices(choices: Any) -> list[Choice]:
    """Normalise ``choices=``; anything unusable is a ``TypeError``/``ValueError`` raised before
    any model call."""
    if isinstance(choices, str | bytes) or not isinstance(choices, Sequence):
        raise TypeError(f"choices= takes a list, got {type(choices).__name__}")
    if not choices:
        raise ValueError("choices= is empty: give at least one function or value to pick from")
    out: list[Choice] = []
    for entry in choices:
        if isinstance(entry, Function):
            required = entry.required_parameters()
            if required:
                raise TypeError(
                    f"choice {entry.name!r} has required parameter(s) {', '.join(required)}; "
                    "choice functions are called without model arguments"
                )
            out.append(Choice(entry.name, entry, entry, entry.description))
        elif isinstance(entry, enum.Enum):
            out.append(Choice(entry.name, entry, None, ""))
        elif isinstance(entry, str):
            out.append(Choice(entry, entry, None, ""))
        elif isinstance(entry, tuple) and len(entry) == 2 and isinstance(entry[0], str):
            out.append(Choice(entry[0], entry[1], None, ""))
        elif callable(entry) and hasattr(entry, "__name__"):
            out.append(
                Choice(entry.__name__, entry, entry, parse_docstring(inspect.getdoc(entry))[0])
            )
        else:
            raise TypeError(
                f"invalid choice {entry!r}: expected an @function/callable, a string, an Enum "
                "member or a (label, value) pair"
            )
    labels = [c.label for c in out]
    duplicates = sorted({label for label in labels if labels.count(label) > 1})
    if duplicates:
        raise ValueError(f"choices= has duplicate label(s): {', '.join(duplicates)}")
    if any(not label for label in labels):
        raise ValueError("choices= has an empty label")
    return out


def choice_instruction(choices: Sequence[Choice]) -> str:
    lines = [f"Pick exactly one of these choices by calling the `{CHOOSE_TOOL}` tool:"]
    for c in choices:
        lines.append(f"- {c.label}: {c.description}" if c.description else f"- {c.label}")
    return "\n".join(lines)


async def decide(
    choices: list[Choice],
    context: AgentContext,
    record: RunRecord,
    make_config: Callable[[], LoopConfig],
    drain: Callable[[AgentStream, LoopConfig], Awaitable[list[Message]]],
    runtime: Any,
) -> Any:
    """Run the decision on ``context`` (the finished work run's conversation) and return the
    picked choice's result.  ``make_config`` gives each ask's loop configuration (a new run),
    ``drain`` runs a stream to its end (observers see it); ``record`` is updated in place."""
    by_label = {c.label: c for c in choices}
    labels = list(by_label)
    picks: list[str] = []

    def choose(arguments: dict[str, Any]) -> str:
        if picks:
            raise ToolError(f"Pick exactly one choice: call {CHOOSE_TOOL} once.")
        picks.append(arguments["choice"])
        return f"Picked {arguments['choice']}."

    tool = as_agent_tool(
        {
            "spec": {
                "name": CHOOSE_TOOL,
                "description": "Pick exactly one of the choices.",
                "parameters": {
                    "type": "object",
                    "properties": {"choice": {"type": "string", "enum": labels}},
                    "required": ["choice"],
                    "additionalProperties": False,
                },
            },
            "execute": choose,
        }
    )
    context.tools = [tool]
    context.provider_tools = None  # the work run's array (deferred tools) is not this one's
    attempts: list[str] = []
    for attempt in range(CHOICE_ATTEMPTS):
        picks.clear()
        config = make_config()
        if attempt == 0:
            stream = agent_loop(choice_instruction(choices), context, config)
        elif isinstance(context.messages[-1], AssistantMessage):
            stream = agent_loop(
                f"You must call the `{CHOOSE_TOOL}` tool with exactly one of: {', '.join(labels)}.",
                context,
                config,
            )
        else:
            stream = agent_loop_continue(context, config)
        new = list(await drain(stream, config))
        record.messages.extend(new)
        record.model_calls += stream.model_calls
        last = last_assistant(new)
        record.text = last.text if last is not None else ""
        if stream.termination in ("error", "aborted"):
            record.termination = stream.termination
            raise_for_termination(stream.termination, last)
        results = [m for m in new if isinstance(m, ToolResultMessage)]
        calls = last.tool_calls if last is not None else []
        if (
            len(calls) == 1
            and calls[0].name == CHOOSE_TOOL
            and len(picks) == 1
            and results
            and not results[-1].is_error
        ):
            label = picks[0]
            record.choice = label
            record.termination = "completed"
            return await pick_result(by_label[label], runtime)
        attempts.append(describe_attempt(last, results))
    record.termination = "completed"
    raise DecisionError(
        f"the model did not pick exactly one valid choice after {CHOICE_ATTEMPTS} attempts "
        f"(choices: {', '.join(labels)}); "
        + "; ".join(f"attempt {i + 1}: {text}" for i, text in enumerate(attempts)),
        choices=labels,
        attempts=attempts,
    )


async def pick_result(choice: Choice, runtime: Any) -> Any:
    """A value choice's value, or the result of calling a function choice (``runtime``
    injected when it declares it; awaited when async)."""
    fn = choice.function
    if fn is None:
        return choice.value
    if isinstance(fn, Function):
        value = fn.call_injected(runtime)
    elif _declares_runtime(fn):
        value = fn(runtime=runtime)
    else:
        value = fn()
    if inspect.isawaitable(value):
        value = await value
    return value


def _declares_runtime(fn: Callable[..., Any]) -> bool:
    try:
        return "runtime" in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def describe_attempt(last: AssistantMessage | None, results: list[ToolResultMessage]) -> str:
    """One failed attempt in words, for ``DecisionError``."""
    if last is None:
        return "no reply"
    calls = last.tool_calls
    if not calls:
        text = last.text
        return f"replied with text only: {text[:80]!r}" if text else "replied with nothing"
    parts = []
    for i, call in enumerate(calls):
        shown = call.raw_arguments if call.raw_arguments is not None else json.dumps(call.arguments)
        result = result_summary(results[i]) if i < len(results) else "no result"
        parts.append(f"{call.name}({shown}) -> {result}")
    return ", ".join(parts)


def result_summary(result: ToolResultMessage) -> str:
    """``ok``, the validation problems (``choice: 'x' is not one of [...]``) or the error text."""
    if not result.is_error:
        return "ok"
    lines = result.text.splitlines()
    problems = [line[4:] for line in lines[1:] if line.startswith("  - ")]
    if lines and lines[0].startswith("Validation failed") and problems:
        return "invalid arguments: " + " / ".join(problems)
    return lines[0] if lines else "error"


__all__ = [
    "CHOICE_ATTEMPTS",
    "CHOOSE_TOOL",
    "Choice",
    "DecisionError",
    "build_choices",
    "choice_instruction",
    "decide",
    "pick_result",
]
