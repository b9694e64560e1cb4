"""Bodies of a submission: the user's answer to a question a server tool asked mid-call."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from app.domain.parts import ToolPart


class SubmissionIn(BaseModel):
    """The answer to the question in the part's `data.elicitation`."""

    model_config = ConfigDict(extra="forbid")

    action: Literal["accept", "decline", "cancel"] = Field(
        description="`accept` with `content`; `decline`: the user said no; `cancel`: the "
        "user dismissed the question without choosing."
    )
    content: dict[str, Any] | None = Field(
        default=None,
        description="The answer (accept only), matching `elicitation.requestedSchema`.",
    )
    elicitation_id: str | None = Field(
        default=None,
        max_length=128,
        description="The question this answers: the part's `data.elicitation.id`. A tool may "
        "ask again after an answer; with the id, that answer sent again is 409 "
        "`already_answered` naming its question and never answers the next one. Without "
        "it, the call's newest question is answered.",
    )


class SubmissionOut(BaseModel):
    """The tool part after the tool was called again with the answer, and the run that
    continues the conversation when nothing waits any more."""

    part: ToolPart = Field(
        description="The updated tool part (final, or waiting for the tool's next question)."
    )
    run_id: str | None = Field(description="The run continuing the conversation, if one did.")
    events_url: str | None = Field(description="Where to follow that run.")
