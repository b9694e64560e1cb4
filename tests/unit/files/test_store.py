"""The directory store: a blob is readable only once committed; an abort leaves nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.files.store import DirectoryFileStore


async def test_a_committed_blob_reads_back_and_streams(tmp_path: Path) -> None:
    store = DirectoryFileStore(tmp_path / "files")
    writer = await store.writer("file_abc123")
    await writer.write(b"hello ")
    await writer.write(b"world")
    await writer.commit()

    streamed = b"".join([chunk async for chunk in store.stream("file_abc123")])

    assert await store.read("file_abc123") == b"hello world"
    assert streamed == b"hello world"


async def test_an_aborted_write_leaves_nothing(tmp_path: Path) -> None:
    store = DirectoryFileStore(tmp_path)
    writer = await store.writer("file_gone")
    await writer.write(b"partial")
    await writer.abort()

    assert [p for p in tmp_path.rglob("*") if p.is_file()] == []
    with pytest.raises(KeyError):
        await store.read("file_gone")


async def test_a_key_cannot_leave_the_directory(tmp_path: Path) -> None:
    store = DirectoryFileStore(tmp_path)
    with pytest.raises(ValueError, match="invalid storage key"):
        await store.writer("../../etc/passwd")


async def test_delete_is_idempotent(tmp_path: Path) -> None:
    store = DirectoryFileStore(tmp_path)
    writer = await store.writer("file_x1")
    await writer.commit()

    await store.delete("file_x1")
    await store.delete("file_x1")

    with pytest.raises(KeyError):
        await store.read("file_x1")
