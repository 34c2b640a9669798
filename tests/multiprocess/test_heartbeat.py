"""The heartbeat of a worker pool (app/runs/worker.py) on PostgreSQL: it reads cancel
requests and lost runs every beat, renews only the leases that are due, and never waits
for the share lock a run's save holds on its row."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from datetime import datetime

import pytest
from sqlalchemy import select, text

from app.db.database import Database
from app.db.models import RunRow
from app.runs.pool import WorkerPool
from app.services.common import now


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
    stamp = now()
    runs = []
    for fields in overrides.values():
        row = {"worker_id": pool.worker_id, **fields}
        runs.append(
            RunRow(
                run_id=str(uuid.uuid4()),
                thread_id=str(uuid.uuid4()),
                assistant_id=str(uuid.uuid4()),
                status="running",
                metadata_={},
                kwargs={},
                owner="test",
                lease_expires_at=stamp + pool.lease,
                attempt=1,
                not_before=stamp,
                created_at=stamp,
                updated_at=stamp,
                **row,
            )
        )
    async with db.write() as session:
        session.add_all(runs)
    started = asyncio.get_running_loop().time()
    for run in runs:
        pool.running[run.run_id] = asyncio.create_task(asyncio.sleep(3600))
        pool.renewed[run.run_id] = started
    return [run.run_id for run in runs]


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
