"""The run that continues a conversation once a human decided an approval or answered a
tool's question, whether the decision or answer is taken now or sent again.

A decision or an answer sent again never continues a conversation twice: it is told the
run that already did, or starts it when none did yet (an outage after the decision
committed left the conversation waiting, or a limit refused the run). An outage or a limit
on runs or budgets (`RetryLater`: 503, 429, with `Retry-After`) is raised, for the client to
send the same decision or answer again; any other refusal to continue leaves the decision
standing and is logged.
"""

from __future__ import annotations

import logging
from typing import Protocol

from app.domain.errors import ChatBffError, RetryLater
from app.domain.identity import Caller
from app.runs.turns import Runs

log = logging.getLogger("chat_bff.approvals")


class Answered(Protocol):
    """A decision or an answer, taken now or sent again."""

    @property
    def ready_to_resume(self) -> bool: ...
    @property
    def continued_by(self) -> str | None: ...


async def continuing_run(
    runs: Runs, caller: Caller, conversation_id: str, tool_call_id: str, result: Answered
) -> str | None:
    """The run continuing the conversation after a decision or an answer (taken now, or
    sent again): started here when nothing waits any more and no run continued yet."""
    if not result.ready_to_resume:
        return result.continued_by
    return await _resume(runs, caller, conversation_id, after_call=tool_call_id)


async def _resume(
    runs: Runs, caller: Caller, conversation_id: str, *, after_call: str
) -> str | None:
    """Continue the conversation; the id of the run that does (one already running, when
    the conversation is busy). The decision stands whatever happens here: a refusal is
    logged, but an outage or a limit on runs or budgets (`RetryLater`) is raised, for the
    client to retry: nothing else would ever continue the conversation."""
    try:
        run = await runs.resume(caller, conversation_id, after_call=after_call)
    except RetryLater:
        raise
    except ChatBffError as exc:
        log.warning("could not resume after an approval", extra={"code": exc.code})
        active = exc.extra.get("active_run_id") if exc.code == "run_active" else None
        return active if isinstance(active, str) else None
    return run.run_id if run is not None else None
