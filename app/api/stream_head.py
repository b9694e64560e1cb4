"""A stream's head held until the model has said something.

Why: `/v1/chat/completions` answers a request that fails before any output with its HTTP
status, as OpenAI and every compatible server do: the openai SDK raises its typed error
(`RateLimitError` on a 429) from `create()` and retries by status and `Retry-After`;
proxies and access logs see the failure. Were the 200 and the SSE headers sent at once, a
provider's 429 (after our own retries and fallbacks) could only arrive as an error frame
inside a 200 stream. (`/v1/responses` keeps its failures in its stream: AIKit's stream
adapter shows an `error` event's message, but only the status text of a failed fetch.)

How: the response is made and served as any stream (its setup overlaps the upstream's
answer, off the path to the first token); only its start message waits, in `send`, for
the first body message. The batches it streams are held while they say nothing (the
run's start), so the first body message is the model's first output, or a heartbeat:
a model slow to say anything does not keep the client without headers past one heartbeat
interval, and a failure after that arrives in the stream as before. When the run ends
failed with nothing said and nothing sent, the stream raises `FailedBeforeOutput`, and
the response answers the failure with its status instead (`answer`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.requests import Request
from starlette.types import Message, Receive, Scope, Send

from app.api.errors import domain_error_response
from app.domain.errors import ChatBffError
from app.domain.events import SequencedEvent
from app.runs.handle import RunHandle

Batches = AsyncIterator[list[SequencedEvent]]

# What a run that fails before the model says anything sends: its start, the error, the
# (empty) message and its end.
_SILENT = frozenset({"run_start", "error", "message_end", "run_end"})


def _says_something(batch: list[SequencedEvent]) -> bool:
    return any(item.type not in _SILENT for item in batch)


class FailedBeforeOutput(Exception):
    """The run failed before the model said anything, and nothing has been sent."""

    def __init__(self, error: ChatBffError) -> None:
        super().__init__(error.message)
        self.error = error


class HeldHead:
    """One stream's held start: `send` wraps the response's `send`, `batches` its events."""

    __slots__ = ("handle", "sent", "start")

    def __init__(self, handle: RunHandle) -> None:
        self.handle = handle
        self.sent = False  # the start has gone out: from now on, everything streams
        self.start: Message | None = None

    def send(self, send: Send) -> Send:
        async def held(message: Message) -> None:
            if not self.sent:
                if message["type"] == "http.response.start":
                    self.start = message
                    return
                start, self.start = self.start, None
                self.sent = True
                if start is not None:
                    await send(start)
            await send(message)

        return held

    async def batches(self, batches: Batches) -> Batches:
        held: list[SequencedEvent] = []
        async for batch in batches:
            if not self.sent and not _says_something(batch):
                held.extend(batch)
                continue
            if held:
                batch, held = [*held, *batch], []
            yield batch
        if held:
            await self._raise_failure()
            yield held

    async def _raise_failure(self) -> None:
        """Raises `FailedBeforeOutput` when the run failed and nothing has been sent."""
        if self.sent:
            return
        await self.handle.wait()
        if self.sent or self.handle.status != "failed":
            return
        try:
            self.handle.result()
        except ChatBffError as error:
            raise FailedBeforeOutput(error) from None

    async def answer(
        self, failed: FailedBeforeOutput, scope: Scope, receive: Receive, send: Send
    ) -> None:
        """The failure's own answer (its status, `Retry-After`, error body), in place of
        the stream that never started."""
        response = domain_error_response(Request(scope), failed.error)
        await response(scope, receive, send)
