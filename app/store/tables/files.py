"""Uploaded files: who owns each, what it is, where its bytes are, and its extracted text.

The bytes live in a `FileStore` (a directory by default) under `storage_key`; the row is
the owner-scoped index. Extracted text is cached here so a document is parsed once,
however many turns read it. Created by `migrations/versions/0004_files.py`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class FileRow(Base):
    __tablename__ = "files"
    __table_args__ = (
        Index("ix_files_owner_created", "owner_id", "created_at"),
        Index("ix_files_conversation_id", "conversation_id"),
    )

    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    owner_id: Mapped[str] = mapped_column(String(255))
    # Set when a message of a conversation first carries the file: purging it removes it.
    conversation_id: Mapped[str | None] = mapped_column(
        String(64), ForeignKey("conversations.id", ondelete="CASCADE")
    )
    name: Mapped[str] = mapped_column(String(255))
    media_type: Mapped[str] = mapped_column(String(127))
    size: Mapped[int] = mapped_column(Integer)
    sha256: Mapped[str] = mapped_column(String(64))
    storage_key: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    extracted_text: Mapped[str | None] = mapped_column(Text)
    # How extraction went: {"status": "ok"|"failed", "truncated", "chars", "note"}.
    extraction: Mapped[dict[str, Any] | None] = mapped_column(JSONType)
