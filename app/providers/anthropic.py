"""The Anthropic provider: the official SDK on an injected HTTP client, our events out.

Retries are the SDK's own and happen only before the first byte of an answer (429 with
its Retry-After, 5xx and 529 overloaded, connection errors; at most `max_retries`). An
upstream asking for a wait longer than `MAX_RETRY_AFTER` is not retried (the SDK would
sleep for as long as any Retry-After says, an hour for `retry-after: 3600`, with the
caller's request and the conversation held): its error, carrying that Retry-After, goes
to the caller at once, as the OpenAI SDK does past its own two minutes. Once
an event has been yielded nothing is retried: a stream cut mid-way is an error for the
caller, who has already shown part of the answer.

Every SDK and transport exception is mapped to `app.domain.errors` in `_mapped_errors`
and nowhere else, through the shared kit in `app.providers.errors`: the messages are
ours, and the only upstream text that can reach them (a 4xx explanation) is redacted of
keys and credentials first.

The SDK sends the request, retries it and maps HTTP errors; the body of a 200 is read as
raw SSE (`app.providers._sse`) and each event's data parsed with `json.loads` into the
dict `stream_event_to_events` reads: the SDK's typed event object per SSE event took
several times as long as parsing and translating it. The SDK stream's rules are kept:
`ping` and unnamed events are skipped, an `error` event raises as the SDK's
`APIStatusError` would, and closing the generator closes the response.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing, asynccontextmanager, suppress
from typing import Any

import anthropic
import httpx2

from app.domain.errors import ProviderError
from app.domain.stream import ModelRequest, ProviderEvent
from app.providers import _sse
from app.providers.errors import (
    TRANSPORT_FAILURES,
    TRANSPORT_TIMEOUTS,
    UpstreamErrors,
    retry_after_seconds,
)
from app.providers.pool import upstream_http_client
from app.translate.anthropic.options import SUPPORTED as ANTHROPIC_OPTIONS
from app.translate.anthropic.options import options_to_anthropic
from app.translate.anthropic.stream import stream_event_to_events
from app.translate.anthropic.write import (
    messages_to_anthropic,
    tool_choice_to_anthropic,
    tools_to_anthropic,
)

DEFAULT_MAX_TOKENS = 4096
MAX_RETRY_AFTER = 120.0  # seconds; the OpenAI SDK's limit, so both providers wait alike

# The SDK's own timeout and connection errors, and what httpx2 raises reading the body.
_TIMEOUTS: tuple[type[BaseException], ...] = (anthropic.APITimeoutError, *TRANSPORT_TIMEOUTS)
_CONNECTION_FAILURES: tuple[type[BaseException], ...] = (
    anthropic.APIConnectionError,
    *TRANSPORT_FAILURES,
)


class _Client(anthropic.AsyncAnthropic):
    """The SDK's client, except that it does not wait out a Retry-After past the limit."""

    def _should_retry(self, response: httpx2.Response) -> bool:
        wait = retry_after_seconds(response.headers)
        if wait is not None and wait > MAX_RETRY_AFTER:
            return False
        return super()._should_retry(response)


class AnthropicProvider:
    """`Provider` for Anthropic's Messages API (or anything speaking it at `base_url`)."""

    supports = ANTHROPIC_OPTIONS

    def __init__(
        self,
        *,
        api_key: str,
        base_url: str | None,
        timeout: float,
        connect_timeout: float,
        max_retries: int,
        max_connections: int = 1000,
        http_client: httpx2.AsyncClient | None = None,
        name: str = "anthropic",
    ) -> None:
        self.name = name
        self._errors = UpstreamErrors(provider=name, label="Anthropic", secret=api_key)
        limits = httpx2.Timeout(timeout, connect=connect_timeout)
        client = http_client or upstream_http_client(
            timeout=limits,
            max_connections=max_connections,
            sdk_default=anthropic.DefaultAsyncHttpxClient,
        )
        self._client = _Client(
            api_key=api_key,
            base_url=base_url,
            timeout=limits,
            max_retries=max_retries,
            http_client=client,
        )

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        system, messages = messages_to_anthropic(request.messages)
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages,
            "max_tokens": request.max_output_tokens or DEFAULT_MAX_TOKENS,
        }
        if system is not None:
            params["system"] = system
        if request.tools:
            params["tools"] = tools_to_anthropic(request.tools)
            choice = tool_choice_to_anthropic(
                request.tool_choice, parallel_tool_calls=request.parallel_tool_calls
            )
            if choice is not None:
                params["tool_choice"] = choice
        options, raw = options_to_anthropic(request.options)
        params.update(options)
        if request.temperature is not None:
            # SDK 1.x dropped the sampling arguments from its signature; the API still takes
            # `temperature` (newer models only its default), so it rides in the raw body.
            raw["temperature"] = request.temperature
        if raw:
            params["extra_body"] = raw
        return params

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        params = self._params(request)
        # Leaving the SDK's context, also on `aclose()` from a disconnect or a cancel,
        # closes the response: that stops the upstream spend now.
        async with (
            self._mapped_errors(),
            self._client.messages.with_streaming_response.create(**params, stream=True) as upstream,
        ):
            del params  # not held for as long as the stream is open
            response = upstream.http_response
            complete = False
            async with aclosing(_sse.events(response)) as events:
                async for event in events:
                    data = self._event_data(event, response)
                    if data is None:
                        continue
                    for item in stream_event_to_events(data):
                        yield item
                    complete = data.get("type") == "message_stop"
            if not complete:
                raise self._errors.incomplete()

    def _event_data(self, event: _sse.SSEvent, response: httpx2.Response) -> dict[str, Any] | None:
        """One event's data as a dict, None for one to skip; an `error` event raises."""
        if event.event == b"error":
            body: object = event.data.decode(errors="replace")
            with suppress(json.JSONDecodeError):  # the SDK keeps an unreadable body as text
                body = json.loads(event.data)
            raise anthropic.APIStatusError(
                "Anthropic sent an error event inside the stream.", response=response, body=body
            )
        if not event.event or event.event == b"ping" or _sse.is_blank(event.data):
            return None
        try:
            data = json.loads(event.data)
        except json.JSONDecodeError as exc:
            raise self._errors.unreadable(response.status_code) from exc
        if not isinstance(data, dict):
            raise self._errors.unreadable(response.status_code)
        return data

    async def aclose(self) -> None:
        await self._client.close()

    @asynccontextmanager
    async def _mapped_errors(self) -> AsyncIterator[None]:
        """SDK and transport exceptions -> our `ProviderError`s, raised from the original."""
        errors = self._errors
        try:
            yield
        except ProviderError:
            raise
        except anthropic.APIStatusError as exc:
            raise errors.for_status(
                exc.status_code,
                kind=exc.type,
                detail=exc.api_message,
                headers=exc.response.headers,
            ) from exc
        except _TIMEOUTS as exc:
            raise errors.timeout() from exc
        except _CONNECTION_FAILURES as exc:
            # The body is read with httpx2 itself, so its errors arrive unwrapped.
            raise errors.connection() from exc
        except anthropic.APIResponseValidationError as exc:
            raise errors.unreadable(exc.status_code) from exc
        except _sse.EventTooLarge as exc:
            raise errors.unreadable() from exc
        except anthropic.AnthropicError as exc:
            raise errors.failed() from exc
