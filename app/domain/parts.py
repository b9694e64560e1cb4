"""Message parts in Gravity UI AIKit's shapes, field for field.

One discriminated union (`Part`) and one TypeAdapter (`PARTS_ADAPTER`) serve the API, the
SSE events and the database alike. AIKit's own fields are camelCase (`toolName`,
`toolCallId`, `bodyContent`), so these models keep them as they are on the wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, model_validator

ToolStatus = Literal[
    "loading", "waitingConfirmation", "waitingSubmission", "success", "error", "cancelled"
]
FINAL_TOOL_STATUSES: frozenset[str] = frozenset({"success", "error", "cancelled"})


def _is_none(value: object) -> bool:
    """Optional fields are left out of the JSON when unset, never sent as null."""
    return value is None


class _PartModel(BaseModel):
    # Parts come back from browsers that may add presentation fields of their own; those
    # are ignored rather than refused so that a client can send its history back as-is.
    model_config = ConfigDict(extra="ignore")


class TextData(_PartModel):
    """The text of a text part."""

    text: str = Field(description="The text, usually Markdown.")


class TextPart(_PartModel):
    """A run of assistant or user text."""

    type: Literal["text"] = Field(
        default="text", description="Always `text`; selects the part kind."
    )
    id: str | None = Field(
        default=None, exclude_if=_is_none, description="Optional client-side id of the part."
    )
    data: TextData = Field(description="The text.")


class ThinkingData(_PartModel):
    """The reasoning text of a thinking part and whether it is still streaming."""

    content: str = Field(description="The model's visible reasoning text.")
    status: Literal["thinking", "thought"] = Field(
        default="thought", description="`thinking` while it streams, `thought` when done."
    )
    signature: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Provider signature that must travel back with the block.",
    )


class ThinkingPart(_PartModel):
    """Reasoning the provider chose to show (Anthropic thinking, reasoning_content)."""

    type: Literal["thinking"] = Field(
        default="thinking", description="Always `thinking`; selects the part kind."
    )
    id: str | None = Field(
        default=None, exclude_if=_is_none, description="Optional client-side id of the part."
    )
    data: ThinkingData = Field(description="The reasoning and its status.")


class Elicitation(_PartModel):
    """A question a tool asks the user mid-call (an MCP server's elicitation)."""

    id: str = Field(description="The stored question's id.")
    message: str = Field(description="What the tool asks, to show the user.")
    requestedSchema: dict[str, Any] = Field(
        description="JSON schema of the answer's `content` (flat object of primitives)."
    )


class ToolData(_PartModel):
    """A tool call's name, arguments, status and result (AIKit's tool part data)."""

    toolName: str = Field(description="Name of the tool the model called.")
    toolCallId: str = Field(description="The provider's id of this call.")
    args: dict[str, Any] | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Parsed JSON arguments; absent while they stream or if invalid.",
    )
    status: ToolStatus = Field(description="Where the call stands; see the README.")
    result: Any | None = Field(
        default=None, exclude_if=_is_none, description="The tool's result once it has one."
    )
    bodyContent: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Human-readable text for the card (errors, summaries).",
    )
    mutates: bool | None = Field(
        default=None,
        exclude_if=_is_none,
        description="True when the tool changed data a UI may be showing.",
    )
    approvalId: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="The approval a human decides for this call (sent only when set): "
        "`POST /api/approvals/{approvalId}`, or the decision in the next `/api/chat` turn.",
    )
    backgroundJobId: str | None = Field(
        default=None,
        exclude_if=_is_none,
        description="The background job running this call (sent only when set): the part "
        "stays `loading` until its result continues the conversation in a new run.",
    )
    elicitation: Elicitation | None = Field(
        default=None,
        exclude_if=_is_none,
        description="Set while the part is `waitingSubmission` because the tool asks the "
        "user a question (sent only when set): answer it with "
        "`POST /api/conversations/{id}/submissions/{toolCallId}`.",
    )


class ToolPart(_PartModel):
    """A tool call with its arguments, status and (once known) result."""

    type: Literal["tool"] = Field(
        default="tool", description="Always `tool`; selects the part kind."
    )
    id: str = Field(description="Equals data.toolCallId, so a UI can upsert the part by id.")
    data: ToolData = Field(description="The call: name, arguments, status, result.")


class FileData(_PartModel):
    """An attachment's reference; the file itself is never inlined."""

    id: str = Field(description="Attachment id.")
    name: str = Field(description="File name as uploaded.")
    mimeType: str | None = Field(
        default=None, exclude_if=_is_none, description="MIME type, when known."
    )
    url: str | None = Field(
        default=None, exclude_if=_is_none, description="Where the file can be fetched."
    )


class FilePart(_PartModel):
    """A user attachment (AIKit `fileAttachments` item).

    Also accepted flat, as AIKit attachments and AI SDK file parts travel:
    `{type: "file", id | fileId, name, mediaType | mimeType, url?}`; `id` is then the
    uploaded file's id (`POST /api/files`).
    """

    type: Literal["file"] = Field(
        default="file", description="Always `file`; selects the part kind."
    )
    id: str | None = Field(
        default=None, exclude_if=_is_none, description="Optional client-side id of the part."
    )
    data: FileData = Field(description="The attachment reference.")

    @model_validator(mode="before")
    @classmethod
    def _flat(cls, value: Any) -> Any:
        if not isinstance(value, dict) or "data" in value:
            return value
        file_id = value.get("fileId") or value.get("id")
        if not isinstance(file_id, str):
            return value  # let validation say what is missing
        name = value.get("name") or value.get("filename") or file_id
        return {
            "type": "file",
            "data": {
                "id": file_id,
                "name": name,
                "mimeType": value.get("mediaType") or value.get("mimeType"),
                "url": value.get("url"),
            },
        }


Part = Annotated[TextPart | ThinkingPart | ToolPart | FilePart, Field(discriminator="type")]
PARTS_ADAPTER: TypeAdapter[list[Part]] = TypeAdapter(list[Part])


def text_part(text: str) -> TextPart:
    return TextPart(data=TextData(text=text))


def tool_part(
    *,
    tool_call_id: str,
    tool_name: str,
    status: ToolStatus,
    args: dict[str, Any] | None = None,
    result: Any | None = None,
    body_content: str | None = None,
    approval_id: str | None = None,
) -> ToolPart:
    return ToolPart(
        id=tool_call_id,
        data=ToolData(
            toolName=tool_name,
            toolCallId=tool_call_id,
            args=args,
            status=status,
            result=result,
            bodyContent=body_content,
            approvalId=approval_id,
        ),
    )


def cancel_unfinished(
    part: Part, reason: str, *, body_content: str | None = None, force: bool = False
) -> Part:
    """A tool call left without a result, closed as `cancelled` with `{"error": reason}`.

    Every provider refuses a history in which a tool call has no answer, so a cut-short
    turn (cancel, crash, a pause nobody answered) closes its open calls this way. Parts
    that already have a final status stay as they are, unless `force` (a call whose
    arguments were still streaming).
    """
    if not isinstance(part, ToolPart):
        return part
    if part.data.status in FINAL_TOOL_STATUSES and not force:
        return part
    update: dict[str, Any] = {"status": "cancelled", "result": {"error": reason}}
    if body_content is not None:
        update["bodyContent"] = body_content
    return ToolPart(id=part.id, data=part.data.model_copy(update=update))


def awaiting(parts: Sequence[Part]) -> dict[str, object]:
    """What a paused turn's message says of its background jobs, in its metadata: the jobs
    whose results will continue the conversation (`background_jobs`) and
    `finish_reason: awaiting_background` (a person's turn, `requires_action`, overrides it)."""
    tools = [p for p in parts if isinstance(p, ToolPart)]
    out: dict[str, object] = {}
    loading = [p.data.backgroundJobId for p in tools if p.data.status == "loading"]
    loading = [job for job in loading if job]
    if loading:
        out = {"finish_reason": "awaiting_background", "background_jobs": loading}
    return out
