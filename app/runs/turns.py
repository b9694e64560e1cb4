"""Conversation turns: what the API asks of runs, in domain terms.

`RunManager` is the engine (tasks, logs, persistence); this module decides what a turn
is: a new user message, the browser's tool results, a regenerate or an edit, or the
continuation after a human decided an approval. It knows no HTTP.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

from app.agent.context import truncate_user_text
from app.agent.ports import ToolRuntime
from app.domain.errors import Conflict, InvalidRequest, NotFound
from app.domain.events import PartChange, RunStatus, SequencedEvent
from app.domain.identity import Caller
from app.domain.messages import Message
from app.domain.parts import (
    FINAL_TOOL_STATUSES,
    Part,
    TextData,
    TextPart,
    ToolPart,
    cancel_unfinished,
)
from app.domain.stream import ToolSpec
from app.files.attachments import Admission, Attachments
from app.runs.active import ActiveRun, RunRequest, new_run_id
from app.runs.decided import decided_parts
from app.runs.handle import RunHandle
from app.runs.history import last_assistant, last_index
from app.runs.journal import Prepare
from app.runs.manager import RunManager
from app.runs.requests import ConversationSettings, RunRequests, TurnInput
from app.runs.typed_answers import TypedAnswers
from app.store.database import Database, Tx
from app.store.records import ConversationRecord
from app.translate.openai_chat.read import tool_choice_from_openai

ResultStatus = Literal["success", "error", "cancelled"]
# Told, in the transaction that stores a new turn, its run id and whether input was cut.
KeepStart = Callable[[Tx, str, bool], Awaitable[None]]
# Told, in the transaction that stores tool results, the run that continues (None: none yet).
KeepContinuation = Callable[[Tx, str | None], Awaitable[None]]
PrepareHistory = Callable[[list[Message]], Awaitable[tuple[list[Message], list[PartChange]]]]


@dataclass(frozen=True)
class ToolResult:
    tool_call_id: str
    status: ResultStatus
    result: Any


class Runs:
    """The application's entry point to runs (`services.runs`)."""

    def __init__(
        self,
        *,
        manager: RunManager,
        db: Database,
        requests: RunRequests,
        tools: ToolRuntime,
        attachments: Attachments | None = None,
        typed_answers: TypedAnswers | None = None,
    ) -> None:
        self._attachments = attachments
        self._typed_answers = typed_answers
        self.manager = manager
        self._db = db
        self._requests = requests
        self._tools = tools

    # -- delegations used by the stateless surfaces ----------------------------------

    async def start_stateless(
        self,
        caller: Caller,
        history: list[Message],
        turn: TurnInput,
        *,
        prepare: PrepareHistory | None = None,
    ) -> RunHandle:
        """A turn that stores nothing: the client sends the whole history each time.

        `prepare` runs once the request is known to be valid, before the run starts: it may
        act on the history (decide the approvals it answers) and returns the history the
        run continues from, with the parts it changed (announced as `part_update`)."""
        request = self._requests.build(caller, turn)
        if self._attachments is not None:
            history, inline = await self._attachments.for_request(
                caller.user_id, history, request.model
            )
            request = replace(request, inline_files=inline)
        if prepare is not None:
            history, changes = await prepare(history)
            request = replace(request, decided=tuple(changes))
        return self._handle(await self.manager.start_stateless(request, history), request)

    async def cancel(self, owner_id: str, run_id: str, conversation_id: str | None) -> RunStatus:
        """Stop a run. One that already ended waiting for a human (requires_action) is
        closed too: its pending approvals lapse and its waiting tool calls become
        `cancelled`, so the next turn starts from a valid history."""
        status = await self.manager.cancel(owner_id, run_id, conversation_id)
        if conversation_id is not None and status in ("cancelled", "requires_action"):
            await self._tools.run_cancelled(owner_id, run_id)
            if status == "requires_action":
                await self._close_waiting(owner_id, conversation_id, run_id)
        return status

    async def stop_active(self, caller: Caller, conversation_id: str) -> None:
        """Cancel the conversation's running run, if this instance runs it (before a purge,
        so the run neither keeps spending nor writes into rows that are going away)."""
        async with self._db.read() as tx:
            conversation = await tx.conversations.get(caller.user_id, conversation_id)
        if conversation.active_run_id is not None:
            await self.cancel(caller.user_id, conversation.active_run_id, conversation_id)

    async def forget(self, conversation_id: str) -> None:
        """After a purge: nothing of the conversation's runs is served from memory."""
        await self.manager.forget(conversation_id)

    async def _close_waiting(self, owner_id: str, conversation_id: str, run_id: str) -> None:
        async with self._db.write() as tx:
            messages = tx.messages
            for message in await messages.history(owner_id, conversation_id):
                if (message.metadata or {}).get("run_id") != run_id:
                    continue
                parts = [cancel_unfinished(p, "cancelled by the user") for p in message.parts()]
                if parts != message.parts():
                    await messages.upsert(
                        owner_id, conversation_id, message.model_copy(update={"content": parts})
                    )

    async def position(
        self, owner_id: str, run_id: str, conversation_id: str | None
    ) -> tuple[bool, int]:
        return await self.manager.position(owner_id, run_id, conversation_id)

    def follow(
        self, owner_id: str, run_id: str, *, conversation_id: str | None, after: int = 0
    ) -> AsyncIterator[list[SequencedEvent]]:
        return self.manager.follow(owner_id, run_id, conversation_id=conversation_id, after=after)

    # -- conversation turns ----------------------------------------------------------

    async def send(
        self,
        caller: Caller,
        conversation_id: str,
        content: str | list[Part],
        turn: TurnInput,
        *,
        keep: KeepStart | None = None,
        prepare: Prepare | None = None,
        adopt: bool = True,
    ) -> RunHandle:
        """Store the user message and start a run. `keep` is told the run's id and
        whether the input was truncated inside the transaction that stores them (an
        Idempotency-Key's outcome is kept there: both are committed, or neither);
        `prepare` runs there first, once the conversation is claimed (it may refuse).

        A conversation made to hold a background response is not listed; a message the
        person sends it makes it a chat like the others, listed (they continued it, so it
        is theirs to see), unless `adopt` is False: its own first turn, or a chain of
        responses (`previous_response_id`) that never named a conversation."""
        return await self._answer_user(
            caller, conversation_id, content, turn, prepare=prepare, keep=keep, adopt=adopt
        )

    async def submit_tool_results(
        self,
        caller: Caller,
        conversation_id: str,
        results: list[ToolResult],
        *,
        keep: KeepContinuation | None = None,
    ) -> RunHandle | None:
        """Store the browser's results; continue the conversation once none is waiting.
        `keep` is told the continuing run's id (None when others still wait) in the
        transaction that stores the results (an Idempotency-Key's outcome)."""
        if not results:
            raise InvalidRequest("results must not be empty.", param="results")
        ids = [r.tool_call_id for r in results]
        if len(set(ids)) != len(ids):
            raise InvalidRequest("results names the same toolCallId twice.", param="results")
        conversation = await self._conversation(caller, conversation_id)
        turn = await self._continuation(caller, conversation_id)
        request = self._request(caller, conversation, turn)

        async def apply(tx: Tx) -> bool:
            messages = tx.messages
            history = await messages.history(caller.user_id, conversation_id)
            target = last_assistant(history)
            if target is None:
                raise NotFound("No tool call with that id is waiting.", code="tool_call_not_found")
            parts = target.parts()
            by_id = {p.id: (i, p) for i, p in enumerate(parts) if isinstance(p, ToolPart)}
            for result in results:
                found = by_id.get(result.tool_call_id)
                if found is None:
                    raise NotFound(
                        f"No tool call {result.tool_call_id!r} is waiting in this conversation.",
                        code="tool_call_not_found",
                    )
                index, part = found
                if part.data.status in FINAL_TOOL_STATUSES:
                    raise Conflict(
                        f"Tool call {result.tool_call_id!r} already has a result.",
                        code="tool_call_already_answered",
                    )
                if self._tools.knows(part.data.toolName):
                    raise Conflict(
                        f"Tool call {result.tool_call_id!r} is a server tool: decide its approval, "
                        "or answer its question through submissions/{toolCallId}, instead.",
                        code="approval_required",
                    )
                parts[index] = ToolPart(
                    id=part.id,
                    data=part.data.model_copy(
                        update={"status": result.status, "result": result.result}
                    ),
                )
            updated = target.model_copy(update={"content": parts})
            await messages.upsert(caller.user_id, conversation_id, updated)
            due = not any(
                isinstance(p, ToolPart) and p.data.status not in FINAL_TOOL_STATUSES for p in parts
            )
            if keep is not None:
                await keep(tx, run_id if due else None)
            return due

        run_id = new_run_id()
        run = await self.manager.start_in_conversation(
            request, conversation_id, None, prepare=apply, run_id=run_id
        )
        return self._handle(run, request) if run is not None else None

    async def resume(
        self, caller: Caller, conversation_id: str, *, after_call: str | None = None
    ) -> RunHandle | None:
        """Continue after approvals were decided (no new user message); the run announces
        the decided parts first. A decision in the instant between the paused run storing
        its message and releasing the conversation waits briefly for that run to end.
        `after_call`: only while the last assistant message still holds that tool call (a
        decision sent again never continues a conversation twice)."""
        for attempt in range(20):
            try:
                return await self._resume_once(caller, conversation_id, after_call)
            except Conflict as exc:
                if exc.code != "run_active" or attempt == 19:
                    raise
                await asyncio.sleep(0.05)
        return None  # pragma: no cover - the loop returns or raises

    async def _resume_once(
        self, caller: Caller, conversation_id: str, after_call: str | None
    ) -> RunHandle | None:
        decided = await decided_parts(self._db, caller.user_id, conversation_id)

        async def check(tx: Tx) -> bool:
            history = await tx.messages.history(caller.user_id, conversation_id)
            target = last_assistant(history)
            if target is None:
                return False
            parts = target.tool_parts()
            if after_call is not None and all(p.id != after_call for p in parts):
                return False
            return not any(p.data.status not in FINAL_TOOL_STATUSES for p in parts)

        return await self.continue_after(caller, conversation_id, check, decided)

    async def continue_after(
        self, caller: Caller, conversation_id: str, prepare: Prepare, decided: list[PartChange]
    ) -> RunHandle | None:
        """A run that continues the conversation without a new user message, once
        `prepare` (in the claim's transaction) says it is due; it announces `decided`."""
        conversation = await self._conversation(caller, conversation_id)
        turn = await self._continuation(caller, conversation_id)
        request = replace(self._request(caller, conversation, turn), decided=tuple(decided))
        run = await self.manager.start_in_conversation(
            request, conversation_id, None, prepare=prepare
        )
        return self._handle(run, request) if run is not None else None

    async def continue_held(
        self,
        caller: Caller,
        conversation_id: str,
        turn: TurnInput,
        *,
        keep: KeepStart | None = None,
    ) -> RunHandle:
        """A run answering the conversation's stored history as it stands (its last
        message the results of the client's tool calls), with this request's tools and
        options; `keep` is told the run's id in the transaction that claims it."""
        conversation = await self._conversation(caller, conversation_id)
        request = self._request(caller, conversation, turn)
        run_id = new_run_id()

        async def prepare(tx: Tx) -> bool:
            if keep is not None:
                await keep(tx, run_id, False)
            return True

        run = await self.manager.start_in_conversation(
            request, conversation_id, None, prepare=prepare, run_id=run_id
        )
        assert run is not None  # `prepare` always says the run is due
        return self._handle(run, request)

    async def regenerate(
        self,
        caller: Caller,
        conversation_id: str,
        turn: TurnInput,
        *,
        keep: KeepStart | None = None,
    ) -> RunHandle:
        """Answer the last user message again; earlier answers are kept as superseded.
        `keep` as for `send`."""
        conversation = await self._conversation(caller, conversation_id)
        request = self._request(caller, conversation, turn)

        async def supersede(tx: Tx) -> bool:
            messages = tx.messages
            history = await messages.history(caller.user_id, conversation_id)
            last_user = last_index(history, "user")
            if last_user is None:
                raise InvalidRequest("There is no user message to answer again.")
            if last_user + 1 < len(history):
                await messages.supersede(caller.user_id, conversation_id, history[last_user + 1].id)
            return True

        run_id = new_run_id()
        prepare = supersede if keep is None else _keeping(keep, run_id, False, supersede)
        run = await self.manager.start_in_conversation(
            request, conversation_id, None, prepare=prepare, run_id=run_id
        )
        assert run is not None
        return self._handle(run, request)

    async def edit(
        self,
        caller: Caller,
        conversation_id: str,
        message_id: str,
        content: str | list[Part],
        turn: TurnInput,
        *,
        keep: KeepStart | None = None,
    ) -> RunHandle:
        """Replace the last user message and answer it; the old version is kept, superseded.
        `keep` as for `send`."""

        async def supersede(tx: Tx) -> bool:
            messages = tx.messages
            history = await messages.history(caller.user_id, conversation_id)
            last_user = last_index(history, "user")
            if last_user is None or history[last_user].id != message_id:
                if any(m.id == message_id for m in history):
                    raise Conflict(
                        "Only the last user message can be edited.", code="not_last_message"
                    )
                raise NotFound("Message not found.")
            await messages.supersede(caller.user_id, conversation_id, message_id)
            return True

        return await self._answer_user(
            caller, conversation_id, content, turn, prepare=supersede, keep=keep
        )

    # -- helpers ---------------------------------------------------------------------

    async def _answer_user(
        self,
        caller: Caller,
        conversation_id: str,
        content: str | list[Part],
        turn: TurnInput,
        *,
        prepare: Prepare | None = None,
        keep: KeepStart | None = None,
        adopt: bool = True,
    ) -> RunHandle:
        """A run that answers the new user message `content`, its files admitted and then
        tied to the conversation; `prepare` runs in the claim's transaction (`edit`), and
        `keep` there too, told the run's id. With `adopt` (see `send`), a conversation
        holding a background response becomes a chat in that transaction too."""
        user, truncated = _user_message(content)
        conversation = await self._conversation(caller, conversation_id)
        if conversation.kind != "chat" and adopt:
            prepare = _adopting(conversation_id, prepare)
        if self._typed_answers is not None:  # "yes" to the waiting approval decides it
            await self._typed_answers.apply(caller, conversation_id, content)
        request = self._request(caller, conversation, turn, truncated=truncated)
        run_id = new_run_id()
        if keep is not None:
            prepare = _keeping(keep, run_id, truncated, prepare)
        if self._attachments is None:
            files = None
        else:
            files = await self._attachments.stage(caller.user_id, [user], request.model)
            user = files.messages[0]
            if files.file_ids:
                prepare = _recording(files, conversation_id, prepare)
        try:
            run = await self.manager.start_in_conversation(
                request, conversation_id, user, prepare=prepare, run_id=run_id
            )
        finally:
            if files is not None:
                await files.settle()
        assert run is not None
        run.truncated_input = truncated
        return self._handle(run, request)

    async def _continuation(self, caller: Caller, conversation_id: str) -> TurnInput:
        """The client tools of the turn being continued: the model must see them again
        (Anthropic refuses a history with tool_use blocks but no tool definitions)."""
        options = await self.manager.stored_options(caller.user_id, conversation_id)
        tools = [ToolSpec.model_validate(t) for t in options.get("client_tools", [])]
        choice = options.get("tool_choice")
        return TurnInput(
            client_tools=tools,
            tool_choice=tool_choice_from_openai(
                {"function": choice} if isinstance(choice, dict) else choice
            ),
            wire_options=options.get("wire") or {},  # e.g. Responses' client_tool_items
        )

    async def _conversation(self, caller: Caller, conversation_id: str) -> ConversationRecord:
        # One SELECT: no transaction around it (every turn starts here).
        if self._db.direct is not None:
            conversation = await self._db.direct.conversation(caller.user_id, conversation_id)
        else:
            async with self._db.standalone() as tx:
                conversation = await tx.conversations.get(caller.user_id, conversation_id)
        if conversation.archived:
            raise Conflict("The conversation is archived; restore it first.", code="archived")
        return conversation

    def _request(
        self,
        caller: Caller,
        conversation: ConversationRecord,
        turn: TurnInput,
        *,
        truncated: bool = False,
    ) -> RunRequest:
        scope = {str(k): str(v) for k, v in conversation.scope.items() if v is not None}
        scope.update(user_id=caller.user_id, conversation_id=conversation.id)
        # By default a conversation is its own scope; a client binds a workspace or a
        # session at creation to share data across conversations.
        scope.setdefault("session_id", conversation.id)
        settings = ConversationSettings(
            model_id=conversation.model,
            mode=conversation.mode,
            scope=scope,
            system_prompt=conversation.system_prompt,
        )
        return self._requests.build(caller, turn, settings, truncated=truncated)

    def _handle(self, run: ActiveRun, request: RunRequest) -> RunHandle:
        return RunHandle(run, self, model_id=request.model.id)


def _adopting(conversation_id: str, then: Prepare | None) -> Prepare:
    """`then` (if any), and the conversation made a chat (`ConversationRepo.adopt`) when
    a run is due."""

    async def prepare(tx: Tx) -> bool:
        due = True if then is None else await then(tx)
        if due:
            await tx.conversations.adopt(conversation_id)
        return due

    return prepare


def _recording(files: Admission, conversation_id: str, then: Prepare | None) -> Prepare:
    """`then` (if any), with the message's staged files recorded and all its files tied
    to the conversation (a purge removes them) in the claim's transaction: a turn
    refused or failed there (`run_active`, a repeat under its key) leaves no file."""

    async def prepare(tx: Tx) -> bool:
        await files.record(tx, conversation_id)
        return True if then is None else await then(tx)

    return prepare


def _keeping(keep: KeepStart, run_id: str, truncated: bool, then: Prepare | None) -> Prepare:
    """`then` (if any), and `keep` told the run's id when a run is due."""

    async def prepare(tx: Tx) -> bool:
        due = True if then is None else await then(tx)
        if due:
            await keep(tx, run_id, truncated)
        return due

    return prepare


def _user_message(content: str | list[Part]) -> tuple[Message, bool]:
    """The user's message, cut to fit when too long (and marked so)."""
    content, truncated = _truncate(content)
    message = Message(role="user", content=content)
    if truncated:
        message.metadata = {"truncated": True}
    return message, truncated


def _truncate(content: str | list[Part]) -> tuple[str | list[Part], bool]:
    if isinstance(content, str):
        return truncate_user_text(content)
    out: list[Part] = []
    cut = False
    for part in content:
        if isinstance(part, TextPart):
            text, was_cut = truncate_user_text(part.data.text)
            cut = cut or was_cut
            part = TextPart(id=part.id, data=TextData(text=text))
        out.append(part)
    return out, cut
