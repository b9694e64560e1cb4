"""What the process last learnt of its Redis, in words an operator reads on `/readyz`
(kept apart from the breaker so that reading it imports no Redis client)."""

from __future__ import annotations

from typing import Literal

Failure = Literal["unreachable", "loading", "auth_failed", "no_permission"]
RedisState = Literal["ok", "unreachable", "loading", "auth_failed", "no_permission"]
