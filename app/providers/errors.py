"""The error-mapping kit every provider builds its one `_mapped_errors` context on.

A provider catches its SDK's exceptions and asks `UpstreamErrors` for ours; the status
table, the messages, the Retry-After reading and the scrubbing of upstream text are
decided here once, so the same upstream answer means the same thing whichever vendor
sent it.

    upstream                               ours                   status  retryable
    401, 403                               ProviderAuthError      502     no
    429                                    ProviderRateLimited    429     yes (retry_after)
    408, 504                               ProviderTimeout        504     yes
    other 5xx (500, 502, 503, 529, ...)    ProviderUnavailable    502     yes
    other 4xx (400, 404, 409, 413, 422...) ProviderBadRequest     400     no
    an error reported inside a 200 stream  ProviderUnavailable    502     yes
    no answer within the client timeout    ProviderTimeout        504     yes
    connection refused, reset or cut off   ProviderUnavailable    502     yes
    a body this service cannot read        ProviderUnavailable    502     yes

408 and 504 are both timeouts. A 408 says the upstream gave up waiting for our request,
a 504 that a gateway in front of the model gave up waiting for the model; either way the
answer did not come in time, which is exactly what our own client-side timeout reports.
So all three are `ProviderTimeout`: a client sees one code for "too slow" and may retry
it, whichever hop ran out of time. (The SDKs have already retried both before we see
them.)

Only a 4xx explanation from upstream reaches a message ("context too long" helps the
caller fix the request), scrubbed by `app.domain.redaction` and cut to 300 characters.
An upstream error type (`overloaded_error`) is shown only when it is a short identifier.
"""

from __future__ import annotations

import calendar
import email.utils
import math
import re
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass

import anyio
import httpx2

from app.domain.errors import (
    ProviderAuthError,
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from app.domain.redaction import redact

MAX_UPSTREAM_TEXT = 300

# What the body reader (httpx2 itself, under the SDK) raises when the network fails. A
# timeout is checked first: httpx2's timeouts are request errors too.
TRANSPORT_TIMEOUTS: tuple[type[BaseException], ...] = (httpx2.TimeoutException,)
TRANSPORT_FAILURES: tuple[type[BaseException], ...] = (
    httpx2.RequestError,
    httpx2.StreamError,
    ssl.SSLError,
    anyio.EndOfStream,
)

_BY_STATUS: dict[int, type[ProviderError]] = {
    401: ProviderAuthError,
    403: ProviderAuthError,
    408: ProviderTimeout,
    429: ProviderRateLimited,
    504: ProviderTimeout,
}
_KIND = re.compile(r"[A-Za-z0-9_.\-]{1,64}")
_DELAY_SECONDS = re.compile(r"\d+(?:\.\d+)?")


def error_class(status: int) -> type[ProviderError]:
    """Which of our errors an upstream HTTP status is (see the table above)."""
    if status in _BY_STATUS:
        return _BY_STATUS[status]
    if 400 <= status < 500:
        return ProviderBadRequest
    return ProviderUnavailable


def retry_after_seconds(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds the upstream asks us to wait, or None when it says nothing we can read.

    `retry-after-ms` (OpenAI's and Anthropic's milliseconds) wins over `retry-after`,
    which RFC 9110 (10.2.3) allows as delay-seconds or an HTTP-date (IMF-fixdate, and the
    obsolete RFC 850 and asctime forms a recipient must also accept). A date in the past
    is 0; a negative, non-numeric or unparseable value is ignored, as the RFC asks.
    """
    millis = _delay(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000.0
    raw = headers.get("retry-after")
    if raw is None:
        return None
    seconds = _delay(raw)
    if seconds is not None:
        return seconds
    parsed = email.utils.parsedate_tz(raw.strip())
    if parsed is None:
        return None
    # HTTP dates are GMT; a form without a zone (asctime) is read as GMT too.
    moment = calendar.timegm(parsed[:6]) - (parsed[9] or 0)
    return max(0.0, moment - (time.time() if now is None else now))


def _delay(value: str | None) -> float | None:
    """A non-negative number of seconds (fractions allowed: the SDKs send them)."""
    if value is None or not _DELAY_SECONDS.fullmatch(value.strip()):
        return None
    seconds = float(value)
    return seconds if math.isfinite(seconds) else None


@dataclass(frozen=True, slots=True)
class UpstreamErrors:
    """Our errors for one provider, with messages we wrote.

    `label` names the upstream at the start of a sentence ("Anthropic", "The model
    provider"); `secret` is the configured key, scrubbed from any upstream text verbatim.
    """

    provider: str
    label: str
    secret: str = ""

    def for_status(
        self,
        status: int,
        *,
        kind: object = None,
        detail: object = None,
        headers: Mapping[str, str] | None = None,
    ) -> ProviderError:
        """An upstream HTTP error status (or an error inside a 200 stream, `status` < 400).

        `kind` is the upstream's error type; `detail` its explanation, shown for a 4xx.
        Both come from the upstream's body as the SDK parsed it, so they are taken as
        any value: only a string is ever shown.
        """
        if status < 400:
            return self.in_stream(kind)
        cls = error_class(status)
        label, shown = self.label, self._kind(kind)
        if cls is ProviderAuthError:
            message = f"{label} refused the service's credentials (HTTP {status})."
        elif cls is ProviderRateLimited:
            return ProviderRateLimited(
                f"{label} is rate limiting this service; try again later.",
                provider=self.provider,
                upstream_status=status,
                retry_after=retry_after_seconds(headers or {}),
            )
        elif cls is ProviderTimeout:
            message = f"{label} timed out (HTTP {status})."
        elif cls is ProviderUnavailable:
            message = f"{label} is unavailable (HTTP {status}{', ' + shown if shown else ''})."
        else:
            text = (self.safe_text(detail) if isinstance(detail, str) else "") or shown
            message = f"{label} refused the request (HTTP {status}){': ' + text if text else '.'}"
        return cls(message, provider=self.provider, upstream_status=status)

    def in_stream(self, kind: object = None) -> ProviderUnavailable:
        """The upstream reported an error after the answer had begun."""
        shown = self._kind(kind) or "error"
        return ProviderUnavailable(
            f"{self.label} stopped the response mid-stream ({shown}).", provider=self.provider
        )

    def timeout(self) -> ProviderTimeout:
        return ProviderTimeout(f"{self.label} did not answer in time.", provider=self.provider)

    def connection(self) -> ProviderUnavailable:
        return ProviderUnavailable(
            f"{self.label} could not be reached, or the connection was cut off.",
            provider=self.provider,
        )

    def unreadable(self, status: int | None = None) -> ProviderUnavailable:
        return ProviderUnavailable(
            f"{self.label} sent a response this service could not read.",
            provider=self.provider,
            upstream_status=status,
        )

    def incomplete(self) -> ProviderUnavailable:
        return ProviderUnavailable(
            f"{self.label} ended the response before it was complete.", provider=self.provider
        )

    def failed(self) -> ProviderError:
        """Anything else the SDK raised: a generic, non-retryable failure."""
        return ProviderError(f"{self.label} failed unexpectedly.", provider=self.provider)

    def safe_text(self, text: str) -> str:
        """Upstream text fit for a client: secrets scrubbed, at most 300 characters."""
        text = redact(text, (self.secret,)).strip()
        if len(text) > MAX_UPSTREAM_TEXT:
            text = text[:MAX_UPSTREAM_TEXT] + "..."
        return text

    def _kind(self, kind: object) -> str:
        return kind if isinstance(kind, str) and _KIND.fullmatch(kind) else ""
