"""The upstream connection pool under the SDK clients (`app.providers.transport`), seen
from the fake upstream's side: connections reused, bounded, replaced and freed."""

from __future__ import annotations

import asyncio
import gc
import weakref
from collections.abc import AsyncIterator

import httpx2
import openai
import pytest

from app.domain.messages import Message
from app.domain.stream import ModelRequest
from app.providers.openai import OpenAIProvider
from app.providers.pool import upstream_http_client
from app.providers.transport import UpstreamPool
from tests.fakes.openai_upstream import Completion, FakeOpenAIUpstream
from tests.support.non_streaming import fold


def make_provider(upstream: FakeOpenAIUpstream, **overrides: object) -> OpenAIProvider:
    options: dict[str, object] = {
        "api_key": "sk-test",
        "base_url": upstream.base_url,
        "timeout": 5.0,
        "connect_timeout": 2.0,
        "max_retries": 0,
    }
    options.update(overrides)
    return OpenAIProvider(**options)  # type: ignore[arg-type]


@pytest.fixture
async def provider(openai_upstream: FakeOpenAIUpstream) -> AsyncIterator[OpenAIProvider]:
    provider = make_provider(openai_upstream)
    yield provider
    await provider.aclose()


def ask(text: str = "Hi") -> ModelRequest:
    return ModelRequest(model="gpt-4o-mini", messages=[Message(role="user", content=text)])


async def answer_text(provider: OpenAIProvider) -> str:
    response = await fold(provider.stream(ask()))
    return "".join(getattr(p.data, "text", "") for p in response.parts)


async def test_answers_one_after_another_share_one_connection(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    for n in range(5):
        openai_upstream.enqueue(Completion(text=f"answer {n}"))
    texts = [await answer_text(provider) for _ in range(5)]
    assert texts == [f"answer {n}" for n in range(5)]
    assert openai_upstream.connections_accepted == 1


async def test_more_streams_than_connections_wait_for_a_free_one(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    provider = make_provider(openai_upstream, max_connections=2)
    for n in range(6):
        openai_upstream.enqueue(Completion(text=f"slow words {n}", delay=0.02))
    try:
        texts = await asyncio.gather(*(answer_text(provider) for _ in range(6)))
    finally:
        await provider.aclose()
    assert sorted(texts) == sorted(f"slow words {n}" for n in range(6))
    assert openai_upstream.most_connections_open == 2


async def test_a_connection_the_upstream_closed_while_idle_is_replaced_without_an_error(
    provider: OpenAIProvider, openai_upstream: FakeOpenAIUpstream
) -> None:
    openai_upstream.enqueue(Completion(text="first"), Completion(text="second"))
    assert await answer_text(provider) == "first"
    openai_upstream.hang_up_idle()
    await asyncio.sleep(0.05)  # the FIN reaches the client's socket
    assert await answer_text(provider) == "second"  # max_retries=0: no retry hid a failure
    assert openai_upstream.connections_accepted == 2


async def test_a_stream_abandoned_midway_frees_its_connection(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    provider = make_provider(openai_upstream, max_connections=1)
    openai_upstream.enqueue(
        Completion(text=["many", " slow", " words"] * 20, delay=0.05), Completion(text="next")
    )
    try:
        stream = provider.stream(ask())
        await anext(stream)
        await stream.aclose()
        await openai_upstream.stream_ended(0)
        assert await asyncio.wait_for(answer_text(provider), 3) == "next"
    finally:
        await provider.aclose()
    assert openai_upstream.streams[0].outcome == "client_disconnected"


async def test_a_request_waits_at_most_the_pool_timeout_for_a_connection(
    openai_upstream: FakeOpenAIUpstream,
) -> None:
    openai_upstream.enqueue(Completion(text=["held"] * 40, delay=0.05))
    pool = UpstreamPool(max_connections=1, max_keepalive_connections=1)
    async with httpx2.AsyncClient(transport=pool, timeout=httpx2.Timeout(5, pool=0.1)) as client:
        url = openai_upstream.base_url + "/chat/completions"
        body = {"model": "m", "messages": [], "stream": True}
        async with client.stream("POST", url, json=body) as held:
            assert held.status_code == 200
            with pytest.raises(httpx2.PoolTimeout):
                await client.post(url, json=body)
    assert openai_upstream.connections_accepted == 1


def test_a_proxy_in_the_environment_keeps_the_sdks_own_client(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Our pool speaks to the upstream directly; only the SDK's client routes via a proxy."""
    timeout = httpx2.Timeout(5)
    direct = upstream_http_client(
        timeout=timeout, max_connections=10, sdk_default=openai.DefaultAsyncHttpxClient
    )
    assert isinstance(direct._transport, UpstreamPool)
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    proxied = upstream_http_client(
        timeout=timeout, max_connections=10, sdk_default=openai.DefaultAsyncHttpxClient
    )
    assert isinstance(proxied, openai.DefaultAsyncHttpxClient)
    assert not isinstance(proxied._transport, UpstreamPool)


async def _fails_leaving(client: httpx2.AsyncClient, request: httpx2.Request) -> type[Exception]:
    """Sends `request`, reads its body, and returns the type of what failed: the error
    itself is let go here, so only a reference cycle could keep the request alive."""
    try:
        response = await client.send(request, stream=True)
        async for _ in response.aiter_bytes():
            pass
    except httpx2.TransportError as exc:
        return type(exc)
    raise AssertionError("the request did not fail")


@pytest.mark.parametrize("where", ["connect", "body"])
async def test_a_failed_upstream_request_is_freed_without_a_garbage_collection(
    openai_upstream: FakeOpenAIUpstream, unused_tcp_port: int, where: str
) -> None:
    """A failed request (a refused connect; a body cut midway) leaves no reference cycle
    behind: what it held (the request, the SDK's and httpx's frames) is freed as soon as
    the error is handled. In a cycle it stayed until a full collection, which while
    serving is rare: thousands of connects timing out under load held ~15 KB each."""
    if where == "connect":
        url = f"http://127.0.0.1:{unused_tcp_port}/v1/chat/completions"
        expected: type[Exception] = httpx2.ConnectError
    else:
        openai_upstream.enqueue(Completion(text=["a"] * 20, cut_after=3))
        url = openai_upstream.base_url + "/chat/completions"
        expected = httpx2.RemoteProtocolError
    pool = UpstreamPool(max_connections=4, max_keepalive_connections=4)
    async with httpx2.AsyncClient(transport=pool, timeout=httpx2.Timeout(5)) as client:
        request = client.build_request("POST", url, json={"model": "m", "stream": True})
        freed = weakref.ref(request)
        gc.collect()
        gc.disable()
        try:
            assert await _fails_leaving(client, request) is expected
            del request
            assert freed() is None
        finally:
            gc.enable()


async def test_the_ca_bundle_is_loaded_for_the_first_https_origin_only(
    openai_upstream: FakeOpenAIUpstream, unused_tcp_port: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plain-http upstream (a local model server, the bench's) never loads the CA bundle,
    about 1.4 MB of a worker; an https one loads it once, on its first connection."""
    made: list[object] = []
    real = httpx2.create_ssl_context

    def counted() -> object:
        made.append(real())
        return made[-1]

    monkeypatch.setattr(httpx2, "create_ssl_context", counted)
    pool = UpstreamPool(max_connections=4, max_keepalive_connections=4)
    async with httpx2.AsyncClient(transport=pool, timeout=httpx2.Timeout(5)) as client:
        openai_upstream.enqueue(Completion(text="plain"))
        plain = openai_upstream.base_url + "/chat/completions"
        response = await client.post(plain, json={"model": "m", "stream": True})
        assert response.status_code == 200
        assert made == []
        # Nothing listens there: the connect fails, after the pool has made the context.
        secure = f"https://127.0.0.1:{unused_tcp_port}/v1/chat/completions"
        for _ in range(2):
            with pytest.raises(httpx2.ConnectError):
                await client.post(secure, json={"model": "m", "stream": True})
        assert len(made) == 1
