"""The runs table indexes what finds active runs by active runs only (revision 0009): the
claim, the queue limit and cancel by owner are planned on those partial indexes on both
dialects, and a migrated database has the indexes the models declare. Events are found
by time with a BRIN index on PostgreSQL (revision 0010)."""

from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.database import Database
from app.db.migrations import migrate
from app.db.models import PENDING, RUNNING, RunRow
from app.runs.pool import WorkerPool
from app.services.runs.statements import QUEUED

PARTIAL = {"runs_pending", "runs_active_by_owner", "one_running_run_per_thread"}


def cancel_by_owner() -> Any:
    """The condition `RunCancels.cancel_many` selects by."""
    return sa.select(RunRow.run_id).where(
        RunRow.owner == "someone", RunRow.status.in_((PENDING, RUNNING))
    )


async def plan(conn: AsyncConnection, statement: Any, params: dict[str, Any]) -> str:
    """The plan of `statement`, as text; PostgreSQL is kept from a sequential scan, so
    that an index it can use for the query is what it uses on an empty table."""
    sql = statement.compile(dialect=conn.dialect, compile_kwargs={"render_postcompile": True})
    values = {**sql.params, **params}
    if conn.dialect.name == "postgresql":
        await conn.execute(sa.text("SET LOCAL enable_seqscan = off"))
        rows = await conn.exec_driver_sql(f"EXPLAIN {sql}", _positional(sql, values))
    else:
        rows = await conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", _positional(sql, values))
    return "\n".join(str(row[-1]) for row in rows)


def _positional(sql: Any, values: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(values[name] for name in sql.positiontup)


@pytest.fixture
async def db(database_url: str) -> Any:
    await migrate(database_url)
    db = Database(database_url)
    yield db
    await db.engine.dispose()


async def test_active_runs_are_found_by_partial_indexes(db: Database) -> None:
    pool = WorkerPool(db, concurrency=1, lease_s=30, heartbeat_s=5)
    now: Any = datetime.now(UTC)
    if db.dialect == "sqlite":  # the driver's statement, without the column type's binding
        now = now.isoformat(" ")
    queries = {
        "claim": (pool._claim_statement, {"room": 1, "now": now, "lease": now, "worker": "w"}),
        "queue limit": (QUEUED, {"owner": "someone"}),
        "cancel by owner": (cancel_by_owner(), {}),
    }
    async with db.engine.begin() as conn:
        plans = {name: await plan(conn, q, params) for name, (q, params) in queries.items()}
    assert "runs_pending" in plans["claim"], plans["claim"]
    assert "one_running_run_per_thread" in plans["claim"], plans["claim"]
    for name, found in plans.items():
        assert any(index in found for index in PARTIAL), (name, found)
        assert "Seq Scan" not in found and "SCAN runs\n" not in f"{found}\n", (name, found)


async def test_a_migrated_database_has_the_declared_run_indexes(db: Database) -> None:
    declared = {index.name: index for index in RunRow.__table__.indexes}
    async with db.engine.connect() as conn:
        found = await conn.run_sync(lambda sync: sa.inspect(sync).get_indexes("runs"))
    assert {index["name"] for index in found} == set(declared)
    for index in found:
        columns = [column.name for column in declared[index["name"]].columns]
        assert index["column_names"] == columns, index["name"]


async def test_events_are_found_by_time_with_a_brin_index_on_postgresql(db: Database) -> None:
    async with db.engine.connect() as conn:
        found = await conn.run_sync(lambda sync: sa.inspect(sync).get_indexes("run_events"))
        (index,) = [i for i in found if i["name"] == "ix_run_events_created_at"]
        assert index["column_names"] == ["created_at"]
        if db.dialect == "postgresql":
            method = await conn.scalar(
                sa.text(
                    "SELECT am.amname FROM pg_class c JOIN pg_am am ON am.oid = c.relam "
                    "WHERE c.relname = 'ix_run_events_created_at'"
                )
            )
            assert method == "brin"
