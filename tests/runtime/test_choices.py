"""``exec(choices=[...])``: the forced structured decision after the work."""

import enum
from typing import Any

import pytest

from openprogram import DecisionError, ProviderError, Registry, Runtime, ToolSpec, function
from openprogram_testing import ScriptedProvider, call, error_turn, turn
from tests.runtime._loop import fed_back_error


def _choose_spec(labels):
    return ToolSpec(
        name="choose",
        description="Pick exactly one of the choices.",
        parameters={
            "type": "object",
            "properties": {"choice": {"type": "string", "enum": list(labels)}},
            "required": ["choice"],
            "additionalProperties": False,
        },
    )


def _decisions():
    registry = Registry()
    calls = []

    @function(registry=registry)
    def approve(runtime) -> dict:
        """Approve the refund."""
        calls.append(("approve", runtime))
        return {"status": "approved"}

    @function(registry=registry)
    async def reject() -> str:
        """Reject the refund."""
        calls.append(("reject", None))
        return "rejected"

    return registry, approve, reject, calls


def _pick(choice: str) -> Any:
    """The model's turn that picks ``choice`` through the ``choose`` tool."""
    return turn(call("choose", {"choice": choice}))


def _yes_or_no(*decision: Any) -> tuple[ScriptedProvider, Runtime]:
    """A runtime with an empty registry whose model answers the work round with text, then
    follows ``decision`` for the yes/no choice."""
    provider = ScriptedProvider(["work", *decision])
    return provider, Runtime(provider, registry=Registry())


INSTRUCTION = (
    "Pick exactly one of these choices by calling the `choose` tool:\n"
    "- approve: Approve the refund.\n"
    "- reject: Reject the refund."
)


def test_function_choice_happy_path():
    registry, approve, reject, calls = _decisions()
    provider = ScriptedProvider(
        ["The order arrived broken; a refund is fair.", turn(call("choose", {"choice": "approve"}))]
    )
    runtime = Runtime(provider, "m", registry=registry)
    result = runtime.exec("Handle refund #12", tools=[], choices=[approve, reject])
    assert result == {"status": "approved"}
    assert calls == [("approve", runtime)]
    provider.assert_complete()

    work, decide = provider.requests
    assert work.tools == [] and work.tool_choice == "auto"
    assert decide.tools == [_choose_spec(["approve", "reject"])]
    assert decide.tool_choice == {"type": "function", "name": "choose"}
    assert decide.parallel_tool_calls is False
    assert [m.role for m in decide.messages] == ["user", "assistant", "user"]
    assert decide.messages[-1].text == INSTRUCTION

    record = runtime.last_run
    assert record.choice == "approve" and record.termination == "completed"
    assert record.model_calls == 2
    assert [m.role for m in record.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
    ]
    assert record.messages[-1].text == "Picked approve."


async def test_async_choice_function_with_aexec():
    registry, approve, reject, calls = _decisions()
    provider = ScriptedProvider(["thinking", turn(call("choose", {"choice": "reject"}))])
    runtime = Runtime(provider, registry=registry)
    assert await runtime.aexec("x", tools=[], choices=[approve, reject]) == "rejected"
    assert calls == [("reject", None)]


class Color(enum.Enum):
    RED = "r"
    BLUE = "b"


@pytest.mark.parametrize(
    ("choices", "pick", "expected", "labels"),
    [
        (["yes", "no"], "no", "no", ["yes", "no"]),
        ([("high", 3), ("low", 1)], "high", 3, ["high", "low"]),
        ([Color.RED, Color.BLUE], "BLUE", Color.BLUE, ["RED", "BLUE"]),
    ],
)
def test_value_choices(choices, pick, expected, labels):
    provider = ScriptedProvider(["ok", turn(call("choose", {"choice": pick}))])
    runtime = Runtime(provider, registry=Registry())
    assert runtime.exec("decide", tools=[], choices=choices) == expected
    assert provider.requests[1].tools == [_choose_spec(labels)]
    assert provider.requests[1].messages[-1].text == (
        "Pick exactly one of these choices by calling the `choose` tool:\n"
        + "\n".join(f"- {label}" for label in labels)
    )
    assert runtime.last_run.choice == pick


def test_work_runs_tools_before_the_decision():
    registry = Registry()

    @function(registry=registry)
    def lookup(order: int) -> str:
        """Look up an order."""
        return f"order {order}: broken"

    provider = ScriptedProvider(
        [
            turn(call("lookup", {"order": 12})),
            "It is broken.",
            turn(call("choose", {"choice": "refund"})),
        ]
    )
    runtime = Runtime(provider, registry=registry)
    assert runtime.exec("Order 12?", choices=["refund", "ignore"]) == "refund"
    assert [r.tool_names for r in provider.requests] == [["lookup"], ["lookup"], ["choose"]]
    assert runtime.last_run.model_calls == 3


def test_invalid_pick_is_reasked_once_with_the_error_fed_back():
    provider, runtime = _yes_or_no(_pick("maybe"), _pick("no"))
    assert runtime.exec("decide", tools=[], choices=["yes", "no"]) == "no"
    provider.assert_complete()
    reask = provider.requests[2]
    assert reask.tools == [_choose_spec(["yes", "no"])]
    assert reask.tool_choice == {"type": "function", "name": "choose"}
    assert [m.role for m in reask.messages] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "toolResult",
    ]
    assert fed_back_error(reask) == (
        'Validation failed for tool "choose":\n'
        "  - choice: 'maybe' is not one of ['yes', 'no']\n"
        "\n"
        "Received arguments:\n"
        '{\n  "choice": "maybe"\n}'
    )


def test_text_only_reply_is_reasked_with_a_user_message():
    provider, runtime = _yes_or_no("I think yes.", _pick("yes"))
    assert runtime.exec("decide", tools=[], choices=["yes", "no"]) == "yes"
    assert provider.requests[2].messages[-1].text == (
        "You must call the `choose` tool with exactly one of: yes, no."
    )


def test_two_picks_in_one_message_are_invalid():
    both = turn(call("choose", {"choice": "yes"}), call("choose", {"choice": "no"}))
    provider, runtime = _yes_or_no(both, _pick("no"))
    assert runtime.exec("decide", tools=[], choices=["yes", "no"]) == "no"
    results = provider.requests[2].messages[-2:]
    assert [(r.text, r.is_error) for r in results] == [
        ("Picked yes.", False),
        ("Pick exactly one choice: call choose once.", True),
    ]


def test_invalid_twice_raises_decision_error():
    provider, runtime = _yes_or_no(
        _pick("maybe"), turn(call("pick", {"choice": "no"}, unknown=True))
    )
    with pytest.raises(DecisionError) as info:
        runtime.exec("decide", tools=[], choices=["yes", "no"])
    provider.assert_complete()
    error = info.value
    assert error.choices == ["yes", "no"]
    assert error.attempts == [
        'choose({"choice": "maybe"}) -> invalid arguments: '
        "choice: 'maybe' is not one of ['yes', 'no']",
        'pick({"choice": "no"}) -> Tool pick not found',
    ]
    assert str(error) == (
        "the model did not pick exactly one valid choice after 2 attempts (choices: yes, no); "
        'attempt 1: choose({"choice": "maybe"}) -> invalid arguments: '
        "choice: 'maybe' is not one of ['yes', 'no']; "
        'attempt 2: pick({"choice": "no"}) -> Tool pick not found'
    )
    assert runtime.last_run.choice is None
    assert runtime.last_run.model_calls == 3


def test_text_twice_raises_decision_error():
    provider, runtime = _yes_or_no("Yes.", "Definitely yes.")
    with pytest.raises(DecisionError) as info:
        runtime.exec("decide", tools=[], choices=["yes", "no"])
    assert info.value.attempts == [
        "replied with text only: 'Yes.'",
        "replied with text only: 'Definitely yes.'",
    ]
    assert [m.text for m in provider.requests[2].messages[-2:]] == [
        "Yes.",
        "You must call the `choose` tool with exactly one of: yes, no.",
    ]


def test_provider_error_during_the_decision_raises_provider_error():
    provider, runtime = _yes_or_no(error_turn("overloaded", status=529, retryable=True))
    with pytest.raises(ProviderError) as info:
        runtime.exec("decide", tools=[], choices=["yes", "no"])
    assert info.value.status == 529
    assert runtime.last_run.termination == "error"


def test_provider_error_during_the_work_skips_the_decision():
    provider = ScriptedProvider([error_turn("boom", status=500)])
    with pytest.raises(ProviderError, match="boom"):
        Runtime(provider, registry=Registry()).exec("decide", tools=[], choices=["a", "b"])
    assert len(provider.requests) == 1


@pytest.mark.parametrize(
    ("choices", "error", "message"),
    [
        ([], ValueError, "choices= is empty"),
        (["a", "a"], ValueError, "duplicate label\\(s\\): a"),
        ("ab", TypeError, "choices= takes a list"),
        ([3.5], TypeError, "invalid choice 3.5"),
        ([("", 1)], ValueError, "empty label"),
    ],
)
def test_bad_choices_fail_before_any_model_call(choices, error, message):
    provider = ScriptedProvider()
    with pytest.raises(error, match=message):
        Runtime(provider, registry=Registry()).exec("x", tools=[], choices=choices)
    assert provider.requests == []


def test_choice_function_with_required_parameters_is_rejected():
    @function(registry=Registry())
    def pay(amount: int) -> str:
        return "paid"

    provider = ScriptedProvider()
    with pytest.raises(TypeError, match="choice 'pay' has required parameter\\(s\\) amount"):
        Runtime(provider, registry=Registry()).exec("x", tools=[], choices=[pay, "skip"])
    assert provider.requests == []
