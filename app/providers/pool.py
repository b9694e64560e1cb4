"""The connection pool a provider's SDK client keeps to its upstream."""

from __future__ import annotations

import httpx2

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
