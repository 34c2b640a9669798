"""How the server's sessions meet the database: on PostgreSQL a read takes no
transaction (under READ COMMITTED each statement sees the same either way), which saves
its BEGIN and ROLLBACK round trips; on SQLite a read stays one transaction, its snapshot.
Writes are transactions on both."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncSession

from app.db.database import Database


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    db = Database(database_url)
    yield db
    await db.engine.dispose()


async def in_transaction(session: AsyncSession) -> bool:
    """Whether the driver's connection under the session has a transaction open."""
    raw = (await (await session.connection()).get_raw_connection()).driver_connection
    return bool(
        raw.is_in_transaction() if hasattr(raw, "is_in_transaction") else raw.in_transaction
    )


async def test_reads_take_a_transaction_only_on_sqlite(db: Database) -> None:
    async with db.read() as session:
        assert (await session.scalar(text("SELECT 1"))) == 1
        assert await in_transaction(session) is (db.dialect == "sqlite")


async def test_writes_are_transactions(db: Database) -> None:
    async with db.write() as session:
        await session.execute(text("SELECT 1"))
        assert await in_transaction(session)
