"""Failover: a catalogue model that names fallbacks is served by the first of its chain
that answers.

    chain = [primary, *fallbacks]          (catalogue entries with their providers)
    for each entry, skipping providers whose circuit is open (unless nothing else is left):
        call it; a 5xx, 429, timeout or connection failure BEFORE its first event
        -> count a failure against its provider and try the next entry
        the same failure AFTER its first event
        -> with `after_first_byte`: count it, try the next entry, and start that one's
           stream with `StreamReset` (the partial attempt is void)
        -> without: raised as is
        another error (400, 401) -> raised as is

The answer says who gave it: a fallback's stream starts with `ResponseMeta(model_id=...)`
(our catalogue id), which the agent records in the message's metadata (`model`,
`fallback_from`). Without `after_first_byte` (the default) a stream that fails after its
first event is not replayed: the client has already seen part of one answer, and gluing a
second onto it would be worse than the error. With it, the reset is announced only once
the replacement streams (a fallback failing before its first byte announces nothing), so
a consumer drops the partial attempt exactly when the new one begins; the agent turns it
into the `step_reset` run event. Only runs whose readers can retract text get it
(`app.runs.requests`).

The circuit breaker is per provider name and per process: after `FAILURES_TO_OPEN`
failures in a row the provider is skipped for `OPEN_SECONDS`, then tried again (one
success closes it). A dead provider costs each request nothing once its circuit is open.
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncGenerator, Callable, Sequence

from app.domain.errors import ProviderRateLimited, ProviderTimeout, ProviderUnavailable
from app.domain.models import ModelInfo
from app.domain.stream import ModelRequest, ProviderEvent, ResponseMeta, StreamReset
from app.providers.base import Provider

log = logging.getLogger("chat_bff.providers")

FAILURES_TO_OPEN = 3
OPEN_SECONDS = 30.0
# Failures that say "this provider, now" rather than "this request": worth another model.
FAILOVER_ERRORS = (ProviderUnavailable, ProviderRateLimited, ProviderTimeout)


class CircuitBreaker:
    """Consecutive failures per provider; open (skipped) for a while after too many."""

    def __init__(
        self,
        *,
        failures_to_open: int = FAILURES_TO_OPEN,
        open_seconds: float = OPEN_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._failures_to_open = failures_to_open
        self._open_seconds = open_seconds
        self._clock = clock
        self._failures: dict[str, int] = {}
        self._open_until: dict[str, float] = {}

    def is_open(self, provider: str) -> bool:
        return self._open_until.get(provider, 0.0) > self._clock()

    def failed(self, provider: str) -> None:
        count = self._failures.get(provider, 0) + 1
        self._failures[provider] = count
        if count >= self._failures_to_open:
            self._open_until[provider] = self._clock() + self._open_seconds
            log.warning(
                "provider circuit open: skipped for a while",
                extra={"provider": provider, "failures": count, "seconds": self._open_seconds},
            )

    def succeeded(self, provider: str) -> None:
        self._failures.pop(provider, None)
        self._open_until.pop(provider, None)


class FailoverProvider:
    """A `Provider` over a chain of catalogue entries; built per run (cheap), sharing the
    service's one breaker."""

    def __init__(
        self,
        chain: Sequence[tuple[ModelInfo, Provider]],
        breaker: CircuitBreaker,
        *,
        after_first_byte: bool = False,
    ) -> None:
        if not chain:
            raise ValueError("a failover chain needs at least one model")
        self._chain = list(chain)
        self._breaker = breaker
        self._after_first_byte = after_first_byte
        first = self._chain[0][1]
        self.name = first.name
        # Options are checked against the primary; a fallback that cannot forward one of
        # them is skipped rather than called without it.
        self.supports = first.supports

    def _candidates(self, request: ModelRequest) -> list[tuple[int, ModelInfo, Provider]]:
        usable = [
            (i, info, provider)
            for i, (info, provider) in enumerate(self._chain)
            if i == 0 or set(request.options.named()) <= provider.supports
        ]
        closed = [c for c in usable if not self._breaker.is_open(c[2].name)]
        return closed or usable[-1:]  # every circuit open: still try the last resort

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        candidates = self._candidates(request)
        reset: StreamReset | None = None  # announced when the replacement's first event comes
        for position, (index, info, provider) in enumerate(candidates):
            last = position == len(candidates) - 1
            # A fallback's own cap bounds the output asked of it, as the primary's did.
            upstream = {
                "model": info.upstream_model,
                "max_output_tokens": info.output_cap(request.max_output_tokens),
            }
            call = request if index == 0 else request.model_copy(update=upstream)
            started = False
            events = provider.stream(call)
            try:
                async for event in events:
                    if not started:
                        started = True
                        if reset is not None:
                            yield StreamReset(
                                failed_model_id=reset.failed_model_id,
                                model_id=info.id,
                                code=reset.code,
                            )
                        if index > 0:
                            yield ResponseMeta(model_id=info.id)
                    yield event
            except FAILOVER_ERRORS as exc:
                self._breaker.failed(provider.name)
                if last or (started and not self._after_first_byte):
                    raise
                if started:
                    reset = StreamReset(failed_model_id=info.id, model_id="", code=exc.code)
                log.warning(
                    "model call failed: trying the next fallback",
                    extra={
                        "model": info.id,
                        "provider": provider.name,
                        "code": exc.code,
                        "after_first_byte": started,
                    },
                )
                continue
            finally:
                await events.aclose()
            self._breaker.succeeded(provider.name)
            return

    async def aclose(self) -> None:
        """The chain's providers belong to the service, which closes them."""


def failover_chain(
    model: ModelInfo, fallbacks: Sequence[ModelInfo], providers: dict[str, Provider]
) -> list[tuple[ModelInfo, Provider]]:
    """`model` and the fallbacks the caller may use (resolved by the catalogue with the
    caller's roles) with their providers, in order."""
    return [(entry, providers[entry.provider]) for entry in (model, *fallbacks)]
