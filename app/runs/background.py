"""A background job's result arrives: its conversation continues in a new run.

    deliver(job)
      wait while a run holds the conversation (first of all the run that started the job,
      which may not have stored its message yet), then in the claim's transaction:
        the job's tool part is no longer `loading` (the run was cancelled)  -> nothing
        write the result into the part (success / error / cancelled)
        a tool part of that message or of a later one still waits         -> no run
        otherwise a new run, announcing the part (`part_update`, background_finished),
        wherever the message is: after a typed "yes", or a message sent while the job
        ran, the model still answers the result (it sees the settled card in history)
      the conversation stays busy past `wait_seconds`, or was archived -> the result is
      written into the part without a run (a later turn sees it)
      the conversation was purged -> nothing is left to tell
      the database is out of reach -> tried again like a busy conversation; past
      `wait_seconds` the job stays undelivered, for the lease keeper's sweep to retry
      (written without a run, the result would never be answered)

The new run is an ordinary conversation run: durable, followable on its events URL and
on the conversation's stream, cancellable, for the caller who made the call (its user
and roles as they were then).
"""

from __future__ import annotations

import asyncio
import logging

from app.domain.errors import ChatBffError, Conflict, NotFound, Unavailable
from app.domain.events import PartChange
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import FINAL_TOOL_STATUSES, ToolPart, ToolStatus, awaiting
from app.runs.turns import Runs
from app.store.database import Database, Tx
from app.store.repos.jobs import JobRecord
from app.toolruntime.settled_parts import settle_card

log = logging.getLogger("chat_bff.runs")

PART_STATUS: dict[str, ToolStatus] = {
    "succeeded": "success",
    "failed": "error",
    "cancelled": "cancelled",
}


def finished_part(part: ToolPart, job: JobRecord) -> ToolPart:
    """The job's tool part with the job's result."""
    data = part.data.model_copy(
        update={
            "status": PART_STATUS.get(job.status, "error"),
            "result": job.result,
            "bodyContent": job.error,
        }
    )
    return ToolPart(id=part.id, data=data)


def _holder(history: list[Message], tool_call_id: str) -> tuple[int, Message, ToolPart] | None:
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role != "assistant":
            continue
        for part in message.tool_parts():
            if part.id == tool_call_id:
                return index, message, part
    return None


async def write_result(tx: Tx, job: JobRecord) -> tuple[Message, ToolPart, bool] | None:
    """Write the job's result into its waiting part; None when nothing waits for it.
    The flag says whether the conversation can go on: no tool call of that message or of
    a later one waits any more (for a person, the browser or another job)."""
    assert job.conversation_id is not None
    history = await tx.messages.history(job.owner_id, job.conversation_id)
    found = _holder(history, job.tool_call_id)
    if found is None or found[2].data.status in FINAL_TOOL_STATUSES:
        return None
    index, message, part = found
    done = finished_part(part, job)
    parts = [done if p.id == part.id else p for p in message.parts()]
    metadata = {k: v for k, v in (message.metadata or {}).items() if k != "background_jobs"}
    if metadata.get("finish_reason") == "awaiting_background":
        del metadata["finish_reason"]
    for key, value in awaiting(parts).items():  # jobs still running; a person's turn wins
        metadata.setdefault(key, value)
    updated = message.model_copy(update={"content": parts, "metadata": metadata})
    await tx.messages.upsert(job.owner_id, job.conversation_id, updated)
    # Every tab following the conversation sees the card finish, even when no run starts.
    await tx.conversations.lock(job.owner_id, job.conversation_id)
    change = PartChange(message.id, done, "background_finished")
    await settle_card(tx, job, change, key=f"background:{job.id}")
    later = [updated, *history[index + 1 :]]
    waiting = any(p.data.status not in FINAL_TOOL_STATUSES for m in later for p in m.tool_parts())
    return updated, done, not waiting


class BackgroundResults:
    """`BackgroundJobs.deliver`, over the conversation runs."""

    def __init__(self, runs: Runs, db: Database, *, wait_seconds: float) -> None:
        self._runs = runs
        self._db = db
        self._wait = wait_seconds

    async def deliver(self, job: JobRecord) -> None:
        if job.conversation_id is None:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._wait
        delay = 0.02
        while True:
            try:
                await self._continue(job)
                return
            except NotFound:
                return  # purged: nothing is left to tell
            except Conflict as exc:
                if exc.code != "run_active" or loop.time() > deadline:
                    break
            except Unavailable:
                if loop.time() > deadline:
                    raise  # left undelivered: the lease keeper's sweep delivers it later
            except ChatBffError as exc:
                log.warning(
                    "a background result could not continue its conversation",
                    extra={"job_id": job.id, "code": exc.code},
                )
                break
            await asyncio.sleep(delay)
            delay = min(delay * 2, 1.0)
        async with self._db.write() as tx:
            await write_result(tx, job)

    async def _continue(self, job: JobRecord) -> None:
        assert job.conversation_id is not None
        caller = Caller(user_id=job.owner_id, roles=job.roles)
        decided: list[PartChange] = []
        async with self._db.read() as tx:
            history = await tx.messages.history(job.owner_id, job.conversation_id)
        found = _holder(history, job.tool_call_id)
        if found is not None:
            decided.append(
                PartChange(found[1].id, finished_part(found[2], job), "background_finished")
            )

        async def prepare(tx: Tx) -> bool:
            written = await write_result(tx, job)
            return written is not None and written[2]

        handle = await self._runs.continue_after(caller, job.conversation_id, prepare, decided)
        if handle is not None:
            log.info(
                "a background result continues its conversation",
                extra={"job_id": job.id, "run_id": handle.run_id},
            )
