"""The HTTP client a provider's SDK sends through: its pool and timeouts."""

from __future__ import annotations

import urllib.request
from collections.abc import Callable

import httpx2

from app.providers.transport import UpstreamPool

# The SDKs' own default for idle keep-alive connections.
KEEPALIVE = 100


def pool_limits(max_connections: int) -> httpx2.Limits:
    """At most `max_connections` open at once: over HTTP/1.1 each streaming answer holds
    one for its whole length, so this bounds the streams a process serves at a time (the
    SDKs' default is 1,000; a request past it waits for a free one, up to the connect
    timeout, and then fails)."""
    return httpx2.Limits(
        max_connections=max_connections,
        max_keepalive_connections=min(KEEPALIVE, max_connections),
    )


def upstream_http_client(
    *,
    timeout: httpx2.Timeout,
    max_connections: int,
    sdk_default: Callable[..., httpx2.AsyncClient],
) -> httpx2.AsyncClient:
    """What the SDK's default client is (redirects followed, our timeouts and pool size),
    on `UpstreamPool` (`app.providers.transport`: O(1) per request, where httpx's pool
    walks every connection). When the environment names a proxy (HTTP_PROXY and friends),
    the SDK's default client instead: it routes through the proxy, which our pool does not."""
    limits = pool_limits(max_connections)
    if urllib.request.getproxies():
        return sdk_default(timeout=timeout, limits=limits)
    assert limits.max_keepalive_connections is not None
    pool = UpstreamPool(
        max_connections=max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
    )
    return httpx2.AsyncClient(transport=pool, timeout=timeout, follow_redirects=True)
