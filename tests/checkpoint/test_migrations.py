"""The Alembic history (checkpoint tables, then the app's) creates exactly what the models
describe and removes it again, on both dialects."""

from __future__ import annotations

from sqlalchemy import inspect

from alembic import command
from engine.checkpoint.sql.migrations import check_schema, migrate, run_alembic
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.url import create_engine


async def table_names(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def test_upgrade_from_empty_check_and_downgrade(empty_database: str) -> None:
    outdated = await check_schema(empty_database)
    assert outdated is not None
    assert "empty" in outdated and "threadline migrate" in outdated

    await migrate(empty_database)
    assert await check_schema(empty_database) is None
    assert {table.name for table in checkpoint_metadata.sorted_tables} <= await table_names(
        empty_database
    )
    await run_alembic(empty_database, command.check)  # raises if the models drifted

    await run_alembic(empty_database, command.downgrade, "base")
    assert await table_names(empty_database) == {"alembic_version"}
    assert "threadline migrate" in (await check_schema(empty_database) or "")
