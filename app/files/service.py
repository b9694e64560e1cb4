"""Files for their owners: upload (streamed to storage, capped while reading), read,
delete, and the extracted text of documents, computed once and cached with the row.

The bytes of an upload go straight from the request to the `FileStore` chunk by chunk;
the cap is counted as they arrive, so an oversized upload is refused at the first byte
past the limit, never held whole in memory. The kind is decided from the stored bytes
(`app.files.sniff`); a refused or failed upload leaves no blob and no row.

Extraction runs in worker threads, at most `extract_concurrency` at once, each under a
time cap (the readers also stop themselves at their deadline), so one large document
never slows the event loop that serves everyone else.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass, field
from datetime import UTC, datetime

from app.domain.errors import NotFound, Unavailable
from app.domain.files import (
    KIND_OF_MEDIA_TYPE,
    MEDIA_TYPES,
    Extraction,
    FileKind,
    FileRecord,
    FileTooLarge,
    InlineFile,
    UploadQuotaExceeded,
    UploadTimeout,
)
from app.domain.text import valid_text
from app.files.archive import ArchiveLimits
from app.files.extract import Budget, ExtractionTimeout, ExtractLimits, extract
from app.files.sniff import HEAD_BYTES, refuse_early, sniff
from app.files.store import BlobWriter, FileStore
from app.store.database import Database, Tx
from app.store.repos.files import new_file_id

log = logging.getLogger("chat_bff.files")


@dataclass(frozen=True)
class FileLimits:
    max_bytes: int = 10 * 1024 * 1024
    quota_bytes: int = 1024 * 1024 * 1024  # all of one owner's stored files
    upload_timeout_seconds: float = 120.0
    extract_timeout_seconds: float = 20.0
    extract_concurrency: int = 2
    extract: ExtractLimits = field(default_factory=ExtractLimits)
    archive: ArchiveLimits = field(default_factory=ArchiveLimits)


def clean_name(name: str | None) -> str:
    """A file name fit to store and show: no directories, valid text, at most 255 chars."""
    base = valid_text(name or "").replace("\\", "/").rsplit("/", 1)[-1].strip()
    return (base or "upload")[:255]


class _Counted:
    """Chunks written through, with the caps, the digest and the first bytes kept."""

    def __init__(self, writer: BlobWriter, max_bytes: int, quota: _Quota | None) -> None:
        self.writer = writer
        self.max_bytes = max_bytes
        self.quota = quota
        self.size = 0
        self.digest = hashlib.sha256()
        self.head = b""

    async def add(self, chunk: bytes) -> None:
        self.size += len(chunk)
        if self.size > self.max_bytes:
            raise FileTooLarge(self.max_bytes)
        if self.quota is not None:
            self.quota.check(self.size)
        if len(self.head) < HEAD_BYTES:
            self.head += chunk[: HEAD_BYTES - len(self.head)]
            if len(self.head) >= HEAD_BYTES:
                refuse_early(self.head)
        self.digest.update(chunk)
        await self.writer.write(chunk)


@dataclass(frozen=True)
class _Quota:
    limit: int
    used: int

    def check(self, size: int) -> None:
        if self.used + size > self.limit:
            raise UploadQuotaExceeded(self.limit, self.used)


@dataclass(frozen=True)
class StagedUpload:
    """An upload's bytes stored and read, not yet a file (`Files.stage`)."""

    file_id: str
    owner_id: str
    name: str
    size: int
    sha256: str
    kind: FileKind
    text: Extraction | None


class Files:
    def __init__(self, db: Database, store: FileStore, limits: FileLimits) -> None:
        self.db = db
        self.store = store
        self.limits = limits
        self._extracting = asyncio.Semaphore(limits.extract_concurrency)

    # -- writing ----------------------------------------------------------------------

    async def upload(
        self, owner_id: str, name: str | None, chunks: AsyncIterable[bytes]
    ) -> FileRecord:
        """Store a stream as the owner's file; refused uploads leave nothing behind."""
        staged = await self.stage(owner_id, name, chunks)
        try:
            async with self.db.write() as tx:
                return await self.record(tx, staged)
        except BaseException:
            await self.unless_recorded(staged)
            raise

    async def stage(
        self,
        owner_id: str,
        name: str | None,
        chunks: AsyncIterable[bytes],
        *,
        early_quota: bool = True,
    ) -> StagedUpload:
        """The stream stored, its kind decided and its text read, but no file recorded
        yet: `record` it in a transaction, or `discard` it.

        The quota is checked as the bytes arrive, against what the owner had stored when
        the upload began (so a file that cannot fit is refused early), and again in the
        transaction that records it (so uploads running side by side cannot pass it).
        Without `early_quota` only that second check is made: an upload that may be the
        repeat of one already kept must be read whole to be known (and then stores
        nothing), its size capped by `max_bytes` all the same."""
        quota = None
        if early_quota:
            async with self.db.read() as tx:
                used = await tx.files.stored_bytes(owner_id)
            quota = _Quota(self.limits.quota_bytes, used)
        file_id = new_file_id()
        writer = await self.store.writer(file_id)
        counted = _Counted(writer, self.limits.max_bytes, quota)
        try:
            async with asyncio.timeout(self.limits.upload_timeout_seconds):
                async for chunk in chunks:
                    await counted.add(chunk)
            refuse_early(counted.head)
            await writer.commit()
        except TimeoutError as exc:
            await writer.abort()
            raise UploadTimeout(
                f"The upload took longer than {self.limits.upload_timeout_seconds:g} s."
            ) from exc
        except BaseException:
            await writer.abort()
            raise
        try:
            kind, text = await self._read(await self.store.read(file_id))
        except BaseException:
            await self.store.delete(file_id)
            raise
        return StagedUpload(
            file_id=file_id,
            owner_id=owner_id,
            name=clean_name(name),
            size=counted.size,
            sha256=counted.digest.hexdigest(),
            kind=kind,
            text=text,
        )

    async def inline(self, owner_id: str, name: str | None, data: bytes) -> InlineFile:
        """Bytes in hand (an inline data URL) read as an upload's are, for one request
        only: typed, their text extracted, but nothing stored and no quota used."""
        if len(data) > self.limits.max_bytes:
            raise FileTooLarge(self.limits.max_bytes)
        refuse_early(data[:HEAD_BYTES])
        kind, text = await self._read(data)
        record = FileRecord(
            id=new_file_id(),
            owner_id=owner_id,
            conversation_id=None,
            name=clean_name(name),
            media_type=MEDIA_TYPES[kind],
            size=len(data),
            sha256=hashlib.sha256(data).hexdigest(),
            storage_key="",
            created_at=datetime.now(UTC),
        )
        return InlineFile(record=record, data=data, text=text)

    async def _read(self, data: bytes) -> tuple[FileKind, Extraction | None]:
        """The kind of a whole file and, for a document, its text."""
        kind = await asyncio.to_thread(sniff, data, self.limits.archive)
        return kind, await self._extract(kind, data)

    async def record(self, tx: Tx, staged: StagedUpload) -> FileRecord:
        """The staged upload recorded as its owner's file, in `tx` (the quota checked
        again, under a lock)."""
        owner_id, file_id = staged.owner_id, staged.file_id
        used = await tx.files.stored_bytes(owner_id, lock=True)
        _Quota(self.limits.quota_bytes, used).check(staged.size)
        record = await tx.files.create(
            file_id=file_id,
            owner_id=owner_id,
            name=staged.name,
            media_type=MEDIA_TYPES[staged.kind],
            size=staged.size,
            sha256=staged.sha256,
            storage_key=file_id,
        )
        if staged.text is not None:
            await tx.files.save_extraction(owner_id, file_id, staged.text)
        log.info(
            "file stored",
            extra={"file_id": file_id, "media_type": record.media_type, "size": record.size},
        )
        return record

    async def discard(self, staged: StagedUpload) -> None:
        """A staged upload that is not recorded: its bytes go."""
        await self.store.delete(staged.file_id)

    async def unless_recorded(self, staged: StagedUpload) -> None:
        """After recording failed: the bytes go, unless the file was recorded after all
        (a COMMIT whose answer was lost) or that cannot be told now (the database out of
        reach): a stray blob is harmless, a recorded file without its bytes is not."""
        try:
            async with self.db.read() as tx:
                await tx.files.get(staged.owner_id, staged.file_id)
        except NotFound:
            await self.discard(staged)
        except Unavailable:
            log.warning("upload kept unrecorded", extra={"file_id": staged.file_id})

    async def stage_bytes(self, owner_id: str, name: str | None, data: bytes) -> StagedUpload:
        """Bytes already in hand (an inline data URL) staged like an upload's."""

        async def one() -> AsyncIterator[bytes]:
            for start in range(0, len(data), 64 * 1024):
                yield data[start : start + 64 * 1024]

        return await self.stage(owner_id, name, one())

    # -- reading ----------------------------------------------------------------------

    async def get(self, owner_id: str, file_id: str) -> tuple[FileRecord, Extraction | None]:
        async with self.db.read() as tx:
            return await tx.files.get(owner_id, file_id), await tx.files.extraction(
                owner_id, file_id
            )

    async def content(self, owner_id: str, file_id: str) -> tuple[FileRecord, AsyncIterator[bytes]]:
        async with self.db.read() as tx:
            record = await tx.files.get(owner_id, file_id)
        return record, self.store.stream(record.storage_key)

    async def read_bytes(self, record: FileRecord) -> bytes:
        return await self.store.read(record.storage_key)

    async def text_of(self, record: FileRecord) -> Extraction | None:
        """A document's text: cached, or read now (and cached); None for images."""
        kind = KIND_OF_MEDIA_TYPE.get(record.media_type)
        if kind is None:
            return None
        async with self.db.read() as tx:
            cached = await tx.files.extraction(record.owner_id, record.id)
        if cached is not None:
            return cached
        result = await self._extract(kind, await self.read_bytes(record))
        if result is not None:
            async with self.db.write() as tx:
                await tx.files.save_extraction(record.owner_id, record.id, result)
        return result

    async def _extract(self, kind: FileKind, data: bytes) -> Extraction | None:
        """Extraction in a worker thread, at most `extract_concurrency` at once, timed."""
        seconds = self.limits.extract_timeout_seconds
        await self._extracting.acquire()
        budget = Budget(self.limits.extract, seconds)
        task = asyncio.ensure_future(asyncio.to_thread(extract, kind, data, budget))
        # The slot is free when the thread is, not when we stop waiting for it.
        task.add_done_callback(self._finished)
        try:
            return await asyncio.wait_for(asyncio.shield(task), seconds + 1.0)
        except TimeoutError as exc:
            raise ExtractionTimeout(
                f"The document took longer than {seconds:g} s to read; it was not used."
            ) from exc

    def _finished(self, task: asyncio.Future[Extraction | None]) -> None:
        self._extracting.release()
        if not task.cancelled():
            task.exception()  # retrieved: a late failure after a timeout is not an error

    # -- deleting ---------------------------------------------------------------------

    async def delete(self, owner_id: str, file_id: str) -> None:
        async with self.db.write() as tx:
            record = await tx.files.delete(owner_id, file_id)
        await self.store.delete(record.storage_key)

    async def drop_blobs(self, keys: list[str]) -> None:
        """Remove the bytes of rows already deleted (a purged conversation's files)."""
        for key in keys:
            await self.store.delete(key)
