"""A run while it lives in this process: what it was asked to do and how far it got.

`RunRequest` is everything a run needs besides its history; `ActiveRun` is the manager's
record of a started run (its event log, its batched writer, its task and, once it ends,
its status, final message or failure). The API never touches an `ActiveRun`: it holds a
`RunHandle` (`app.runs.handle`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.domain.errors import ChatBffError
from app.domain.events import ContextInfo, PartChange, RunEvent, RunStatus
from app.domain.files import InlineFile
from app.domain.identity import Caller
from app.domain.ids import uuid4_hex
from app.domain.messages import Message
from app.domain.models import ModelInfo
from app.domain.stream import GenerationOptions, ToolChoice, ToolSpec, no_options
from app.domain.tooling import ConversationMode
from app.domain.usage import Allowance
from app.providers.base import Provider
from app.runs.log import RunLog
from app.runs.writer import EventWriter
from app.store.repos.usage import UsageEntry

# Events that carry the answer as it streams (see `ActiveRun.emit`).
ANSWER_DELTAS = frozenset({"text_delta", "thinking_delta", "tool_start", "tool_args_delta"})


class StoppedBeforeStart(Exception):
    """Cancel (or shutdown) arrived before the run's task began."""


def new_run_id() -> str:
    return f"run_{uuid4_hex()}"


@dataclass(frozen=True, slots=True)
class RunRequest:
    """Everything a run needs besides its history."""

    caller: Caller
    model: ModelInfo
    provider: Provider
    client_tools: Sequence[ToolSpec] = ()
    tool_choice: ToolChoice | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    parallel_tool_calls: bool | None = None
    options: GenerationOptions = field(default_factory=no_options)
    mode: ConversationMode = "auto"
    scope: dict[str, str] = field(default_factory=dict)
    context: ContextInfo | None = None
    system_prompt: str | None = None
    decided: Sequence[PartChange] = ()  # announced after `run_start` (`PartUpdate`)
    fallback_models: tuple[ModelInfo, ...] = ()  # priced as themselves when they answer
    wire_options: Mapping[str, str] = field(default_factory=dict)  # stored as `wire`
    # A stateless turn's inline files, read for this run only (`Attachments.for_request`).
    inline_files: Mapping[str, InlineFile] = field(default_factory=dict)

    def stored_options(self) -> dict[str, Any] | None:
        """What a later continuation needs to offer the model the same tools."""
        if not self.client_tools and self.tool_choice is None and not self.wire_options:
            return None
        choice = self.tool_choice
        wire = {"wire": dict(self.wire_options)} if self.wire_options else {}
        return wire | {
            "client_tools": [t.model_dump() for t in self.client_tools],
            "tool_choice": choice
            if choice is None or isinstance(choice, str)
            else choice.model_dump(),
        }


@dataclass(slots=True)  # one per open stream: no attribute dict
class ActiveRun:
    run_id: str
    owner_id: str
    conversation_id: str | None
    message_id: str
    log: RunLog
    writer: EventWriter | None
    task: asyncio.Task[None] | None = None
    status: RunStatus = "running"
    started_at: float = field(default_factory=time.monotonic)
    shutting_down: bool = False
    # Set when the task's body has begun; a task cancelled before that would never run
    # its body (and never close the run), so cancel() only flags such a run instead.
    started: bool = False
    cancel_requested: bool = False
    failure: ChatBffError | None = None
    final_message: Message | None = None
    truncated_input: bool = False  # the user message was cut to fit (the answer says so)
    allowance: Allowance | None = None  # the caller's budgets left when the run was admitted
    # A conversation run's usage, written with its end (`RunJournal.finish`).
    usage_rows: list[UsageEntry] = field(default_factory=list)
    answering: bool = False  # the run has emitted the first piece of its answer

    async def emit(self, event: RunEvent) -> None:
        """Append to the log (and the writer). The answer's first piece is handed to a
        reader waiting for it before the run goes on: it usually comes in one read with
        more (a short answer, whole), and without this yield the run would fold all of it
        (and end the run) before the reader ran, so the first token waited for the rest.
        Only the first: later pieces pile up while the reader sends, one batch per wake-up.
        """
        item = self.log.append(event)
        writer = self.writer
        if writer is not None:  # `writer.add(item)`, inline: this runs once per token
            buffer = writer.buffer
            buffer.append(item)
            if len(buffer) >= writer.due:
                writer.added()
        if not self.answering and item.type in ANSWER_DELTAS:
            self.answering = True
            if self.log.readers_waiting:
                await asyncio.sleep(0)
