"""Where a file's bytes live, behind an interface another store (S3, a database) can
implement: write a stream under a key, read it back, delete it, and list the keys
written before a time (for `app.files.sweep`, which removes bytes no file row names).

`DirectoryFileStore` is the default: one file per key under a directory (`FILES_DIR`),
fanned out by the key's first characters. A write goes to a `.part` file that is renamed
into place only when complete, so a reader never sees half an upload and an aborted
upload leaves nothing behind. Disk calls run in worker threads: a slow disk never stalls
the event loop that serves everyone else.
"""

from __future__ import annotations

import asyncio
import os
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import BinaryIO, Protocol

_KEY = re.compile(r"^[A-Za-z0-9_-]{1,128}$")
READ_CHUNK = 64 * 1024


class BlobWriter(Protocol):
    async def write(self, chunk: bytes) -> None: ...

    async def commit(self) -> None:
        """Make the bytes written so far readable under the key."""
        ...

    async def abort(self) -> None:
        """Drop whatever was written; the key stays absent."""
        ...


class FileStore(Protocol):
    async def writer(self, key: str) -> BlobWriter:
        """A writer for a new blob under `key`."""
        ...

    async def read(self, key: str) -> bytes:
        """The whole blob (files are capped, so this is bounded); KeyError when absent."""
        ...

    def stream(self, key: str) -> AsyncIterator[bytes]:
        """The blob in chunks, for answering downloads without holding it whole."""
        ...

    async def delete(self, key: str) -> None:
        """Remove the blob; nothing happens when it is already gone."""
        ...

    async def old_keys(self, before: float, limit: int, after: str | None = None) -> list[str]:
        """Up to `limit` keys of blobs last written before `before` (Unix time), in the
        store's own order, starting after the key `after` (a cursor from a previous call).
        A write left unfinished as long (its process died mid-upload) is removed on the
        way: it is under no key, so nothing else ever would."""
        ...


def _checked(key: str) -> str:
    if not _KEY.match(key):
        raise ValueError(f"invalid storage key {key!r}")
    return key


class _DirectoryWriter:
    def __init__(self, final: Path) -> None:
        self._final = final
        self._part = final.with_name(final.name + ".part")
        self._handle: BinaryIO | None = None

    async def open(self) -> None:
        def opener() -> BinaryIO:
            self._final.parent.mkdir(parents=True, exist_ok=True)
            return self._part.open("wb")

        self._handle = await asyncio.to_thread(opener)

    async def write(self, chunk: bytes) -> None:
        assert self._handle is not None
        await asyncio.to_thread(self._handle.write, chunk)

    async def commit(self) -> None:
        assert self._handle is not None
        handle, self._handle = self._handle, None

        def finish() -> None:
            handle.close()
            os.replace(self._part, self._final)

        await asyncio.to_thread(finish)

    async def abort(self) -> None:
        handle, self._handle = self._handle, None

        def drop() -> None:
            if handle is not None:
                handle.close()
            self._part.unlink(missing_ok=True)

        await asyncio.to_thread(drop)


class DirectoryFileStore:
    """Blobs as files under `root` (created on first write)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> Path:
        key = _checked(key)
        return self.root / key[-2:] / key

    async def writer(self, key: str) -> BlobWriter:
        writer = _DirectoryWriter(self._path(key))
        await writer.open()
        return writer

    async def read(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError as exc:
            raise KeyError(key) from exc

    async def stream(self, key: str) -> AsyncIterator[bytes]:
        path = self._path(key)
        try:
            handle = await asyncio.to_thread(path.open, "rb")
        except FileNotFoundError as exc:
            raise KeyError(key) from exc
        try:
            while chunk := await asyncio.to_thread(handle.read, READ_CHUNK):
                yield chunk
        finally:
            handle.close()

    async def delete(self, key: str) -> None:
        await asyncio.to_thread(self._path(key).unlink, missing_ok=True)

    async def old_keys(self, before: float, limit: int, after: str | None = None) -> list[str]:
        """In the order (fan-out directory, key): a cursor resumes where the last call
        stopped, so successive calls walk the whole store a bounded slice at a time."""
        return await asyncio.to_thread(self._old_keys, before, limit, after)

    def _old_keys(self, before: float, limit: int, after: str | None) -> list[str]:
        found: list[str] = []
        if not self.root.is_dir():
            return found
        start = (after[-2:], after) if after else ("", "")
        fans = sorted(d.name for d in os.scandir(self.root) if d.is_dir())
        for fan in (f for f in fans if f >= start[0]):
            with os.scandir(self.root / fan) as entries:
                old = sorted(e.name for e in entries if _older(e, before))
            for name in old:
                if name.endswith(".part"):
                    (self.root / fan / name).unlink(missing_ok=True)
                elif _KEY.match(name) and (fan, name) > start:
                    found.append(name)
                    if len(found) >= limit:
                        return found
        return found


def _older(entry: os.DirEntry[str], before: float) -> bool:
    try:
        return entry.is_file() and entry.stat().st_mtime < before
    except FileNotFoundError:  # deleted meanwhile
        return False
