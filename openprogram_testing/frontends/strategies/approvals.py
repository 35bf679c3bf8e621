"""Hypothesis strategies drawing approval decisions, and the rule a drawn decision must obey.

``approval_decisions(tool)`` draws what a reviewer may answer for a call of ``tool``:
``Approve()``, ``Deny(message)`` (any text) or ``Modify(arguments)`` with arguments the tool's
schema accepts (``schema_arguments``), and with ``invalid=True`` also ones it refuses, so a
property test covers every path of ``openprogram.approvals``.  ``decision_problems(decision,
ran, result)`` says what the run did wrong with a decision: a denied call that ran, a modified
one that ran with other arguments, an approved one that did not run, a refused modification
that ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from hypothesis import strategies as st

from openprogram.approvals import ApprovalDecision, Approve, Deny, Modify
from openprogram.types import ToolResultMessage

from .schema import schema_arguments

NOT_RUN_PREFIX = "Tool {} was not run: "
"""How the result of a call that was not approved starts (``openprogram.texts.not_run_text``)."""


def approval_decisions(
    tool: Any = None, *, invalid: bool = False
) -> st.SearchStrategy[ApprovalDecision]:
    """Decisions on a call of ``tool`` (any tool form; without one: approve or deny only).
    ``invalid=True`` also draws ``Modify`` with arguments a schema with required parameters
    refuses (an undeclared key, every required one left out)."""
    simple: list[st.SearchStrategy[Any]] = [
        st.just(Approve()),
        st.builds(Deny, st.text(max_size=40)),
    ]
    if tool is None:
        return st.one_of(*simple)
    modify = schema_arguments(tool).map(lambda arguments: Modify(dict(arguments)))
    options = [*simple, modify]
    if invalid:
        options.append(st.just(Modify({"__not_a_parameter__": "x"})))
    return st.one_of(*options)


def decision_problems(
    decision: ApprovalDecision,
    ran: Sequence[dict[str, Any]],
    result: ToolResultMessage,
    asked: dict[str, Any],
) -> list[str]:
    """What the run did wrong with ``decision`` on one call the model made with ``asked``:
    ``ran`` lists the arguments the tool body received (empty: it never ran), ``result`` is the
    call's result.  An empty list: the decision was obeyed."""
    problems: list[str] = []
    prefix = NOT_RUN_PREFIX.format(result.tool_name)
    if isinstance(decision, Deny):
        if ran:
            problems.append(f"a denied call ran with {ran[0]!r}")
        if not (result.is_error and result.text.startswith(prefix)):
            problems.append(f"a denied call's result is {result.text!r}, not the not-run answer")
        if decision.message and decision.message not in result.text:
            problems.append(f"the denial message {decision.message!r} is not in the result")
    elif isinstance(decision, Modify):
        if result.is_error and result.text.startswith(prefix):
            if ran:
                problems.append(f"a refused modification ran with {ran[0]!r}")
        elif list(ran) != [decision.arguments]:
            problems.append(f"a modified call ran with {list(ran)!r}, not {decision.arguments!r}")
    elif list(ran) != [asked]:
        problems.append(f"an approved call ran with {list(ran)!r}, not {asked!r}")
    return problems


__all__ = ["approval_decisions", "decision_problems"]
