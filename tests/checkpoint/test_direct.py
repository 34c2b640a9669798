"""Direct statements (PostgreSQL): the rows, errors and cursor events of a statement sent
by asyncpg itself are those of SQLAlchemy's execution of it."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.exc import DBAPIError, IntegrityError
from sqlalchemy.ext.asyncio import AsyncEngine

from engine.checkpoint.sql.connect import create_engine
from engine.checkpoint.sql.direct import Direct, DirectStatements, direct_statements, fetch_alone


@pytest.fixture
async def engine(postgres_url: str) -> AsyncIterator[AsyncEngine]:
    engine = create_engine(postgres_url)
    yield engine
    await engine.dispose()


@pytest.fixture
async def table(engine: AsyncEngine) -> AsyncIterator[sa.Table]:
    table = sa.Table(
        f"direct_{uuid.uuid4().hex[:8]}",
        sa.MetaData(),
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(20)),
        sa.Column("ok", sa.Boolean),
        sa.Column("doc", sa.JSON),
        sa.Column("docb", JSONB),
        sa.Column("data", sa.LargeBinary),
        sa.Column("at", sa.DateTime(timezone=True)),
        sa.Column("tags", ARRAY(sa.String)),
    )
    async with engine.begin() as conn:
        await conn.run_sync(table.create)
    yield table
    async with engine.begin() as conn:
        await conn.run_sync(table.drop)


def row(n: int) -> dict[str, Any]:
    return {
        "id": n,
        "name": f"név {n}",
        "ok": n % 2 == 0,
        "doc": {"text": "héllo", "n": [n, None, 1.5]},
        "docb": {"nested": {"list": [True, False]}},
        "data": bytes(range(n, n + 8)),
        "at": datetime(2026, 12, 2, 17, n, tzinfo=UTC),
        "tags": ["a", f"b{n}"],
    }


async def test_rows_are_those_sqlalchemy_returns(engine: AsyncEngine, table: sa.Table) -> None:
    insert = sa.insert(table).returning(*table.c)
    select = sa.select(*table.c).where(table.c.id >= sa.bindparam("low")).order_by(table.c.id)
    empty = sa.select(table.c.id).where(table.c.name == "nobody")
    direct = DirectStatements(engine)
    inserted = [await direct.alone(insert, row(n)) for n in (1, 2)]
    by_direct = await direct.alone(select, {"low": 1})
    async with engine.connect() as conn:
        by_sqlalchemy = (await conn.execute(select, {"low": 1})).all()
    assert await direct.alone(empty, {}) == []
    assert [tuple(r) for r in by_direct] == [tuple(r) for r in by_sqlalchemy]
    assert [r for [r] in inserted] == by_direct
    assert by_direct[1].doc == row(2)["doc"] and by_direct[1].tags == ["a", "b2"]
    assert by_direct[0]._fields == tuple(table.c.keys())


async def test_each_statement_is_a_transaction_of_its_own(
    engine: AsyncEngine, table: sa.Table, postgres_url: str
) -> None:
    """What a direct statement wrote is committed when it returns, and its connection
    goes back to the pool in no transaction."""
    direct = DirectStatements(engine)
    [(pid,)] = await direct.alone(sa.insert(table).returning(sa.func.pg_backend_pid()), row(1))
    onlooker = create_engine(postgres_url)
    try:
        async with onlooker.connect() as other:
            assert await other.scalar(sa.select(sa.func.count()).select_from(table)) == 1
            state = sa.text("SELECT state FROM pg_stat_activity WHERE pid = :pid")
            assert await other.scalar(state, {"pid": pid}) == "idle"
    finally:
        await onlooker.dispose()


async def test_without_direct_statements_sqlalchemy_executes_them(
    engine: AsyncEngine, table: sa.Table
) -> None:
    alone = engine.execution_options(isolation_level="AUTOCOMMIT")
    [(n,)] = await fetch_alone(None, alone, sa.insert(table).returning(table.c.id), row(3))
    assert n == 3
    assert await fetch_alone(None, alone, sa.insert(table), row(4)) == []
    direct = DirectStatements(engine)
    found = await fetch_alone(direct, alone, sa.select(table.c.id).order_by(table.c.id), {})
    assert found == [(3,), (4,)]


async def test_errors_are_those_sqlalchemy_raises(engine: AsyncEngine, table: sa.Table) -> None:
    insert = sa.insert(table)
    direct = DirectStatements(engine)
    await direct.alone(insert, row(1))
    with pytest.raises(IntegrityError) as by_direct:
        await direct.alone(insert, row(1))
    with pytest.raises(IntegrityError) as by_sqlalchemy:
        async with engine.begin() as conn:
            await conn.execute(insert, row(1))
    assert by_direct.value.orig.sqlstate == by_sqlalchemy.value.orig.sqlstate == "23505"  # type: ignore[union-attr]
    assert not by_direct.value.connection_invalidated


async def test_a_connection_gone_is_invalidated_and_the_next_works(
    postgres_url: str, table: sa.Table
) -> None:
    engine = create_engine(postgres_url, pool_size=1, max_overflow=0)
    try:
        count = sa.select(sa.func.count()).select_from(table)
        direct = DirectStatements(engine)
        [(pid,)] = await direct.alone(sa.select(sa.func.pg_backend_pid()), {})
        killer = create_engine(postgres_url)
        async with killer.connect() as other:
            await other.execute(sa.text(f"SELECT pg_terminate_backend({pid})"))
        await killer.dispose()
        with pytest.raises(DBAPIError) as gone:
            await direct.alone(count, {})  # the pool's one connection, idle a moment only
        assert gone.value.connection_invalidated
        assert await direct.alone(count, {}) == [(0,)]
    finally:
        await engine.dispose()


async def test_a_database_out_of_reach_raises_sqlalchemy_s_error(postgres_url: str) -> None:
    unreachable = sa.make_url(postgres_url).set(port=1)
    engine = create_engine(unreachable)
    try:
        with pytest.raises((DBAPIError, OSError)) as failed:
            await DirectStatements(engine).alone(sa.select(sa.literal(1)), {})
        with pytest.raises(type(failed.value)):
            async with engine.connect() as conn:
                await conn.execute(sa.select(sa.literal(1)))
    finally:
        await engine.dispose()


async def test_cursor_event_listeners_see_it(engine: AsyncEngine, table: sa.Table) -> None:
    seen: list[tuple[str, int]] = []

    def before(conn: Any, cursor: Any, sql: str, args: Any, *rest: Any) -> None:
        assert conn.engine is engine.sync_engine
        seen.append((sql, len(args)))

    def after(conn: Any, cursor: Any, sql: str, *rest: Any) -> None:
        seen.append(("rows", cursor.rowcount))

    select = sa.select(table.c.id).where(table.c.id > sa.bindparam("low"))
    direct = DirectStatements(engine)
    event.listen(engine.sync_engine, "before_cursor_execute", before)
    event.listen(engine.sync_engine, "after_cursor_execute", after)
    try:
        await direct.alone(select, {"low": 0})
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", before)
        event.remove(engine.sync_engine, "after_cursor_execute", after)
    assert seen == [(Direct(select, engine.dialect).sql, 1), ("rows", 0)]


def test_what_cannot_be_direct_is_refused(engine: AsyncEngine, table: sa.Table) -> None:
    with pytest.raises(ValueError, match="rendered per call"):
        Direct(sa.select(table.c.id).where(table.c.id.in_([1, 2])), engine.dialect)
    with pytest.raises(ValueError, match="asyncpg"):
        Direct(sa.select(table.c.id), create_engine("sqlite://").dialect)


async def test_an_engine_that_echoes_keeps_sqlalchemy_s_execution(postgres_url: str) -> None:
    echoing, plain = create_engine(postgres_url, echo=True), create_engine(postgres_url)
    try:
        assert direct_statements(echoing) is None
        assert isinstance(direct_statements(plain), DirectStatements)
        assert direct_statements(create_engine("sqlite://")) is None
    finally:
        await echoing.dispose()
        await plain.dispose()
