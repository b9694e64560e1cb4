"""File rows: every query is scoped by owner, so another user's id is a `NotFound`
exactly like a missing one. Like every repository it never commits."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Text, cast, delete, func, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from app.domain.errors import NotFound
from app.domain.files import Extraction, FileRecord
from app.store.tables.core import MessageRow
from app.store.tables.files import FileRow
from app.store.tables.types import new_id, utcnow


def new_file_id() -> str:
    return new_id("file")


def _record(row: FileRow) -> FileRecord:
    return FileRecord(
        id=row.id,
        owner_id=row.owner_id,
        conversation_id=row.conversation_id,
        name=row.name,
        media_type=row.media_type,
        size=row.size,
        sha256=row.sha256,
        storage_key=row.storage_key,
        created_at=row.created_at,
    )


class FileRepo:
    def __init__(self, session: AsyncSession) -> None:
        self._session = session

    async def create(
        self,
        *,
        file_id: str,
        owner_id: str,
        name: str,
        media_type: str,
        size: int,
        sha256: str,
        storage_key: str,
        conversation_id: str | None = None,
    ) -> FileRecord:
        row = FileRow(
            id=file_id,
            owner_id=owner_id,
            conversation_id=conversation_id,
            name=name,
            media_type=media_type,
            size=size,
            sha256=sha256,
            storage_key=storage_key,
            created_at=utcnow(),
            extracted_text=None,
            extraction=None,
        )
        self._session.add(row)
        await self._session.flush()
        return _record(row)

    async def stored_bytes(self, owner_id: str, *, lock: bool = False) -> int:
        """The size of all the owner's files. `lock` (Postgres) holds the owner's quota
        until the transaction ends, so two uploads side by side are counted one after
        the other (SQLite runs one write transaction at a time already)."""
        if lock and self._session.get_bind().dialect.name == "postgresql":
            key = func.hashtextextended(f"files:{owner_id}", 0)
            await self._session.execute(select(func.pg_advisory_xact_lock(key)))
        total = await self._session.scalar(
            select(func.coalesce(func.sum(FileRow.size), 0)).where(FileRow.owner_id == owner_id)
        )
        return int(total or 0)

    async def _row(self, owner_id: str, file_id: str) -> FileRow:
        row = await self._session.scalar(
            select(FileRow).where(FileRow.id == file_id, FileRow.owner_id == owner_id)
        )
        if row is None:
            raise NotFound(f"No file {file_id!r}.")
        return row

    async def get(self, owner_id: str, file_id: str) -> FileRecord:
        return _record(await self._row(owner_id, file_id))

    async def get_many(self, owner_id: str, file_ids: Sequence[str]) -> dict[str, FileRecord]:
        """The caller's files among `file_ids` (others are simply absent)."""
        if not file_ids:
            return {}
        rows = await self._session.scalars(
            select(FileRow).where(FileRow.owner_id == owner_id, FileRow.id.in_(set(file_ids)))
        )
        return {row.id: _record(row) for row in rows}

    async def known_keys(self, keys: Sequence[str]) -> set[str]:
        """Which of these storage keys a file row names, whoever owns it. A file's key is
        its id (`Files.record`), so this reads the primary key's index."""
        if not keys:
            return set()
        rows = await self._session.execute(
            select(FileRow.id, FileRow.storage_key).where(FileRow.id.in_(set(keys)))
        )
        return {key for row in rows for key in (row.id, row.storage_key)}

    async def extraction(self, owner_id: str, file_id: str) -> Extraction | None:
        """The cached extraction, None when the file was never read."""
        row = await self._row(owner_id, file_id)
        if row.extraction is None:
            return None
        return Extraction.from_json(row.extracted_text or "", row.extraction)

    async def save_extraction(self, owner_id: str, file_id: str, result: Extraction) -> None:
        await self._session.execute(
            update(FileRow)
            .where(FileRow.id == file_id, FileRow.owner_id == owner_id)
            .values(extracted_text=result.text, extraction=result.to_json())
        )

    async def attach(self, owner_id: str, file_ids: Sequence[str], conversation_id: str) -> None:
        """Tie the caller's loose files to a conversation (a purge then removes them)."""
        if not file_ids:
            return
        await self._session.execute(
            update(FileRow)
            .where(
                FileRow.owner_id == owner_id,
                FileRow.id.in_(set(file_ids)),
                FileRow.conversation_id.is_(None),
            )
            .values(conversation_id=conversation_id)
        )

    async def delete(self, owner_id: str, file_id: str) -> FileRecord:
        """Delete the row; the caller removes the bytes once the transaction commits."""
        row = await self._row(owner_id, file_id)
        record = _record(row)
        await self._session.delete(row)
        await self._session.flush()
        return record

    async def delete_for_conversation(self, owner_id: str, conversation_id: str) -> list[str]:
        """Delete a conversation's files; answers their storage keys.

        A file is tied to the first conversation that carried it, but the owner may have
        sent it in others too: such a file moves to one of them instead, so purging one
        conversation never takes a document out of another's history.
        """
        rows = (
            await self._session.execute(
                select(FileRow.id, FileRow.storage_key).where(
                    FileRow.owner_id == owner_id, FileRow.conversation_id == conversation_id
                )
            )
        ).all()
        keys: list[str] = []
        for file_id, key in rows:
            elsewhere = await self._other_conversation_with(owner_id, conversation_id, file_id)
            if elsewhere is not None:
                await self._session.execute(
                    update(FileRow)
                    .where(FileRow.id == file_id, FileRow.owner_id == owner_id)
                    .values(conversation_id=elsewhere)
                )
                continue
            await self._session.execute(
                delete(FileRow).where(FileRow.id == file_id, FileRow.owner_id == owner_id)
            )
            keys.append(key)
        return keys

    async def _other_conversation_with(
        self, owner_id: str, conversation_id: str, file_id: str
    ) -> str | None:
        """Another of the owner's conversations whose messages name the file."""
        found: str | None = await self._session.scalar(
            select(MessageRow.conversation_id)
            .where(
                MessageRow.owner_id == owner_id,
                MessageRow.conversation_id != conversation_id,
                cast(MessageRow.content, Text).contains(file_id, autoescape=True),
            )
            .limit(1)
        )
        return found
