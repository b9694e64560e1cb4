"""OpenAI Chat Completions, and any OpenAI-compatible server (Ollama, vLLM, LM Studio).

Only translation and error mapping live here: messages go out through
`app.translate.openai_chat`, chunks come back as provider events.

Retries. The SDK retries before the first byte of the answer (429 honouring Retry-After,
408/409, 5xx, connection errors), bounded by `max_retries`. Once the stream has started we
never retry: events already yielded have reached the user, and a second call would repeat
them. A stream that breaks is `ProviderUnavailable` and the caller decides.

Reading the stream. The SDK sends the request, retries it and maps HTTP errors; the body of
a 200 is read as raw SSE (`app.providers._sse`) and each chunk parsed with `json.loads`
into the dict `chunk_to_events` reads: the SDK's stream (its decoder and a typed
`ChatCompletionChunk` per chunk) took about ten times as long. What it did besides, this
does too: an `{"error": ...}` payload inside the stream is an error, `[DONE]` ends it (the
rest of the body is drained briefly so the connection can be reused), and closing the
generator closes the response.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Iterator
from contextlib import aclosing, contextmanager
from typing import Any

import httpx2
import openai

from app.domain.errors import ProviderError
from app.domain.stream import Finish, ModelRequest, ProviderEvent
from app.providers import _sse
from app.providers.errors import TRANSPORT_FAILURES, TRANSPORT_TIMEOUTS, UpstreamErrors
from app.providers.openai_client import TemplatedOpenAI
from app.providers.pool import upstream_http_client
from app.translate.openai_chat.options import SUPPORTED as OPENAI_OPTIONS
from app.translate.openai_chat.options import options_to_openai
from app.translate.openai_chat.stream import chunk_to_events
from app.translate.openai_chat.write import (
    messages_to_openai,
    tool_choice_to_openai,
    tools_to_openai,
)

# The SDK's own timeout and connection errors, and what httpx2 raises reading the body.
_TIMEOUTS: tuple[type[BaseException], ...] = (openai.APITimeoutError, *TRANSPORT_TIMEOUTS)
_CONNECTION_FAILURES: tuple[type[BaseException], ...] = (
    openai.APIConnectionError,
    *TRANSPORT_FAILURES,
)


class OpenAIProvider:
    """`stream(request)` over `chat.completions.create(stream=True)`, its body read raw."""

    supports = OPENAI_OPTIONS

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
        name: str = "openai",
    ) -> None:
        self.name = name
        # Messages name "the model provider": this may be any OpenAI-compatible server.
        self._errors = UpstreamErrors(provider=name, label="The model provider", secret=api_key)
        limits = httpx2.Timeout(timeout, connect=connect_timeout)
        self._client = TemplatedOpenAI(
            api_key=api_key,
            base_url=base_url,
            timeout=limits,
            max_retries=max_retries,
            # The SDK's defaults (redirects, keep-alive) with our timeouts and pool size (one
            # connection per open stream), on our O(1) pool (`app.providers.pool`).
            http_client=http_client
            or upstream_http_client(
                timeout=limits,
                max_connections=max_connections,
                sdk_default=openai.DefaultAsyncHttpxClient,
            ),
        )
        # OpenAI itself wants `max_completion_tokens` (reasoning models refuse `max_tokens`);
        # compatible servers have long known only `max_tokens`.
        self._completion_tokens_param = (
            "max_completion_tokens"
            if base_url is None or "api.openai.com" in base_url
            else "max_tokens"
        )

    def _params(self, request: ModelRequest) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": request.model,
            "messages": messages_to_openai(request.messages),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = tools_to_openai(request.tools)
            choice = tool_choice_to_openai(request.tool_choice)
            if choice is not None:
                params["tool_choice"] = choice
            if request.parallel_tool_calls is not None:
                params["parallel_tool_calls"] = request.parallel_tool_calls
        if request.max_output_tokens is not None:
            params[self._completion_tokens_param] = request.max_output_tokens
        if request.temperature is not None:
            params["temperature"] = request.temperature
        params.update(options_to_openai(request.options))
        return params

    async def stream(self, request: ModelRequest) -> AsyncGenerator[ProviderEvent, None]:
        # Closing the response (also on aclose() when the client is gone or the run is
        # cancelled) closes the upstream connection now, which is what stops the spend.
        # The params are not kept in this frame: they would live as long as the stream.
        # Nor the bytes read or the parsed chunk: this frame waits at every `yield` and
        # for the next read, and would hold them (~1 KB a stream) until the next chunk.
        with self._mapped_errors():
            response = await self._send(self._params(request))
            try:
                # `_sse.events` inlined: one async generator less per chunk on the hot path.
                decoder = _sse.SSEDecoder()
                finished = done = False
                first = True
                async with aclosing(_sse.body(response)) as body:
                    async for data in body:
                        events = decoder.feed(data)
                        del data
                        for event in events:
                            if event.data.startswith(b"[DONE]"):
                                done = True
                                break
                            items = self._events(event, response, first)
                            if items is None:
                                continue
                            for item in items:
                                finished = finished or isinstance(item, Finish)
                                yield item
                            first = False
                        if done:
                            await _sse.drain(response, body)
                            break
            finally:
                await response.aclose()
            if not finished:
                raise self._errors.incomplete()

    async def _send(self, params: dict[str, Any]) -> httpx2.Response:
        """`chat.completions.create(stream=True)`'s request, its body not yet read.

        The SDK's client posts it (auth, retries, status errors are its own, as through
        `create`), but the params go out as they are: `create` first walks them against
        its TypedDicts (`async_maybe_transform`), about 11% of a non-streaming request's
        CPU (`bench.profile nonstream`), to rename or reformat fields ours never use; they
        are plain JSON already.
        """
        return await self._client.post_stream("/chat/completions", params)

    def _events(
        self, event: _sse.SSEvent, response: httpx2.Response, first: bool
    ) -> list[ProviderEvent] | None:
        """One event's chunk as provider events; None for a keep-alive."""
        chunk = self._chunk(event, response)
        return None if chunk is None else chunk_to_events(chunk, first=first)

    def _chunk(self, event: _sse.SSEvent, response: httpx2.Response) -> dict[str, Any] | None:
        """One event's chunk; None for a keep-alive. An error in the stream raises.

        The `{"error": ...}` check is the SDK stream's own; an `event: error` counts too,
        whatever its data, so a compatible server's error is not read as an empty chunk.
        """
        try:
            # SSE is UTF-8: decoding it here spares `json.loads` guessing the encoding of
            # bytes, per chunk (what it would do with UTF-8 is exactly this).
            data = json.loads(event.data.decode("utf-8", "surrogatepass"))
        except json.JSONDecodeError:
            if _sse.is_blank(event.data):
                return None
            raise
        if isinstance(data, dict) and not data.get("error") and event.event != b"error":
            return data
        error = data.get("error") if isinstance(data, dict) else data
        raise openai.APIError(
            "The model provider sent an error inside the stream.",
            response.request,
            body=error,
        )

    async def aclose(self) -> None:
        await self._client.close()

    @contextmanager
    def _mapped_errors(self) -> Iterator[None]:
        """The one place SDK and transport errors become ours (`app.providers.errors`)."""
        errors = self._errors
        try:
            yield
        except ProviderError:
            raise
        except openai.APIStatusError as exc:
            raise errors.for_status(
                exc.status_code,
                kind=exc.type,
                detail=_upstream_message(exc.body),
                headers=exc.response.headers,
            ) from exc
        except _TIMEOUTS as exc:
            raise errors.timeout() from exc
        except _CONNECTION_FAILURES as exc:
            # The body is read with httpx2 itself, so its errors arrive unwrapped; the
            # SDK's stream counted TLS failures and an early end of stream among them.
            raise errors.connection() from exc
        except (openai.APIResponseValidationError, json.JSONDecodeError, _sse.EventTooLarge) as exc:
            raise errors.unreadable() from exc
        except openai.APIError as exc:
            # An error event inside a 200 stream (raised by `_chunk`).
            raise errors.in_stream(exc.type) from exc


def _upstream_message(body: object) -> str | None:
    """The upstream's own explanation (useful: "context too long"); the kit scrubs it."""
    error = body.get("error", body) if isinstance(body, dict) else None
    message = error.get("message") if isinstance(error, dict) else None
    return message if isinstance(message, str) else None
