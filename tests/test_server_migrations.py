"""`threadline migrate` upgrades the checkpoint tables' history, then the server's, on both
dialects; a server creates the tables of a new database and refuses one that is behind;
and a database migrated while both histories were one (0001 to 0005, in `alembic_version`)
upgrades to the same schema from every revision it can be at, its rows kept."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from alembic import command
from app.db.database import Database, SchemaOutdatedError
from app.db.migrations import HISTORIES, LEGACY_SERVER_REVISIONS, SERVER, migrate, schema_state
from app.db.models import app_metadata
from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.migrations import (
    CHECKPOINT,
    LEGACY_CHECKPOINT_REVISIONS,
    MigrationHistory,
    run_alembic,
)
from engine.checkpoint.sql.models import checkpoint_metadata
from engine.checkpoint.sql.saver import SQLSaver
from tests.checkpoint.history import History

VERSION_TABLES = {CHECKPOINT.version_table, SERVER.version_table}
ALL_TABLES = {*checkpoint_metadata.tables, *app_metadata.tables, *VERSION_TABLES}
# `alembic_version` as Alembic creates it, for a legacy database at 0001, which the
# server's history never touched.
legacy_versions = sa.Table(
    "alembic_version",
    sa.MetaData(),
    sa.Column("version_num", sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)
users = sa.table("users", sa.column("user_id"), sa.column("created_at"))


async def table_names(url: str) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return set(await conn.run_sync(lambda sync: sa.inspect(sync).get_table_names()))
    finally:
        await engine.dispose()


async def recorded(url: str, history: MigrationHistory) -> set[str]:
    engine = create_engine(url)
    try:
        async with engine.connect() as conn:
            return await conn.run_sync(history.current)
    finally:
        await engine.dispose()


async def test_migrate_creates_both_histories_tables(empty_database: str) -> None:
    new, problem = await schema_state(empty_database)
    assert new and problem is not None and "threadline migrate" in problem

    await migrate(empty_database)
    assert await schema_state(empty_database) == (False, None)
    assert await table_names(empty_database) == ALL_TABLES
    for history in HISTORIES:
        await run_alembic(empty_database, command.check, history=history)  # no drift

    await run_alembic(empty_database, command.downgrade, "base", history=SERVER)
    assert await table_names(empty_database) == {*checkpoint_metadata.tables, *VERSION_TABLES}
    await migrate(empty_database)  # the checkpoint tables at head are left as they are
    assert await schema_state(empty_database) == (False, None)


async def test_a_server_creates_a_new_database_and_refuses_one_behind(
    empty_database: str,
) -> None:
    db = Database(empty_database)
    try:
        await db.prepare()
        assert await schema_state(empty_database) == (False, None)
        await run_alembic(empty_database, command.downgrade, "0002", history=SERVER)
        [head] = SERVER.heads()
        with pytest.raises(SchemaOutdatedError, match=rf"server tables at 0002, expected {head}"):
            await db.prepare()
    finally:
        await db.close()


async def write_legacy_database(url: str, revision: str) -> None:
    """A database as the one history left it at `revision`: the same revisions applied,
    and `revision` alone in `alembic_version`."""
    await run_alembic(url, command.upgrade, LEGACY_CHECKPOINT_REVISIONS[revision])
    server = LEGACY_SERVER_REVISIONS.get(revision, (revision,))
    if server:
        await run_alembic(url, command.upgrade, *server, history=SERVER)
    engine = create_engine(url)
    try:
        async with engine.begin() as conn:
            await conn.execute(sa.text(f"DROP TABLE {CHECKPOINT.version_table}"))
            await conn.run_sync(legacy_versions.create, checkfirst=True)
            await conn.execute(legacy_versions.delete())
            await conn.execute(legacy_versions.insert().values(version_num=revision))
    finally:
        await engine.dispose()


@pytest.mark.parametrize("revision", sorted(LEGACY_CHECKPOINT_REVISIONS))
async def test_a_database_migrated_as_one_history_upgrades(
    empty_database: str, revision: str
) -> None:
    await write_legacy_database(empty_database, revision)
    saved = revision >= "0004"  # the saver's schema: it can write before the upgrade
    if saved:
        saver = SQLSaver.from_url(empty_database)
        await History(saver, "t").put({"x": 1})
        await saver.aclose()
    if revision >= "0003":
        engine = create_engine(empty_database)
        async with engine.begin() as conn:
            await conn.execute(users.insert().values(user_id="alice", created_at=sa.func.now()))
        await engine.dispose()

    if revision in LEGACY_SERVER_REVISIONS:
        # A checkpoint revision in `alembic_version`, which the checkpoint history reads
        # its own from: the server's history refuses to go first.
        with pytest.raises(RuntimeError, match="upgrade those first"):
            await run_alembic(empty_database, command.upgrade, "head", history=SERVER)
    db = Database(empty_database)
    try:
        with pytest.raises(SchemaOutdatedError, match="threadline migrate"):
            await db.prepare()
    finally:
        await db.close()

    await migrate(empty_database)
    assert await schema_state(empty_database) == (False, None)
    assert await table_names(empty_database) == ALL_TABLES
    for history in HISTORIES:
        assert await recorded(empty_database, history) == history.heads()
        await run_alembic(empty_database, command.check, history=history)
    if saved:
        saver = SQLSaver.from_url(empty_database)
        found = await saver.aget_tuple({"configurable": {"thread_id": "t", "checkpoint_ns": ""}})
        await saver.aclose()
        assert found is not None and found.checkpoint["channel_values"] == {"x": 1}
    if revision >= "0003":
        engine = create_engine(empty_database)
        async with engine.connect() as conn:
            assert list(await conn.scalars(sa.select(users.c.user_id))) == ["alice"]
        await engine.dispose()
