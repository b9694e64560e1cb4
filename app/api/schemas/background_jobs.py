"""Bodies of the background jobs API: the calls of long-running tools."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field


class BackgroundJobOut(BaseModel):
    """A long-running tool call that runs outside the turn that made it."""

    id: str = Field(description="Job id (the tool part's `backgroundJobId`).")
    conversation_id: str | None = Field(description="Conversation of the tool call.")
    run_id: str = Field(description="The run that started the job.")
    tool_call_id: str = Field(description="The tool part's id (toolCallId).")
    tool_name: str = Field(description="The tool running.")
    args: dict[str, Any] = Field(description="Arguments it runs with.")
    status: Literal["running", "succeeded", "failed", "cancelled"] = Field(
        description="`running` until it ends; the result then continues the conversation."
    )
    result: Any | None = Field(description="The tool's result (or error) once it ended.")
    error: str | None = Field(description="Why it failed or was cancelled.")
    attempts: int = Field(description="Runs of the tool: more than 1 after a resume.")
    created_at: datetime = Field(description="When it started.")
    finished_at: datetime | None = Field(description="When it ended.")
    delivered: bool = Field(description="True once its result reached the conversation.")


class BackgroundJobList(BaseModel):
    """The caller's background jobs, newest first."""

    data: list[BackgroundJobOut] = Field(description="Jobs, newest first.")
