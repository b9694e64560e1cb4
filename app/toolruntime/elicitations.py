"""Answering a question a server tool asked the user mid-call (an MCP elicitation).

    answer(caller, conversation, tool call id, accept | decline | cancel, content?,
           elicitation id?)
      no question of this call in the caller's conversation
      (with an elicitation id: no such question of this call) -> 404 submission_not_found
      answered already with another answer, or its run
      was stopped                                            -> 409 already_answered
      answered already with this answer (a client retrying)  -> 409 already_answered too,
                                                                with where the call stands
                                                                (the tool is not called
                                                                again)
      the stored part is not yet written / not waiting       -> 409 submission_not_ready /
                                                                409 already_answered
      accept without content, or content not matching the
      requested schema; decline/cancel with content          -> 422 invalid_submission
                                                                (`problems` lists each)
      the tool is no longer offered to the caller            -> 409 tool_unavailable
      otherwise: claim the question with a conditional UPDATE (one answer wins), call
      the tool again with the stored arguments, scope and state plus the answer; the
      tool may finish (the part is final) or ask again (the part waits for the new
      question); write the part and an audit record, and say whether the conversation
      can continue.

An answer names the question it answers (its elicitation id) or, without one, answers the
call's newest question. A tool may ask again after an answer, so only a named question
keeps a resend of the first answer from answering the second: named, it is the first
question's 409 (`elicitation_id` says which), as the decision table reads.

Everything the retry needs is in the database, so the answer may reach any instance.
The answer's content is never logged, audited or stored: only the action is, and a hash
of action and content, so that the same answer sent again (after a 503 whose answer had
committed) is told where the call stands in its 409, as a decision sent again is (see
app.toolruntime.decision_replay), and the conversation continues once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from app.domain.errors import ChatBffError, Conflict, NotFound
from app.domain.events import PartChange
from app.domain.identity import Caller
from app.domain.parts import Elicitation, ToolPart
from app.domain.tooling import InputNeeded, ToolOutcome
from app.store.repos.elicitations import ElicitationRecord
from app.toolruntime.lost_answers import settle_lost, waiting_on
from app.toolruntime.outcomes import stored_site
from app.toolruntime.runtime import ServerToolRuntime
from app.toolruntime.settled_parts import CardAudit, settle_card
from app.toolruntime.stored_parts import find_part, rewrite_part, standing, updated_part
from app.tools.base import UserAnswer
from app.tools.pinning import InvalidArguments, pin_and_validate

Action = Literal["accept", "decline", "cancel"]


class InvalidSubmission(ChatBffError):
    status = 422
    code = "invalid_submission"


@dataclass(frozen=True)
class AnswerResult:
    part: ToolPart
    # True when no tool part of the assistant message waits any more: the run may resume.
    ready_to_resume: bool
    # An answer sent again: the run that already continued the conversation, if one did.
    continued_by: str | None = None
    # This answer was already given (a client's retry): the action taken. The answer is
    # still 409 `already_answered`, carrying where the call stands.
    replayed: str | None = None
    # The question answered (or, replayed, answered before).
    elicitation_id: str | None = None
    # Sent again: the conversation went on with a new user message, so no run continues
    # the call (`app.toolruntime.stored_parts.Standing`).
    moved_on: bool = False


def check_content(schema: dict[str, Any], action: Action, content: dict[str, Any] | None) -> None:
    """An accepted answer's content must match the requested schema; the others carry none."""
    if action != "accept":
        if content is not None:
            raise InvalidSubmission(
                f"A `{action}` answer carries no content.", problems=["content: not allowed"]
            )
        return
    if content is None:
        raise InvalidSubmission(
            "An accepted answer needs its content.", problems=["content: required"]
        )
    # Imported on the first answer: about 0.1 s of start-up for a feature few runs use.
    from jsonschema import validators

    validator = validators.validator_for(schema)(schema)
    problems = []
    for error in sorted(validator.iter_errors(content), key=lambda e: list(e.absolute_path)):
        where = ".".join(str(p) for p in error.absolute_path)
        problems.append(f"{where}: {error.message}" if where else error.message)
    if problems:
        raise InvalidSubmission(
            "The answer does not match what the tool asked for.", problems=problems
        )


class ElicitationService:
    def __init__(self, runtime: ServerToolRuntime) -> None:
        self.runtime = runtime
        self.db = runtime.db
        self.seal = runtime.answer_seal

    async def answer(
        self,
        caller: Caller,
        conversation_id: str,
        tool_call_id: str,
        action: Action,
        content: dict[str, Any] | None,
        *,
        elicitation_id: str | None = None,
    ) -> AnswerResult:
        """Answer `elicitation_id` (a question of this call), or the call's newest question."""
        owner = caller.user_id
        async with self.db.read() as tx:
            if elicitation_id is None:
                record = await tx.elicitations.latest(owner, conversation_id, tool_call_id)
            else:
                record = await tx.elicitations.get(owner, elicitation_id)
        if (
            record is None
            or record.conversation_id != conversation_id
            or record.tool_call_id != tool_call_id
        ):
            raise NotFound(
                "No question of this tool call waits for an answer.",
                code="submission_not_found",
            )
        if record.status == "answered":
            return await self._replayed(record, action, content)
        if record.status != "pending":
            raise _answered(record)
        check_content(record.requested_schema, action, content)
        tool = self.runtime.catalog.permitted(record.tool_name, caller, record.model_id)
        if tool is None:
            raise Conflict(
                f"The tool `{record.tool_name}` is no longer available.", code="tool_unavailable"
            )
        await self._check_part(record)
        try:
            model, _ = pin_and_validate(tool, record.args, record.scope)
        except InvalidArguments as exc:  # the tool's schema changed since it asked
            raise Conflict(str(exc), code="tool_unavailable") from None
        async with self.db.write() as tx:
            claimed = await tx.elicitations.claim(
                owner, record.id, action=action, answer_hash=self.seal.seal(action, content)
            )
        if not claimed:
            async with self.db.read() as tx:
                latest = await tx.elicitations.get(owner, record.id)
            if latest is not None and latest.status == "answered":
                return await self._replayed(latest, action, content)
            raise Conflict("This question was already answered.", code="already_answered")
        answer = UserAnswer(action=action, content=content, state=record.state)
        outcome = await self.runtime.run_or_ask(
            tool, model, stored_site(caller, record), answer=answer
        )
        return await self._finish(record, action, outcome)

    async def question(
        self,
        caller: Caller,
        conversation_id: str,
        elicitation_id: str,
        action: Action,
        content: dict[str, Any] | None,
        *,
        again: bool = False,
    ) -> ElicitationRecord:
        """The pending question `elicitation_id` of this conversation, once the answer is
        checked against it (a wire that answers by question id checks all its answers
        before giving any). `again`: the same answer sent again; a question it answered
        already passes (answering it again is where its call stands)."""
        async with self.db.read() as tx:
            record = await tx.elicitations.get(caller.user_id, elicitation_id)
        if record is None or record.conversation_id != conversation_id:
            raise NotFound("No such question waits for an answer.", code="submission_not_found")
        if again and record.status == "answered":
            if not self.seal.matches(record.answer_hash, action, content):
                raise _answered(record)
            return record
        if record.status != "pending":
            raise _answered(record)
        check_content(record.requested_schema, action, content)
        return record

    async def _replayed(
        self, record: ElicitationRecord, action: Action, content: dict[str, Any] | None
    ) -> AnswerResult:
        """Where the call of a question answered so stands; 409 for another answer. A card
        the answer's outage left waiting on it is settled first (app.toolruntime.
        lost_answers)."""
        await self._settle_lost(record)
        if not self.seal.matches(record.answer_hash, action, content):
            raise _answered(record)
        async with self.db.read() as tx:
            found = await standing(tx.messages, record)
        if found is None:  # pragma: no cover - checked before the claim; never deleted
            raise _answered(record)
        return AnswerResult(
            found.part,
            found.ready_to_resume,
            found.continued_by,
            replayed=record.action,
            elicitation_id=record.id,
            moved_on=found.moved_on,
        )

    async def settle_lost_in(self, owner_id: str, conversation_id: str) -> bool:
        """Settle the cards still waiting on a question already answered (the answer's
        rewrite lost to an outage) though no answer is sent again, as one sent would
        (`app.toolruntime.lost_answers`, its time limit kept): for a conversation read.
        True when one was settled."""
        async with self.db.read() as tx:
            history = await tx.messages.history(owner_id, conversation_id)
            asked = [
                p.data.elicitation.id
                for m in history
                if m.role == "assistant"
                for p in m.tool_parts()
                if p.data.status == "waitingSubmission" and p.data.elicitation is not None
            ]
            records = [await tx.elicitations.get(owner_id, i) for i in asked]
        settled = False
        for record in records:
            if record is not None and record.status == "answered":
                settled = await self._settle_lost(record) or settled
        return settled

    async def _settle_lost(self, record: ElicitationRecord) -> bool:
        tool = self.runtime.catalog.registry.get(record.tool_name)
        limit = self.runtime.timeout_for(tool) if tool else self.runtime.default_timeout
        return await settle_lost(self.db, record, time_limit=limit)

    async def _check_part(self, record: ElicitationRecord) -> None:
        async with self.db.read() as tx:
            found = await find_part(tx.messages, record)
        if found is None:
            raise Conflict(
                "The tool call is not stored yet; retry in a moment.",
                code="submission_not_ready",
                retryable=True,
            )
        part = found[1]
        asked = part.data.elicitation
        if part.data.status == "waitingSubmission" and asked is not None and asked.id != record.id:
            # The card still shows an earlier question: its answer's rewrite was lost
            # after the tool asked this one. The card now shows this one; the answer was
            # meant for the earlier, so it is not given to this one.
            async with self.db.read() as tx:
                earlier = await tx.elicitations.get(record.owner_id, asked.id)
            if earlier is not None and await self._settle_lost(earlier):
                raise _answered(earlier)
        if part.data.status != "waitingSubmission" or asked is None or asked.id != record.id:
            raise Conflict(
                "This tool call no longer waits for this answer (its run was cancelled or "
                "it was answered otherwise).",
                code="already_answered",
            )

    async def _finish(
        self, record: ElicitationRecord, action: Action, outcome: ToolOutcome | InputNeeded
    ) -> AnswerResult:
        owner = record.owner_id
        async with self.db.write() as tx:
            await tx.conversations.lock(owner, record.conversation_id)
            written = await rewrite_part(tx, record, lambda p: _answered_part(p, outcome))
            assert written is not None  # checked before the claim; messages are not deleted
            part, ready, message_id = written
            # A tab following the conversation sees the answered card change at once.
            answered = "asked_again" if isinstance(outcome, InputNeeded) else outcome.status
            await settle_card(
                tx,
                record,
                PartChange(message_id, part, "input_answered"),
                key=f"elicitation:{record.id}",
                audit=CardAudit(
                    owner,
                    f"elicitation.{action}",
                    "elicitation",
                    record.id,
                    {"outcome": answered},
                ),
            )
        return AnswerResult(part, ready, elicitation_id=record.id)


def _answered(record: ElicitationRecord) -> Conflict:
    return Conflict(
        "This question was already answered.",
        code="already_answered",
        action=record.action or record.status,
        elicitation_id=record.id,
    )


def _answered_part(part: ToolPart, outcome: ToolOutcome | InputNeeded) -> ToolPart:
    if isinstance(outcome, ToolOutcome):
        final = updated_part(part, outcome)
        return ToolPart(id=final.id, data=final.data.model_copy(update={"elicitation": None}))
    asked = Elicitation(
        id=outcome.elicitation_id, message=outcome.message, requestedSchema=outcome.requested_schema
    )
    return waiting_on(part, asked)
