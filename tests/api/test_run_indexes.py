"""The runs table indexes what finds active runs by active runs only (revision 0009): the
claim, the queue limit and cancel by owner are planned on those partial indexes on both
dialects, and a migrated database has the indexes the models declare. Events are found
by time with a BRIN index on PostgreSQL (revision 0010). A run's admission changes no
indexed column of its thread's row, so PostgreSQL updates it in its page (revision
0018)."""

import re
import uuid
from datetime import UTC, datetime
from typing import Any

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection

from app.db.database import Database
from app.db.migrations import migrate
from app.db.models import PENDING, RUNNING, RunRow, ThreadRow
from app.runs.pool import WorkerPool
from app.services.runs.statements import (
    BUSY,
    QUEUED,
    THREAD,
    admit_at_once_statement,
)
from app.services.threads import settle_call, settle_params, settle_statement

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
    values = {**dict.fromkeys(sql.positiontup), **sql.params, **params}
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
    shared = WorkerPool(db, concurrency=1, lease_s=30, heartbeat_s=5, user_share=2)
    now: Any = datetime.now(UTC)
    if db.dialect == "sqlite":  # the driver's statement, without the column type's binding
        now = now.isoformat(" ")
    claim = {"room": 1, "now": now, "lease": now, "worker": "w"}
    queries = {
        "claim": (pool._claim_statement, claim),
        "claim with a user's share": (shared._claim_statement, {**claim, "share": 2}),
        "queue limit": (QUEUED, {"owner": "someone"}),
        "cancel by owner": (cancel_by_owner(), {}),
    }
    async with db.engine.begin() as conn:
        plans = {name: await plan(conn, q, params) for name, (q, params) in queries.items()}
    for claim_plan in (plans["claim"], plans["claim with a user's share"]):
        assert "runs_pending" in claim_plan, claim_plan
        # Whether the thread has a running run: by the unique index or by thread and status.
        running = ("one_running_run_per_thread", "runs_by_thread_status (thread_id=? AND status=?)")
        assert any(index in claim_plan for index in running), claim_plan
    # A user's runs held here: among the active runs of the user, or the running runs.
    held = ("runs_active_by_owner", "one_running_run_per_thread")
    assert any(index in plans["claim with a user's share"] for index in held)
    assert "SCAN mine\n" not in plans["claim with a user's share"] + "\n"
    for name, found in plans.items():
        assert any(index in found for index in PARTIAL), (name, found)
        assert "Seq Scan" not in found and "SCAN runs\n" not in f"{found}\n", (name, found)


async def generic_plan(conn: AsyncConnection, statement: Any) -> str:
    """PostgreSQL's plan of `statement` as a prepared statement's generic plan: made
    without its parameters' values, as it plans one it ran five times (asyncpg prepares
    every statement)."""
    sql = statement.compile(dialect=conn.dialect)
    await conn.execute(sa.text("SET LOCAL plan_cache_mode = force_generic_plan"))
    await conn.exec_driver_sql(f"PREPARE probe AS {sql}")
    nulls = ", ".join(["NULL"] * len(sql.positiontup))
    rows = await conn.exec_driver_sql(f"EXPLAIN EXECUTE probe({nulls})")
    await conn.exec_driver_sql("DEALLOCATE probe")
    return "\n".join(str(row[-1]) for row in rows)


async def nested_plans(conn: AsyncConnection, statement: Any, params: dict[str, Any]) -> str:
    """PostgreSQL's generic plans of the statements that `statement` runs in functions it
    calls (auto_explain, its reports sent to this client)."""
    driver = (await conn.get_raw_connection()).driver_connection
    reports: list[str] = []

    def heard(_: object, message: Any) -> None:
        reports.append(message.message)

    driver.add_log_listener(heard)
    for setting in (
        "auto_explain.log_min_duration = 0",
        "auto_explain.log_nested_statements = on",
        "auto_explain.log_level = notice",
        "plan_cache_mode = force_generic_plan",
        "enable_seqscan = off",
    ):
        await conn.exec_driver_sql(f"SET LOCAL {setting}")
    await conn.exec_driver_sql("LOAD 'auto_explain'")
    await conn.execute(statement, params)
    driver.remove_log_listener(heard)
    return "\n".join(reports)


async def test_a_turn_finds_its_thread_s_active_runs_by_partial_indexes(db: Database) -> None:
    """A run's admission, its end and the thread's read look for the thread's active runs
    by their status, never through every run the thread ever had: on PostgreSQL as
    generic plans (with a bound status, a partial index is no use to them), on SQLite
    without statistics (revision 0013: it read them by the index of every run the thread
    had)."""
    threads = [str(uuid.uuid4()) for _ in range(2)]
    ended = [
        {"run_id": str(uuid.uuid4()), "thread_id": threads[n % 2], "status": "success"}
        for n in range(2000)
    ]
    now = datetime.now(UTC)
    async with db.engine.begin() as conn:
        await conn.execute(
            sa.insert(RunRow.__table__).values(
                assistant_id=str(uuid.uuid4()),
                metadata={},
                multitask_strategy="enqueue",
                kwargs={},
                owner="someone",
                attempt=1,
                not_before=now,
                created_at=now,
                updated_at=now,
            ),
            ended,
        )
        await conn.execute(
            sa.insert(ThreadRow.__table__).values(
                thread_id=threads[1], metadata={}, owner="someone", created_at=now, updated_at=now
            )
        )
        if db.dialect == "postgresql":
            await conn.execute(sa.text("ANALYZE runs"))
    if db.dialect == "postgresql":
        queries = {
            "admission": admit_at_once_statement(("run_id", "thread_id", "status")),
            "thread": THREAD,
        }
        async with db.engine.begin() as conn:
            plans = {name: await generic_plan(conn, query) for name, query in queries.items()}
            plans["end"] = await nested_plans(
                conn, sa.select(settle_call()), settle_params(threads[1], "idle", {})
            )
    else:
        queries = {
            "thread": THREAD,
            "end": settle_statement(("checkpoint_id", "values")),
            "following the thread": sa.select(RunRow.run_id).where(
                RunRow.thread_id == threads[1], RunRow.status.in_((PENDING, RUNNING))
            ),
        }
        async with db.engine.begin() as conn:
            plans = {name: await plan(conn, query, {}) for name, query in queries.items()}
    for name, found in plans.items():
        assert by_status(found), (name, found)
        assert "Seq Scan on runs" not in found and "SCAN runs\n" not in f"{found}\n", (name, found)


def by_status(plan: str) -> bool:
    """Whether `plan` finds runs by a partial index on active runs, or by thread and status
    in `runs_by_thread_status` (not by its thread alone)."""
    if any(index in plan for index in PARTIAL):
        return True
    lines = plan.splitlines()
    for n, line in enumerate(lines):
        if "runs_by_thread_status" in line:
            searched = " ".join(lines[n : n + 2])  # PostgreSQL's condition is on the next line
            if "status" in searched.split("runs_by_thread_status", 1)[1]:
                return True
    return False


@pytest.mark.parametrize("table", [RunRow.__table__, ThreadRow.__table__], ids=lambda t: t.name)
async def test_a_migrated_database_has_the_declared_indexes(db: Database, table: Any) -> None:
    declared = {index.name: index for index in table.indexes}
    async with db.engine.connect() as conn:
        found = await conn.run_sync(lambda sync: sa.inspect(sync).get_indexes(table.name))
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


# The columns an UPDATE of threads sets, in its SQL.
SET_COLUMNS = re.compile(r"UPDATE threads SET (.*?) (?:WHERE|RETURNING|FROM)", re.DOTALL)


async def test_a_run_s_admission_sets_no_indexed_column_of_its_thread(db: Database) -> None:
    """What keeps the admission's update of the thread in place: the columns it sets
    (the status and the metadata, on either path) are in no index of the table."""
    async with db.engine.connect() as conn:
        found = await conn.run_sync(lambda sync: sa.inspect(sync).get_indexes("threads"))
        dialect = conn.dialect
    indexed = {column for index in found for column in index["column_names"]}
    for statement in (BUSY, admit_at_once_statement(("run_id", "thread_id", "status"))):
        sql = str(statement.compile(dialect=dialect))
        (assignments,) = SET_COLUMNS.findall(sql)
        columns = {part.split("=")[0].strip() for part in assignments.split(", ")}
        assert columns == {"status", "metadata"}, sql
        assert not columns & indexed, (columns & indexed, found)


async def test_a_run_s_admission_updates_its_thread_in_place(db: Database) -> None:
    """PostgreSQL: the admission's update of an idle thread is a heap-only (HOT) tuple,
    with no new index entry, as the page inspector shows."""
    if db.dialect != "postgresql":
        pytest.skip("HOT updates are PostgreSQL's")
    thread, now = str(uuid.uuid4()), datetime.now(UTC)
    run = {
        "run_id": str(uuid.uuid4()),
        "thread_id": thread,
        "assistant_id": str(uuid.uuid4()),
        "status": "running",
        "metadata": {},
        "multitask_strategy": "enqueue",
        "kwargs": {},
        "owner": "someone",
        "attempt": 1,
        "not_before": now,
        "created_at": now,
        "updated_at": now,
    }
    async with db.engine.begin() as conn:
        await conn.execute(sa.text("CREATE EXTENSION IF NOT EXISTS pageinspect"))
        await conn.execute(
            sa.insert(ThreadRow.__table__).values(
                thread_id=thread, owner="someone", created_at=now, updated_at=now
            )
        )
    async with db.engine.begin() as conn:
        added = await conn.execute(
            admit_at_once_statement(tuple(run)),
            {
                "thread": thread,
                "thread_owner": "someone",
                "thread_patch": {"graph_id": "echo"},
                **{f"run_{name}": value for name, value in run.items()},
            },
        )
        assert len(added.all()) == 1
        status, updated_at = (
            await conn.execute(sa.select(ThreadRow.status, ThreadRow.updated_at))
        ).one()
        assert (status, updated_at) == ("busy", now)
        flags = await conn.scalars(
            sa.text(
                "SELECT t_infomask2 FROM heap_page_items(get_raw_page('threads', 0)) "
                "WHERE t_infomask2 IS NOT NULL ORDER BY lp"
            )
        )
        old, new = flags.all()
    assert old & HEAP_HOT_UPDATED and new & HEAP_ONLY_TUPLE, (hex(old), hex(new))


# Bits of a heap tuple's t_infomask2 (PostgreSQL's htup_details.h).
HEAP_HOT_UPDATED, HEAP_ONLY_TUPLE = 0x4000, 0x8000
