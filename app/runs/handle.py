"""What the API holds of a run it started: its ids, its events, and how it ended.

The handle hides the manager's bookkeeping (the log, the task, the failure): a wire reads
`events(after)` to stream, or `wait()` then `result()` to answer whole, and calls
`cancel()` when its client hangs up and the wire says that stops the run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Protocol

from app.domain.errors import ChatBffError
from app.domain.events import RunStatus, SequencedEvent
from app.domain.messages import Message
from app.runs.active import ActiveRun


class RunControl(Protocol):
    """Who reads and stops runs (the `Runs` service: a conversation run's cancel also
    closes what it left waiting)."""

    def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]: ...

    async def cancel(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> RunStatus: ...


class RunHandle:
    __slots__ = ("_control", "_run", "model_id")

    def __init__(self, run: ActiveRun, control: RunControl, *, model_id: str) -> None:
        self._run = run
        self._control = control
        self.model_id = model_id

    @property
    def run_id(self) -> str:
        return self._run.run_id

    @property
    def conversation_id(self) -> str | None:
        return self._run.conversation_id

    @property
    def owner_id(self) -> str:
        return self._run.owner_id

    @property
    def truncated_input(self) -> bool:
        """The user message was cut to fit (the answer says so)."""
        return self._run.truncated_input

    @property
    def status(self) -> RunStatus:
        return self._run.status

    @property
    def done(self) -> bool:
        return self._run.task is None or self._run.task.done()

    def events(self, after: int = 0) -> AsyncIterator[list[SequencedEvent]]:
        """Batches of the run's events with a sequence number above `after`, replayed and
        then live, until `run_end`."""
        if self._run.conversation_id is None:
            # A stateless run lives only here: its log is in memory and nowhere else.
            return self._run.log.follow(after)
        return self._control.follow(
            self._run.owner_id,
            self._run.run_id,
            conversation_id=self._run.conversation_id,
            after=after,
        )

    def stream(self) -> AsyncIterator[list[SequencedEvent]]:
        """All of the run's events, for its only reader (a stateless stream started by
        this handle): each batch is let go once the next is asked for, so an open stream
        holds only what is not sent yet. Nobody can read these events again afterwards."""
        return self._run.log.follow(0, release=True)

    async def wait(self) -> None:
        """Until the run has ended; cancelling the waiter leaves the run going."""
        if self._run.task is not None:
            await asyncio.shield(self._run.task)

    def ended(self) -> asyncio.Future[None]:
        """Done when the run has ended: to wait on beside something else with
        `asyncio.wait`, which never cancels it (no waiting task of its own)."""
        task = self._run.task
        if task is not None:
            return task
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        done.set_result(None)
        return done

    def result(self) -> Message:
        """The final assistant message of an ended run; raises the run's failure when it
        failed with one of our errors (a provider error keeps its status and code)."""
        run = self._run
        if run.failure is not None and run.status == "failed":
            raise run.failure
        if run.final_message is None:
            raise ChatBffError("The run ended without a message.")
        return run.final_message

    async def cancel(self) -> RunStatus:
        """Stop the run (partial answer kept); harmless when it already ended."""
        if self._run.conversation_id is None and self.done:
            return self._run.status  # nothing to stop, nothing left waiting to close
        return await self._control.cancel(
            self._run.owner_id, self._run.run_id, self._run.conversation_id
        )
