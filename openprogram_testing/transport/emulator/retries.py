"""Asserting a client's retries from what the emulator received: how many attempts, how far
apart, and whether each waited the ``retry-after`` it was told.

Every :class:`~.server.EmulatorRequest` carries its arrival time (``received_at``), the status
answered and the headers sent with it, so a test checks the retry behaviour of *any* client
(an SDK's own retries, a framework's, a hand-written backoff) without subclassing the emulator
or patching ``sleep``:

    provider_emulator.add(Fault.http_error(429, headers={"retry-after": "0.2"}), "ok")
    ...  # the client under test makes its call, retrying as it sees fit
    assert_retries(provider_emulator, attempts=2, min_gap_s=0.2)
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from openprogram.providers.base import parse_retry_after

from .server import EmulatorRequest, ProviderEmulator

__all__ = ["RetryTiming", "RetryTimingError", "assert_retries", "retry_timing"]

TOLERANCE_S = 0.01
"""Slack for clock granularity when comparing a gap with the wait it should cover."""


@dataclass(frozen=True, slots=True)
class RetryTiming:
    """The attempts a client made, as the emulator saw them: ``statuses[i]`` answered attempt
    ``i`` (``None``: the connection was dropped), ``retry_after_s[i]`` is the wait that answer
    asked for (``retry-after-ms`` / ``retry-after``), ``gaps_s[i]`` the time from attempt ``i``
    to attempt ``i + 1``."""

    statuses: tuple[int | None, ...]
    retry_after_s: tuple[float | None, ...]
    gaps_s: tuple[float, ...]

    @property
    def attempts(self) -> int:
        return len(self.statuses)

    def describe(self) -> str:
        """One line per attempt: status, the wait asked for, the gap to the next attempt."""
        lines = []
        for i, status in enumerate(self.statuses):
            asked = self.retry_after_s[i]
            line = f"  attempt {i}: {'dropped' if status is None else f'HTTP {status}'}"
            if asked is not None:
                line += f", retry-after {asked:g}s"
            if i < len(self.gaps_s):
                line += f", next attempt {self.gaps_s[i]:.3f}s later"
            lines.append(line)
        return "\n".join(lines) or "  (no requests)"


class RetryTimingError(AssertionError):
    """A client's retries are not what the test expects.  ``problem`` says which expectation
    failed, ``timing`` holds what the emulator saw."""

    def __init__(self, problem: str, timing: RetryTiming) -> None:
        super().__init__(f"{problem}\n{timing.describe()}")
        self.problem = problem
        self.timing = timing


def retry_timing(requests: ProviderEmulator | Sequence[EmulatorRequest]) -> RetryTiming:
    """The attempts among ``requests`` (an emulator's, or a slice of them) that reached a
    provider endpoint, in arrival order."""
    seen = requests.requests if isinstance(requests, ProviderEmulator) else requests
    calls = sorted((r for r in seen if r.api is not None), key=lambda r: r.received_at)
    return RetryTiming(
        statuses=tuple(r.status for r in calls),
        retry_after_s=tuple(parse_retry_after(r.response_headers) for r in calls),
        gaps_s=tuple(b.received_at - a.received_at for a, b in itertools.pairwise(calls)),
    )


def assert_retries(
    requests: ProviderEmulator | Sequence[EmulatorRequest],
    *,
    attempts: int | None = None,
    min_gap_s: float | None = None,
    max_gap_s: float | None = None,
    honours_retry_after: bool = True,
) -> RetryTiming:
    """Check the client's attempts: exactly ``attempts`` of them, every gap between two
    attempts at least ``min_gap_s`` and at most ``max_gap_s``, and (``honours_retry_after``)
    no attempt sooner than the ``retry-after`` of the answer before it.  Raises
    :class:`RetryTimingError` naming the first broken expectation; returns the timing."""
    timing = retry_timing(requests)
    if attempts is not None and timing.attempts != attempts:
        raise RetryTimingError(f"expected {attempts} attempt(s), got {timing.attempts}", timing)
    for i, gap in enumerate(timing.gaps_s):
        if min_gap_s is not None and gap + TOLERANCE_S < min_gap_s:
            raise RetryTimingError(
                f"attempt {i + 1} came {gap:.3f}s after attempt {i}, sooner than {min_gap_s:g}s",
                timing,
            )
        if max_gap_s is not None and gap > max_gap_s:
            raise RetryTimingError(
                f"attempt {i + 1} came {gap:.3f}s after attempt {i}, later than {max_gap_s:g}s",
                timing,
            )
        asked = timing.retry_after_s[i]
        if honours_retry_after and asked is not None and gap + TOLERANCE_S < asked:
            raise RetryTimingError(
                f"attempt {i + 1} came {gap:.3f}s after attempt {i}, whose answer asked for "
                f"retry-after {asked:g}s",
                timing,
            )
    return timing
