"""What the limiter tells an operator while its store (Redis) is unavailable: a line when
the store goes away, a reminder at most once every `remind_every` seconds while it stays
away, and a line when it answers again; never a line per request. The same spell, told
in other words (`BUSY`), covers the updates skipped while every connection of the
limiter's pool is in use (a flood, or a Redis slow to answer): a warning for each one
flooded the log exactly when the service was under the most load.

While Redis is down, refuses the password or is loading, every request is let through
without a limit check. A warning for each buried the log under one identical line per
request (and cost the CPU the requests themselves used) without telling an operator
anything the first line had not: how long it lasts and how much went unchecked does, so
the reminder and the last line carry both.

    event                                   logged
    first failure (a check or an update)    warning: unavailable, requests let through
    failure, `remind_every` after the last  warning: still unavailable, for how long,
      line                                    how many let through, updates skipped
    any other failure                       nothing (counted)
    a call answered after failures          info: answers again, with the same totals
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

log = logging.getLogger("chat_bff.limits")

REMIND_EVERY = 60.0


@dataclass(frozen=True)
class Words:
    """The three lines of a spell (`started` may name the reminder period with %g)."""

    started: str
    still: str
    ended: str


UNAVAILABLE = Words(
    started="limit store unavailable; letting requests through unchecked until it answers "
    "(reminded at most every %g s)",
    still="limit store still unavailable; letting requests through unchecked",
    ended="limit store answers again; limits are enforced",
)
BUSY = Words(
    started="limit store busy (every Redis connection in use); skipping updates (slot "
    "releases and renewals, token counts) until one comes free (reminded at most every %g s)",
    still="limit store still busy; skipping updates",
    ended="limit store takes updates again",
)


class StoreOutageLog:
    """One per limiter: the spell the store has been unavailable, if any, and its counts."""

    def __init__(
        self,
        remind_every: float = REMIND_EVERY,
        *,
        clock: Callable[[], float] = time.monotonic,
        words: Words = UNAVAILABLE,
    ) -> None:
        self._remind_every = remind_every
        self._words = words
        self._clock = clock
        self._since: float | None = None  # None: the store answered the last call
        self._told_at = 0.0
        self._let_through = 0
        self._skipped = 0

    def failed(self, why: str, *, let_through: bool) -> None:
        """A call the store did not take: a check let through, or an update skipped."""
        now = self._clock()
        if let_through:
            self._let_through += 1
        else:
            self._skipped += 1
        if self._since is None:
            self._since = self._told_at = now
            log.warning(self._words.started, self._remind_every, extra={"error_type": why})
        elif now - self._told_at >= self._remind_every:
            self._told_at = now
            log.warning(self._words.still, extra={"error_type": why, **self._totals(now)})

    def answered(self) -> None:
        """A call the store answered: the spell, if any, is over."""
        if self._since is None:
            return
        totals = self._totals(self._clock())
        log.info(self._words.ended, extra=totals)
        self._since = None
        self._let_through = self._skipped = 0

    def _totals(self, now: float) -> dict[str, float | int]:
        return {
            "seconds": round(now - (self._since or now), 1),
            "let_through": self._let_through,
            "updates_skipped": self._skipped,
        }
