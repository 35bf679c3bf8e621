"""``@pytest.mark.op_repeat(n, min_pass=...)``: a test that calls a live model runs ``n`` times and
passes when at least ``min_pass`` runs pass.

A live model does not answer the same prompt the same way twice, so one run proves little and
one failure proves little more; a pass rate over ``n`` runs does.  Each run is a whole test
protocol (fresh function-scoped fixtures); the test is reported once, with its pass rate and the
unbiased estimates pass@k (at least one of ``k`` runs passes) and pass^k (all ``k`` pass) from
the ``n`` runs (``k`` defaults to ``n``).  The whole repetition runs where the test runs, so it
works under pytest-xdist: the numbers ride on the call report to the controller.
"""

from __future__ import annotations

from math import comb
from typing import Any

import pytest

MARKER = "op_repeat"
MARKER_LINE = (
    "op_repeat(n, *, min_pass=n, k=n): run the test n times; it passes when at least min_pass "
    "runs pass (the pass rate, pass@k and pass^k are reported)"
)


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` runs drawn from ``n`` (``c`` passing) passes."""
    return 1.0 if n - c < k else 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """The chance that all ``k`` runs drawn from ``n`` (``c`` passing) pass."""
    return comb(c, k) / comb(n, k)


def _spec(marker: pytest.Mark) -> tuple[int, int, int]:
    args, kwargs = marker.args, dict(marker.kwargs)
    n = args[0] if args else kwargs.pop("n", None)
    min_pass = kwargs.pop("min_pass", n)
    k = kwargs.pop("k", n)
    if kwargs or len(args) > 1:
        raise ValueError(f"op_repeat takes n, min_pass= and k=, got {marker.args}, {marker.kwargs}")
    for name, value in (("n", n), ("min_pass", min_pass), ("k", k)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError(f"op_repeat: {name} must be a whole number >= 1, got {value!r}")
    assert isinstance(n, int) and isinstance(min_pass, int) and isinstance(k, int)
    if min_pass > n or k > n:
        raise ValueError(f"op_repeat: min_pass and k must be at most n={n}")
    return n, min_pass, k


def summary(data: dict[str, Any]) -> str:
    """``4/5 runs passed (80 %, min_pass 3), pass@5 1.00, pass^5 0.00``."""
    n, c, k = data["n"], data["passed"], data["k"]
    return (
        f"{c}/{n} runs passed ({100 * c / n:.0f} %, min_pass {data['min_pass']}), "
        f"pass@{k} {data['pass_at_k']:.2f}, pass^{k} {data['pass_hat_k']:.2f}"
    )


def _skip_reason(reports: list[Any]) -> str:
    """Why a run was skipped or xfailed, from its reports (pytest's ``(file, line, reason)``)."""
    for report in reports:
        reason = getattr(report, "wasxfail", None)
        if reason is not None:
            return f"xfailed ({reason})" if reason else "xfailed"
        if report.skipped and isinstance(report.longrepr, tuple):
            return str(report.longrepr[-1])
    return "skipped"


class RepeatPlugin:
    """Runs marked tests ``n`` times and reports them once."""

    def __init__(self) -> None:
        self.results: list[tuple[str, dict[str, Any]]] = []

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> bool | None:
        marker = item.get_closest_marker(MARKER)
        if marker is None:
            return None
        from _pytest.runner import runtestprotocol

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        problem: str | None = None
        try:
            n, min_pass, k = _spec(marker)
        except ValueError as exc:
            n, min_pass, k, problem = 1, 1, 1, str(exc)
        passed, last, failure = 0, [], None
        for i in range(n):
            if i:
                item._initrequest()  # type: ignore[attr-defined]  # fresh fixtures per run
            # Between runs tear down the test's own fixtures and keep its parents' (a module's,
            # the session's): the parent node as "next" does that.
            following = item.parent if i < n - 1 else nextitem
            reports = runtestprotocol(item, nextitem=following, log=False)  # type: ignore[arg-type]
            if any(r.skipped for r in reports) and not any(r.failed for r in reports):
                if i == 0:
                    last = reports
                    break  # a test skipped (or xfailed) at once is skipped, not repeated
                # Skipped or xfailed after a run that ran: a run that did not pass, never the
                # test's verdict (a failure before it stays a failure); the reports shown are
                # the last run's that ran.
                failure = failure or f"run {i + 1} of {n} was skipped: {_skip_reason(reports)}"
                continue
            last = reports
            if all(r.passed for r in reports):
                passed += 1
            else:
                failure = next((r.longreprtext for r in reports if r.failed), failure)
        else:
            data = {
                "n": n,
                "passed": passed,
                "min_pass": min_pass,
                "k": k,
                "pass_rate": passed / n,
                "pass_at_k": pass_at_k(n, passed, k),
                "pass_hat_k": pass_hat_k(n, passed, k),
            }
            self._verdict(last, data, failure, problem)
        for report in last:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True

    @staticmethod
    def _verdict(
        reports: list[Any], data: dict[str, Any], failure: str | None, problem: str | None
    ) -> None:
        call = next((r for r in reports if r.when == "call"), None)
        if call is None:  # the last run failed in setup: that report says why
            return
        ok = problem is None and data["passed"] >= data["min_pass"]
        call.outcome = "passed" if ok else "failed"
        if not ok and hasattr(call, "wasxfail"):
            del call.wasxfail  # a failed pass rate is a failure, not an xfail or an xpass
        call.openprogram_repeat = data
        if ok:
            call.longrepr = None
        elif problem is not None:
            call.longrepr = problem
        else:
            call.longrepr = (
                f"op_repeat: {summary(data)}: fewer than min_pass={data['min_pass']}\n\n"
                f"last failing run:\n{failure or '(no failure text)'}"
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        data = getattr(report, "openprogram_repeat", None)
        if report.when == "call" and isinstance(data, dict):
            self.results.append((report.nodeid, data))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not self.results:
            return
        terminalreporter.write_sep("=", "openprogram pass rates (op_repeat)")
        for nodeid, data in self.results:
            terminalreporter.write_line(f"{nodeid}: {summary(data)}")


__all__ = ["MARKER", "MARKER_LINE", "RepeatPlugin", "pass_at_k", "pass_hat_k", "summary"]
