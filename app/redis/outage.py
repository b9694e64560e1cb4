"""A circuit breaker for Redis: after a call times out or cannot connect, calls skip Redis
for a short window instead of each waiting out the timeout again.

A Redis that hangs (the process stopped, the host unreachable) accepts TCP or lets the
connect wait, so every call pays the whole `REDIS_TIMEOUT_SECONDS` before it counts as
down. Without this, every request paid it in its limit check, and every commit in its
announcement on the bus. With it, the first failure opens the circuit for
`REDIS_RETRY_SECONDS`: calls meanwhile fail at once (`RedisSkipped`) and take the same
fallback as a Redis that refused (limits let the request through, the bus's readers use the
database). After the window one call probes Redis while the others keep skipping; its
answer closes the circuit, its failure opens it for another window. A window of 0 skips
nothing: every call tries Redis (and pays the timeout while it hangs).

A reply, even an error reply (`ResponseError`: a refused command, a script error, out of
memory), shows Redis is up and closes it, and so does anything the bus's pub/sub
connection hears (it closes the circuit at once when that connection comes back). Two
replies open it all the same, each told for what it is (`state`, shown by `/readyz`):

    Redis ...                                   state          logged when it starts
    answered                                    ok             info: answers again
    did not answer (timeout, no connection)     unreachable    warning
    replied LOADING (it restarted and reads     loading        warning: transient, calls
      its data back): a reply, but no service                  are retried after the window
    refused our credentials (WRONGPASS,         auth_failed    error: REDIS_URL's password
      NOAUTH, ...): a configuration error                      or user is wrong
    refused a command, key or channel to        no_permission  error, once for each
      REDIS_URL's user (NOPERM: its ACL lacks                  refusal: what Redis says
      it): a configuration error                               is missing
    our own pool was full                       (no verdict)

A refused login opens the circuit too, so a wrong password costs each request no
connection and login of its own, and a password fixed on the Redis side is found by the
next probe; but it is logged once as the error it is, not as Redis being down.

A refused command (NOPERM) is a reply too, but no service: the call fails like one Redis
did not answer (the limits let the request through, the bus's readers use the database),
and `state` says `no_permission` until `REFUSALS_SHOWN_FOR` seconds after the last one,
whatever other calls the ACL allows answer meanwhile (the bus's PINGs among them: else
it would flip back to `ok` every few seconds). It does not open the circuit: a refusal
costs a call a quick reply, not a timeout, and what the ACL allows keeps working.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from urllib.parse import urlsplit

from redis.exceptions import (
    AuthenticationError,
    AuthorizationError,
    BusyLoadingError,
    MaxConnectionsError,
    NoPermissionError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from app.redis.state import Failure, RedisState

log = logging.getLogger("chat_bff.redis")

# What a Redis that is down or hung looks like (redis-py's own, and the socket's).
NOT_ANSWERING = (RedisConnectionError, RedisTimeoutError, TimeoutError, OSError)
# How long `state` says `no_permission` after the last refused command.
REFUSALS_SHOWN_FOR = 60.0
# At most this many distinct refusals are logged (each once).
REFUSALS_TOLD = 32


def failure_of(exc: BaseException) -> Failure | None:
    """What a failed call says of Redis; None when it says nothing (a reply, our own pool
    full, a cancel). redis-py raises a refused login and LOADING as connection errors, so
    they are told apart first."""
    if isinstance(exc, MaxConnectionsError):
        return None
    if isinstance(exc, NoPermissionError):
        return "no_permission"
    if isinstance(exc, (AuthenticationError, AuthorizationError)):
        return "auth_failed"
    if isinstance(exc, BusyLoadingError):
        return "loading"
    return "unreachable" if isinstance(exc, NOT_ANSWERING) else None


class RedisSkipped(RedisConnectionError):
    """Redis was not called: it failed or refused moments ago (or another call is probing
    it)."""


class RedisOutage:
    """One per Redis: shared by the limiter and the bus of a process."""

    def __init__(
        self,
        retry_seconds: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        where: str = "",
    ) -> None:
        self._retry = retry_seconds
        self._clock = clock
        self._where = where  # REDIS_URL without its credentials, for the log
        self._refused_at: float | None = None  # the last NOPERM; None: none yet
        self._told: set[str] = set()  # the refusals logged
        self._failed_at: float | None = None  # None: the last call was answered
        self._heard_at: float | None = None  # the last verdict of any kind; None: none yet
        self._state: RedisState = "ok"
        self._probing = False

    @property
    def open(self) -> bool:
        """Whether a call now would be skipped."""
        if self._failed_at is None or self._retry <= 0:
            return False
        return self._probing or self._clock() - self._failed_at < self._retry

    def heard_within(self, seconds: float) -> bool:
        """Whether a call (or the bus's connection) learnt anything of Redis, an answer or
        a failure, in the last `seconds`: `state` is then news, not a memory."""
        return self._heard_at is not None and self._clock() - self._heard_at < seconds

    @property
    def state(self) -> RedisState:
        """What the last call (or the bus's connection) learnt of Redis; a command refused
        lately is shown while Redis answers."""
        refused = self._refused_at
        if self._state == "ok" and refused is not None:
            return "no_permission" if self._clock() - refused < REFUSALS_SHOWN_FOR else "ok"
        return self._state

    @asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Around one call to Redis: raises `RedisSkipped` (no call made) while open; a
        call that does not answer (or is refused, see above) opens it, one answered
        closes it."""
        if self.open:
            raise RedisSkipped(f"Redis skipped for {self._retry:g} s: {self._state}")
        probe = self._failed_at is not None
        self._probing = probe
        try:
            yield
        except NoPermissionError as exc:  # a reply (Redis is up), but a refusal
            self._heard()
            if probe:
                self.answered()
            self.refused(str(exc))
            raise
        except ResponseError:  # an error reply is still a reply: Redis is up
            self._heard()
            if probe:
                self.answered()
            raise
        except BaseException as exc:
            failure = failure_of(exc)
            if failure is not None:
                self.failed(type(exc).__name__, failure)
            elif probe:  # cancelled or refused here, not by Redis: no verdict, probe again
                self._probing = False
            raise
        self._heard()
        if probe:
            self.answered()

    def _heard(self) -> None:
        self._heard_at = self._clock()

    def answered(self) -> None:
        """Redis answered (here or elsewhere, e.g. the bus's listener heard from it)."""
        if self._failed_at is not None:
            log.info("Redis answers again", extra={"was": self._state})
        self._failed_at = None
        self._state = "ok"
        self._probing = False
        self._heard()

    def refused(self, detail: str) -> None:
        """Redis refused a command, key or channel to REDIS_URL's user (`detail`: what it
        said, e.g. "NOPERM User bff has no permissions to run the 'evalsha' command")."""
        self._refused_at = self._heard_at = self._clock()
        if detail in self._told or len(self._told) >= REFUSALS_TOLD:
            return
        self._told.add(detail)
        log.error(
            "Redis refused a command to the user of REDIS_URL (%s), whose ACL lacks it (a "
            "configuration error, not an outage): %s; limits let requests through and the "
            "bus falls back to the database for what it refuses",
            self._where or "REDIS_URL",
            detail,
        )

    def failed(self, why: str, failure: Failure = "unreachable") -> None:
        """Redis did not answer, or refused (here or in a call made outside `call`);
        logged when this failure starts, not at each probe that finds it again."""
        if failure == "no_permission":
            self.refused(why)
            return
        if failure != self._state:
            _tell(failure, why, self._retry)
        self._failed_at = self._heard_at = self._clock()
        self._state = failure
        self._probing = False


def _tell(failure: Failure, why: str, seconds: float) -> None:
    extra = {"error_type": why, "seconds": seconds}
    if failure == "unreachable":
        log.warning("Redis did not answer; skipping it for a while", extra=extra)
    elif failure == "loading":
        log.warning(
            "Redis is loading its data (it restarted); skipping it for a while", extra=extra
        )
    else:
        log.error(
            "Redis refused the credentials in REDIS_URL (a wrong password or user, not an "
            "outage); limits let requests through and the bus falls back to the database "
            "until Redis accepts them",
            extra=extra,
        )


def public_url(url: str) -> str:
    """REDIS_URL as a log may show it: scheme, host, port and database, without the user,
    password or query (which may carry a password too)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}{parts.path}"
