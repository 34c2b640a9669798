"""The heartbeat of a worker pool (app/runs/pool.py) on PostgreSQL: it reads cancel
requests and lost runs every beat, renews only the leases that are due, and never waits
for the share lock a run's save holds on its row. The pool's fence is part of a save's
one statement (a transaction checks the saves of two runs), and a claim is one
statement."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import datetime
from typing import Any

import pytest
from sqlalchemy import select, text, update

from app.db.database import Database
from app.db.models import RunRow
from app.runs.pool import LeaseLost, WorkerPool
from app.services.common import now
from engine.checkpoint.sql.saver import SQLSaver
from tests.checkpoint.history import History, message_list
from tests.helpers import asyncpg_commands


@pytest.fixture
async def db(database_url: str) -> AsyncIterator[Database]:
    database = Database(database_url)
    await database.prepare()
    yield database
    await database.close()


def _pool(db: Database, stopped: list[tuple[str, str]]) -> WorkerPool:
    return WorkerPool(
        db,
        lambda run_id, action: stopped.append((run_id, action)),
        concurrency=8,
        lease_s=20.0,
        heartbeat_s=0.5,
    )


async def _held_runs(db: Database, pool: WorkerPool, **overrides: dict[str, str]) -> list[str]:
    """Insert running runs held by `pool` (or as `overrides[name]` says) and register them
    there as executing; return their ids in the order of the keyword names given."""
    lease = now() + pool.lease
    held = {"status": "running", "worker_id": pool.worker_id, "lease_expires_at": lease}
    runs = [_run(**{**held, "attempt": 1, **fields}) for fields in overrides.values()]
    async with db.write() as session:
        session.add_all(runs)
    started = asyncio.get_running_loop().time()
    for run in runs:
        pool.running[run.run_id] = asyncio.create_task(asyncio.sleep(3600))
        pool.renewed[run.run_id] = started
    return [run.run_id for run in runs]


def _run(**fields: Any) -> RunRow:
    """A run of a new thread, pending unless `fields` say otherwise."""
    stamp = now()
    row: dict[str, Any] = {
        "run_id": str(uuid.uuid4()),
        "thread_id": str(uuid.uuid4()),
        "assistant_id": str(uuid.uuid4()),
        "status": "pending",
        "metadata_": {},
        "kwargs": {},
        "owner": "test",
        "attempt": 0,
        "not_before": stamp,
        "created_at": stamp,
        "updated_at": stamp,
    }
    return RunRow(**{**row, **fields})


async def _leases(db: Database, ids: list[str]) -> list[datetime | None]:
    async with db.read() as session:
        rows = dict((await session.execute(select(RunRow.run_id, RunRow.lease_expires_at))).all())
    return [rows[i] for i in ids]


async def test_beat_stops_cancelled_and_lost_runs_and_renews_only_due_leases(
    db: Database,
) -> None:
    stopped: list[tuple[str, str]] = []
    pool = _pool(db, stopped)
    fresh, due, cancelled, lost = await _held_runs(
        db,
        pool,
        fresh={},
        due={},
        cancelled={"cancel_action": "interrupt"},
        lost={"worker_id": "another"},
    )
    pool.renewed[due] -= pool.renew_s
    before = await _leases(db, [fresh, due])
    try:
        await pool.beat()
        after = await _leases(db, [fresh, due])
        assert after[0] == before[0], "a lease renewed before it was due"
        assert after[1] is not None and before[1] is not None and after[1] > before[1]
        assert pool.renewed[due] > pool.renewed[fresh] - pool.renew_s
        assert sorted(stopped) == sorted([(cancelled, "interrupt"), (lost, "abandon")])
    finally:
        for task in pool.running.values():
            task.cancel()


async def test_beat_does_not_wait_for_a_save_holding_a_run(db: Database) -> None:
    """A save share-locks its run's row until it commits; an UPDATE of that row in the
    beat waited for it, holding the rows it had already updated meanwhile."""
    pool = _pool(db, [])
    (run_id,) = await _held_runs(db, pool, saving={})
    try:
        async with db.engine.connect() as save:
            await save.execute(
                text("SELECT run_id FROM runs WHERE run_id = :id FOR SHARE"), {"id": run_id}
            )
            await asyncio.wait_for(pool.beat(), 5)
            await save.rollback()
    finally:
        for task in pool.running.values():
            task.cancel()


async def test_the_fence_is_part_of_a_saves_one_statement(db: Database) -> None:
    """A save of a run held here is one statement that holds the fence's check; once the
    run is held by another worker, that statement adds nothing and the save's transaction
    refuses it (LeaseLost), storing nothing."""
    pool = _pool(db, [])
    (run_id,) = await _held_runs(db, pool, saving={})
    saver = SQLSaver(db.engine, fence=pool.fence)
    h = History(saver, str(uuid.uuid4()))
    try:
        await h.put({"messages": message_list(2)}, step=-1, run_id=run_id)
        with asyncpg_commands() as commands:
            await h.put({"messages": message_list(4)}, step=0, run_id=run_id)
        assert commands == []  # one statement, no transaction
        async with db.write() as session:
            await session.execute(
                update(RunRow).where(RunRow.run_id == run_id).values(worker_id="another")
            )
        with pytest.raises(LeaseLost), asyncpg_commands() as commands:
            await h.put({"messages": message_list(6)}, step=1, run_id=run_id)
        assert commands[0].startswith("BEGIN")  # the statement changed nothing
        state = await SQLSaver(db.engine).aget_tuple(h.config())
        assert state is not None
        assert state.checkpoint["channel_values"]["messages"] == message_list(4)
    finally:
        for task in pool.running.values():
            task.cancel()


def test_the_fence_checks_the_saves_of_two_runs_in_a_transaction(db: Database) -> None:
    pool = _pool(db, [])
    pool.running.update({"a": None, "b": None})  # type: ignore[dict-item]
    h = History(SQLSaver(db.engine), "t")
    ops = [h.put_op({"n": 1}, run_id="a"), h.put_op({"n": 2}, run_id="b")]
    assert pool.fence.condition(ops) is None
    held, params = pool.fence.condition(ops[:1])  # type: ignore[misc]
    assert params == {"fence_run": "a", "fence_worker": pool.worker_id}
    assert pool.fence.condition([h.put_op({"n": 3}, run_id="elsewhere")])[1] == {}  # type: ignore[index]


async def test_a_claim_is_one_statement(db: Database) -> None:
    """Every worker tries to claim when a run is queued: each try is one statement in
    autocommit mode, not a transaction."""
    pool = _pool(db, [])
    pending = _run()
    run_id = pending.run_id
    async with db.write() as session:
        session.add(pending)
    with asyncpg_commands() as commands:
        claimed = await pool.claim(4)
        assert await pool.claim(4) == []
    assert [run.run_id for run in claimed] == [run_id]
    assert claimed[0].status == "running" and claimed[0].worker_id == pool.worker_id
    assert commands == []
