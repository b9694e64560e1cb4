"""Bring a database to the newest schema (Alembic `upgrade head`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncEngine

from app.store.db import Base


async def upgrade_database(engine: AsyncEngine) -> None:
    # Placeholder until the Alembic migrations land: create what the models declare.
    async with engine.begin() as conn:
        await conn.run_sync(Base.metadata.create_all)
