"""Idempotency keys: the outcome of a create request kept under the caller's key.

Created by `migrations/versions/0015_idempotency_keys.py`. One row per (owner, key),
written in the same transaction as what the request created, so a lost COMMIT keeps both
or neither. `fingerprint` is a hash of the request (method, path, body): a key sent again
with another request is refused. `expires_at` ends the key's life (see
`app.store.idempotency`); lapsed rows are swept by it (`ix_idempotency_keys_expires_at`,
0017_idempotency_key_expiry). `conversation_id` names the conversation an outcome is
about: purging it deletes the outcome too, in the purge's transaction
(0018_idempotency_conversation), so a keyed retry never answers what was purged.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import Index, String
from sqlalchemy.orm import Mapped, mapped_column

from app.store.db import Base
from app.store.tables.types import JSONType, UTCDateTime


class IdempotencyKeyRow(Base):
    __tablename__ = "idempotency_keys"
    __table_args__ = (
        Index("ix_idempotency_keys_expires_at", "expires_at"),
        Index("ix_idempotency_keys_conversation", "owner_id", "conversation_id"),
    )

    owner_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    key: Mapped[str] = mapped_column(String(255), primary_key=True)
    fingerprint: Mapped[str] = mapped_column(String(64))
    status: Mapped[int] = mapped_column()
    body: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    expires_at: Mapped[datetime] = mapped_column(UTCDateTime)
    conversation_id: Mapped[str | None] = mapped_column(String(64))
