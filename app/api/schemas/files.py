"""Uploaded files as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from app.domain.files import Extraction, FileRecord


class ExtractionOut(BaseModel):
    """How the document reads for a model."""

    status: Literal["ok", "failed"] = Field(description="Whether its text could be read.")
    truncated: bool = Field(description="True when the text was cut at the extraction limits.")
    chars: int = Field(description="Characters of text kept.")
    note: str | None = Field(default=None, description="What was cut, or why it failed.")


class FileOut(BaseModel):
    """An uploaded file (its bytes are at `content_url`)."""

    object: Literal["file"] = Field(default="file", description="Always `file`.")
    id: str = Field(description="File id (`file_...`); put it in a message's file part.")
    name: str = Field(description="The file name as uploaded (directories removed).")
    media_type: str = Field(description="Media type decided from the file's bytes.")
    size: int = Field(description="Size in bytes.")
    sha256: str = Field(description="SHA-256 of the bytes, hex.")
    created_at: datetime = Field(description="When it was uploaded.")
    conversation_id: str | None = Field(
        description="The conversation whose message first carried it (purging it removes "
        "the file), if any."
    )
    content_url: str = Field(description="Where its bytes can be fetched (owner only).")
    extraction: ExtractionOut | None = Field(
        default=None, description="For documents: how their text was read; null for images."
    )

    @classmethod
    def from_record(cls, record: FileRecord, extraction: Extraction | None) -> FileOut:
        return cls(
            id=record.id,
            name=record.name,
            media_type=record.media_type,
            size=record.size,
            sha256=record.sha256,
            created_at=record.created_at,
            conversation_id=record.conversation_id,
            content_url=f"/api/files/{record.id}/content",
            extraction=(
                ExtractionOut.model_validate(extraction.to_json())
                if extraction is not None
                else None
            ),
        )
