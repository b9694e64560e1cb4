"""Graceful shutdown: the drain switch, and the SIGTERM procedure that uses it.

A container stop sends SIGTERM and, after its stop timeout, SIGKILL. Before the server
stops listening, chat-bff drains, within `budget` seconds:

    1. `Drain.begin()`: new requests get 503 `shutting_down` with Retry-After (the
       middleware), so a load balancer or client retries elsewhere;
    2. runs are checkpointed as `interrupted` (their readers get message_end + run_end);
    3. every live SSE response ends with a final frame (its run's end, or a retryable
       `error` telling it where to resume) and a clean end of the body;
    4. only then is the server's own SIGTERM handler called (uvicorn stops listening,
       waits for what is left, runs the lifespan shutdown).

The procedure takes over SIGTERM only where a server installed a handler for it (so a
test process or an embedding application keeps its own behaviour); a second SIGTERM
goes straight to the server's handler.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any

log = logging.getLogger("chat_bff.shutdown")


class Drain:
    """Set once when the service starts shutting down; never unset. Counts open SSE
    responses so the shutdown can wait for them to end."""

    def __init__(self) -> None:
        self._event = asyncio.Event()
        self._streams = 0
        self._closed = 0
        self._idle = asyncio.Event()
        self._idle.set()

    def begin(self) -> None:
        self._event.set()

    @property
    def draining(self) -> bool:
        return self._event.is_set()

    async def wait(self) -> None:
        await self._event.wait()

    def stream_opened(self) -> None:
        self._streams += 1
        self._idle.clear()

    def stream_closed(self) -> None:
        self._streams = max(self._streams - 1, 0)
        self._closed += 1
        if self._streams == 0:
            self._idle.set()

    @property
    def open_streams(self) -> int:
        return self._streams

    @property
    def closed_streams(self) -> int:
        """SSE responses that have ended since start-up."""
        return self._closed

    async def streams_ended(self, seconds: float) -> bool:
        """Wait until no SSE response is open (True), or `seconds` passed (False)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(seconds):
                await self._idle.wait()
        return self._idle.is_set()


Handler = Callable[[int, FrameType | None], Any]


class GracefulShutdown:
    def __init__(
        self,
        drain: Drain,
        checkpoint_runs: Callable[[float], Awaitable[None]],
        *,
        budget: float,
        refuse_for: float = 1.0,
    ) -> None:
        self._drain = drain
        self._checkpoint = checkpoint_runs
        self._budget = budget
        # New requests keep getting 503 for at least this long (a load balancer's health
        # check sees it; clients retry elsewhere) before the server stops listening.
        self._refuse_for = min(refuse_for, budget)
        self._previous: Handler | None = None
        self._task: asyncio.Task[None] | None = None

    def install(self) -> bool:
        """Take over SIGTERM if a server handles it; False when nothing was installed."""
        try:
            previous = signal.getsignal(signal.SIGTERM)
        except ValueError:  # pragma: no cover - not the main thread
            return False
        if not callable(previous):
            return False
        self._previous = previous
        loop = asyncio.get_running_loop()

        def on_sigterm(sig: int, frame: FrameType | None) -> None:
            if self._task is not None:  # a second SIGTERM: stop now
                self._handover(sig, frame)
                return
            loop.call_soon_threadsafe(self._start, sig, frame)

        signal.signal(signal.SIGTERM, on_sigterm)
        return True

    def _start(self, sig: int, frame: FrameType | None) -> None:
        self._task = asyncio.get_running_loop().create_task(
            self._run(sig, frame), name="graceful shutdown"
        )

    async def _run(self, sig: int, frame: FrameType | None) -> None:
        loop = asyncio.get_running_loop()
        began = loop.time()
        deadline = began + self._budget
        log.warning(
            "SIGTERM: draining (new requests 503, runs checkpointed, streams closed)",
            extra={"budget_seconds": self._budget, "open_streams": self._drain.open_streams},
        )
        self._drain.begin()
        try:
            # Most of the budget goes to the runs; the rest to the streams' last frames.
            await self._checkpoint(max(self._budget * 0.6, 0.1))
            ended = await self._drain.streams_ended(max(deadline - loop.time(), 0.05))
            if not ended:
                log.warning(
                    "streams still open at the end of the drain",
                    extra={"open_streams": self._drain.open_streams},
                )
            await asyncio.sleep(max(began + self._refuse_for - loop.time(), 0))
        except Exception:
            log.exception("the drain failed; stopping anyway")
        finally:
            self._handover(sig, frame)

    def _handover(self, sig: int, frame: FrameType | None) -> None:
        if self._previous is not None:
            self._previous(sig, frame)
