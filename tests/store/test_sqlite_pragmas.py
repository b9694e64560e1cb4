"""Every SQLite connection the service opens has its settings: foreign keys on, WAL,
and a page cache bounded below SQLite's default, so a burst of writes does not leave
megabytes of cached pages behind it for the life of the process."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from app.store.db import SQLITE_CACHE_KIB, create_engine


async def test_a_connection_gets_the_services_pragmas(tmp_path: Path) -> None:
    engine = create_engine(f"sqlite+aiosqlite:///{tmp_path / 'pragmas.db'}")
    try:
        async with engine.connect() as conn:
            read = {
                name: (await conn.execute(text(f"PRAGMA {name}"))).scalar()
                for name in ("foreign_keys", "journal_mode", "cache_size")
            }
    finally:
        await engine.dispose()
    assert read == {"foreign_keys": 1, "journal_mode": "wal", "cache_size": -SQLITE_CACHE_KIB}
    assert SQLITE_CACHE_KIB < 2000  # SQLite's default: 2,000 KiB
