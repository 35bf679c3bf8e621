"""``send_forecast`` requires approval: the test is its reviewer (the ``approvals`` fixture).
A request nobody scripted, or a decision never asked for, fails the test at teardown."""

from city_agent import MAIL_TOOLS, OUTBOX, build_runtime

from openprogram_testing import Matches, assert_approvals, call, turn

SCRIPT = [
    turn(call("lookup_weather", {"city": "Oslo"})),
    turn(
        call("send_forecast", {"to": "all@example.com", "text": "Oslo: 3 C"}),
        call("send_forecast", {"to": "ops@example.com", "text": "Oslo: 3 C"}),
    ),
    "Sent it to the team.",
]


def test_the_reviewer_denies_mass_mail_and_changes_the_recipient(
    scripted_provider, exec_runner, approvals
):
    OUTBOX.clear()
    scripted_provider.add(*SCRIPT)
    approvals.deny("send_forecast", "no mass mail", args={"to": Matches(r"^all@")})
    approvals.modify("send_forecast", lambda args: {**args, "to": "team@weather.example"})
    tree = exec_runner(build_runtime(scripted_provider), "Mail Oslo's forecast", tools=MAIL_TOOLS)
    assert tree.result == "Sent it to the team."
    assert OUTBOX == [("team@weather.example", "Oslo: 3 C")]  # the denied mail was never sent
    assert_approvals(tree, [("send_forecast", "denied"), ("send_forecast", "modified")])
    denied = tree.trace.tool_results[1]
    assert denied.is_error and denied.text.endswith("the call was denied: no mass mail")
