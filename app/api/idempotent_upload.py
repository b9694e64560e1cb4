"""`POST /api/files` under an `Idempotency-Key`: the same file sent again with the same key
answers the first upload's file (its id), and no second file is kept.

The body is streamed to storage, never held whole, so the request's fingerprint is known
only once it has been read: it is the file's name and the SHA-256 of its bytes (not the
multipart framing, whose boundary a client makes anew for each attempt). The bytes are
staged first; then, in one transaction, the key's outcome is read and either answered (the
staged copy is discarded) or the file is recorded and its outcome kept beside it
(`app.store.idempotency.once`), so a lost COMMIT kept both or neither.

A kept outcome wins over the quota: while the key is kept the bytes are read without the
early quota check (the repeat of a file that filled the quota answers that file, not 413);
a new file is still held to the quota when it is recorded. A kept outcome whose file was
deleted since is about nothing: the key is forgotten and the upload stores the file anew
(the client that deleted it and sends it again wants it back, not the id of a file that
answers 404), and the key then keeps the new file.
"""

from __future__ import annotations

from collections.abc import AsyncIterable
from dataclasses import replace

from fastapi import status

from app.api.idempotency import RequestKey, fingerprint
from app.api.schemas.files import FileOut
from app.files.service import Files
from app.store.database import Database, Tx
from app.store.idempotency import Outcome, once


async def upload_once(
    files: Files,
    db: Database,
    owner_id: str,
    name: str | None,
    chunks: AsyncIterable[bytes],
    key: RequestKey,
    path: str,
) -> Outcome:
    """The upload's outcome, kept under the caller's key; or the first upload's, when
    the key holds the same file (another file under the key is 422)."""
    async with db.read() as tx:
        held = await tx.idempotency.held(key.of(owner_id))
    staged = await files.stage(owner_id, name, chunks, early_quota=not held)
    upload = f"{staged.name}\n{staged.sha256}".encode()
    kept_key = replace(key, fingerprint=fingerprint("POST", path, upload)).of(owner_id)

    async def record(tx: Tx) -> Outcome:
        record = await files.record(tx, staged)
        out = FileOut.from_record(record, staged.text)
        return Outcome(status.HTTP_201_CREATED, out.model_dump(mode="json"))

    async def gone(tx: Tx, kept: Outcome) -> bool:
        file_id = kept.body.get("id")
        return isinstance(file_id, str) and not await tx.files.get_many(owner_id, [file_id])

    try:
        outcome = await once(db, kept_key, record, gone=gone)
    except BaseException:
        await files.unless_recorded(staged)
        raise
    if outcome.body.get("id") != staged.file_id:  # a repeat: the first upload's file
        await files.discard(staged)
    return outcome
