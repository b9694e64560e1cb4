"""The service's exception hierarchy, drawn once here.

    ChatBffError                  code, message, status, retryable, extra
     +-- NotFound                 404  (a missing id and a foreign id look the same)
     +-- ModelNotFound            404  model_not_found
     +-- Conflict                 409  (e.g. a run already active)
     +-- InvalidRequest           400/422
     +-- RetryLater               with retry_after (the Retry-After header)
          +-- RateLimited             429
               +-- BudgetExceeded         429 budget_exceeded, with the budget and resets_at
          +-- Unavailable             503 (a part of the deployment is out of reach)
     +-- ProviderError            upstream failure, already made safe to show
          +-- ProviderAuthError       502 (upstream 401/403: our key, not the caller's fault)
          +-- ProviderRateLimited     429 with retry_after
          +-- ProviderTimeout         504
          +-- ProviderUnavailable     502 (5xx, connection refused, stream cut)
          +-- ProviderBadRequest      400 (upstream refused the request itself)

Vendor SDK exceptions are mapped to `ProviderError`s in one place per provider and raised
`from` the original; their messages are written by us, so no key, upstream URL with
credentials or header can reach a client, a log line or an event.
"""

from __future__ import annotations

from typing import Any


class ChatBffError(Exception):
    status: int = 500
    code: str = "internal_error"
    retryable: bool = False

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        status: int | None = None,
        retryable: bool | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        if status is not None:
            self.status = status
        if retryable is not None:
            self.retryable = retryable
        self.extra = extra

    def to_body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message, **self.extra}}


class NotFound(ChatBffError):
    status = 404
    code = "not_found"


class ModelNotFound(NotFound):
    code = "model_not_found"


class Conflict(ChatBffError):
    status = 409
    code = "conflict"


class InvalidRequest(ChatBffError):
    status = 400
    code = "invalid_request"


class RetryLater(ChatBffError):
    """A refusal that says when to try again: `retry_after` seconds (the `Retry-After`)."""

    retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **extra: Any) -> None:
        super().__init__(message, **extra)
        self.retry_after = retry_after


class RateLimited(RetryLater):
    status = 429
    code = "rate_limited"


class BudgetExceeded(RateLimited):
    """A budget (tokens or cost, per day or month) is spent; `extra` says which one, its
    limit and `resets_at`; `retry_after` counts the seconds until then."""

    code = "budget_exceeded"


class Unavailable(RetryLater):
    """What the request needs is out of reach for now, through no fault of the caller
    (another instance, when the bus between instances is down): 503 with `retry_after`."""

    status = 503
    code = "unavailable"


class ProviderError(ChatBffError):
    status = 502
    code = "provider_error"

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        upstream_status: int | None = None,
        retry_after: float | None = None,
        **extra: Any,
    ) -> None:
        super().__init__(message, **extra)
        self.provider = provider
        self.upstream_status = upstream_status
        self.retry_after = retry_after


class ProviderAuthError(ProviderError):
    status = 502
    code = "provider_auth_error"


class ProviderRateLimited(ProviderError):
    status = 429
    code = "provider_rate_limited"
    retryable = True


class ProviderTimeout(ProviderError):
    status = 504
    code = "provider_timeout"
    retryable = True


class ProviderUnavailable(ProviderError):
    status = 502
    code = "provider_unavailable"
    retryable = True


class ProviderBadRequest(ProviderError):
    status = 400
    code = "provider_bad_request"


# Every code that means "slow down": the caller's own limits and budgets, and the model
# provider's. OpenAI-shaped errors call all of them `rate_limit_exceeded`.
RATE_LIMIT_CODES = frozenset(
    {RateLimited.code, BudgetExceeded.code, ProviderRateLimited.code, "rate_limit_exceeded"}
)


def openai_error_type(code: str) -> str:
    """The OpenAI error `type` for an error a run streamed: a rate limit, or the rest."""
    return "rate_limit_exceeded" if code in RATE_LIMIT_CODES else "server_error"
