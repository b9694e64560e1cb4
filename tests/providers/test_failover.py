"""Failover: a model's fallbacks answer when its provider fails before the first byte, a
provider that keeps failing is skipped for a while, and nothing is glued after a start."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

import pytest

from app.domain.errors import (
    ProviderBadRequest,
    ProviderError,
    ProviderRateLimited,
    ProviderTimeout,
    ProviderUnavailable,
)
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.stream import (
    GenerationOptions,
    ModelRequest,
    ProviderEvent,
    ResponseMeta,
    StreamReset,
    TextDelta,
)
from app.providers.failover import CircuitBreaker, FailoverProvider


@dataclass
class Fake:
    """A provider that fails with `error` (after `after` events) or answers `text`."""

    name: str
    text: str = "hi"
    error: ProviderError | None = None
    after: int = 0
    supports: frozenset[str] = frozenset()
    models: list[str] = field(default_factory=list)

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        self.models.append(request.model)
        for n, word in enumerate(self.text.split()):
            if self.error is not None and n == self.after:
                raise self.error
            yield TextDelta(text=word)
        if self.error is not None:
            raise self.error

    async def aclose(self) -> None:
        pass


def info(model_id: str) -> ModelInfo:
    return ModelInfo(id=model_id, provider="openai", upstream_model=f"up-{model_id}")


def down(name: str, error: ProviderError | None = None) -> Fake:
    return Fake(name, error=error or ProviderUnavailable("down", provider=name))


REQUEST = ModelRequest(model="up-primary", messages=[Message(role="user", content="Hi")])


async def collect(provider: FailoverProvider, request: ModelRequest = REQUEST) -> list[object]:
    return [event async for event in provider.stream(request)]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    "error",
    [
        ProviderUnavailable("502 upstream", provider="p"),
        ProviderRateLimited("429", provider="p", retry_after=30),
        ProviderTimeout("504", provider="p"),
    ],
)
async def test_a_failure_before_the_first_byte_moves_to_the_fallback(error: ProviderError) -> None:
    primary, fallback = down("p", error), Fake("q", text="from the fallback")
    chain = [(info("primary"), primary), (info("backup"), fallback)]

    events = await collect(FailoverProvider(chain, CircuitBreaker()))

    assert events[0] == ResponseMeta(model_id="backup")
    assert [e.text for e in events[1:] if isinstance(e, TextDelta)] == ["from", "the", "fallback"]
    assert fallback.models == ["up-backup"]  # the fallback's own upstream model name


async def test_the_primary_answering_says_nothing_about_fallbacks() -> None:
    chain = [(info("primary"), Fake("p", text="fine")), (info("backup"), Fake("q"))]

    events = await collect(FailoverProvider(chain, CircuitBreaker()))

    assert events == [TextDelta(text="fine")]


async def test_a_failure_after_the_first_byte_is_raised_not_glued_to_another_answer() -> None:
    broken = Fake("p", text="half an answer", error=ProviderUnavailable("cut", provider="p"))
    broken.after = 1
    fallback = Fake("q")
    chain = [(info("primary"), broken), (info("backup"), fallback)]

    with pytest.raises(ProviderUnavailable):
        await collect(FailoverProvider(chain, CircuitBreaker()))
    assert fallback.models == []


async def test_with_after_first_byte_a_cut_stream_is_reset_and_answered_by_the_fallback() -> None:
    broken = Fake("p", text="half an answer", error=ProviderUnavailable("cut", provider="p"))
    broken.after = 1
    fallback = Fake("q", text="whole answer")
    chain = [(info("primary"), broken), (info("backup"), fallback)]

    events = await collect(FailoverProvider(chain, CircuitBreaker(), after_first_byte=True))

    assert events == [
        TextDelta(text="half"),
        StreamReset(failed_model_id="primary", model_id="backup", code="provider_unavailable"),
        ResponseMeta(model_id="backup"),
        TextDelta(text="whole"),
        TextDelta(text="answer"),
    ]


async def test_the_reset_names_the_fallback_that_streams_not_one_that_failed_silently() -> None:
    broken = Fake("p", text="half an answer", error=ProviderTimeout("cut", provider="p"))
    broken.after = 1
    chain = [(info("primary"), broken), (info("dead"), down("q")), (info("last"), Fake("r"))]

    events = await collect(FailoverProvider(chain, CircuitBreaker(), after_first_byte=True))

    resets = [e for e in events if isinstance(e, StreamReset)]
    assert resets == [
        StreamReset(failed_model_id="primary", model_id="last", code="provider_timeout")
    ]


async def test_with_after_first_byte_the_last_models_cut_stream_is_still_raised() -> None:
    broken = Fake("q", text="half an answer", error=ProviderUnavailable("cut", provider="q"))
    broken.after = 1
    chain = [(info("primary"), down("p")), (info("backup"), broken)]

    with pytest.raises(ProviderUnavailable):
        await collect(FailoverProvider(chain, CircuitBreaker(), after_first_byte=True))


async def test_a_bad_request_is_the_requests_fault_and_is_not_retried_elsewhere() -> None:
    fallback = Fake("q")
    chain = [
        (info("primary"), down("p", ProviderBadRequest("bad", provider="p"))),
        (info("backup"), fallback),
    ]

    with pytest.raises(ProviderBadRequest):
        await collect(FailoverProvider(chain, CircuitBreaker()))
    assert fallback.models == []


async def test_when_every_model_fails_the_last_failure_is_raised() -> None:
    chain = [(info("primary"), down("p")), (info("backup"), down("q"))]

    with pytest.raises(ProviderUnavailable) as caught:
        await collect(FailoverProvider(chain, CircuitBreaker()))
    assert caught.value.provider == "q"


async def test_a_provider_that_keeps_failing_is_skipped_until_its_circuit_closes() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures_to_open=3, open_seconds=30, clock=clock)
    primary, fallback = down("p"), Fake("q")
    chain = [(info("primary"), primary), (info("backup"), fallback)]

    for _ in range(5):
        await collect(FailoverProvider(chain, breaker))

    assert len(primary.models) == 3  # open after the third failure: not called again
    assert len(fallback.models) == 5
    clock.now += 31
    primary.error = None  # it came back
    events = await collect(FailoverProvider(chain, breaker))
    assert events == [TextDelta(text="hi")]
    assert len(primary.models) == 4 and not breaker.is_open("p")


async def test_with_every_circuit_open_the_last_resort_is_still_tried() -> None:
    clock = Clock()
    breaker = CircuitBreaker(failures_to_open=1, open_seconds=30, clock=clock)
    breaker.failed("p")
    breaker.failed("q")
    last = Fake("q", text="still here")
    chain = [(info("primary"), Fake("p")), (info("backup"), last)]

    events = await collect(FailoverProvider(chain, breaker))

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["still", "here"]


async def test_a_fallback_that_cannot_forward_a_requested_option_is_skipped() -> None:
    primary = down("p")
    primary.supports = frozenset({"seed"})
    plain, able = Fake("q"), Fake("r", supports=frozenset({"seed"}), text="seeded")
    chain = [(info("primary"), primary), (info("plain"), plain), (info("able"), able)]
    request = REQUEST.model_copy(update={"options": GenerationOptions(seed=7)})

    events = await collect(FailoverProvider(chain, CircuitBreaker()), request)

    assert plain.models == []
    assert events[0] == ResponseMeta(model_id="able")
