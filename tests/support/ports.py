"""Loopback ports for services that are down."""

from __future__ import annotations

import socket


def closed_port() -> int:
    """A loopback port nothing listens on: a server (Redis, say) that is down."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
