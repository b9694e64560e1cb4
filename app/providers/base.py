"""The one protocol every provider implements.

A provider owns an SDK client and a translation. Auth comes from settings, the tool loop
lives in `app.agent`, and SDK exceptions are mapped to `app.domain.errors.ProviderError`
inside the provider (one context manager per vendor, built on the shared status table,
Retry-After reader and scrubber of `app.providers.errors`) and nowhere else.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Protocol, runtime_checkable

from app.domain.stream import ModelRequest, ProviderEvent


@runtime_checkable
class Provider(Protocol):
    name: str

    def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        """Start the model call and yield its events until the model finishes.

        Closing the iterator (`aclose()`) must close the upstream HTTP response promptly:
        that is how a client disconnect or a cancel stops the upstream spend.
        """
        ...

    async def aclose(self) -> None:
        """Release the SDK's HTTP client."""
        ...
