"""Revision 0005 keeps save rows of a few kB (a chat graph's digests) in their table's
pages on PostgreSQL instead of its TOAST relation; its downgrade restores the default.
Rows written on either side of it read the same."""

from __future__ import annotations

import os

import sqlalchemy as sa

from alembic import command
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import run_alembic
from engine.checkpoint.sql.models import save_table, thread_table

DIGEST_SIZE = 4500  # bytes of deflated data: more than PostgreSQL keeps in a row by default


async def save_a_row(url: str, seq: int) -> int:
    """Save a row of DIGEST_SIZE bytes; returns the bytes of the TOAST relation after it
    (0 on SQLite, which has none)."""
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            if seq == 1:
                await conn.execute(
                    sa.insert(thread_table).values(
                        id=1, thread_id="t1", put_count=1, epoch=0, last_write_at=sa.func.now()
                    )
                )
            await conn.execute(
                sa.insert(save_table).values(thread=1, seq=seq, data=os.urandom(DIGEST_SIZE))
            )
            if conn.dialect.name != "postgresql":
                return 0
            toast = "SELECT pg_relation_size(reltoastrelid) FROM pg_class WHERE relname = :name"
            return int(await conn.scalar(sa.text(toast), {"name": "checkpoint_saves"}))
    finally:
        await engine.dispose()


async def stored_sizes(url: str) -> list[int]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            found = await conn.execute(sa.select(sa.func.length(save_table.c.data)))
            return list(found.scalars())
    finally:
        await engine.dispose()


async def test_save_rows_of_a_few_kb_stay_in_the_table(empty_database: str) -> None:
    await run_alembic(empty_database, command.upgrade, "0004")
    toasted = await save_a_row(empty_database, 1)
    await run_alembic(empty_database, command.upgrade, "0005")
    assert await save_a_row(empty_database, 2) == toasted  # the TOAST relation did not grow
    await run_alembic(empty_database, command.downgrade, "0004")
    moved = await save_a_row(empty_database, 3)
    assert moved > toasted or empty_database.startswith("sqlite")
    assert await stored_sizes(empty_database) == [DIGEST_SIZE] * 3
